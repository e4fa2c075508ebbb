package cassandra

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gait-dev/gait/internal/systems"
	"github.com/gocql/gocql"
)

// pools are the thread pools (SEDA stages) whose queues Metrics reports:
// where the clients' requests, the writes, the reads and the replicas'
// answers wait. The paper credits the separate stages with keeping a
// limping write from holding up reads (C3).
var pools = []string{"Native-Transport-Requests", "MutationStage", "ReadStage", "RequestResponseStage", "HintsDispatcher"}

// scrapeTimeout bounds one node's answer, so a node behind a limping link
// cannot hold up the once-a-second scrape.
const scrapeTimeout = 900 * time.Millisecond

// Metrics reads every node's virtual tables at once (each is node-local):
//
//   - cassandra_outbound_pending_messages{host,peer} and _bytes: messages
//     waiting to go to each peer, the coordinator's hidden backlog toward
//     a slow replica; cassandra_outbound_expired_total{host,peer}: those
//     dropped unsent after their timeout (the paper's §5.4.1);
//   - cassandra_threadpool_pending_tasks{host,pool} and
//     cassandra_threadpool_blocked_tasks{host,pool} of the pools above;
//   - cassandra_pending_hint_files{host,peer}: hints kept for a peer
//     taken for down.
func (c *Cluster) Metrics(ctx context.Context) (map[string]float64, error) {
	return systems.ScrapeAll(len(c.members), func(i int, vals map[string]float64) error {
		m := c.members[i]
		if p := m.current(); p == nil || p.Exited() {
			return nil
		}
		s, err := c.scrapeSession(m)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
		defer cancel()
		return c.scrape(ctx, s, m.host.Name(), vals)
	})
}

func (c *Cluster) scrape(ctx context.Context, s *gocql.Session, host string, vals map[string]float64) error {
	var addr string
	var pendingN, pendingB, expired int64
	it := s.Query("SELECT address, pending_count, pending_bytes, expired_count FROM system_views.internode_outbound").WithContext(ctx).Iter()
	for it.Scan(&addr, &pendingN, &pendingB, &expired) {
		peer := c.peer(addr)
		vals[fmt.Sprintf("cassandra_outbound_pending_messages{host=%s,peer=%s}", host, peer)] += float64(pendingN)
		vals[fmt.Sprintf("cassandra_outbound_pending_bytes{host=%s,peer=%s}", host, peer)] += float64(pendingB)
		vals[fmt.Sprintf("cassandra_outbound_expired_total{host=%s,peer=%s}", host, peer)] += float64(expired)
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("cassandra on %s: internode_outbound: %w", host, err)
	}
	var name string
	var pending, blocked int64
	it = s.Query("SELECT name, pending_tasks, blocked_tasks FROM system_views.thread_pools").WithContext(ctx).Iter()
	for it.Scan(&name, &pending, &blocked) {
		if slices.Contains(pools, name) {
			vals[fmt.Sprintf("cassandra_threadpool_pending_tasks{host=%s,pool=%s}", host, name)] = float64(pending)
			vals[fmt.Sprintf("cassandra_threadpool_blocked_tasks{host=%s,pool=%s}", host, name)] = float64(blocked)
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("cassandra on %s: thread_pools: %w", host, err)
	}
	var files int
	it = s.Query("SELECT address, files FROM system_views.pending_hints").WithContext(ctx).Iter()
	for it.Scan(&addr, &files) {
		vals[fmt.Sprintf("cassandra_pending_hint_files{host=%s,peer=%s}", host, c.peer(addr))] = float64(files)
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("cassandra on %s: pending_hints: %w", host, err)
	}
	return nil
}

// peer names a node by its host, as the metrics' labels do.
func (c *Cluster) peer(addr string) string {
	if h, ok := c.byAddr[addr]; ok {
		return h
	}
	return addr
}

// scrapeSession is the session Metrics reads m with, opened once.
func (c *Cluster) scrapeSession(m *member) (*gocql.Session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.scrap[m.host.Name()]; ok {
		return s, nil
	}
	s, err := session(m.host.Address(), "", 2*time.Second)
	if err != nil {
		return nil, err
	}
	if c.scrap == nil {
		c.scrap = map[string]*gocql.Session{}
	}
	c.scrap[m.host.Name()] = s
	return s, nil
}

// dropScrape forgets host's session: its node is restarting.
func (c *Cluster) dropScrape(host string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.scrap[host]; ok {
		s.Close()
		delete(c.scrap, host)
	}
}

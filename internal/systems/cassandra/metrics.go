package cassandra

import (
	"context"
	"errors"
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

// localLatency are the virtual tables of each node's own reads and writes
// of gait's table, counted: which replicas served the gets at consistency
// one (the coordinator alone, or a slow replica too) and took the puts.
var localLatency = map[string]string{
	"local_read_latency":  "cassandra_local_reads_total",
	"local_write_latency": "cassandra_local_writes_total",
}

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
//     taken for down;
//   - cassandra_local_reads_total{host} and cassandra_local_writes_total{host}:
//     the node's own reads and writes of gait's table (localLatency).
func (c *Cluster) Metrics(ctx context.Context) (map[string]float64, error) {
	return systems.ScrapeAll(len(c.members), func(i int, vals map[string]float64) error {
		m := c.members[i]
		if p := m.Current(); p == nil || p.Exited() {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
		defer cancel()
		s, err := c.scrapeSession(ctx, m)
		if err != nil {
			return err
		}
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
	for table, name := range localLatency {
		row := map[string]any{}
		q := "SELECT * FROM system_views." + table + " WHERE keyspace_name = ? AND table_name = ?"
		if err := s.Query(q, keyspace, "kv").WithContext(ctx).MapScan(row); err != nil {
			if errors.Is(err, gocql.ErrNotFound) {
				continue // the table is not made yet
			}
			return fmt.Errorf("cassandra on %s: %s: %w", host, table, err)
		}
		if n, ok := row["count"].(int64); ok {
			vals[fmt.Sprintf("%s{host=%s}", name, host)] = float64(n)
		}
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

// scrapeSession is the session Metrics reads m with, opened once. A
// session is opened outside the lock and bounded by ctx: CQL's handshake
// with a node behind a limping link takes seconds, and the scrape of
// every other node, and the run's once-a-second probes, must not wait for
// it (a 1000x step used to record no white-box value at all). One that
// finishes after ctx ended is kept for the next scrape.
func (c *Cluster) scrapeSession(ctx context.Context, m *member) (*gocql.Session, error) {
	host := m.host.Name()
	c.mu.Lock()
	s, ok := c.scrap[host]
	opening := c.opening[host]
	if !ok && opening == nil {
		if c.opening == nil {
			c.opening = map[string]chan struct{}{}
		}
		opening = make(chan struct{})
		c.opening[host] = opening
		go c.openScrape(m, opening)
	}
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	select {
	case <-opening:
	case <-ctx.Done():
		return nil, fmt.Errorf("cassandra on %s: connect for metrics: %w", host, ctx.Err())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.scrap[host]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("cassandra on %s: connect for metrics failed", host)
}

// openScrape opens m's metrics session and closes done. After Stop, or
// once m restarts, the session is closed instead of kept.
func (c *Cluster) openScrape(m *member, done chan struct{}) {
	s, err := session(m.host.Address(), "", 2*time.Second)
	c.mu.Lock()
	defer c.mu.Unlock()
	defer close(done)
	if c.opening[m.host.Name()] != done {
		if err == nil {
			s.Close()
		}
		return
	}
	delete(c.opening, m.host.Name())
	if err == nil && !c.stopped {
		if c.scrap == nil {
			c.scrap = map[string]*gocql.Session{}
		}
		c.scrap[m.host.Name()] = s
	} else if err == nil {
		s.Close()
	}
}

// dropScrape forgets host's session: its node is restarting.
func (c *Cluster) dropScrape(host string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.opening, host) // one still opening is closed when it ends
	if s, ok := c.scrap[host]; ok {
		s.Close()
		delete(c.scrap, host)
	}
}

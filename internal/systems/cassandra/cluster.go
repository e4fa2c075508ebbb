package cassandra

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gocql/gocql"
)

// Cluster is a running Cassandra cluster started by Driver.Start.
type Cluster struct {
	d       *Driver
	members []*member
	byName  map[string]*member
	byAddr  map[string]string // node address -> host name

	mu      sync.Mutex
	scrap   map[string]*gocql.Session // host -> the session Metrics reads it with
	opening map[string]chan struct{}  // host -> closed when its session is opened or failed
	stopped bool
}

var _ systems.Cluster = (*Cluster)(nil)

// Roles gives each node its role, fixed at start (the coordinator is the
// first host), or "down" once its process has exited.
func (c *Cluster) Roles(context.Context) (map[string]string, error) {
	roles := map[string]string{}
	for _, m := range c.members {
		roles[m.host.Name()] = m.role
		if p := m.Current(); p == nil || p.Exited() {
			roles[m.host.Name()] = "down"
		}
	}
	return roles, nil
}

func (c *Cluster) member(host string) (*member, error) {
	m, ok := c.byName[host]
	if !ok {
		return nil, fmt.Errorf("cassandra: no node on host %q", host)
	}
	return m, nil
}

// Client returns a client with a session on the node on host only, its
// gets and puts at the driver's consistency levels.
func (c *Cluster) Client(host string) (load.Client, error) {
	m, err := c.member(host)
	if err != nil {
		return nil, err
	}
	read, err := consistency(c.d.Read)
	if err != nil {
		return nil, err
	}
	write, err := consistency(c.d.Write)
	if err != nil {
		return nil, err
	}
	s, err := session(m.host.Address(), keyspace, requestTimeout)
	if err != nil {
		return nil, err
	}
	cl := &Client{s: s, read: read, write: write}
	for _, o := range c.members {
		if o != m {
			cl.replicas = append(cl.replicas, o.host.Name())
		}
	}
	return cl, nil
}

// serves checks m answers CQL.
func (c *Cluster) serves(ctx context.Context, m *member) error {
	s, err := session(m.host.Address(), "", 2*time.Second)
	if err != nil {
		return &systems.NotReady{Host: m.host.Name(), Proc: m.Current(), Err: err}
	}
	defer s.Close()
	var v string
	if err := s.Query("SELECT release_version FROM system.local").WithContext(ctx).Scan(&v); err != nil {
		return &systems.NotReady{Host: m.host.Name(), Proc: m.Current(), Err: fmt.Errorf("read system.local: %w", err)}
	}
	return nil
}

// createSchema makes the keyspace (every key on Replication nodes) and
// its table through the coordinator; gocql waits for every node to agree
// on the schema.
func (c *Cluster) createSchema(ctx context.Context) error {
	s, err := session(c.members[0].host.Address(), "", 30*time.Second)
	if err != nil {
		return err
	}
	defer s.Close()
	for _, q := range []string{
		fmt.Sprintf("CREATE KEYSPACE IF NOT EXISTS %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': %d}",
			keyspace, c.d.Replication),
		"CREATE TABLE IF NOT EXISTS " + keyspace + ".kv (k text PRIMARY KEY, v blob)",
	} {
		if err := s.Query(q).WithContext(ctx).Exec(); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// writeAll writes a key at consistency all through the coordinator: it
// succeeds once every replica is up in the coordinator's view.
func (c *Cluster) writeAll(ctx context.Context) error {
	m := c.members[0]
	s, err := session(m.host.Address(), keyspace, 5*time.Second)
	if err != nil {
		return &systems.NotReady{Host: m.host.Name(), Proc: m.Current(), Err: err}
	}
	defer s.Close()
	if err := s.Query("INSERT INTO kv (k, v) VALUES ('gait-ready', 0x00)").WithContext(ctx).Consistency(gocql.All).Exec(); err != nil {
		return &systems.NotReady{Host: m.host.Name(), Proc: m.Current(), Err: fmt.Errorf("write at consistency all: %w", err)}
	}
	return nil
}

// Restart starts the node on host again with its data and configuration,
// and waits until it serves CQL.
func (c *Cluster) Restart(ctx context.Context, host string) error {
	m, err := c.member(host)
	if err != nil {
		return err
	}
	c.dropScrape(host)
	if err := m.launch(c.d); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return c.waitReady(ctx, []*member{m})
}

// Stop ends every node at once.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	c.stopped = true
	for h, s := range c.scrap {
		s.Close()
		delete(c.scrap, h)
	}
	c.mu.Unlock()
	procs := make([]systems.Process, len(c.members))
	for i, m := range c.members {
		procs[i] = m.Current()
	}
	return systems.StopAll(procs)
}

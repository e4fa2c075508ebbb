package hdfs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
)

// Cluster is a running HDFS cluster started by Driver.Start.
type Cluster struct {
	d       *Driver
	members []*member
	byName  map[string]*member
	nn      *member

	clientMu sync.Mutex // guards client (started by the first Client call) and chans
	client   *javaClient
	// chans numbers the client's channels. Channels name the files they
	// create after their number, so a new JVM's channels go on from the
	// last one's.
	chans   uint64
	drops   dropCounts
	regenMu sync.Mutex // makes regenerations run one at a time
}

var _ systems.Cluster = (*Cluster)(nil)

// jmxTimeout bounds one daemon's answer to /jmx, so a daemon that is down
// or limping cannot hold up Roles or Metrics.
const jmxTimeout = 3 * time.Second

// nameNodeInfo is what the NameNode says of its DataNodes and safe mode.
type nameNodeInfo struct {
	Safemode  string // empty once the NameNode has left safe mode
	LiveNodes string // JSON: "address:port" of each live DataNode -> its details
}

func (c *Cluster) nameNodeInfo(ctx context.Context) (live map[string]bool, safemode string, err error) {
	beans, err := jmx(ctx, httpAddr(c.nn), "Hadoop:service=NameNode,name=NameNodeInfo")
	if err != nil {
		return nil, "", err
	}
	if len(beans) != 1 {
		return nil, "", fmt.Errorf("%w: no NameNodeInfo bean", errNoNameNode)
	}
	var info nameNodeInfo
	if err := json.Unmarshal(beans[0], &info); err != nil {
		return nil, "", fmt.Errorf("NameNodeInfo: %w", err)
	}
	var nodes map[string]json.RawMessage
	if err := json.Unmarshal([]byte(info.LiveNodes), &nodes); err != nil {
		return nil, "", fmt.Errorf("NameNodeInfo LiveNodes: %w", err)
	}
	live = map[string]bool{}
	for addr := range nodes {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			live[host] = true
		}
	}
	return live, info.Safemode, nil
}

// Roles names the NameNode's host "namenode" and each DataNode's
// "datanode" while the NameNode counts it live; a member whose process
// has exited is "down", a DataNode the NameNode does not count live
// "dead". While the NameNode does not answer (a hundred DataNodes on a
// loaded machine can keep its /jmx past jmxTimeout) it is "unreachable"
// and its running DataNodes are left out, unknown rather than dead.
func (c *Cluster) Roles(ctx context.Context) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, jmxTimeout)
	defer cancel()
	live, _, err := c.nameNodeInfo(ctx)
	roles := map[string]string{}
	for _, m := range c.members {
		switch {
		case m.exited():
			roles[m.host.Name()] = "down"
		case err != nil && m.role == RoleNameNode:
			roles[m.host.Name()] = "unreachable"
		case err != nil:
		case m.role == RoleNameNode || live[m.host.Address()]:
			roles[m.host.Name()] = m.role
		default:
			roles[m.host.Name()] = "dead"
		}
	}
	if err != nil {
		return roles, fmt.Errorf("hdfs roles: %w", err)
	}
	return roles, nil
}

// Client returns a client of the file system; host must be the
// NameNode's, the member clients talk to first (they then write to and
// read from DataNodes as the NameNode directs).
func (c *Cluster) Client(host string) (load.Client, error) {
	m, err := c.member(host)
	if err != nil {
		return nil, err
	}
	if m.role != RoleNameNode {
		return nil, fmt.Errorf("hdfs: host %q runs a DataNode; clients talk to the NameNode (%s)", host, c.nn.host.Name())
	}
	c.clientMu.Lock()
	defer c.clientMu.Unlock()
	if c.client == nil || c.client.Failed() != nil {
		var dns []systems.Host
		for _, m := range c.members[1:] {
			dns = append(dns, m.host)
		}
		jc, err := startClient(c.d, c.nn.host, dns)
		if err != nil {
			return nil, err
		}
		jc.drops = &c.drops
		jc.cluster = c
		c.client = jc
	}
	c.chans++
	return c.client.channel(c.chans), nil
}

func (c *Cluster) member(host string) (*member, error) {
	m, ok := c.byName[host]
	if !ok {
		return nil, fmt.Errorf("hdfs: no daemon on host %q", host)
	}
	return m, nil
}

// Restart starts the daemon on host again with its data and
// configuration, and waits until the NameNode counts it live (a DataNode)
// or serves again (the NameNode, once every DataNode has re-registered).
func (c *Cluster) Restart(ctx context.Context, host string) error {
	m, err := c.member(host)
	if err != nil {
		return err
	}
	f := c.fleet(nil)
	if m.role == RoleNameNode {
		f.Masters[0].Launch = func() error { return m.launch(c.d) }
		f.Workers = c.fleet(c.members[1:]).Workers
	} else {
		f.Workers = c.fleet([]*member{m}).Workers
		f.Workers[0].Launch = func() error { return m.launch(c.d) }
	}
	if err := f.Start(ctx); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return nil
}

// fleet is the start of the NameNode and of the DataNodes dns, none of
// them launched by it (Start and Restart say which are).
func (c *Cluster) fleet(dns []*member) *systems.Fleet {
	f := &systems.Fleet{
		System: "hdfs", Noun: "DataNodes",
		Masters: []systems.Member{{Host: c.nn.host.Name(), Proc: c.nn.Current}},
		Base:    c.d.StartTimeout, PerWorker: c.d.StartPerDataNode,
	}
	byAddr := map[string]string{}
	for _, m := range dns {
		f.Workers = append(f.Workers, systems.Member{Host: m.host.Name(), Proc: m.Current})
		byAddr[m.host.Address()] = m.host.Name()
	}
	blame := func(err error) error {
		return &systems.NotReady{Host: c.nn.host.Name(), Proc: c.nn.Current(), Err: err}
	}
	f.MastersReady = func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, jmxTimeout)
		defer cancel()
		if _, _, err := c.nameNodeInfo(ctx); err != nil {
			return blame(err)
		}
		return nil
	}
	f.Registered = func(ctx context.Context) (map[string]bool, error) {
		ctx, cancel := context.WithTimeout(ctx, jmxTimeout)
		defer cancel()
		live, _, err := c.nameNodeInfo(ctx)
		if err != nil {
			return nil, blame(err)
		}
		hosts := map[string]bool{}
		for addr := range live {
			if h, ok := byAddr[addr]; ok {
				hosts[h] = true
			}
		}
		return hosts, nil
	}
	f.Settled = func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, jmxTimeout)
		defer cancel()
		_, safemode, err := c.nameNodeInfo(ctx)
		switch {
		case err != nil:
			return blame(err)
		case safemode != "":
			return blame(fmt.Errorf("NameNode in safe mode: %s", safemode))
		}
		return nil
	}
	return f
}

// Stop ends the client and every daemon at once.
func (c *Cluster) Stop() error {
	c.clientMu.Lock()
	var errs []error
	if c.client != nil {
		errs = append(errs, c.client.Stop())
		c.client = nil
	}
	c.clientMu.Unlock()
	stops := make([]error, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Go(func() {
			if p := m.Current(); p != nil {
				stops[i] = p.Stop()
			}
		})
	}
	wg.Wait()
	return errors.Join(append(errs, stops...)...)
}

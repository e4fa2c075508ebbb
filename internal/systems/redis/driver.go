package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
	goredis "github.com/redis/go-redis/v9"
)

// ServerArgv is the command line of a redis-server on h listening on port:
// bound to the host's address, without persistence (RDB or AOF) unless
// extra (more options, which override these) says otherwise, with its
// working directory under the host's data directory.
func ServerArgv(binary string, h systems.Host, port int, extra ...string) []string {
	return append([]string{binary,
		"--bind", h.Address(),
		"--port", strconv.Itoa(port),
		// Clients reach a testbed host over its bridge, not loopback; the
		// explicit bind already keeps the server off other networks.
		"--protected-mode", "no",
		"--save", "",
		"--appendonly", "no",
		"--dir", ServerDir(h),
		"--daemonize", "no",
		// Its log goes where systems.LogTail looks for a server's log.
		"--logfile", "/dev/stderr",
		// DEBUG from loopback only: gait replica forwards the DEBUG
		// sub-commands that describe or change the data (Redis's own test
		// suite needs them) from a loopback deployment.
		"--enable-debug-command", "local",
	}, extra...)
}

// ServerDir is where a redis-server on h keeps its (unused) files.
func ServerDir(h systems.Host) string { return filepath.Join(h.DataDir(), "redis") }

// StartOn starts a redis-server on h at port with extra options and
// returns once it answers PING, or fails with the tail of its log.
func StartOn(ctx context.Context, binary string, h systems.Host, port int, extra ...string) (systems.Process, error) {
	if err := h.MkdirAll(ServerDir(h)); err != nil {
		return nil, fmt.Errorf("redis-server on %s: %w", h.Name(), err)
	}
	p, err := h.Start("redis-server", ServerArgv(binary, h, port, extra...), nil)
	if err != nil {
		return nil, fmt.Errorf("redis-server on %s: %w", h.Name(), err)
	}
	addr := net.JoinHostPort(h.Address(), strconv.Itoa(port))
	if err := WaitAnswer(ctx, h, addr, p, 10*time.Second); err != nil {
		p.Stop()
		return nil, fmt.Errorf("redis-server on %s: %w", h.Name(), err)
	}
	return p, nil
}

// LocalOptions are Options for a client of a server on h at addr that
// connects from inside h when h can (systems.LocalDialer): how gait checks
// a server it started, so a fault on h's link does not hide one that is up.
func LocalOptions(h systems.Host, addr string) *goredis.Options {
	opts := Options(addr)
	if d, ok := h.(systems.LocalDialer); ok {
		opts.Dialer = func(ctx context.Context, _, addr string) (net.Conn, error) { return d.DialLocal(ctx, addr) }
	}
	return opts
}

// WaitAnswer polls the RESP server at addr on h with PING until it
// answers, p exits, or limit passes, connecting as LocalOptions does.
func WaitAnswer(ctx context.Context, h systems.Host, addr string, p systems.Process, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	opts := LocalOptions(h, addr)
	for {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		c, err := dialWith(pctx, opts)
		pcancel()
		if err == nil {
			return c.Close()
		}
		if p.Exited() {
			return fmt.Errorf("exited before answering on %s%s", addr, systems.LogTail(p))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not answering on %s after %v: %w%s", addr, limit, err, systems.LogTail(p))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Driver starts a primary on the first host and a replica of it (Redis's
// own asynchronous replication, replicaof) on every other, and, when
// Sentinel is set, a Sentinel beside every server to fail the primary
// over.
type Driver struct {
	Binary string
	Port   int
	// AppendFsync, if set, turns the append-only file on with this fsync
	// policy: always, everysec or no.
	AppendFsync string
	Sentinel    bool
	// SentinelPort is where each host's Sentinel listens.
	SentinelPort int
	// DownAfter is how long the Sentinels wait for a silent primary
	// before they fail it over.
	DownAfter time.Duration
}

// NewDriver returns a driver for Debian's redis-server on its usual ports,
// without persistence or Sentinel.
func NewDriver() *Driver {
	return &Driver{Binary: ServerBinary, Port: 6379, SentinelPort: 26379, DownAfter: time.Second}
}

func (d *Driver) Name() string { return "redis" }

// Settings a scenario's config: block may give redis.
var Settings = []systems.Setting{
	{Name: "appendfsync", Values: "always, everysec or no (turns the append-only file on)", Check: func(v string, _ int) error {
		if !slices.Contains([]string{"always", "everysec", "no"}, v) {
			return fmt.Errorf("%q: want always, everysec or no", v)
		}
		return nil
	}},
	{Name: "sentinel", Values: "true or false", Check: func(v string, nodes int) error {
		on, err := strconv.ParseBool(v)
		switch {
		case err != nil || (v != "true" && v != "false"):
			return fmt.Errorf("%q: want true or false", v)
		case on && nodes < 3:
			// A crashed primary takes its host's Sentinel with it; the
			// others must still be a majority to elect the one that fails
			// it over.
			return fmt.Errorf("true needs at least 3 nodes (a majority of Sentinels must outlive the primary's host), the scenario has %d", nodes)
		}
		return nil
	}},
	{Name: "down_after", Values: "a duration like 1s: how long Sentinel waits for a silent primary", Check: func(v string, _ int) error {
		if d, err := time.ParseDuration(v); err != nil || d < time.Millisecond {
			return fmt.Errorf("%q: want a duration of at least 1ms, like 1s", v)
		}
		return nil
	}},
}

// Configure applies settings that Settings' checks accepted.
func (d *Driver) Configure(settings map[string]string) error {
	for k, v := range settings {
		var err error
		switch k {
		case "appendfsync":
			d.AppendFsync = v
		case "sentinel":
			d.Sentinel, err = strconv.ParseBool(v)
		case "down_after":
			d.DownAfter, err = time.ParseDuration(v)
		default:
			err = fmt.Errorf("unknown setting %q", k)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}

// member is one server of a cluster and, with Sentinel, its Sentinel.
type member struct {
	host     systems.Host
	argv     []string // its server's options beyond ServerArgv's
	proc     systems.Process
	sentinel systems.Process
}

// Needs is the server program (which is Sentinel too).
func (d *Driver) Needs() []string { return []string{d.Binary} }

func (d *Driver) check() error {
	if _, err := os.Stat(d.Binary); err != nil {
		return fmt.Errorf("redis: server program: %w (install Debian's redis-server)", err)
	}
	return nil
}

// Start starts the primary on hosts[0], a replica on every other host, and
// the Sentinels if asked, and returns once every replica is in sync (and
// every Sentinel knows the others and every replica).
func (d *Driver) Start(ctx context.Context, hosts []systems.Host) (systems.Cluster, error) {
	if len(hosts) == 0 {
		return nil, errors.New("redis: no hosts")
	}
	if err := systems.CheckHere(hosts, d.check); err != nil {
		return nil, err
	}
	if d.Sentinel && len(hosts) < 3 {
		return nil, fmt.Errorf("redis: Sentinel needs at least 3 hosts, got %d", len(hosts))
	}
	c := &Cluster{d: d, byName: map[string]*member{}, failovers: map[string]*atomic.Int64{}}
	primary := net.JoinHostPort(hosts[0].Address(), strconv.Itoa(d.Port))
	for i, h := range hosts {
		if _, dup := c.byName[h.Name()]; dup {
			c.Stop()
			return nil, fmt.Errorf("redis: two hosts named %q", h.Name())
		}
		// A replica that needs a full copy gets it at once, not after
		// the 5 s Redis waits for more replicas to share one transfer.
		m := &member{host: h, argv: append(d.persistence(), "--repl-diskless-sync-delay", "0")}
		if i > 0 {
			// The primary names a replica by the address it connects
			// from: on loopback the kernel would pick 127.0.0.1 for all.
			m.argv = append(m.argv, "--replicaof", hosts[0].Address(), strconv.Itoa(d.Port),
				"--replica-announce-ip", h.Address(), "--bind-source-addr", h.Address())
		}
		c.members = append(c.members, m)
		c.byName[h.Name()] = m
		p, err := StartOn(ctx, d.Binary, h, d.Port, m.argv...)
		if err != nil {
			c.Stop()
			return nil, err
		}
		m.proc = p
	}
	if err := systems.WaitReady(ctx, "redis", 30*time.Second, c.starting, func(ctx context.Context) error {
		return c.inSync(ctx, primary)
	}); err != nil {
		c.Stop()
		return nil, err
	}
	if d.Sentinel {
		if err := c.startSentinels(ctx, hosts[0]); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// persistence is the server options for the append-only file, if asked.
func (d *Driver) persistence() []string {
	if d.AppendFsync == "" {
		return nil
	}
	return []string{"--appendonly", "yes", "--appendfsync", d.AppendFsync}
}

// Cluster is a primary and its replicas, with Sentinels if asked.
type Cluster struct {
	d       *Driver
	members []*member
	byName  map[string]*member

	mu sync.Mutex // guards members' processes: Restart may run beside the rest
	// failovers counts the +switch-master events each Sentinel published.
	failovers map[string]*atomic.Int64
	stopWatch context.CancelFunc
	watching  sync.WaitGroup
}

var _ systems.Cluster = (*Cluster)(nil)

func (c *Cluster) starting() []systems.Starting {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []systems.Starting
	for _, m := range c.members {
		if m.proc != nil {
			out = append(out, systems.Starting{Host: m.host.Name(), Proc: m.proc})
		}
		if m.sentinel != nil {
			out = append(out, systems.Starting{Host: m.host.Name(), Proc: m.sentinel})
		}
	}
	return out
}

func (c *Cluster) addr(m *member) string {
	return net.JoinHostPort(m.host.Address(), strconv.Itoa(c.d.Port))
}

// inSync is nil once the primary at addr has every other member as an
// online replica, else a NotReady naming one that is not.
func (c *Cluster) inSync(ctx context.Context, addr string) error {
	rep, err := replication(ctx, addr)
	if err != nil {
		return &systems.NotReady{Host: c.members[0].host.Name(), Proc: c.members[0].proc, Err: err}
	}
	for _, m := range c.members[1:] {
		r, ok := rep.replica(m.host.Address())
		if !ok || r.State != "online" {
			return &systems.NotReady{Host: m.host.Name(), Proc: m.proc,
				Err: fmt.Errorf("not an online replica of %s (primary reports %+v)", addr, rep.Replicas)}
		}
	}
	return nil
}

// Roles asks every server for its replication role: "primary" (Redis's
// master), "replica", or "down" if its process has exited; a running
// server that does not answer in time is "unreachable" (as etcd's).
func (c *Cluster) Roles(ctx context.Context) (map[string]string, error) {
	roles := map[string]string{}
	var mu sync.Mutex
	_, err := systems.ScrapeAll(len(c.members), func(i int, _ map[string]float64) error {
		m := c.members[i]
		role := "down"
		var err error
		if c.running(m) {
			var rep Replication
			if rep, err = replication(ctx, c.addr(m)); err == nil {
				role = rep.Role
			} else {
				role = "unreachable"
				err = fmt.Errorf("%s: %w", m.host.Name(), err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		roles[m.host.Name()] = role
		return err
	})
	return roles, err
}

func (c *Cluster) running(m *member) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return m.proc != nil && !m.proc.Exited()
}

// Client connects to the server on host, primary or replica: a replica
// serves reads and refuses writes (READONLY), as Redis does. With
// Sentinel, a client of the primary follows the primary: it asks the
// Sentinels where the primary is whenever it connects, as an application
// behind Sentinel does, so after a failover it writes to the promoted
// replica.
func (c *Cluster) Client(host string) (load.Client, error) {
	m, ok := c.byName[host]
	if !ok {
		return nil, fmt.Errorf("redis: no server on host %q", host)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c.d.Sentinel {
		if rep, err := replication(ctx, c.addr(m)); err == nil && rep.Role == "primary" {
			return c.dialPrimary(ctx)
		}
	}
	cl, err := Dial(ctx, c.addr(m))
	if err != nil {
		return nil, err
	}
	if m == c.members[0] {
		// The primary gait started: its replicas are every other member.
		for _, r := range c.members[1:] {
			cl.replicas = append(cl.replicas, r.host.Name())
		}
	}
	return cl, nil
}

// Restart starts the server (and Sentinel) on host again after a crash,
// with the options it first had: without persistence it comes back empty,
// and a former primary comes back a primary until Sentinel, if any, makes
// it a replica of the new one.
func (c *Cluster) Restart(ctx context.Context, host string) error {
	m, ok := c.byName[host]
	if !ok {
		return fmt.Errorf("redis: no server on host %q", host)
	}
	if c.running(m) {
		return fmt.Errorf("redis on %s: still running (pid %d)", host, m.proc.Pid())
	}
	p, err := StartOn(ctx, c.d.Binary, m.host, c.d.Port, m.argv...)
	if err != nil {
		return err
	}
	c.mu.Lock()
	m.proc = p
	c.mu.Unlock()
	if m.sentinel != nil && m.sentinel.Exited() {
		return c.startSentinel(ctx, m)
	}
	return nil
}

// Stop ends the Sentinels first, so that they fail nothing over, then
// every server at once.
func (c *Cluster) Stop() error {
	if c.stopWatch != nil {
		c.stopWatch()
		c.watching.Wait()
	}
	c.mu.Lock()
	var sentinels, servers []systems.Process
	for _, m := range c.members {
		if m.sentinel != nil {
			sentinels = append(sentinels, m.sentinel)
		}
		if m.proc != nil {
			servers = append(servers, m.proc)
		}
	}
	c.mu.Unlock()
	return errors.Join(systems.StopAll(sentinels), systems.StopAll(servers))
}

// Package gaitredis drives gait's own replicated Redis (docs/replica.md): on
// every host one unmodified redis-server and one `gait replica agent` in
// front of it. The first Voters hosts are raft voters, the rest non-voting
// duplicates that apply the same log. Clients speak RESP to an agent.
// Another server may stand behind the agents instead (Driver.Backend):
// gaitzookeeper runs ZooKeeper's this way.
package gaitredis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/replica"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/redis"
)

// Driver starts gait-redis deployments. The zero value is not ready; use New.
type Driver struct {
	Gait string // the gait program, which runs the agents
	// Backend is the server behind every agent: an unmodified redis-server
	// unless another is given.
	Backend Backend
	// Voters is how many of the hosts, from the first, vote in raft; the
	// others are duplicates. 0 means min(3, number of hosts).
	Voters int
	// Read, Fanout, WriteAll and Durability are the deployment's read
	// mode, read fan-out, write-all setting and durability (gait replica
	// agent's --read, --fanout, --write-all, --durability).
	Read       string
	Fanout     int
	WriteAll   bool
	Durability string
	// ScriptCommandStats is gait replica agent's --script-commandstats.
	ScriptCommandStats bool
	// Procs is each agent's --procs (how many threads run its Go code at
	// once). 0 shares the machine's CPUs among the deployment's agents, at
	// least one each: every host of a testbed is on this one machine, and
	// an agent with more threads than its share spends them waking each
	// other (futex, scheduler) on cores the others need; with --procs 1,
	// 3 agents on 2 cores took a quarter less CPU per SET.
	Procs int
	// Ports on each host's address: the server behind the agent, the
	// agent's clients, raft and agent-to-agent messages, and /metrics.
	ServerPort, ClientPort, RaftPort, MetricsPort int
	StartTimeout                                  time.Duration // until every agent serves a write and a read
}

// New returns a driver running the agents with the gait program that is
// running now (in a test, set Gait to a built gait).
func New() *Driver {
	gait, err := os.Executable()
	if err != nil {
		gait = "gait"
	}
	return &Driver{
		Gait:         gait,
		Backend:      RedisBackend{Binary: redis.ServerBinary},
		Read:         "linearizable",
		Fanout:       1,
		Durability:   "disk",
		ServerPort:   6379,
		ClientPort:   6380,
		RaftPort:     7000,
		MetricsPort:  9121,
		StartTimeout: 30 * time.Second,
	}
}

// Name is the system's: gait-redis, or its backend's.
func (d *Driver) Name() string { return d.Backend.System() }

// Ops are the operations of this driver's clients, in load.Op kind order:
// those of a plain Redis client.
var Ops = redis.Ops

// member is one replica: a server (redis-server) and its agent on one host.
type member struct {
	host  systems.Host
	voter bool

	mu     sync.Mutex // guards the processes: Restart may run beside Roles and Metrics
	server systems.Process
	agent  systems.Process
}

func (m *member) procs() (serverProc, agentProc systems.Process) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.server, m.agent
}

// Needs are the backend's files (when it names them), for a run across
// machines' preflight; gait itself is pushed to every machine.
func (d *Driver) Needs() []string {
	if n, ok := d.Backend.(systems.Needer); ok {
		return n.Needs()
	}
	return nil
}

func (d *Driver) addr(h systems.Host, port int) string {
	return net.JoinHostPort(h.Address(), strconv.Itoa(port))
}

// agentArgv is the agent's command line on h. join is the raft address of
// the member to join through, empty for the one that bootstraps.
//
// The agent runs under a shell that waits until the local server accepts
// connections: after a crash the testbed restarts a host's processes
// together, and an agent that finds no server exits.
func (d *Driver) agentArgv(m *member, join string, members int) []string {
	h := m.host
	argv := []string{"/bin/bash", "-c", waitServer, "gait-wait-server", h.Address(), strconv.Itoa(d.ServerPort),
		d.Gait, "replica", "agent",
		"--id", h.Name(),
		"--raft", d.addr(h, d.RaftPort)}
	argv = append(argv, d.Backend.AgentFlags(d.addr(h, d.ServerPort))...)
	argv = append(argv,
		"--listen", d.addr(h, d.ClientPort),
		"--metrics", d.addr(h, d.MetricsPort),
		"--data", filepath.Join(h.DataDir(), "replica"),
		"--read", d.Read,
		"--fanout", strconv.Itoa(d.Fanout),
		"--durability", d.Durability,
		"--procs", strconv.Itoa(d.procs(members)),
	)
	if d.WriteAll {
		argv = append(argv, "--write-all")
	}
	if d.ScriptCommandStats {
		argv = append(argv, "--script-commandstats")
	}
	if join == "" {
		return append(argv, "--bootstrap")
	}
	argv = append(argv, "--join", join)
	if !m.voter {
		argv = append(argv, "--nonvoter")
	}
	return argv
}

// procs is each agent's --procs in a deployment of members agents.
func (d *Driver) procs(members int) int {
	if d.Procs > 0 {
		return d.Procs
	}
	return max(1, runtime.NumCPU()/max(members, 1))
}

// waitServer waits up to 60 s (a JVM restarting on a busy machine) for
// $1:$2 to accept a connection, then runs the rest of its arguments in its
// place.
const waitServer = `for i in $(seq 1200); do (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && break; sleep 0.05; done; shift 2; exec "$@"`

// Start starts a server (redis-server) on every host, the agent of the first host
// (which bootstraps raft), then the others, which join through it; it
// returns once every agent serves a write and a linearizable read.
func (d *Driver) Start(ctx context.Context, hosts []systems.Host) (systems.Cluster, error) {
	voters, err := d.check(hosts)
	if err != nil {
		return nil, err
	}
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	c := &Cluster{d: d, byName: map[string]*member{}, http: &http.Client{}, token: token}
	for i, h := range hosts {
		m := &member{host: h, voter: i < voters}
		c.members = append(c.members, m)
		c.byName[h.Name()] = m
	}
	if err := c.start(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (d *Driver) check(hosts []systems.Host) (voters int, err error) {
	if len(hosts) == 0 {
		return 0, fmt.Errorf("%s: no hosts", d.Name())
	}
	seen := map[string]bool{}
	for _, h := range hosts {
		if seen[h.Name()] {
			return 0, fmt.Errorf("%s: two hosts named %q", d.Name(), h.Name())
		}
		seen[h.Name()] = true
	}
	voters = d.Voters
	if voters == 0 {
		voters = min(3, len(hosts))
	}
	if voters < 1 || voters > len(hosts) {
		return 0, fmt.Errorf("%s: %d voters on %d hosts: want 1 to %d", d.Name(), voters, len(hosts), len(hosts))
	}
	if err := d.checkShape(voters, len(hosts)-voters); err != nil {
		return 0, err
	}
	if _, err := os.Stat(d.Gait); err != nil {
		return 0, fmt.Errorf("%s: %w", d.Name(), err)
	}
	return voters, systems.CheckHere(hosts, d.Backend.Check)
}

// checkShape checks the deployment's settings (read mode, fan-out) and
// its shape (CheckShape) before anything starts.
func (d *Driver) checkShape(voters, duplicates int) error {
	if _, err := replica.ParseReadMode(d.Read); err != nil {
		return fmt.Errorf("%s: %w", d.Name(), err)
	}
	if err := CheckShape(voters, duplicates, d.Fanout); err != nil {
		return fmt.Errorf("%s: %w", d.Name(), err)
	}
	return nil
}

func (c *Cluster) start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.d.StartTimeout)
	defer cancel()
	for _, m := range c.members {
		p, err := c.d.Backend.Start(ctx, m.host, c.d.ServerPort)
		if err != nil {
			return fmt.Errorf("%s: %w", c.d.Name(), err)
		}
		m.server = p
	}
	first := c.members[0]
	if err := c.launchAgent(first, ""); err != nil {
		return err
	}
	if err := c.waitServes(ctx, first); err != nil {
		return err
	}
	join := c.d.addr(first.host, c.d.RaftPort)
	for _, m := range c.members[1:] {
		if err := c.launchAgent(m, join); err != nil {
			return err
		}
	}
	errs := make([]error, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members[1:] {
		wg.Go(func() { errs[i] = c.waitServes(ctx, m) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// launchAgent starts the agent of m, joining through join (empty: bootstrap).
func (c *Cluster) launchAgent(m *member, join string) error {
	if err := m.host.MkdirAll(filepath.Join(m.host.DataDir(), "replica")); err != nil {
		return fmt.Errorf("%s agent on %s: %w", c.d.Name(), m.host.Name(), err)
	}
	p, err := m.host.Start("gait-replica", c.d.agentArgv(m, join, len(c.members)), nil)
	if err != nil {
		return fmt.Errorf("%s agent on %s: %w", c.d.Name(), m.host.Name(), err)
	}
	m.mu.Lock()
	m.agent = p
	m.mu.Unlock()
	return nil
}

// waitServes waits until a write through m's agent is acknowledged and a
// linearizable read through it returns the value written, which shows the
// agent joined, knows the leader and has applied the log that far.
func (c *Cluster) waitServes(ctx context.Context, m *member) error {
	key, val := "gait-ready:"+m.host.Name(), c.token+strconv.FormatInt(time.Now().UnixNano(), 36)
	var last error
	for {
		_, agent := m.procs()
		if agent.Exited() {
			return fmt.Errorf("%s agent on %s exited while starting%s", c.d.Name(), m.host.Name(), systems.LogTail(agent))
		}
		if last = c.d.Backend.Probe(ctx, m.host, c.d.addr(m.host, c.d.ClientPort), key, val); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s agent on %s not serving: %w%s", c.d.Name(), m.host.Name(), last, systems.LogTail(agent))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// newToken tells this deployment's readiness writes from an earlier one's.
func newToken() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return hex.EncodeToString(b) + "-", nil
}

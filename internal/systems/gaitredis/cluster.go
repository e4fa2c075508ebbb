package gaitredis

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/prom"
	dto "github.com/prometheus/client_model/go"
)

// Cluster is a running gait-redis deployment started by Driver.Start.
type Cluster struct {
	d       *Driver
	members []*member
	byName  map[string]*member
	http    *http.Client
	token   string
	means   prom.IntervalMeans // of the histograms, between scrapes
}

var _ systems.Cluster = (*Cluster)(nil)

// Roles asks every agent (its /metrics, at once) whether it leads raft.
// Every other member is a "follower" if it votes, a "duplicate" if not,
// "down" if its agent has exited, "unreachable" if it did not answer in
// time. A leader that cannot answer (behind a limping link) is still named
// "leader" when a majority of voters say they follow it. With no leader, or
// two agents that each think they lead (an old leader that has not yet
// noticed), Roles returns the roles with an error.
func (c *Cluster) Roles(ctx context.Context) (map[string]string, error) {
	fams, errs := c.scrapeAll(ctx, statusTimeout)
	roles := map[string]string{}
	var leaders []string
	if i := c.followedLeader(fams, errs); i >= 0 && errs[i] != nil {
		name := c.members[i].host.Name()
		roles[name] = "leader" // it did not answer, but its followers name it
		leaders = append(leaders, name)
	}
	for i, m := range c.members {
		name := m.host.Name()
		if roles[name] != "" {
			continue
		}
		switch {
		case errs[i] == nil && gauge(fams[i], mLeader) == 1:
			roles[name] = "leader"
			leaders = append(leaders, name)
		case errs[i] == nil && m.voter:
			roles[name] = "follower"
		case errs[i] == nil:
			roles[name] = "duplicate"
		case m.down():
			roles[name] = "down"
		default:
			roles[name] = "unreachable"
		}
	}
	switch len(leaders) {
	case 1:
		return roles, nil
	case 0:
		if err := errors.Join(errs...); err != nil {
			return roles, fmt.Errorf("%s: no agent leads: %w", c.d.Name(), err)
		}
		return roles, fmt.Errorf("%s: no agent leads (every agent answered; an election is under way)", c.d.Name())
	}
	sort.Strings(leaders)
	return roles, fmt.Errorf("%s: agents %v each lead", c.d.Name(), leaders)
}

// followedLeader is the index of the member a majority of all voters say
// they follow (gait_replica_follows), -1 when there is none or it is down.
func (c *Cluster) followedLeader(fams []map[string]*dto.MetricFamily, errs []error) int {
	votes := map[string]int{}
	voters := 0
	for i, m := range c.members {
		if !m.voter {
			continue
		}
		voters++
		if errs[i] == nil {
			if id := label1(fams[i], mFollows, "leader"); id != "" {
				votes[id]++
			}
		}
	}
	for i, m := range c.members {
		if votes[m.host.Name()] > voters/2 && !m.down() {
			return i
		}
	}
	return -1
}

// statusTimeout bounds one agent's answer, so an agent that is down or
// limping cannot hold up Roles.
const statusTimeout = 3 * time.Second

// down tells whether the member's agent or server has exited.
func (m *member) down() bool {
	r, a := m.procs()
	return r == nil || a == nil || r.Exited() || a.Exited()
}

// Client returns a client of the backend's protocol (Redis's) talking to
// the agent on host only.
func (c *Cluster) Client(host string) (load.Client, error) {
	m, err := c.member(host)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.d.Backend.Dial(ctx, c.AgentAddr(m.host.Name()))
}

// AgentAddr is where clients reach the agent on host.
func (c *Cluster) AgentAddr(host string) string {
	m, ok := c.byName[host]
	if !ok {
		return ""
	}
	return c.d.addr(m.host, c.d.ClientPort)
}

// MetricsURL is the /metrics page of the agent on host.
func (c *Cluster) MetricsURL(host string) string {
	m, ok := c.byName[host]
	if !ok {
		return ""
	}
	return "http://" + c.d.addr(m.host, c.d.MetricsPort) + "/metrics"
}

// ServerAddr is where the server (redis-server) behind the agent on host
// listens; reading it directly bypasses replication (for checks only).
func (c *Cluster) ServerAddr(host string) string {
	m, ok := c.byName[host]
	if !ok {
		return ""
	}
	return c.d.addr(m.host, c.d.ServerPort)
}

// KillServer kills the server (redis-server) on host (SIGKILL), leaving
// its agent running: the agent stops applying until RestartServer brings
// the server back, which it then re-attaches.
func (c *Cluster) KillServer(host string) error {
	m, err := c.member(host)
	if err != nil {
		return err
	}
	r, _ := m.procs()
	if err := syscall.Kill(r.Pid(), syscall.SIGKILL); err != nil {
		return fmt.Errorf("%s on %s: kill server pid %d: %w", c.d.Name(), host, r.Pid(), err)
	}
	for deadline := time.Now().Add(5 * time.Second); !r.Exited(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s on %s: server pid %d still runs 5s after SIGKILL", c.d.Name(), host, r.Pid())
		}
	}
	return nil
}

func (c *Cluster) member(host string) (*member, error) {
	m, ok := c.byName[host]
	if !ok {
		return nil, fmt.Errorf("%s: no member on host %q", c.d.Name(), host)
	}
	return m, nil
}

// Restart starts what of the member on host has exited: the server
// (a redis-server comes back empty), then the agent, which refills it from its raft
// snapshot and log, joining through a member that runs. An agent that still
// runs re-attaches the new redis-server and refills it itself. It returns
// once the agent serves a write and a read.
func (c *Cluster) Restart(ctx context.Context, host string) error {
	m, err := c.member(host)
	if err != nil {
		return err
	}
	r, a := m.procs()
	if !r.Exited() && !a.Exited() {
		return fmt.Errorf("%s on %s: still running (server pid %d, agent pid %d)", c.d.Name(), host, r.Pid(), a.Pid())
	}
	ctx, cancel := context.WithTimeout(ctx, c.d.StartTimeout)
	defer cancel()
	if r.Exited() {
		if err := c.restartServer(ctx, m, r); err != nil {
			return fmt.Errorf("%s restart: %w", c.d.Name(), err)
		}
	}
	if a.Exited() {
		if err := c.launchAgent(m, c.joinFor(m)); err != nil {
			return fmt.Errorf("%s restart: %w", c.d.Name(), err)
		}
	}
	return c.waitServes(ctx, m)
}

// RestartServer starts host's exited server again and returns
// once it answers on its host. The agent, which still runs, re-attaches and
// refills it on its own; WaitServing tells when it serves again. Unlike
// Restart it does not wait for that: a fault schedule clears its faults one
// at a time, and an agent behind a link limping at 1000x may take longer to
// serve than the limp left on its link.
func (c *Cluster) RestartServer(ctx context.Context, host string) error {
	m, err := c.member(host)
	if err != nil {
		return err
	}
	r, _ := m.procs()
	if !r.Exited() {
		return fmt.Errorf("%s on %s: server pid %d still runs", c.d.Name(), host, r.Pid())
	}
	ctx, cancel := context.WithTimeout(ctx, c.d.StartTimeout)
	defer cancel()
	if err := c.restartServer(ctx, m, r); err != nil {
		return fmt.Errorf("%s on %s: restart server: %w", c.d.Name(), host, err)
	}
	return nil
}

// restartServer starts m's exited server r again: in place when its host
// can (a testbed's processes: its crash recovery restarts every process it
// knows, and must not find two for one server), else as a new process.
func (c *Cluster) restartServer(ctx context.Context, m *member, r systems.Process) error {
	if rs, ok := r.(interface{ Restart() error }); ok {
		if err := rs.Restart(); err != nil {
			return err
		}
		return c.d.Backend.Answers(ctx, m.host, c.d.addr(m.host, c.d.ServerPort), r)
	}
	p, err := c.d.Backend.Start(ctx, m.host, c.d.ServerPort)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.server = p
	m.mu.Unlock()
	return nil
}

// joinFor picks the raft address m joins through on a restart: empty for
// the first member (it bootstrapped, and its raft state says so), else the
// first other member that runs.
func (c *Cluster) joinFor(m *member) string {
	if m == c.members[0] {
		return ""
	}
	for _, o := range c.members {
		if o != m && !o.down() {
			return c.d.addr(o.host, c.d.RaftPort)
		}
	}
	return c.d.addr(c.members[0].host, c.d.RaftPort)
}

// Stop ends every agent at once, then every server.
func (c *Cluster) Stop() error {
	var agents, servers []systems.Process
	for _, m := range c.members {
		r, a := m.procs()
		if a != nil {
			agents = append(agents, a)
		}
		if r != nil {
			servers = append(servers, r)
		}
	}
	err := errors.Join(systems.StopAll(agents), systems.StopAll(servers))
	c.http.CloseIdleConnections()
	return err
}

// WaitServing waits, up to the driver's StartTimeout, until the agent on
// host serves a write and a linearizable read: after a fault, it tells
// when the member is back.
func (c *Cluster) WaitServing(ctx context.Context, host string) error {
	m, err := c.member(host)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.d.StartTimeout)
	defer cancel()
	return c.waitServes(ctx, m)
}

// Hosts names the members' hosts, in the order they were given.
func (c *Cluster) Hosts() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.host.Name()
	}
	return out
}

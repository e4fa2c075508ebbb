package remote

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/agent"
	"github.com/gait-dev/gait/internal/limp"
	"github.com/gait-dev/gait/internal/testbed"
)

// callTimeout bounds one call to an agent on behalf of an injector: a
// fault must not hang the schedule on a machine that stopped answering.
const callTimeout = 30 * time.Second

// Testbed is a testbed an agent made on its machine.
type Testbed struct {
	Machine *Machine
	ID      string
	Subnet  netip.Prefix
	Dir     string // on its machine, where its hosts' directories are
	Hosts   []*Host
}

// Host is a host of a remote testbed. It implements limp.Host by asking
// the agent, so every injector works on it as on a local host.
type Host struct {
	Name    string
	Addr    netip.Addr
	DataDir string // on its machine

	m         *Machine
	run       string
	baseline  uint64
	cpuCgroup bool

	mu   sync.Mutex
	acts []act // the latest calls, oldest first, at most maxActs
}

// act is one call to the host's agent: when this machine sent it, and
// when the agent began it, on this machine's clock.
type act struct{ sent, began time.Time }

// maxActs bounds the calls a host remembers; an injector's apply makes
// one to a few, and its event asks right after.
const maxActs = 16

var (
	_ limp.Host    = (*Host)(nil)
	_ limp.Clocked = (*Host)(nil)
)

// Up makes a testbed of n hosts on the machine.
func (m *Machine) Up(ctx context.Context, a agent.UpArgs) (*Testbed, error) {
	var r agent.UpResult
	if err := m.Call(ctx, "up", "", "", a, &r); err != nil {
		return nil, err
	}
	subnet, err := netip.ParsePrefix(r.Subnet)
	if err != nil {
		return nil, fmt.Errorf("up on %s: subnet %q: %w", m.Name, r.Subnet, err)
	}
	tb := &Testbed{Machine: m, ID: r.Run, Subnet: subnet, Dir: r.Dir}
	for _, hi := range r.Hosts {
		addr, err := netip.ParseAddr(hi.Addr)
		if err != nil {
			return tb, fmt.Errorf("up on %s: host %s: %w", m.Name, hi.Name, err)
		}
		tb.Hosts = append(tb.Hosts, &Host{Name: hi.Name, Addr: addr, DataDir: hi.DataDir, m: m, run: r.Run,
			baseline: hi.Baseline, cpuCgroup: hi.CPUCgroup})
	}
	return tb, nil
}

// Close takes the testbed down on its machine.
func (tb *Testbed) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return tb.Machine.Call(ctx, "down", tb.ID, "", nil, nil)
}

// Host returns the host called name, or nil.
func (tb *Testbed) Host(name string) *Host {
	for _, h := range tb.Hosts {
		if h.Name == name {
			return h
		}
	}
	return nil
}

// HostName names the host as machine/host: m1/h0.
func (h *Host) HostName() string { return h.m.Name + "/" + h.Name }

// Machine is the machine the host is on.
func (h *Host) Machine() *Machine { return h.m }

func (h *Host) call(op string, args, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	sent := time.Now()
	began, err := h.m.call(ctx, op, h.run, h.Name, args, result)
	if !began.IsZero() {
		h.mu.Lock()
		h.acts = append(h.acts, act{sent, began})
		if len(h.acts) > maxActs {
			h.acts = h.acts[len(h.acts)-maxActs:]
		}
		h.mu.Unlock()
	}
	return sentinel(err)
}

// BeganAt says when the host's agent began the first call sent at or
// after sent, on this machine's clock: the agent's time corrected by its
// machine's measured offset.
func (h *Host) BeganAt(sent time.Time) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.acts {
		if !a.sent.Before(sent) {
			return a.began, true
		}
	}
	return time.Time{}, false
}

// sentinel gives back the testbed's sentinel errors the agent sent as
// codes, so errors.Is works as on a local host.
func sentinel(err error) error {
	ae, ok := err.(*AgentError)
	if !ok {
		return err
	}
	switch ae.Code {
	case agent.CodeNoDisk:
		return fmt.Errorf("%w (%s)", testbed.ErrNoDisk, ae)
	case agent.CodeNoCPUCgroup:
		return fmt.Errorf("%w (%s)", testbed.ErrNoCPUCgroup, ae)
	}
	return err
}

func (h *Host) Baseline() uint64   { return h.baseline }
func (h *Host) HasCPUCgroup() bool { return h.cpuCgroup }

func (h *Host) SetBandwidth(bps uint64) error {
	return h.call("bandwidth", agent.Number{N: float64(bps)}, nil)
}

func (h *Host) SetLinkUp(up bool) error { return h.call("link", agent.Bool{B: up}, nil) }

func (h *Host) SetDiskFactor(f float64) error { return h.call("disk", agent.Number{N: f}, nil) }

func (h *Host) LimitCPU(cpus float64) error { return h.call("cpu", agent.Number{N: cpus}, nil) }

func (h *Host) SignalAll(sig syscall.Signal) error {
	return h.call("signal", agent.Number{N: float64(sig)}, nil)
}

// CPUTime asks the agent; a failed call counts as no time used, as a
// process that cannot be read counts on a local host.
func (h *Host) CPUTime() time.Duration {
	var n agent.Number
	if err := h.call("cputime", nil, &n); err != nil {
		return 0
	}
	return time.Duration(n.N)
}

func (h *Host) KillAll() error        { return h.call("kill", nil, nil) }
func (h *Host) RestartStopped() error { return h.call("restart", nil, nil) }

// Start runs a process on the host; its output goes to the host's log
// directory on its machine.
func (h *Host) Start(a agent.StartArgs) (*Proc, error) {
	var st agent.ProcState
	if err := h.call("start", a, &st); err != nil {
		return nil, err
	}
	return &Proc{h: h, name: a.Name, id: st.ID, pid: st.Pid, logPath: st.LogPath}, nil
}

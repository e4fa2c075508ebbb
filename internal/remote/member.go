package remote

import (
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/agent"
	"github.com/gait-dev/gait/internal/systems"
)

// StopGrace is how long a server on a remote host may take to exit after
// SIGTERM before its agent kills it, as on a local host.
const StopGrace = 5 * time.Second

// Member makes h a host a system driver starts its servers on, named
// name (the scenario's name for it: h4 may be h1 of its machine). Its
// files are the machine's: every call goes to the machine's agent, and
// only the run's directory there is reachable.
func (h *Host) Member(name string) systems.Host { return member{h: h, name: name} }

type member struct {
	h    *Host
	name string
}

var _ systems.Elsewhere = member{}

func (m member) Name() string    { return m.name }
func (m member) Address() string { return m.h.Addr.String() }
func (m member) DataDir() string { return m.h.DataDir }

// Machine says where the member is, for logs and errors.
func (m member) Machine() string { return m.h.HostName() }

func (m member) Start(name string, argv []string, env []string) (systems.Process, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("start %s on %s: no program", name, m.name)
	}
	argv = m.h.m.ownBinary(argv)
	p, err := m.h.Start(agent.StartArgs{Name: name, Path: argv[0], Args: argv[1:], Env: env})
	if err != nil {
		return nil, fmt.Errorf("start %s on %s (%s): %w", name, m.name, m.h.HostName(), err)
	}
	return p, nil
}

// ownBinary gives the machine's gait binary for every word of argv that
// names the one on this machine: a server that is gait itself (gait
// replica agent, started by gait-redis) runs from the copy pushed there.
func (m *Machine) ownBinary(argv []string) []string {
	out := slices.Clone(argv)
	for i, w := range out {
		if w == m.Pushed && m.Binary != "" {
			out[i] = m.Binary
		}
	}
	return out
}

func (m member) file(a agent.FileArgs) ([]byte, error) {
	var r agent.FileArgs
	if err := m.h.call("file", a, &r); err != nil {
		return nil, err
	}
	return r.Data, nil
}

func (m member) MkdirAll(path string) error {
	_, err := m.file(agent.FileArgs{Do: "mkdir", Path: path})
	return err
}

func (m member) RemoveAll(path string) error {
	_, err := m.file(agent.FileArgs{Do: "remove", Path: path})
	return err
}

func (m member) WriteFile(path string, data []byte) error {
	_, err := m.file(agent.FileArgs{Do: "write", Path: path, Data: data})
	return err
}

func (m member) ReadFile(path string) ([]byte, error) {
	return m.file(agent.FileArgs{Do: "read", Path: path})
}

func (m member) FileSystemSize(path string) (int64, error) {
	var r agent.FileArgs
	err := m.h.call("file", agent.FileArgs{Do: "size", Path: path}, &r)
	return r.Size, err
}

// Proc is a process an agent started on a host of its machine.
type Proc struct {
	h       *Host
	name    string
	id      int
	logPath string

	mu  sync.Mutex
	pid int // of its latest incarnation
}

var _ systems.Process = (*Proc)(nil)

func (p *Proc) do(a agent.ProcArgs) (agent.ProcState, error) {
	a.ID = p.id
	var st agent.ProcState
	err := p.h.call("proc", a, &st)
	if err == nil {
		p.mu.Lock()
		p.pid = st.Pid
		p.mu.Unlock()
	}
	return st, err
}

func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

func (p *Proc) Stop() error {
	_, err := p.do(agent.ProcArgs{Do: "stop", Grace: StopGrace})
	return err
}

// Exited asks the agent; a machine that does not answer has lost its
// processes for all the driver can tell.
func (p *Proc) Exited() bool {
	st, err := p.do(agent.ProcArgs{Do: "state"})
	return err != nil || !st.Running
}

// Signal sends sig to the process and what it forked.
func (p *Proc) Signal(sig syscall.Signal) error {
	_, err := p.do(agent.ProcArgs{Do: "signal", Signal: int(sig)})
	return err
}

// Restart starts the exited process again in place.
func (p *Proc) Restart() error {
	_, err := p.do(agent.ProcArgs{Do: "restart"})
	return err
}

// LogFile is the process's standard error, a file on its machine, for
// systems.Output (which reads it through the host).
func (p *Proc) LogFile() string { return p.logPath }

// ReadLog is the end of the process's standard error on its machine,
// for systems.LogTail.
func (p *Proc) ReadLog() (where, text string, err error) {
	st, err := p.do(agent.ProcArgs{Do: "log"})
	return p.h.HostName() + ":" + p.logPath, st.Log, err
}

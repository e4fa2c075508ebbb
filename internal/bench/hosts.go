package bench

import (
	"path/filepath"
	"time"

	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/testbed"
)

// stopGrace is how long a server may take to exit after SIGTERM.
const stopGrace = 5 * time.Second

// host makes a testbed host a systems.Host whose processes write their
// output to logs.
type host struct {
	h    *testbed.Host
	logs string
}

var _ systems.Host = host{}

func (a host) Name() string    { return a.h.Name }
func (a host) Address() string { return a.h.Addr.String() }
func (a host) DataDir() string { return a.h.DataDir }

func (a host) Start(name string, argv []string, env []string) (systems.Process, error) {
	p, err := a.h.Start(testbed.ProcSpec{Name: name, Path: argv[0], Args: argv[1:], Env: env, LogDir: a.logs})
	if err != nil {
		return nil, err
	}
	return proc{p}, nil
}

// proc makes a testbed process a systems.Process.
type proc struct{ p *testbed.Proc }

func (a proc) Pid() int     { return a.p.Pid() }
func (a proc) Stop() error  { return a.p.Stop(stopGrace) }
func (a proc) Exited() bool { return !a.p.Running() }

// LogPath is where the server writes its log: its standard error (etcd's
// zap logger writes there).
func (a proc) LogPath() string { return filepath.Join(a.p.Spec.LogDir, a.p.Spec.Name+".stderr") }

// hostsOf adapts a testbed's hosts; each keeps its processes' output in
// <logs>/<host>/log, outside the hosts' own directories, so the logs
// outlive the hosts even when gait is killed.
func hostsOf(tb *testbed.Testbed, logs string) []systems.Host {
	out := make([]systems.Host, len(tb.Hosts))
	for i, h := range tb.Hosts {
		out[i] = host{h, filepath.Join(logs, h.Name, "log")}
	}
	return out
}

// Package tbhost makes testbed hosts (internal/testbed) the hosts a system
// driver starts its servers on (systems.Host): the one adapter between the
// two, for gait run, gait replica cluster and the tests.
package tbhost

import (
	"context"
	"net"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/testbed"
)

// StopGrace is how long a server may take to exit after SIGTERM before
// Stop kills it.
const StopGrace = 5 * time.Second

// New makes h a systems.Host whose processes write their output to
// logDir, or to the host's own log directory (<host dir>/log, removed with
// the testbed unless it has a directory of its own) when logDir is empty.
func New(h *testbed.Host, logDir string) systems.Host {
	return host{h: h, logs: logDir}
}

// Hosts adapts every host of tb. With logs empty each host keeps its
// processes' output in its own log directory; otherwise in
// <logs>/<host>/log, outside the hosts' directories, so the logs outlive
// the hosts even when gait is killed.
func Hosts(tb *testbed.Testbed, logs string) []systems.Host {
	out := make([]systems.Host, len(tb.Hosts))
	for i, h := range tb.Hosts {
		dir := ""
		if logs != "" {
			dir = filepath.Join(logs, h.Name, "log")
		}
		out[i] = New(h, dir)
	}
	return out
}

type host struct {
	systems.LocalFiles
	h    *testbed.Host
	logs string
}

var _ systems.Host = host{}

func (a host) Name() string    { return a.h.Name }
func (a host) Address() string { return a.h.Addr.String() }
func (a host) DataDir() string { return a.h.DataDir }

// DialLocal connects to addr from inside the host's network namespace,
// where the host's own address is reached over its loopback, not its link.
func (a host) DialLocal(ctx context.Context, addr string) (net.Conn, error) {
	var c net.Conn
	err := a.h.Do(func() (err error) {
		c, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		return err
	})
	return c, err
}

func (a host) Start(name string, argv []string, env []string) (systems.Process, error) {
	p, err := a.h.Start(testbed.ProcSpec{Name: name, Path: argv[0], Args: argv[1:], Env: env, LogDir: a.logs})
	if err != nil {
		return nil, err
	}
	return proc{p}, nil
}

// proc makes a testbed process a systems.Process.
type proc struct{ p *testbed.Proc }

var _ systems.Process = proc{}

func (a proc) Pid() int     { return a.p.Pid() }
func (a proc) Stop() error  { return a.p.Stop(StopGrace) }
func (a proc) Exited() bool { return !a.p.Running() }

// Signal sends sig to the process and what it forked (HDFS's regenerate
// op stops a DataNode and resumes it).
func (a proc) Signal(sig syscall.Signal) error { return a.p.Signal(sig) }

// Restart starts the exited process again in place, as the testbed's own
// crash recovery does: a second process for the same server would be
// started beside it on the host's next crash recovery.
func (a proc) Restart() error { return a.p.Restart() }

// LogPath is where the server writes its log: its standard error (etcd's
// zap logger writes there), for systems.LogTail.
func (a proc) LogPath() string { return filepath.Join(a.p.Spec.LogDir, a.p.Spec.Name+".stderr") }

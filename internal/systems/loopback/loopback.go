// Package loopback provides systems.Host on loopback addresses, so system
// drivers can be tested without root or network namespaces. Linux answers
// every address of 127.0.0.0/8, so each host gets its own address and servers
// on different hosts can all use their usual fixed ports.
package loopback

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/systems"
)

// DefaultGrace is how long Process.Stop waits after SIGTERM before SIGKILL.
const DefaultGrace = 5 * time.Second

// Host is a systems.Host on one loopback address with its own data directory.
type Host struct {
	systems.LocalFiles
	name, addr, dir string
	// Grace is how long Stop of a process started here waits after SIGTERM
	// before SIGKILL.
	Grace time.Duration
}

// New returns a host named name on address addr keeping its data in dir.
func New(name, addr, dir string) *Host {
	return &Host{name: name, addr: addr, dir: dir, Grace: DefaultGrace}
}

// Hosts returns n hosts named h1..hn with data directories under dir. They
// share a /24 picked at random from 127.16.0.0-127.255.255.0, so that test runs
// that overlap in time (two packages, two checkouts) rarely collide on an
// address and port; host i gets address .i.
func Hosts(dir string, n int) ([]*Host, error) {
	if n < 1 || n > 254 {
		return nil, fmt.Errorf("loopback hosts: need 1 to 254 hosts, got %d", n)
	}
	b, c := 16+rand.IntN(240), rand.IntN(256)
	hosts := make([]*Host, n)
	for i := range hosts {
		name := fmt.Sprintf("h%d", i+1)
		hdir := filepath.Join(dir, name)
		if err := os.MkdirAll(hdir, 0o755); err != nil {
			return nil, fmt.Errorf("loopback host %s: %w", name, err)
		}
		hosts[i] = New(name, fmt.Sprintf("127.%d.%d.%d", b, c, i+1), hdir)
	}
	return hosts, nil
}

func (h *Host) Name() string    { return h.name }
func (h *Host) Address() string { return h.addr }
func (h *Host) DataDir() string { return h.dir }

// Start runs argv with env added to this process's environment. Output goes
// to <DataDir>/<name>.log, appended across restarts.
func (h *Host) Start(name string, argv []string, env []string) (systems.Process, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("start %s on %s: empty command", name, h.name)
	}
	logPath := filepath.Join(h.dir, name+".log")
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s on %s: %w", name, h.name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = h.dir
	cmd.Stdout, cmd.Stderr = out, out
	// Pdeathsig: a test binary that dies must not leave servers behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s on %s: %w", name, h.name, err)
	}
	p := &Process{cmd: cmd, log: logPath, grace: h.Grace, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	return p, nil
}

// Process is a process started by Host.Start.
type Process struct {
	cmd   *exec.Cmd
	log   string
	grace time.Duration
	done  chan struct{}
	err   error // from Wait, valid once done is closed

	stopOnce sync.Once
	stopErr  error
}

func (p *Process) Pid() int { return p.cmd.Process.Pid }

// LogPath is the file holding the process's output.
func (p *Process) LogPath() string { return p.log }

func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM and, if the process is still there after the host's Grace,
// SIGKILL; it returns once the process is gone. A process that had already
// exited, or that ends by one of these signals, stops without error.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() { p.stopErr = p.stop() })
	return p.stopErr
}

func (p *Process) stop() error {
	if p.Exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop pid %d: %w", p.Pid(), err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(p.grace):
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill pid %d: %w", p.Pid(), err)
	}
	<-p.done
	return nil
}

package testbed

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/procstat"
)

// ProcSpec says how to start a process on a host.
type ProcSpec struct {
	Name   string   // names the log files <LogDir>/<Name>.stdout and .stderr
	Path   string   // program, looked up in PATH when it has no slash
	Args   []string // arguments after the program name
	Env    []string // KEY=value pairs added to gait's environment
	Dir    string   // working directory; empty means the host's data directory
	LogDir string   // where output goes; empty means <host dir>/log
}

// Proc is a supervised process on a host: gait knows its pid, keeps its
// output, sees it exit, and can kill or restart it.
type Proc struct {
	Host *Host
	Spec ProcSpec

	restartMu sync.Mutex
	mu        sync.Mutex
	pid       int
	done      chan struct{}
	err       error
	starts    int
}

// Start runs a process inside the host's network namespace (and CPU
// cgroup, when there is one), in its own process group.
func (h *Host) Start(spec ProcSpec) (*Proc, error) {
	if spec.Name == "" {
		return nil, fmt.Errorf("start on %s: process needs a name", h.Name)
	}
	path, err := exec.LookPath(spec.Path)
	if err != nil {
		return nil, fmt.Errorf("start %s on %s: %w", spec.Name, h.Name, err)
	}
	spec.Path = path
	if spec.Dir == "" {
		spec.Dir = h.DataDir
	}
	if spec.LogDir == "" {
		spec.LogDir = filepath.Join(h.Dir, "log")
	}
	p := &Proc{Host: h, Spec: spec}
	if err := p.start(); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
	return p, nil
}

func (p *Proc) start() error {
	h, spec := p.Host, p.Spec
	if err := os.MkdirAll(spec.LogDir, 0o755); err != nil {
		return fmt.Errorf("start %s on %s: %w", spec.Name, h.Name, err)
	}
	stdout, err := openLog(filepath.Join(spec.LogDir, spec.Name+".stdout"))
	if err != nil {
		return err
	}
	stderr, err := openLog(filepath.Join(spec.LogDir, spec.Name+".stderr"))
	if err != nil {
		stdout.Close()
		return err
	}
	// A shell joins the host's cgroup, changes to the working
	// directory and becomes the program, keeping its pid: the program
	// and all it forks are in the cgroup from their first instruction.
	// The directory change must happen after exec: the data directory
	// may be a limpfs this process serves, and a child touching it
	// between fork and exec deadlocks against the Go runtime.
	args := append([]string{"-c", startScript, "gait-start", h.cgroupProcs(), spec.Dir, spec.Path}, spec.Args...)
	cmd := exec.Command("/bin/sh", args...)
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Pdeathsig: if gait itself is killed, its hosts' processes die
	// with it instead of running on unsupervised.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = inNamespace(h.ns, cmd.Start)
	if err != nil {
		stdout.Close()
		stderr.Close()
		return fmt.Errorf("start %s on %s: %w", spec.Name, h.Name, err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.pid, p.done, p.err = cmd.Process.Pid, done, nil
	p.starts++
	p.mu.Unlock()
	pid := cmd.Process.Pid
	if rerr := h.tb.record(func(s *state) {
		s.Procs = append(s.Procs, procEntry{Pid: pid, Start: procstat.Identify(pid).Start})
	}); rerr != nil {
		// A process Clean could not find must not outlive gait.
		syscall.Kill(-pid, syscall.SIGKILL)
		err = fmt.Errorf("start %s on %s: %w", spec.Name, h.Name, rerr)
	}
	go func() {
		werr := cmd.Wait()
		stdout.Close()
		stderr.Close()
		p.mu.Lock()
		p.err = werr
		p.mu.Unlock()
		close(done)
	}()
	return err
}

// startScript's arguments: the cgroup.procs file to join (or ""), the
// working directory, then the program and its arguments.
const startScript = `{ [ -z "$1" ] || echo $$ > "$1"; } && cd "$2" && shift 2 && exec "$@"`

func openLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return f, nil
}

// Pid returns the pid of the current (or last) incarnation.
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

// Starts counts how often the process was started, the first time included.
func (p *Proc) Starts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
}

// Done is closed when the current incarnation exits.
func (p *Proc) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// Running reports whether the current incarnation has not exited.
func (p *Proc) Running() bool {
	select {
	case <-p.Done():
		return false
	default:
		return true
	}
}

// Err returns how the last incarnation ended (nil while it runs or
// after a clean exit).
func (p *Proc) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Signal sends sig to the process's whole process group.
func (p *Proc) Signal(sig syscall.Signal) error {
	if !p.Running() {
		return nil
	}
	pid := p.Pid()
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %s (pid %d) on %s: %w", p.Spec.Name, pid, p.Host.Name, err)
	}
	return nil
}

// Kill sends SIGKILL to the process group and waits for the exit.
func (p *Proc) Kill() error {
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	return p.wait(5 * time.Second)
}

// Stop asks the process to end with SIGTERM and kills it if it has not
// exited after grace.
func (p *Proc) Stop(grace time.Duration) error {
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	if p.wait(grace) == nil {
		return nil
	}
	return p.Kill()
}

func (p *Proc) wait(timeout time.Duration) error {
	select {
	case <-p.Done():
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s (pid %d) on %s still runs after %s", p.Spec.Name, p.Pid(), p.Host.Name, timeout)
	}
}

// Restart starts the process again with the same spec; it must have
// exited. Its output is appended to the same log files.
func (p *Proc) Restart() error {
	// Two restarts at once (a timer and a Clear) must not start two
	// incarnations.
	p.restartMu.Lock()
	defer p.restartMu.Unlock()
	if p.Running() {
		return fmt.Errorf("restart %s on %s: still running", p.Spec.Name, p.Host.Name)
	}
	return p.start()
}

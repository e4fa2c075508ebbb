package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/testbed"
)

// Options of an agent.
type Options struct {
	// Root is gait_root: the binary, state (Root/state), scratch
	// directories (Root/tmp) and mounts of the agent live under it.
	Root string
	// Cgroup is gait_cgroup: the CPU cgroup, relative to the
	// controller's root, below which the hosts' cgroups go; empty means
	// testbed.DefaultCgroup.
	Cgroup string
	// Timeout: when no frame arrives for this long, the agent takes the
	// control node for gone; 0 means DefaultTimeout.
	Timeout time.Duration
	// Log receives one line per thing the agent did on its own: cleaned
	// an earlier agent's leftovers, timed out, took a run down.
	Log io.Writer
}

// ErrTimeout ends Serve when the control node fell silent.
var ErrTimeout = errors.New("no heartbeat from the control node")

// StateDir is where an agent's testbeds keep their state files.
func StateDir(root string) string { return filepath.Join(root, "state") }

// TmpDir is the agent's scratch directory: its testbeds' directories.
func TmpDir(root string) string { return filepath.Join(root, "tmp") }

type server struct {
	opts  Options
	outMu sync.Mutex
	out   io.Writer

	mu      sync.Mutex
	runs    map[string]*testbed.Testbed
	dirs    map[string]string // each run's directory under TmpDir
	made    []string          // the ids of every run made, for the leftover scan
	execs   map[*exec.Cmd]bool
	closing bool
	calls   sync.WaitGroup
}

// Serve answers requests from in on out until in ends, the heartbeats
// stop, or ctx ends; then it removes everything it made (processes,
// testbeds, mounts, scratch files) and returns why it stopped. On start
// it first removes what an earlier agent under the same root left when
// it was killed.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	s := &server{opts: opts, out: out, runs: map[string]*testbed.Testbed{}, dirs: map[string]string{}, execs: map[*exec.Cmd]bool{}}
	if err := s.prepare(); err != nil {
		return err
	}
	defer s.teardown()
	// The timeout counts from here: prepare's cleaning may have taken
	// longer than it, and the control node's first ping waits in stdin.
	frames := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		for {
			body, err := ReadFrame(in)
			if err != nil {
				readErr <- err
				return
			}
			select {
			case frames <- body:
			case <-ctx.Done():
				return
			}
		}
	}()
	timer := time.NewTimer(opts.Timeout)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-readErr:
			if errors.Is(err, io.EOF) {
				fmt.Fprintln(opts.Log, "agent: the control connection closed")
				return nil
			}
			return fmt.Errorf("read request: %w", err)
		case <-timer.C:
			fmt.Fprintf(opts.Log, "agent: %s for %s\n", ErrTimeout, opts.Timeout)
			return ErrTimeout
		case body := <-frames:
			timer.Reset(opts.Timeout)
			req, err := DecodeRequest(body)
			if err != nil {
				if req.ID == 0 {
					return fmt.Errorf("malformed request: %w", err)
				}
				s.reply(Response{ID: req.ID, Err: err.Error()})
				continue
			}
			s.calls.Add(1)
			go func() {
				defer s.calls.Done()
				s.reply(s.handle(ctx, req))
			}()
		}
	}
}

// prepare makes the root's directories and removes an earlier agent's
// leftovers (its owner, the agent, is gone, so Clean takes them).
func (s *server) prepare() error {
	for _, d := range []string{StateDir(s.opts.Root), TmpDir(s.opts.Root)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("agent root: %w", err)
		}
	}
	cleaned, err := testbed.Clean(StateDir(s.opts.Root), false)
	for _, id := range cleaned {
		fmt.Fprintf(s.opts.Log, "agent: removed run %s an earlier agent left\n", id)
	}
	return errors.Join(err, emptyDir(TmpDir(s.opts.Root)))
}

// emptyDir removes what is in dir: the run directories of agents gone.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	var errs []error
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(append(errs, err)...)
}

func (s *server) reply(r Response) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	if err := WriteFrame(s.out, r); err != nil {
		fmt.Fprintf(s.opts.Log, "agent: write response %d: %v\n", r.ID, err)
	}
}

// teardown interrupts the commands the agent runs (a second later kills
// them), closes its testbeds, and removes what is left in its state.
func (s *server) teardown() {
	s.mu.Lock()
	s.closing = true
	cmds := make([]*exec.Cmd, 0, len(s.execs))
	for c := range s.execs {
		cmds = append(cmds, c)
	}
	s.mu.Unlock()
	for _, c := range cmds {
		c.Process.Signal(syscall.SIGINT)
	}
	deadline := time.Now().Add(2 * time.Second)
	for _, c := range cmds {
		for time.Now().Before(deadline) && c.ProcessState == nil && syscall.Kill(c.Process.Pid, 0) == nil {
			time.Sleep(20 * time.Millisecond)
		}
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
	s.mu.Lock()
	var ids []string
	for id := range s.runs {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		if err := s.down(id); err != nil {
			fmt.Fprintf(s.opts.Log, "agent: take run %s down: %v\n", id, err)
		} else {
			fmt.Fprintf(s.opts.Log, "agent: took run %s down\n", id)
		}
	}
	// A command killed above may have left its own testbed.
	if _, err := testbed.Clean(StateDir(s.opts.Root), false); err != nil {
		fmt.Fprintf(s.opts.Log, "agent: clean: %v\n", err)
	}
	if err := emptyDir(TmpDir(s.opts.Root)); err != nil {
		fmt.Fprintf(s.opts.Log, "agent: %v\n", err)
	}
}

// scan lists what is left of the runs this agent made and of any run
// under its root.
func (s *server) scan() ScanResult {
	s.mu.Lock()
	ids := append([]string(nil), s.made...)
	s.mu.Unlock()
	return ScanResult{Leftovers: Leftovers(s.opts.Root, s.opts.Cgroup, os.Getpid(), ids)}
}

// handle serves one request.
func (s *server) handle(ctx context.Context, req Request) Response {
	resp := Response{ID: req.ID, At: time.Now().UnixNano()}
	result, err := s.do(ctx, req)
	if err != nil {
		resp.Err = err.Error()
		switch {
		case errors.Is(err, testbed.ErrNoDisk):
			resp.Code = CodeNoDisk
		case errors.Is(err, testbed.ErrNoCPUCgroup):
			resp.Code = CodeNoCPUCgroup
		case errors.Is(err, errUnknownRun):
			resp.Code = CodeUnknownRun
		}
		return resp
	}
	if result != nil {
		data, err := json.Marshal(result)
		if err != nil {
			return Response{ID: req.ID, At: resp.At, Err: "encode result: " + err.Error()}
		}
		resp.Result = data
	}
	return resp
}

var errUnknownRun = errors.New("no such run or host on this agent")

func (s *server) do(ctx context.Context, req Request) (any, error) {
	args := func(v any) error {
		if len(req.Args) == 0 {
			return fmt.Errorf("%s: no arguments", req.Op)
		}
		if err := json.Unmarshal(req.Args, v); err != nil {
			return fmt.Errorf("%s: arguments: %w", req.Op, err)
		}
		return nil
	}
	var num Number
	var flag Bool
	switch req.Op {
	case "ping":
		return nil, nil
	case "info":
		return Info{Arch: runtime.GOARCH, Kernel: kernel(), Pid: os.Getpid(), UnixNano: time.Now().UnixNano()}, nil
	case "check":
		var a CheckArgs
		if len(req.Args) > 0 {
			if err := args(&a); err != nil {
				return nil, err
			}
		}
		return Checks(s.opts.Root, a), nil
	case "scan":
		return s.scan(), nil
	case "clean":
		_, err := testbed.Clean(StateDir(s.opts.Root), false)
		return s.scan(), err
	case "up":
		var a UpArgs
		if err := args(&a); err != nil {
			return nil, err
		}
		return s.up(a)
	case "down":
		return nil, s.down(req.Run)
	case "overlay":
		var a OverlayArgs
		if err := args(&a); err != nil {
			return nil, err
		}
		return nil, s.overlay(req.Run, a)
	case "exec":
		var a ExecArgs
		if err := args(&a); err != nil {
			return nil, err
		}
		return s.exec(ctx, a)
	}
	h, err := s.host(req.Run, req.Host)
	if err != nil {
		return nil, err
	}
	switch req.Op {
	case "host":
		return hostInfo(h), nil
	case "start":
		var a StartArgs
		if err := args(&a); err != nil {
			return nil, err
		}
		p, err := h.Start(testbed.ProcSpec{Name: a.Name, Path: a.Path, Args: a.Args, Env: a.Env})
		if err != nil {
			return nil, err
		}
		return procState(len(h.Procs())-1, p), nil
	case "proc":
		var a ProcArgs
		if err := args(&a); err != nil {
			return nil, err
		}
		return doProc(h, a)
	case "file":
		var a FileArgs
		if err := args(&a); err != nil {
			return nil, err
		}
		return s.file(req.Run, a)
	case "bandwidth":
		if err := args(&num); err != nil {
			return nil, err
		}
		return nil, h.SetBandwidth(uint64(num.N))
	case "link":
		if err := args(&flag); err != nil {
			return nil, err
		}
		return nil, h.SetLinkUp(flag.B)
	case "disk":
		if err := args(&num); err != nil {
			return nil, err
		}
		return nil, h.SetDiskFactor(num.N)
	case "cpu":
		if err := args(&num); err != nil {
			return nil, err
		}
		return nil, h.LimitCPU(num.N)
	case "signal":
		if err := args(&num); err != nil {
			return nil, err
		}
		if num.N < 1 || num.N > 64 {
			return nil, fmt.Errorf("signal %g: not a signal number", num.N)
		}
		return nil, h.SignalAll(syscall.Signal(num.N))
	case "cputime":
		return Number{N: float64(h.CPUTime())}, nil
	case "kill":
		return nil, h.KillAll()
	case "restart":
		return nil, h.RestartStopped()
	}
	return nil, fmt.Errorf("op %s: not served", req.Op)
}

func (s *server) up(a UpArgs) (UpResult, error) {
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		return UpResult{}, errors.New("up: the agent is shutting down")
	}
	// The testbed's directory goes under the root, not /tmp, and goes
	// with the run.
	dir, err := os.MkdirTemp(TmpDir(s.opts.Root), "run-")
	if err != nil {
		return UpResult{}, fmt.Errorf("up: %w", err)
	}
	var avoid []netip.Prefix
	for _, sn := range a.Avoid {
		p, err := netip.ParsePrefix(sn)
		if err != nil {
			return UpResult{}, errors.Join(fmt.Errorf("up: subnet to avoid %.40q: %w", sn, err), os.RemoveAll(dir))
		}
		avoid = append(avoid, p)
	}
	tb, err := testbed.Up(testbed.Options{Hosts: a.Hosts, Bandwidth: a.Bandwidth, Disk: a.Disk,
		DiskBandwidth: a.DiskBandwidth, DiskLatency: a.DiskLatency, Emulate: a.Emulate, Dir: dir, StateDir: StateDir(s.opts.Root), Avoid: avoid, Cgroup: s.opts.Cgroup})
	if err != nil {
		return UpResult{}, errors.Join(err, os.RemoveAll(dir))
	}
	s.mu.Lock()
	s.runs[tb.ID], s.dirs[tb.ID] = tb, dir
	s.made = append(s.made, tb.ID)
	s.mu.Unlock()
	r := UpResult{Run: tb.ID, Subnet: tb.Subnet.String(), Dir: dir}
	for _, h := range tb.Hosts {
		r.Hosts = append(r.Hosts, hostInfo(h))
	}
	return r, nil
}

func (s *server) overlay(run string, a OverlayArgs) error {
	s.mu.Lock()
	tb, ok := s.runs[run]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("overlay %.20q: %w", run, errUnknownRun)
	}
	var peers []netip.Addr
	for _, p := range a.Peers {
		addr, err := netip.ParseAddr(p)
		if err != nil {
			return fmt.Errorf("overlay peer %.40q: %w", p, err)
		}
		peers = append(peers, addr)
	}
	var subnets []netip.Prefix
	for _, sn := range a.Subnets {
		p, err := netip.ParsePrefix(sn)
		if err != nil {
			return fmt.Errorf("overlay subnet %.40q: %w", sn, err)
		}
		subnets = append(subnets, p)
	}
	return tb.Overlay(a.VNI, peers, subnets)
}

func hostInfo(h *testbed.Host) HostInfo {
	return HostInfo{Name: h.Name, Addr: h.Addr.String(), Baseline: h.Baseline(), CPUCgroup: h.HasCPUCgroup(), DataDir: h.DataDir}
}

func (s *server) down(run string) error {
	s.mu.Lock()
	tb, ok := s.runs[run]
	dir := s.dirs[run]
	delete(s.runs, run)
	delete(s.dirs, run)
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("down %.20q: %w", run, errUnknownRun)
	}
	if err := tb.Close(); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

func (s *server) host(run, name string) (*testbed.Host, error) {
	s.mu.Lock()
	tb, ok := s.runs[run]
	s.mu.Unlock()
	if ok {
		if h := tb.Host(name); h != nil {
			return h, nil
		}
	}
	return nil, fmt.Errorf("run %.20q host %.20q: %w", run, name, errUnknownRun)
}

// exec runs the agent's own binary with a.Args until it exits, in a
// process group of its own so teardown can interrupt it and what it
// started.
func (s *server) exec(ctx context.Context, a ExecArgs) (ExecResult, error) {
	self, err := os.Executable()
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec: %w", err)
	}
	cmd := exec.Command(self, a.Args...)
	var out Tail
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return ExecResult{}, errors.New("exec: the agent is shutting down")
	}
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		return ExecResult{}, fmt.Errorf("exec: %w", err)
	}
	s.execs[cmd] = true
	s.mu.Unlock()
	err = cmd.Wait()
	s.mu.Lock()
	delete(s.execs, cmd)
	s.mu.Unlock()
	r := ExecResult{Output: out.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.Exit = ee.ExitCode()
	case err != nil:
		return r, fmt.Errorf("exec: %w", err)
	}
	return r, nil
}

// Tail keeps the last Max bytes written to it (4 KiB when Max is 0): the
// end of a command's output, for the error that says how it ended.
type Tail struct {
	Max int
	mu  sync.Mutex
	buf []byte
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	limit := t.Max
	if limit <= 0 {
		limit = 4096
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > limit {
		t.buf = bytes.Clone(t.buf[len(t.buf)-limit:])
	}
	return len(p), nil
}

func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func kernel() string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return ""
	}
	var b []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// procState describes process id of a host.
func procState(id int, p *testbed.Proc) ProcState {
	return ProcState{ID: id, Pid: p.Pid(), Running: p.Running(), LogPath: filepath.Join(p.Spec.LogDir, p.Spec.Name+".stderr")}
}

// doProc acts on one process of h, named by its place among h's starts.
func doProc(h *testbed.Host, a ProcArgs) (ProcState, error) {
	procs := h.Procs()
	if a.ID < 0 || a.ID >= len(procs) {
		return ProcState{}, fmt.Errorf("process %d of %s: %w", a.ID, h.Name, errUnknownRun)
	}
	p := procs[a.ID]
	var err error
	switch a.Do {
	case "state":
	case "stop":
		err = p.Stop(min(max(a.Grace, 0), time.Minute))
	case "signal":
		if a.Signal < 1 || a.Signal > 64 {
			return ProcState{}, fmt.Errorf("signal %d: not a signal number", a.Signal)
		}
		err = p.Signal(syscall.Signal(a.Signal))
	case "restart":
		err = p.Restart()
	case "log":
		st := procState(a.ID, p)
		st.Log, err = systems.ReadEnd(st.LogPath, LogTail)
		return st, err
	default:
		return ProcState{}, fmt.Errorf("proc: %.20q is not stop, state, signal, restart or log", a.Do)
	}
	return procState(a.ID, p), err
}

// file acts on a file of the run's directory; a path outside it is
// refused, so the control node writes only where the run's hosts keep
// their data.
func (s *server) file(run string, a FileArgs) (FileArgs, error) {
	s.mu.Lock()
	dir := s.dirs[run]
	s.mu.Unlock()
	path := filepath.Clean(a.Path)
	if dir == "" || !filepath.IsAbs(a.Path) || !strings.HasPrefix(path, dir+"/") {
		return FileArgs{}, fmt.Errorf("file %.200q: not in the run's directory %s", a.Path, dir)
	}
	switch a.Do {
	case "mkdir":
		return FileArgs{}, os.MkdirAll(path, 0o755)
	case "remove":
		return FileArgs{}, os.RemoveAll(path)
	case "write":
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return FileArgs{}, err
		}
		return FileArgs{}, os.WriteFile(path, a.Data, 0o644)
	case "read":
		f, err := os.Open(path)
		if err != nil {
			return FileArgs{}, err
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, MaxRead+1))
		if err == nil && len(data) > MaxRead {
			err = fmt.Errorf("read %s: larger than %d bytes", path, MaxRead)
		}
		return FileArgs{Data: data}, err
	case "size":
		size, err := systems.LocalFiles{}.FileSystemSize(path)
		return FileArgs{Size: size}, err
	}
	return FileArgs{}, fmt.Errorf("file: %.20q is not mkdir, remove, write, read or size", a.Do)
}

package gaitredis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/procstat"
	"github.com/gait-dev/gait/internal/replica"
	replicaredis "github.com/gait-dev/gait/internal/replica/redis"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/loopback"
	"github.com/gait-dev/gait/internal/systems/redis"
)

// MaxReplicas bounds the replicas of one deployment gait starts itself
// (gait replica cluster): each replica is an agent and a redis-server, and
// past a few hundred one machine serves none of them well; loopback has the
// same bound.
const MaxReplicas = 200

// RangeError is a deployment setting outside the range it is valid in.
type RangeError struct {
	Setting string // "voters", "duplicates" or "fanout": gait replica cluster's flag
	Value   int
	Want    string // the valid range, e.g. "1 to 200"
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("%s %d: want %s", e.Setting, e.Value, e.Want)
}

// CheckShape checks the shape of a whole deployment: at least one voter,
// no negative number of duplicates, at most MaxReplicas replicas in all,
// and a read fan-out of 1 to the number of replicas. The error is a
// *RangeError.
func CheckShape(voters, duplicates, fanout int) error {
	switch {
	case voters < 1 || voters > MaxReplicas:
		return &RangeError{"voters", voters, fmt.Sprintf("1 to %d", MaxReplicas)}
	case duplicates < 0 || duplicates > MaxReplicas-voters:
		return &RangeError{"duplicates", duplicates, fmt.Sprintf("0 to %d (at most %d replicas with %d voters)",
			MaxReplicas-voters, MaxReplicas, voters)}
	case fanout < 1 || fanout > voters+duplicates:
		return &RangeError{"fanout", fanout, fmt.Sprintf("1 to %d (the deployment's replicas)", voters+duplicates)}
	}
	return nil
}

// LocalOptions describe a deployment on loopback.
type LocalOptions struct {
	Voters, Duplicates int
	// Base configures every agent (read mode, fan-out, write-all, metrics
	// address, log); each gets its own ID, addresses, data directory and role.
	Base replica.Config
	// TempDir is where the deployment's directory is made; empty means
	// os.TempDir().
	TempDir string
	// Kill, once closed, makes the deployment stop at once: every
	// redis-server is killed (SIGKILL) instead of stopped, including one
	// starting meanwhile, and Close does not wait for them to end cleanly.
	// Close still removes everything. nil never closes.
	Kill <-chan struct{}
	// Progress is told where the deployment's files are and when it is
	// ready; nil means io.Discard.
	Progress io.Writer
	// Server, when set, starts each replica's server instead of a
	// redis-server (gait replica cluster --server zookeeper).
	Server *Server
	// Redis is the Redis adapter's settings, when the servers are
	// redis-servers.
	Redis replicaredis.Options
}

// Server is a kind of server other than redis-server behind the agents.
type Server struct {
	// Start starts one replica's server, its processes on h (so that the
	// deployment records, kills and cleans them), and returns the address
	// its agent reaches it at.
	Start func(ctx context.Context, h systems.Host) (string, error)
	// Adapter is a new agent's adapter for it.
	Adapter func() replica.Adapter
}

// Local is a whole deployment on loopback: one redis-server and one agent
// per replica, the first voter bootstrapping and the rest joining it.
// Everything it writes is under Dir, one directory that also names its
// owner (the gait process) and its redis-servers, so that CleanLocal can
// remove what a killed gait left.
type Local struct {
	Agents []*replica.Agent
	Dir    string // <TempDir>/gait-replica-cluster-*

	opts      LocalOptions
	mu        sync.Mutex // guards servers, killed, the owner file
	servers   []systems.Process
	killed    bool
	watchDone chan struct{}
	watched   chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// localPrefix begins the name of every loopback deployment's directory.
const localPrefix = "gait-replica-cluster-"

// ownerFile, in a deployment's directory, names the gait process that owns
// it and the redis-servers it started, one "pid START" line each, START
// being the process's start time (field 22 of /proc/PID/stat), so that a
// recycled pid is not taken for them.
const ownerFile = "owner"

// StartLocal starts voters voting replicas and duplicates non-voting ones,
// each configured as base (read mode, fan-out, write-all, metrics address,
// log) with its own ID, addresses and role.
func StartLocal(voters, duplicates int, base replica.Config) (*Local, error) {
	return StartLocalWith(context.Background(), LocalOptions{Voters: voters, Duplicates: duplicates, Base: base})
}

// StartLocalWith starts the deployment opts describe and returns once the
// first voter leads and every other agent has joined. When ctx ends
// first, or on any error, everything started is removed.
func StartLocalWith(ctx context.Context, opts LocalOptions) (_ *Local, err error) {
	fanout := opts.Base.Fanout
	if fanout == 0 {
		fanout = 1 // Config's default
	}
	if err := CheckShape(opts.Voters, opts.Duplicates, fanout); err != nil {
		return nil, fmt.Errorf("replica deployment: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("replica deployment: not started: %w", err)
	}
	tmp := opts.TempDir
	if tmp == "" {
		tmp = os.TempDir()
	}
	dir, err := os.MkdirTemp(tmp, localPrefix)
	if err != nil {
		return nil, fmt.Errorf("replica deployment: %w", err)
	}
	l := &Local{Dir: dir, opts: opts, watchDone: make(chan struct{}), watched: make(chan struct{})}
	go l.watchKill()
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	defer func() {
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			// What failed is only the interruption's doing.
			err = fmt.Errorf("replica deployment: interrupted while starting; removed %s", dir)
		} else {
			fmt.Fprintln(progress, "failed; removing", dir)
		}
		err = errors.Join(err, l.Close())
	}()
	if err := l.record(os.Getpid()); err != nil {
		return nil, err
	}
	t0 := time.Now()
	fmt.Fprintf(progress, "starting %s and %s on 127.0.0.1, files in %s\n",
		plural(opts.Voters, "voter"), plural(opts.Duplicates, "duplicate"), dir)
	for i := range opts.Voters + opts.Duplicates {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cfg := opts.Base
		cfg.ID, cfg.RaftAddr, cfg.Listen = fmt.Sprintf("r%d", i+1), "127.0.0.1:0", "127.0.0.1:0"
		cfg.Bootstrap, cfg.NonVoter, cfg.Join = i == 0, i >= opts.Voters, ""
		if i > 0 {
			cfg.Join = l.Agents[0].RaftAddr()
		}
		if err := l.add(ctx, cfg); err != nil {
			return nil, err
		}
		if i == 0 {
			if err := l.waitLeader(ctx, 20*time.Second); err != nil {
				return nil, err
			}
		}
	}
	fmt.Fprintf(progress, "ready in %v\n", time.Since(t0).Round(time.Millisecond))
	return l, nil
}

// add starts one replica: its redis-server, then its agent, both keeping
// their files in <Dir>/<ID>.
func (l *Local) add(ctx context.Context, cfg replica.Config) error {
	hostDir := filepath.Join(l.Dir, cfg.ID)
	if err := os.MkdirAll(hostDir, 0o755); err != nil {
		return fmt.Errorf("replica %s: %w", cfg.ID, err)
	}
	h := loopback.New(cfg.ID, "127.0.0.1", hostDir)
	if s := l.opts.Server; s != nil {
		srv, err := s.Start(ctx, hostRecorder{h, l})
		if err != nil {
			return fmt.Errorf("replica %s: %w", cfg.ID, err)
		}
		cfg.ServerAddr, cfg.Adapter = srv, s.Adapter()
	} else {
		srv, err := l.startServer(ctx, h)
		if err != nil {
			return fmt.Errorf("replica %s: %w", cfg.ID, err)
		}
		cfg.ServerAddr, cfg.Adapter = srv, replicaredis.New(l.opts.Redis)
	}
	cfg.DataDir = filepath.Join(hostDir, "replica")
	a, err := replica.Start(cfg)
	if err != nil {
		return fmt.Errorf("replica %s: %w", cfg.ID, err)
	}
	l.mu.Lock()
	l.Agents = append(l.Agents, a)
	l.mu.Unlock()
	return nil
}

// startServer starts a redis-server on h at a port the kernel had free,
// trying another port should someone take it first, and returns its address.
func (l *Local) startServer(ctx context.Context, h *loopback.Host) (string, error) {
	var last error
	for range 3 {
		port, err := redis.FreePort()
		if err != nil {
			return "", fmt.Errorf("redis-server: find a free port: %w", err)
		}
		_, err = redis.StartOn(ctx, redis.ServerBinary, hostRecorder{h, l}, port)
		if err == nil {
			return net.JoinHostPort(h.Address(), strconv.Itoa(port)), nil
		}
		if last = err; ctx.Err() != nil {
			break
		}
	}
	return "", last
}

// hostRecorder is a loopback host whose processes the deployment records
// (in its owner file, for CleanLocal) and kills when told to.
type hostRecorder struct {
	*loopback.Host
	l *Local
}

func (h hostRecorder) Start(name string, argv []string, env []string) (systems.Process, error) {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	p, err := h.Host.Start(name, argv, env)
	if err != nil {
		return nil, err
	}
	h.l.servers = append(h.l.servers, p)
	if h.l.killed {
		kill(p.Pid())
	}
	return p, h.l.recordLocked(p.Pid())
}

// record appends the process pid to the owner file.
func (l *Local) record(pid int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recordLocked(pid)
}

func (l *Local) recordLocked(pid int) error {
	f, err := os.OpenFile(filepath.Join(l.Dir, ownerFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("replica deployment: %w", err)
	}
	_, err = fmt.Fprintf(f, "%d %d\n", pid, procstat.Identify(pid).Start)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("replica deployment: record pid %d: %w", pid, err)
	}
	return nil
}

// watchKill kills every redis-server once opts.Kill is closed, until Close.
func (l *Local) watchKill() {
	defer close(l.watched)
	select {
	case <-l.opts.Kill:
	case <-l.watchDone:
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.killed = true
	for _, p := range l.servers {
		if !p.Exited() {
			kill(p.Pid())
		}
	}
}

// kill sends SIGKILL to pid's process group (loopback hosts start each
// process in a group of its own) and to pid.
func kill(pid int) {
	syscall.Kill(-pid, syscall.SIGKILL)
	syscall.Kill(pid, syscall.SIGKILL)
}

func (l *Local) waitLeader(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for !l.Agents[0].IsLeader() {
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("replica deployment: no raft leader within %v", limit)
			}
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// Close stops every agent, then every redis-server (or kills them, once
// Kill is closed), then removes Dir. It is safe to call more than once.
func (l *Local) Close() error {
	l.closeOnce.Do(func() {
		var errs []error
		l.mu.Lock()
		agents, servers := l.Agents, l.servers
		l.mu.Unlock()
		for _, a := range agents {
			errs = append(errs, a.Close())
		}
		var wg sync.WaitGroup
		serr := make([]error, len(servers))
		for i, s := range servers {
			wg.Go(func() { serr[i] = s.Stop() })
		}
		wg.Wait()
		close(l.watchDone)
		<-l.watched
		errs = append(errs, serr...)
		if err := os.RemoveAll(l.Dir); err != nil {
			errs = append(errs, fmt.Errorf("replica deployment: %w", err))
		}
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}

// CleanLocal removes what loopback deployments whose gait process is gone
// left in tempDir ("" means os.TempDir()): it kills the redis-servers they
// recorded that still run and removes their directories. With all it also
// removes deployments whose gait still runs. It returns the directories
// it removed.
func CleanLocal(tempDir string, all bool) ([]string, error) {
	if tempDir == "" {
		tempDir = os.TempDir()
	}
	dirs, err := filepath.Glob(filepath.Join(tempDir, localPrefix+"*"))
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, dir := range dirs {
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			continue
		}
		procs, err := readOwner(dir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			// The owner file is written as soon as the directory is made:
			// without one, the directory is either being made or a crash
			// came in between.
			if fi, err := os.Stat(dir); err != nil || time.Since(fi.ModTime()) < time.Minute {
				continue
			}
		case err != nil:
			errs = append(errs, err)
			continue
		case procs[0].alive() && !all:
			continue
		}
		for _, p := range procs[min(1, len(procs)):] {
			if p.alive() {
				kill(p.pid)
				p.waitGone(5 * time.Second)
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, dir)
	}
	return removed, errors.Join(errs...)
}

// procEntry is a process recorded in an owner file.
type procEntry struct {
	pid   int
	start uint64
}

// readOwner reads a deployment's owner file: its gait process first, then
// its redis-servers.
func readOwner(dir string) ([]procEntry, error) {
	f, err := os.Open(filepath.Join(dir, ownerFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []procEntry
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	for sc.Scan() {
		pid, start, ok := strings.Cut(sc.Text(), " ")
		p, perr := strconv.Atoi(pid)
		s, serr := strconv.ParseUint(start, 10, 64)
		if !ok || perr != nil || serr != nil || p <= 0 {
			break // a line cut short by a crash ends the list
		}
		out = append(out, procEntry{p, s})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("replica deployment %s: %s names no process", dir, ownerFile)
	}
	return out, sc.Err()
}

// alive tells whether the recorded process still runs (and is not a
// zombie, nor another process that got its pid).
func (p procEntry) alive() bool {
	return procstat.Identity{PID: p.pid, Start: p.start}.Alive()
}

func (p procEntry) waitGone(limit time.Duration) {
	deadline := time.Now().Add(limit)
	for p.alive() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

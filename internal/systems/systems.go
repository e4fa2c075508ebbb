// Package systems defines what gait needs from a target system: start a
// cluster on hosts, tell the roles of its members, hand out clients, probe
// white-box metrics, stop. One sub-package per system implements it; a driver
// knows its system and nothing of injectors.
package systems

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/load"
)

// Host is a place a driver starts a server on: a testbed host (its own
// network namespace), a host of a testbed on another machine
// (internal/remote), or, for tests without root, an address on loopback.
type Host interface {
	Name() string
	// Address is the IP address a server on this host binds to and clients dial.
	Address() string
	// DataDir is the host's data directory (a FUSE mount when a disk
	// fault is possible), a path on the host's machine.
	DataDir() string
	// Start runs argv inside the host; its output is kept by the host.
	Start(name string, argv []string, env []string) (Process, error)
	Files
}

// Files are the files of a host's machine. A driver makes its members'
// directories and writes their configuration only through them, never
// with package os: a host may be on another machine, where DataDir is
// that machine's path and only its agent can write there.
type Files interface {
	MkdirAll(path string) error
	RemoveAll(path string) error
	// WriteFile writes data to path, making its directory first.
	WriteFile(path string, data []byte) error
	ReadFile(path string) ([]byte, error)
	// FileSystemSize is the size in bytes of the file system path is on.
	FileSystemSize(path string) (int64, error)
}

// Elsewhere is a Host on another machine than the one gait runs on (a
// host of a testbed an agent made there): package os does not reach its
// files, only its Files do.
type Elsewhere interface {
	Host
	// Machine names where the host is, for logs and errors.
	Machine() string
}

// CountElsewhere is how many of hosts are on other machines.
func CountElsewhere(hosts []Host) int {
	n := 0
	for _, h := range hosts {
		if _, ok := h.(Elsewhere); ok {
			n++
		}
	}
	return n
}

// CheckHere runs check, a driver's look at this machine for its servers'
// files, when any of hosts is on this machine. When all are elsewhere,
// preflight checked those files on their machines (Needer), and this
// machine, which runs only the clients, need not have them.
func CheckHere(hosts []Host, check func() error) error {
	if len(hosts) > 0 && CountElsewhere(hosts) == len(hosts) {
		return nil
	}
	return check()
}

// LocalFiles are this machine's files, for hosts on it.
type LocalFiles struct{}

var _ Files = LocalFiles{}

func (LocalFiles) MkdirAll(path string) error           { return os.MkdirAll(path, 0o755) }
func (LocalFiles) RemoveAll(path string) error          { return os.RemoveAll(path) }
func (LocalFiles) ReadFile(path string) ([]byte, error) { return os.ReadFile(path) }

func (LocalFiles) FileSystemSize(path string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, &os.PathError{Op: "statfs", Path: path, Err: err}
	}
	return int64(st.Blocks) * st.Bsize, nil
}

func (LocalFiles) WriteFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// LocalDialer is a Host that can open a connection from inside itself,
// as a supervisor on the machine would: a fault on the host's link (a NIC
// limping at 1000x) does not delay a readiness check after a restart.
type LocalDialer interface {
	DialLocal(ctx context.Context, addr string) (net.Conn, error)
}

// Process is a server process started on a Host.
type Process interface {
	Pid() int
	// Stop ends the process (SIGTERM, then SIGKILL after a grace period).
	Stop() error
	// Exited reports whether the process has ended.
	Exited() bool
}

// MachineLog is a process whose standard error is a file on its host's
// machine, another than this one: LogFile is its path there, which only
// the host's Files reach (a process on this machine says LogPath).
type MachineLog interface{ LogFile() string }

// Output reads the standard output and standard error of p, a process
// started on h (by its Start) that has exited, through h's Files: on h's
// machine, wherever that is. An output the host did not keep reads as
// empty.
func Output(h Host, p Process) (stdout, stderr string, err error) {
	var path string
	switch lp := p.(type) {
	case interface{ LogPath() string }:
		path = lp.LogPath()
	case MachineLog:
		path = lp.LogFile()
	default:
		return "", "", fmt.Errorf("host %s keeps no output of its processes to read", h.Name())
	}
	var texts [2]string
	for i, file := range []string{strings.TrimSuffix(path, ".stderr") + ".stdout", path} {
		b, err := h.ReadFile(file)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", "", fmt.Errorf("output of a process on %s: %w", h.Name(), err)
		}
		texts[i] = string(b)
	}
	return texts[0], texts[1], nil
}

// Needer is a driver that names the files its servers need on each
// host's machine (programs, jars), so that a run across machines checks
// them on every machine before anything starts (gait's preflight).
type Needer interface {
	Needs() []string
}

// Driver starts clusters of one system.
type Driver interface {
	// Name is the system's name in scenarios ("etcd", "redis", ...).
	Name() string
	Start(ctx context.Context, hosts []Host) (Cluster, error)
}

// Cluster is a running deployment of a system.
type Cluster interface {
	// Roles maps each host name to its role ("leader", "follower", ...).
	Roles(ctx context.Context) (map[string]string, error)
	// Client returns a client talking to the member on host.
	Client(host string) (load.Client, error)
	// Metrics probes white-box metrics, keyed "name{host=h}".
	Metrics(ctx context.Context) (map[string]float64, error)
	// Restart starts the member on host again after a crash.
	Restart(ctx context.Context, host string) error
	Stop() error
}

// ScrapeAll runs scrape for members 0..n-1 at once, each into a map of its
// own, and merges what they gave: a member that fails adds what it had
// and its error, joined with the others'.
func ScrapeAll(n int, scrape func(i int, vals map[string]float64) error) (map[string]float64, error) {
	out := map[string]float64{}
	errs := make([]error, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			vals := map[string]float64{}
			errs[i] = scrape(i, vals)
			mu.Lock()
			defer mu.Unlock()
			maps.Copy(out, vals)
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// NotReady says which member of a starting cluster is not ready and why.
type NotReady struct {
	Host string
	Proc Process // its server, whose log may explain why
	Err  error
}

func (e *NotReady) Error() string { return "member on " + e.Host + ": " + e.Err.Error() }
func (e *NotReady) Unwrap() error { return e.Err }

// BlameTail is the tail of the log of the member err says is not ready,
// else of fallback's: what a start that timed out quotes.
func BlameTail(err error, fallback Process) string {
	var nr *NotReady
	if errors.As(err, &nr) && nr.Proc != nil {
		return LogTail(nr.Proc)
	}
	return LogTail(fallback)
}

// Starting is a member a driver waits for: its host's name and its server.
type Starting struct {
	Host string
	Proc Process
}

// WaitReady polls ready every 100 ms until it returns nil, for at most
// timeout. A member whose server exits meanwhile ends the wait at once
// with the tail of its log; a timeout quotes the log of the member the
// last error blames (NotReady), else the first's. members is read at each
// poll, as a restart replaces a server.
func WaitReady(ctx context.Context, system string, timeout time.Duration, members func() []Starting, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ms := members()
		for _, m := range ms {
			if m.Proc.Exited() {
				return fmt.Errorf("%s on %s exited while starting%s", system, m.Host, LogTail(m.Proc))
			}
		}
		last := ready(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %v: %w%s", system, timeout, last, BlameTail(last, ms[0].Proc))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// StopAll stops every process at once, skipping nil ones (a member that
// never started), and joins their errors: a cluster's Stop should not
// wait for one slow member's grace period per member.
func StopAll(procs []Process) error {
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		if p != nil {
			wg.Go(func() { errs[i] = p.Stop() })
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// JarHome is where scripts/fetch-jars.sh NAME put the jars of java/NAME:
// $GAIT_<NAME> when set, else /var/cache/gait/NAME (the same rule as the
// script's).
func JarHome(name string) string {
	if home := os.Getenv("GAIT_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))); home != "" {
		return home
	}
	return filepath.Join("/var/cache/gait", name)
}

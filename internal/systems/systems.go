// Package systems defines what gait needs from a target system: start a
// cluster on hosts, tell the roles of its members, hand out clients, probe
// white-box metrics, stop. One sub-package per system implements it; a driver
// knows its system and nothing of injectors.
package systems

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/gait-dev/gait/internal/load"
)

// Host is a place a driver starts a server on: a testbed host (its own
// network namespace) or, for tests without root, an address on loopback.
type Host interface {
	Name() string
	// Address is the IP address a server on this host binds to and clients dial.
	Address() string
	// DataDir is the host's data directory (a FUSE mount when a disk fault is possible).
	DataDir() string
	// Start runs argv inside the host; its output is kept by the host.
	Start(name string, argv []string, env []string) (Process, error)
}

// Process is a server process started on a Host.
type Process interface {
	Pid() int
	// Stop ends the process (SIGTERM, then SIGKILL after a grace period).
	Stop() error
	// Exited reports whether the process has ended.
	Exited() bool
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

// LogTail returns the last lines of p's output for an error message, or a
// pointer to the host's output when p does not say where its output is.
func LogTail(p Process) string {
	lp, ok := p.(interface{ LogPath() string })
	if !ok {
		return " (see the host's output)"
	}
	b, err := os.ReadFile(lp.LogPath())
	if err != nil {
		return fmt.Sprintf(" (log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	lines = lines[max(0, len(lines)-15):]
	return "; last lines of " + lp.LogPath() + ":\n  " + strings.Join(lines, "\n  ")
}

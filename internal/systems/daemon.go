package systems

import (
	"fmt"
	"sync"
)

// Daemon is one cluster member's process. A restart replaces it while the
// cluster's readers (Roles, Metrics, the fault injectors) look at it, so
// it is kept under a lock; members embed it.
type Daemon struct {
	mu   sync.Mutex
	proc Process
}

// Current is the process started last, nil before the first.
func (d *Daemon) Current() Process {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.proc
}

// Launch runs start unless the last process is still running, and keeps
// what it started. what names the daemon in errors ("hdfs datanode on
// h3").
func (d *Daemon) Launch(what string, start func() (Process, error)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.proc != nil && !d.proc.Exited() {
		return fmt.Errorf("%s: still running (pid %d)", what, d.proc.Pid())
	}
	p, err := start()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	d.proc = p
	return nil
}

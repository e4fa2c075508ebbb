package tripod

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/gait-dev/gait/internal/testbed"
)

// HostCopy is a copy of a task running on a testbed host, in its network
// namespace and CPU cgroup, from its data directory.
type HostCopy struct {
	proc *testbed.Proc
}

// StartOn starts the task (argv) on h; name tells the copy's log files
// apart (<host dir>/log/NAME.stdout and .stderr).
func StartOn(h *testbed.Host, name string, argv []string) (*HostCopy, error) {
	p, err := h.Start(testbed.ProcSpec{Name: name, Path: argv[0], Args: argv[1:]})
	if err != nil {
		return nil, err
	}
	return &HostCopy{proc: p}, nil
}

func (c *HostCopy) Done() <-chan struct{} { return c.proc.Done() }

func (c *HostCopy) Exit() int {
	var ee *exec.ExitError
	switch err := c.proc.Err(); {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}

func (c *HostCopy) Output() ([]byte, error) { return c.log("stdout") }
func (c *HostCopy) Errors() ([]byte, error) { return c.log("stderr") }

func (c *HostCopy) log(stream string) ([]byte, error) {
	p := c.proc
	return os.ReadFile(filepath.Join(p.Spec.LogDir, p.Spec.Name+"."+stream))
}

// Stop kills the copy's process group (a task is stopped, not asked).
func (c *HostCopy) Stop() error {
	if err := c.proc.Kill(); err != nil {
		return fmt.Errorf("stop %s on %s: %w", c.proc.Spec.Name, c.proc.Host.Name, err)
	}
	return nil
}

// Slots are the testbed's hosts as places for copies: each host is its own
// machine here (one machine holds them all, which Place cannot see), its
// CPU set its own cgroup.
func Slots(tb *testbed.Testbed) []Slot {
	out := make([]Slot, len(tb.Hosts))
	for i, h := range tb.Hosts {
		out[i] = Slot{Host: h.Name, CPUSet: "cgroup:" + h.Name}
	}
	return out
}

// keep the compiler honest about the interface.
var _ Copy = (*HostCopy)(nil)

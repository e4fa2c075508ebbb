package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/cgroupcpu"
)

// ErrNoCPUCgroup means this machine offers no cgroup CPU controller that
// gait can use; a CPU slowdown then has to fall back to other means.
var ErrNoCPUCgroup = errors.New("no cgroup cpu controller mounted")

// cpuController is where the cgroup CPU controller is mounted, as v2
// (cpu.max) or v1 (cpu.cfs_quota_us).
type cpuController struct {
	root string
	v2   bool
}

var (
	cpuCtlOnce sync.Once
	cpuCtl     *cpuController
)

// findCPUController is cgroupcpu.Find's controller, nil when there is none.
func findCPUController() *cpuController {
	cpuCtlOnce.Do(func() {
		if c := cgroupcpu.Find(); c != nil {
			cpuCtl = &cpuController{root: c.Root, v2: c.V2}
		}
	})
	return cpuCtl
}

// DefaultCgroup is the CPU cgroup, under the controller's root, that
// all runs' hosts share unless Options.Cgroup names another.
const DefaultCgroup = "gait"

// newCgroup creates the cgroup for one host, below the group parent
// (relative to the controller's root) that all runs share, making parent
// and its ancestors when missing.
func (c *cpuController) newCgroup(parent, name string) (string, error) {
	dir := c.root
	for _, elem := range strings.Split(parent, "/") {
		if c.v2 {
			// v2 hands a controller to children only when each
			// ancestor lists it in cgroup.subtree_control.
			if err := enableCPU(dir); err != nil {
				return "", err
			}
		}
		dir = filepath.Join(dir, elem)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("create cgroup %s: %w", dir, err)
		}
	}
	if c.v2 {
		if err := enableCPU(dir); err != nil {
			return "", err
		}
	}
	dir = filepath.Join(dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("create cgroup %s: %w", dir, err)
	}
	return dir, nil
}

func enableCPU(dir string) error {
	path := filepath.Join(dir, "cgroup.subtree_control")
	if err := os.WriteFile(path, []byte("+cpu"), 0o644); err != nil {
		return fmt.Errorf("enable cpu controller in %s: %w", path, err)
	}
	return nil
}

// setQuota lets the cgroup's processes use cpus CPUs' worth of time
// together; cpus <= 0 removes the limit. The kernel accepts a quota of at
// least 1 ms per period, so small shares get a longer period (up to 1 s).
func (c *cpuController) setQuota(dir string, cpus float64) error {
	period, quota := quotaFor(cpus)
	if c.v2 {
		v := "max 100000"
		if cpus > 0 {
			v = fmt.Sprintf("%d %d", quota.Microseconds(), period.Microseconds())
		}
		return writeCgroup(dir, "cpu.max", v)
	}
	if cpus <= 0 {
		return writeCgroup(dir, "cpu.cfs_quota_us", "-1")
	}
	// Drop the old quota first: v1 checks each write against the
	// period in force, and an old quota may exceed a new period.
	if err := writeCgroup(dir, "cpu.cfs_quota_us", "-1"); err != nil {
		return err
	}
	if err := writeCgroup(dir, "cpu.cfs_period_us", strconv.FormatInt(period.Microseconds(), 10)); err != nil {
		return err
	}
	return writeCgroup(dir, "cpu.cfs_quota_us", strconv.FormatInt(quota.Microseconds(), 10))
}

// quotaFor returns the CFS period and quota that give cpus CPUs.
func quotaFor(cpus float64) (period, quota time.Duration) {
	const minQuota, maxPeriod = time.Millisecond, time.Second
	period = 100 * time.Millisecond
	if cpus <= 0 {
		return period, 0
	}
	if q := time.Duration(cpus * float64(period)); q < minQuota {
		period = min(maxPeriod, time.Duration(float64(minQuota)/cpus))
	}
	quota = max(minQuota, time.Duration(cpus*float64(period)))
	return period, quota
}

func writeCgroup(dir, file, value string) error {
	path := filepath.Join(dir, file)
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return fmt.Errorf("write %q to %s: %w", value, path, err)
	}
	return nil
}

// cgroupPids lists the processes in a cgroup; a missing cgroup has none.
func cgroupPids(dir string) []int {
	if dir == "" {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// removeCgroup removes an emptied cgroup; the kernel refuses (EBUSY)
// while killed processes are still on their way out, so it retries.
func removeCgroup(dir string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		for _, pid := range cgroupPids(dir) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

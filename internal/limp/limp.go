// Package limp injects limpware into testbed hosts: a NIC, disk or CPU
// slowed by a factor, a crash, or a network partition. Every injector has the same two verbs,
// and Run applies a list of them on a schedule.
package limp

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/testbed"
)

// Injector slows one kind of resource of a host.
type Injector interface {
	// Kind names the resource: nic, disk, cpu, crash or partition.
	Kind() string
	// Apply slows the host's resource by factor (>= 1), replacing
	// whatever factor this injector applied before.
	Apply(h *testbed.Host, factor float64) error
	// Clear brings the resource back to its baseline.
	Clear(h *testbed.Host) error
}

// Kinds lists the injectors New knows.
var Kinds = []string{"nic", "disk", "cpu", "crash", "partition"}

// Options tune the injectors New makes.
type Options struct {
	// RestartAfter restarts a crashed host's processes after this
	// delay; 0 leaves them down until Clear.
	RestartAfter time.Duration
	// CPUMode is "cgroup", "signal" or "" (cgroup where the host has
	// one, else SIGSTOP/SIGCONT duty cycling).
	CPUMode string
}

// New returns the injector of a kind.
func New(kind string, opts Options) (Injector, error) {
	switch kind {
	case "nic":
		return NIC{}, nil
	case "disk":
		return Disk{}, nil
	case "cpu":
		switch opts.CPUMode {
		case "", "cgroup", "signal":
			return &CPU{Mode: opts.CPUMode}, nil
		}
		return nil, fmt.Errorf("cpu mode %q: want cgroup or signal", opts.CPUMode)
	case "crash":
		if opts.RestartAfter < 0 {
			return nil, fmt.Errorf("crash restart delay %s: must not be negative", opts.RestartAfter)
		}
		return &Crash{RestartAfter: opts.RestartAfter}, nil
	case "partition":
		return Partition{}, nil
	}
	return nil, fmt.Errorf("fault %q: want one of nic, disk, cpu, crash, partition", kind)
}

func checkFactor(kind string, h *testbed.Host, factor float64) error {
	if !(factor >= 1) || math.IsInf(factor, 0) {
		return fmt.Errorf("%s on %s: factor %g must be a number >= 1", kind, h.Name, factor)
	}
	return nil
}

// NIC shapes the host's link, both directions, to baseline/factor.
type NIC struct{}

func (NIC) Kind() string { return "nic" }

func (NIC) Apply(h *testbed.Host, factor float64) error {
	if err := checkFactor("nic", h, factor); err != nil {
		return err
	}
	bps := float64(h.Baseline()) / factor
	if bps < testbed.MinBandwidth {
		return fmt.Errorf("nic on %s: %d bit/s / %g is below the %d bit/s a link can be shaped to", h.Name, h.Baseline(), factor, testbed.MinBandwidth)
	}
	return h.SetBandwidth(uint64(bps))
}

func (NIC) Clear(h *testbed.Host) error { return h.SetBandwidth(h.Baseline()) }

// Disk slows the host's limpfs; the testbed must have been made with
// Options.Disk.
type Disk struct{}

func (Disk) Kind() string { return "disk" }

func (Disk) Apply(h *testbed.Host, factor float64) error {
	if err := checkFactor("disk", h, factor); err != nil {
		return err
	}
	d := h.Disk()
	if d == nil {
		return fmt.Errorf("disk on %s: the host's data directory is not on limpfs (testbed made without Disk)", h.Name)
	}
	return d.SetFactor(factor)
}

func (Disk) Clear(h *testbed.Host) error {
	if d := h.Disk(); d != nil {
		return d.SetFactor(1)
	}
	return nil
}

// CPU gives the host's processes 1/factor of one CPU together: a cgroup
// quota where the host has a CPU cgroup, else duty cycling, where they
// run in short slices and are stopped (SIGSTOP) in between for as long as
// keeps their CPU time at 1/factor (see dutyCycle).
type CPU struct {
	Mode string // "cgroup", "signal" or "" for cgroup when available

	mu     sync.Mutex
	cycles map[*testbed.Host]chan struct{}
}

func (c *CPU) Kind() string { return "cpu" }

func (c *CPU) useCgroup(h *testbed.Host) (bool, error) {
	switch {
	case c.Mode == "signal":
		return false, nil
	case h.HasCPUCgroup():
		return true, nil
	case c.Mode == "cgroup":
		return false, fmt.Errorf("cpu on %s: %w", h.Name, testbed.ErrNoCPUCgroup)
	}
	return false, nil
}

func (c *CPU) Apply(h *testbed.Host, factor float64) error {
	if err := checkFactor("cpu", h, factor); err != nil {
		return err
	}
	cg, err := c.useCgroup(h)
	if err != nil {
		return err
	}
	if cg {
		return h.LimitCPU(1 / factor)
	}
	c.stopCycle(h)
	if factor == 1 {
		return nil
	}
	stop := make(chan struct{})
	c.mu.Lock()
	if c.cycles == nil {
		c.cycles = map[*testbed.Host]chan struct{}{}
	}
	c.cycles[h] = stop
	c.mu.Unlock()
	go dutyCycle(h, factor, stop)
	return nil
}

func (c *CPU) Clear(h *testbed.Host) error {
	cg, err := c.useCgroup(h)
	if err != nil {
		return err
	}
	if cg {
		return h.LimitCPU(0)
	}
	c.stopCycle(h)
	return nil
}

// stopCycle ends a duty cycle and lets the processes run again.
func (c *CPU) stopCycle(h *testbed.Host) {
	c.mu.Lock()
	stop, ok := c.cycles[h]
	delete(c.cycles, h)
	c.mu.Unlock()
	if ok {
		stop <- struct{}{}
	}
}

// dutyCycle stops and continues the host's processes so that they use
// at most 1/factor of one CPU, as a cgroup quota would: they run for a
// slice (see cpuPeriod), then stay stopped until the CPU time they used
// in it is 1/factor of the time since the slice began. Counting the CPU
// time really used, not the slice's length, keeps the share right though
// a stopped process needs a moment to run again, and lets a process that
// idles run freely. The slice often ends late, as the woken processes
// compete with gait for the CPU; the stop grows to match, up to ten
// periods, so that one pathological delay does not freeze the host for
// minutes.
func dutyCycle(h *testbed.Host, factor float64, stop chan struct{}) {
	period, slice := cpuPeriod(factor)
	signalAll := func(sig syscall.Signal) {
		for _, p := range h.Procs() {
			p.Signal(sig)
		}
	}
	defer signalAll(syscall.SIGCONT)
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		began, before := time.Now(), cpuTime(h)
		signalAll(syscall.SIGCONT)
		timer.Reset(slice)
		select {
		case <-stop:
			return
		case <-timer.C:
		}
		signalAll(syscall.SIGSTOP)
		used := max(0, cpuTime(h)-before)
		stall := min(time.Duration(float64(used)*factor)-time.Since(began), 10*period)
		if stall <= 0 {
			continue
		}
		timer.Reset(stall)
		select {
		case <-stop:
			return
		case <-timer.C:
		}
	}
}

// cpuTime returns the CPU time the host's processes (all their threads,
// not their children) have used, from /proc/PID/task/TID/schedstat,
// which counts nanoseconds where /proc/PID/stat counts 10 ms ticks.
func cpuTime(h *testbed.Host) time.Duration {
	var total time.Duration
	for _, p := range h.Procs() {
		if !p.Running() {
			continue
		}
		files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", p.Pid()))
		for _, f := range files {
			var ns int64
			if data, err := os.ReadFile(f); err == nil {
				if _, err := fmt.Sscan(string(data), &ns); err == nil {
					total += time.Duration(ns)
				}
			}
		}
	}
	return total
}

// cpuPeriod returns the duty cycle's period and running slice for a
// factor: 100 ms, or factor ms when that is longer, so the slice stays at
// least 1 ms. (The cgroup quota's period comes out the same up to 1000x.)
func cpuPeriod(factor float64) (period, slice time.Duration) {
	period = max(100*time.Millisecond, time.Duration(factor*float64(time.Millisecond)))
	return period, time.Duration(float64(period) / factor)
}

// Crash kills the host's processes with SIGKILL and restarts them after
// RestartAfter (if set) or on Clear. The factor is ignored.
type Crash struct {
	RestartAfter time.Duration

	mu     sync.Mutex
	timers map[*testbed.Host]*time.Timer
}

func (c *Crash) Kind() string { return "crash" }

func (c *Crash) Apply(h *testbed.Host, _ float64) error {
	c.cancel(h)
	if err := h.KillAll(); err != nil {
		return fmt.Errorf("crash %s: %w", h.Name, err)
	}
	if c.RestartAfter > 0 {
		c.mu.Lock()
		if c.timers == nil {
			c.timers = map[*testbed.Host]*time.Timer{}
		}
		c.timers[h] = time.AfterFunc(c.RestartAfter, func() { restart(h) })
		c.mu.Unlock()
	}
	return nil
}

// Clear restarts whatever of the host is still down.
func (c *Crash) Clear(h *testbed.Host) error {
	c.cancel(h)
	return restart(h)
}

func (c *Crash) cancel(h *testbed.Host) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.timers[h]; ok {
		t.Stop()
		delete(c.timers, h)
	}
}

func restart(h *testbed.Host) error {
	var first error
	for _, p := range h.Procs() {
		if p.Running() {
			continue
		}
		// Someone else may have restarted it meanwhile; that is fine.
		if err := p.Restart(); err != nil && !p.Running() && first == nil {
			first = fmt.Errorf("restart after crash: %w", err)
		}
	}
	return first
}

// Partition cuts the host off from every other host by taking the bridge
// end of its link down: packets either way are dropped, as with a pulled
// cable, while its processes keep running. It is all or nothing, so the
// factor is ignored. The link's shaping stays in place and holds again
// once Clear brings the link back up.
type Partition struct{}

func (Partition) Kind() string { return "partition" }

func (Partition) Apply(h *testbed.Host, _ float64) error {
	if err := h.SetLinkUp(false); err != nil {
		return fmt.Errorf("partition: %w", err)
	}
	return nil
}

func (Partition) Clear(h *testbed.Host) error {
	if err := h.SetLinkUp(true); err != nil {
		return fmt.Errorf("heal partition: %w", err)
	}
	return nil
}

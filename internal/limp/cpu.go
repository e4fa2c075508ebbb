package limp

import (
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/testbed"
)

func init() {
	Register(Kind{
		Name:        "cpu",
		Description: "the host's processes together get 1/factor of one CPU",
		Factor:      true,
		New: func(opts Options) (Injector, error) {
			switch opts.CPUMode {
			case "", "cgroup", "signal":
				return &CPU{Mode: opts.CPUMode}, nil
			}
			return nil, fmt.Errorf("cpu mode %q: want cgroup or signal", opts.CPUMode)
		},
	})
}

// CPU gives the host's processes 1/factor of one CPU together: a cgroup
// quota where the host has a CPU cgroup, else duty cycling, where they
// run in short slices and are stopped (SIGSTOP) in between for as long as
// keeps their CPU time at 1/factor (see dutyCycle).
type CPU struct {
	Mode string // "cgroup", "signal" or "" for cgroup when available

	mu     sync.Mutex
	cycles map[Host]chan struct{}
}

func (c *CPU) Kind() string { return "cpu" }

func (c *CPU) useCgroup(h Host) (bool, error) {
	switch {
	case c.Mode == "signal":
		return false, nil
	case h.HasCPUCgroup():
		return true, nil
	case c.Mode == "cgroup":
		return false, fmt.Errorf("cpu on %s: %w", h.HostName(), testbed.ErrNoCPUCgroup)
	}
	return false, nil
}

func (c *CPU) Apply(h Host, factor float64) error {
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
		c.cycles = map[Host]chan struct{}{}
	}
	c.cycles[h] = stop
	c.mu.Unlock()
	go dutyCycle(h, factor, stop)
	return nil
}

func (c *CPU) Clear(h Host) error {
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
func (c *CPU) stopCycle(h Host) {
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
func dutyCycle(h Host, factor float64, stop chan struct{}) {
	period, slice := cpuPeriod(factor)
	// A failed signal (a process that just exited) is tried again at the
	// next slice; there is no one to tell about it meanwhile.
	signalAll := func(sig syscall.Signal) { _ = h.SignalAll(sig) }
	defer signalAll(syscall.SIGCONT)
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		began, before := time.Now(), h.CPUTime()
		signalAll(syscall.SIGCONT)
		timer.Reset(slice)
		select {
		case <-stop:
			return
		case <-timer.C:
		}
		signalAll(syscall.SIGSTOP)
		used := max(0, h.CPUTime()-before)
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

// cpuPeriod returns the duty cycle's period and running slice for a
// factor: 100 ms, or factor ms when that is longer, so the slice stays at
// least 1 ms. (The cgroup quota's period comes out the same up to 1000x.)
func cpuPeriod(factor float64) (period, slice time.Duration) {
	period = max(100*time.Millisecond, time.Duration(factor*float64(time.Millisecond)))
	return period, time.Duration(float64(period) / factor)
}

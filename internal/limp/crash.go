package limp

import (
	"fmt"
	"sync"
	"time"
)

func init() {
	Register(Kind{
		Name:        "crash",
		Description: "SIGKILL to every process of the host, restarted after Options.RestartAfter or when cleared",
		New: func(opts Options) (Injector, error) {
			if opts.RestartAfter < 0 {
				return nil, fmt.Errorf("crash restart delay %s: must not be negative", opts.RestartAfter)
			}
			return &Crash{RestartAfter: opts.RestartAfter}, nil
		},
	})
}

// Crash kills the host's processes with SIGKILL and restarts them after
// RestartAfter (if set) or on Clear. The factor is ignored.
type Crash struct {
	RestartAfter time.Duration

	mu     sync.Mutex
	timers map[Host]*time.Timer
}

func (c *Crash) Kind() string { return "crash" }

func (c *Crash) Apply(h Host, _ float64) error {
	c.cancel(h)
	if err := h.KillAll(); err != nil {
		return fmt.Errorf("crash %s: %w", h.HostName(), err)
	}
	if c.RestartAfter > 0 {
		c.mu.Lock()
		if c.timers == nil {
			c.timers = map[Host]*time.Timer{}
		}
		c.timers[h] = time.AfterFunc(c.RestartAfter, func() { restart(h) })
		c.mu.Unlock()
	}
	return nil
}

// Clear restarts whatever of the host is still down.
func (c *Crash) Clear(h Host) error {
	c.cancel(h)
	return restart(h)
}

func (c *Crash) cancel(h Host) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.timers[h]; ok {
		t.Stop()
		delete(c.timers, h)
	}
}

func restart(h Host) error {
	if err := h.RestartStopped(); err != nil {
		return fmt.Errorf("restart after crash: %w", err)
	}
	return nil
}

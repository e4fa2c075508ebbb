package remote

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/agent"
	"github.com/gait-dev/gait/internal/inventory"
)

// Report is what preflight found on one machine.
type Report struct {
	Machine string `json:"machine"`
	Addr    string `json:"addr"`
	Arch    string `json:"arch,omitempty"`
	// Problems are one line each, naming the machine and the check:
	// "m3: sudo: sudo asks for a password ...". None means ready.
	Problems []string      `json:"problems,omitempty"`
	Checks   []agent.Check `json:"checks,omitempty"`
	// ClockOffset is the machine's clock minus the control node's, from
	// the round trip with the least delay; ClockError bounds it (half
	// that round trip).
	ClockOffset time.Duration `json:"clock_offset_ns"`
	ClockError  time.Duration `json:"clock_error_ns"`
}

// OK says whether the machine passed every check.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// clockRounds is how many round trips measure a clock offset.
const clockRounds = 8

// Preflight connects to every machine at once and asks each the checks
// of a: reachable over SSH with a known host key, passwordless sudo, the
// architecture, then on the agent tbf/htb, FUSE, cgroup CPU control, free
// disk and binaries, and its clock offset. It returns a report per
// machine, in the inventory's order, and the machines that passed,
// connected, for the caller to use and Close.
func Preflight(ctx context.Context, ms []inventory.Machine, o Options, a agent.CheckArgs) ([]Report, []*Machine) {
	reports := make([]Report, len(ms))
	conns := make([]*Machine, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() { reports[i], conns[i] = preflight(ctx, m, o, a) })
	}
	wg.Wait()
	var ready []*Machine
	for _, c := range conns {
		if c != nil {
			ready = append(ready, c)
		}
	}
	return reports, ready
}

func preflight(ctx context.Context, m inventory.Machine, o Options, a agent.CheckArgs) (Report, *Machine) {
	r := Report{Machine: m.Name, Addr: m.Addr}
	c, err := Connect(ctx, m, o)
	if err != nil {
		r.Problems = append(r.Problems, err.Error())
		return r, nil
	}
	r.Arch = c.Arch
	if err := c.Call(ctx, "check", "", "", a, &r.Checks); err != nil {
		r.Problems = append(r.Problems, fmt.Sprintf("%s: check: %v", m.Name, err))
	}
	for _, ch := range r.Checks {
		if ch.Problem != "" {
			r.Problems = append(r.Problems, fmt.Sprintf("%s: %s: %s", m.Name, ch.Name, ch.Problem))
		}
	}
	if r.ClockOffset, r.ClockError, err = c.ClockOffset(ctx, clockRounds); err != nil {
		r.Problems = append(r.Problems, fmt.Sprintf("%s: clock: %v", m.Name, err))
	}
	if !r.OK() {
		c.Close()
		return r, nil
	}
	return r, c
}

// ClockOffset measures the machine's clock against this one's by n round
// trips to its agent: for the one with the least delay, the offset is the
// agent's time minus the middle of the trip, within half the trip. The
// machine keeps it, to put the times its agent reports (when a fault
// began there) on this clock.
func (m *Machine) ClockOffset(ctx context.Context, n int) (offset, bound time.Duration, err error) {
	best := time.Duration(-1)
	for range n {
		var info agent.Info
		t0 := time.Now()
		if err := m.Call(ctx, "info", "", "", nil, &info); err != nil {
			return 0, 0, err
		}
		rtt := time.Since(t0)
		if best < 0 || rtt < best {
			best = rtt
			mid := t0.Add(rtt / 2)
			offset = time.Unix(0, info.UnixNano).Sub(mid)
		}
	}
	m.mu.Lock()
	m.offset, m.clockKnown = offset, true
	m.mu.Unlock()
	return offset, best / 2, nil
}

package limp

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

// Target picks the host a fault hits when the fault starts, so that a
// role such as "leader" is resolved at that moment.
type Target func() (Host, error)

// On targets a fixed host.
func On(h Host) Target {
	return func() (Host, error) { return h, nil }
}

// Fault is one injection on the schedule.
type Fault struct {
	Injector Injector
	Target   Target
	Factor   float64
	At       time.Duration // after the schedule starts
	For      time.Duration // how long it lasts; 0 means until the schedule ends (not transient)
}

// Event says what the schedule did, for the run's record.
type Event struct {
	// Time is when the action began: on a Clocked host (one on another
	// machine), when its machine began it, on this machine's clock;
	// else when this machine began it.
	Time   time.Time
	Action string // "apply" or "clear"
	Fault  int    // which fault: its index in the list given to Run
	Kind   string
	Host   string // empty when the target could not be resolved
	Factor float64
	Err    error
}

// step is one apply or clear at an offset from the start.
type step struct {
	at    time.Duration
	fault int
	apply bool
}

// Run applies each fault at its time and clears it after its duration,
// until ctx ends; then it clears every fault still applied and returns.
// Each apply and clear is reported to record (if not nil) as it happens.
// The returned error joins every failed apply or clear.
func Run(ctx context.Context, faults []Fault, record func(Event)) error {
	steps, err := plan(faults)
	if err != nil {
		return err
	}
	start := time.Now()
	hosts := make([]Host, len(faults)) // where each applied fault is
	var errs []error
	do := func(s step) {
		f := faults[s.fault]
		ev := Event{Time: time.Now(), Action: "clear", Fault: s.fault, Kind: f.Injector.Kind()}
		var h Host // the host acted on
		if s.apply {
			ev.Action, ev.Factor = "apply", f.Factor
			var err error
			h, err = f.Target()
			if err == nil {
				ev.Host = h.HostName()
				if err = f.Injector.Apply(h, f.Factor); err == nil {
					hosts[s.fault] = h
				}
			}
			ev.Err = err
		} else if h = hosts[s.fault]; h != nil {
			ev.Host = h.HostName()
			ev.Err = f.Injector.Clear(h)
			hosts[s.fault] = nil
		} else {
			return // never applied
		}
		if c, ok := h.(Clocked); ok {
			if t, ok := c.BeganAt(ev.Time); ok {
				ev.Time = t
			}
		}
		if ev.Err != nil {
			errs = append(errs, fmt.Errorf("%s %s at %s: %w", ev.Action, ev.Kind, ev.Time.Sub(start).Round(time.Millisecond), ev.Err))
		}
		if record != nil {
			record(ev)
		}
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for _, s := range steps {
		timer.Reset(time.Until(start.Add(s.at)))
		select {
		case <-ctx.Done():
			clearAll(len(faults), hosts, do)
			return errors.Join(errs...)
		case <-timer.C:
		}
		do(s)
	}
	<-ctx.Done()
	clearAll(len(faults), hosts, do)
	return errors.Join(errs...)
}

func clearAll(n int, hosts []Host, do func(step)) {
	for i := range n {
		if hosts[i] != nil {
			do(step{fault: i})
		}
	}
}

// plan checks the faults and orders their applies and clears in time;
// at the same instant clears come first, so back-to-back faults on one
// host do not overlap.
func plan(faults []Fault) ([]step, error) {
	var steps []step
	for i, f := range faults {
		switch {
		case f.Injector == nil || f.Target == nil:
			return nil, fmt.Errorf("fault %d: needs an injector and a target", i)
		case f.At < 0 || f.For < 0:
			return nil, fmt.Errorf("fault %d (%s): at %s and for %s must not be negative", i, f.Injector.Kind(), f.At, f.For)
		}
		steps = append(steps, step{at: f.At, fault: i, apply: true})
		if f.For > 0 {
			steps = append(steps, step{at: f.At + f.For, fault: i})
		}
	}
	sort.SliceStable(steps, func(a, b int) bool {
		if steps[a].at != steps[b].at {
			return steps[a].at < steps[b].at
		}
		return !steps[a].apply && steps[b].apply
	})
	return steps, nil
}

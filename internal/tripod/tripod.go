// Package tripod runs a task as TRIPOD does (002, §3-§4): R copies (the
// replica strength) on hosts no two of which share a machine or a CPU
// set, the first copy's output and exit status are the task's, and the
// others are stopped. The cost is R copies' worth of resources (§3.3):
// Result.Held counts it.
package tripod

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Slot is a place a copy may run: a host, on a machine, with a CPU set.
type Slot struct {
	Host    string
	Machine string // the physical machine the host is on
	CPUSet  string // the CPUs its processes may use, as the host's cgroup names them
}

// Place picks strength of slots at random (rng), no two on the same host,
// machine or CPU set, so one limping machine or CPU slows one copy only.
// It is an error when fewer than strength slots are that far apart.
func Place(slots []Slot, strength int, rng *rand.Rand) ([]int, error) {
	if strength < 1 {
		return nil, fmt.Errorf("strength %d: want at least 1 copy", strength)
	}
	order := rng.Perm(len(slots))
	var picked []int
	used := map[string]bool{}
	for _, i := range order {
		s := slots[i]
		keys := []string{"host " + s.Host}
		if s.Machine != "" {
			keys = append(keys, "machine "+s.Machine)
		}
		if s.CPUSet != "" {
			keys = append(keys, "cpus "+s.CPUSet)
		}
		if slices.ContainsFunc(keys, func(k string) bool { return used[k] }) {
			continue
		}
		for _, k := range keys {
			used[k] = true
		}
		if picked = append(picked, i); len(picked) == strength {
			return picked, nil
		}
	}
	return nil, fmt.Errorf("strength %d: only %d of %d hosts share no machine or CPU set with each other", strength, len(picked), len(slots))
}

// Copy is one running copy of a task.
type Copy interface {
	Done() <-chan struct{}
	// Exit is the copy's exit status once Done is closed (-1 if it was
	// killed by a signal).
	Exit() int
	// Output and Errors are what the copy wrote to its standard output
	// and standard error.
	Output() ([]byte, error)
	Errors() ([]byte, error)
	// Stop ends the copy and waits for it.
	Stop() error
}

// Start starts a copy of the task in slot.
type Start func(slot int) (Copy, error)

// Result is how a task ran.
type Result struct {
	Winner int    // the slot whose copy finished first
	Exit   int    // its exit status
	Output []byte // its standard output
	Errors []byte // and standard error
	Took   time.Duration
	// Held is the time all copies ran, summed: what the task cost in
	// copies' worth of a slot (about R x Took, §3.3).
	Held   time.Duration
	Copies int
}

// Run starts a copy in each slot, waits for the first to finish, stops
// the others and returns the first's output and exit status. A copy that
// fails to start stops the ones started. ctx ending stops every copy.
func Run(ctx context.Context, slots []int, start Start) (Result, error) {
	if len(slots) == 0 {
		return Result{}, errors.New("run: no slot to run a copy in")
	}
	t0 := time.Now()
	copies := make([]Copy, 0, len(slots))
	stopAll := func(skip int) time.Duration {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var held time.Duration
		for i, c := range copies {
			if i == skip {
				continue
			}
			wg.Go(func() {
				c.Stop()
				mu.Lock()
				held += time.Since(t0)
				mu.Unlock()
			})
		}
		wg.Wait()
		return held
	}
	for _, s := range slots {
		c, err := start(s)
		if err != nil {
			stopAll(-1)
			return Result{}, fmt.Errorf("start copy %d of %d: %w", len(copies)+1, len(slots), err)
		}
		copies = append(copies, c)
	}
	first := make(chan int, len(copies))
	for i, c := range copies {
		go func() {
			select {
			case <-c.Done():
				first <- i
			case <-ctx.Done():
			}
		}()
	}
	var win int
	select {
	case win = <-first:
	case <-ctx.Done():
		stopAll(-1)
		return Result{}, ctx.Err()
	}
	took := time.Since(t0)
	res := Result{Winner: slots[win], Exit: copies[win].Exit(), Took: took, Copies: len(copies)}
	res.Held = took + stopAll(win)
	var err error
	if res.Output, err = copies[win].Output(); err != nil {
		return res, fmt.Errorf("output of the first copy: %w", err)
	}
	if res.Errors, err = copies[win].Errors(); err != nil {
		return res, fmt.Errorf("standard error of the first copy: %w", err)
	}
	return res, nil
}

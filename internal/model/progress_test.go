package model

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
)

// TestSideBySide: every mix runs once, at most GOMAXPROCS at a
// time, the dearest first; progress is told whole and never runs
// backwards; the first failed mix in order is the error, and no mix
// starts after a failure.
func TestSideBySide(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	cfgs := []Config{{1, 1}, {2, 1}, {1, 2}, {3, 1}, {1, 3}, {2, 2}}
	weight := []float64{0.1, 0.1, 0.3, 0.1, 0.3, 0.1}
	var now, most atomic.Int32
	ran := make([]int, len(cfgs))
	var last float64
	progress := func(what string, done float64) { // sideBySide serialises calls
		if done < last-1e-12 || done > 1+1e-12 || what == "" {
			t.Errorf("progress %q at %v after %v", what, done, last)
		}
		last = done
	}
	err := sideBySide(mixNames(cfgs), weight, progress, func(k int, mix Progress) error {
		n := now.Add(1)
		defer now.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		ran[k]++
		mix("halfway", 0.5)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, n := range ran {
		if n != 1 {
			t.Errorf("mix %d ran %d times", k, n)
		}
	}
	if most.Load() > 3 {
		t.Errorf("%d mixes ran at once on 3 procs", most.Load())
	}
	if last < 0.5 {
		t.Errorf("progress ended at %v", last)
	}

	runtime.GOMAXPROCS(1) // the dearest first: 2 and 4, then 0, 1, 3, 5
	var started []int
	err = sideBySide(mixNames(cfgs), weight, nil, func(k int, mix Progress) error {
		started = append(started, k)
		return nil
	})
	if err != nil || !slices.Equal(started, []int{2, 4, 0, 1, 3, 5}) {
		t.Errorf("started %v (%v), want the dearest first", started, err)
	}

	even := []float64{1, 1, 1, 1, 1, 1} // in order: mix 2 fails, 3.. never start
	started = nil
	err = sideBySide(mixNames(cfgs), even, nil, func(k int, mix Progress) error {
		started = append(started, k)
		if k >= 2 {
			return fmt.Errorf("mix %d: %w", k, errBoom)
		}
		return nil
	})
	if !errors.Is(err, errBoom) || err.Error() != "mix 2: boom" || len(started) != 3 {
		t.Errorf("error %v after starting %v", err, started)
	}
}

var errBoom = errors.New("boom")

// TestRequestErrorMapSideBySide: the map's cells, computed side by side,
// come out in order (load, mix, quantile) and as they do one at a time.
func TestRequestErrorMapSideBySide(t *testing.T) {
	sys := System{Service: Exponential{1e-3}, Request: Request{Phases: []int{4}}}
	utils, quantiles := []float64{0.1, 0.3}, []float64{0.5, 0.9}
	opt := SimOptions{Requests: 20000, Seed: 1}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	alone, err := RequestErrorMap(sys, RequestMapScope{Utilizations: utils, MaxNodes: 2}, quantiles, opt)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GOMAXPROCS(3)
	together, err := RequestErrorMap(sys, RequestMapScope{Utilizations: utils, MaxNodes: 2}, quantiles, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(together) != 2*3*2 || !slices.Equal(alone, together) {
		t.Fatalf("side by side %v\none at a time %v", together, alone)
	}
	for i, c := range together {
		if want := utils[i/6]; c.Utilization != want || c.Quantile != quantiles[i%2] {
			t.Errorf("cell %d: %g%% q%g, want %g%% q%g", i, 100*c.Utilization, c.Quantile, 100*want, quantiles[i%2])
		}
	}
}

// TestRequestPlanWithoutProgress: the planner's searches for requests run
// without anyone to tell (a library caller): they once called a nil
// Progress.
// Its answer comes checked by simulation, which the thesis's predictor,
// taking each wait at its mean, misses by far more than 0.002 here.
func TestRequestPlanWithoutProgress(t *testing.T) {
	sys := System{Service: Exponential{1e-3}, Request: Request{Phases: []int{4}}}
	best, _, err := MaxRate(sys, Target{0.99, 10e-3}, 2, PredictorThesis, AccurateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := best.Check
	if c == nil || c.Requests != 1000000 || !(c.StdErr > 0 && c.StdErr < 0.001) || math.Abs(c.Simulated-best.SLA) < 0.002 {
		t.Errorf("%dx%d at %g requests/s: SLA %.4f, checked %+v", best.Duplicates, best.Replicas, best.Rate, best.SLA, c)
	}
}

package model

import (
	"math"
	"testing"
)

// TestWeighedBins: the runs cover every cell once, as few as the share
// asked allows (or the most asked), each at most a cell over its share
// and standing within itself.
func TestWeighedBins(t *testing.T) {
	w := make([]float64, 2000)
	for c := range w {
		w[c] = math.Exp(-float64(c) / 400)
	}
	total := 0.0
	for _, v := range w {
		total += v
	}
	share := total / 7.5
	if n := len(weighedBins(w, share, 5)); n != 5 {
		t.Errorf("%d bins with at most 5, want 5", n)
	}
	bins := weighedBins(w, share, 100)
	if len(bins) != 8 {
		t.Fatalf("%d bins, want 8", len(bins))
	}
	next := 0
	for _, b := range bins {
		if b.lo != next || b.hi <= b.lo || b.at < b.lo || b.at >= b.hi {
			t.Fatalf("bin %+v after cell %d", b, next)
		}
		next = b.hi
		if b.w > share*(1+1e-9)+w[b.hi-1] {
			t.Errorf("bin %+v weighs more than %.3f", b, share)
		}
	}
	if next != len(w) {
		t.Errorf("bins end at %d, want %d", next, len(w))
	}
}

// TestOneServerGroupsKeepTheServiceMean drives Olio (phases 30,20) on two
// groups of one server at 8% load against the simulator (2x10^6
// requests). Its grid is 0.2 ms against a 1 ms service, and a request's
// path holds 40-50 service times: with each rounded to its nearest point
// the law came out 0.002-0.003 high from p10 to p90
// (against 4x10^6 simulated requests: +0.0029 at p50), with the service
// law's mean kept (g.pmf) within 0.0011. Here main was +0.0029 and
// +0.0019 off at the p50 and p90 bounds (0.0020 and 0.0014 allowed).
func TestOneServerGroupsKeepTheServiceMean(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("simulates 100 million accesses")
	}
	matchesSimulation(t, expRequests(olio, 0.08), Config{1, 2}, 0.0008, SimOptions{Requests: 2000000, Seed: 1})
}

// TestGroupWithoutSecondPhaseIsNotWaitedFor: a group that holds none of
// a request's second-phase accesses does not hold the request, whatever
// it has queued. With one access in the second phase three of four
// groups hold none of it; taking them to be waited for put the median's
// bound 0.024 low (pessimistic) at 30%.
func TestGroupWithoutSecondPhaseIsNotWaitedFor(t *testing.T) {
	t.Parallel()
	sys := expRequests(Request{Phases: []int{8, 1}}, 0.3)
	matchesSimulation(t, sys, Config{1, 4}, 0.004, SimOptions{Requests: 200000, Seed: 1})
}

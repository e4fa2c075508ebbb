package model

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Progress is told, now and then (many times a second at most), what a
// long computation is doing and the share of it that is done, from 0 to 1.
// Calls come from one goroutine at a time.
type Progress func(what string, done float64)

// stage maps a part of a computation onto its share of the whole: what
// names the part (or nothing, "": the part's own names pass unchanged),
// from is the share done before it, weight the share it is.
func (p Progress) stage(what string, from, weight float64) Progress {
	if p == nil {
		return nil
	}
	return func(inner string, done float64) {
		switch {
		case what == "":
		case inner != "":
			inner = what + ", " + inner
		default:
			inner = what
		}
		p(inner, from+weight*done)
	}
}

// mixShares is the share of a pass over cfgs that each mix is, weighed by
// what predicting sys's requests on it costs with the accurate predictor,
// against one group of duplicates. BenchmarkPredictRequest, one timed
// hold (2026-11-29, 22:49 UTC, load 0.15): Olio 2.7 s on 4x1 at 8%,
// 4.6 s on 1x4, 17.7 s on 2x2 and 17.6 s on 2x3 (both phases' splits
// summed exactly), 14.5 s on 2x4 (as halves of halves), 0.06 s on one
// server; three phases of 10 3.0 s on 2x1, 0.67 s on 1x2, 0.96 s on 2x2;
// Gridlab-D's batches 9.1 s on 4x1, 0.62 s on 1x4 (and 9.6-10.2 s on 2x2,
// a covering prediction, 2026-11-30 01:28 UTC). Since then (one timed
// hold, 2026-11-30 04:40 UTC, load 14.9 -> 6.1, 4x1 at 8% 2.5-2.7 s in
// both builds): three phases 0.88-1.13 -> 1.95-2.23 s on 2x2 (the chain
// keeps its arrivals), Gridlab-D 0.66-0.77 -> 1.58-1.82 s on 1x4 (the
// waits by the batch before's age, the lone batch's shares to the fourth
// order), 7.3 -> 13.3-14.4 s on 2x2; and (2026-11-30 11:25 UTC, load
// 1.1) three phases 1.53-1.76 -> 1.85-2.16 s on 2x2 at 8% (groupChain's
// law on two grids). Equal shares told a third of the time left. The thesis's predictor costs the same for every
// mix.
func mixShares(sys System, cfgs []Config, accurate bool) []float64 {
	cost := make([]float64, len(cfgs))
	total := 0.0
	for k, cfg := range cfgs {
		cost[k] = mixCost(sys, cfg, accurate)
		total += cost[k]
	}
	for k := range cost {
		cost[k] /= total
	}
	return cost
}

// mixCost is predicting sys's requests on cfg against one group of
// duplicates (mixShares).
func mixCost(sys System, cfg Config, accurate bool) float64 {
	if !accurate {
		return 1
	}
	switch requestPathOf(sys.Request, cfg, false) {
	case pathServerPhases, pathBatchOneServer:
		return 0.05
	case pathOneGroup:
		if cfg.Nodes() == 1 {
			return 0.05
		}
	case pathBatchServers:
		return 0.6
	case pathBatchBarrier:
		return 7.5
	case pathGroupChain:
		return 1
	case pathServerGroupsPhases:
		return 0.3
	case pathTwoPhaseGroups:
		switch {
		case cfg.Duplicates == 1:
			return 2
		case cfg.Replicas <= 3:
			return 7
		case cfg.Replicas == 4:
			return 5.5
		}
		return 2
	}
	return 1
}

// sideBySide runs do for every part k of a computation, on as many
// goroutines as Go may run at once (GOMAXPROCS): the parts (a planner's
// mixes, an error map's cells) are independent and one request prediction
// takes seconds, so a pass over them waited on one core while the others
// idled. weight[k] is part k's share of the whole work: the dearest start
// first, and progress hears the whole, telling the names of the parts
// running (names[k]). Once a part fails no new one starts; the error
// returned is that of the failed part first in order.
func sideBySide(names []string, weight []float64, progress Progress, do func(k int, part Progress) error) error {
	var (
		mu      sync.Mutex
		next    int
		failed  bool
		done    = make([]float64, len(names))
		running = make([]string, len(names))
		errs    = make([]error, len(names))
	)
	tell := func(k int) Progress {
		if progress == nil {
			return nil
		}
		return func(what string, share float64) {
			mu.Lock()
			defer mu.Unlock()
			done[k], running[k] = share, names[k]
			if what != "" {
				running[k] = names[k] + ", " + what
			}
			progress(joinNonEmpty(running), weighedSum(done, weight))
		}
	}
	// The dearest parts first: a dear part started last would keep one
	// core busy while the others idle.
	order := make([]int, len(names))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(weight[b], weight[a]) })
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if failed || next == len(names) {
			return 0, false
		}
		next++
		return order[next-1], true
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k, ok := take(); ok; k, ok = take() {
				part := tell(k)
				if part != nil {
					part("", 0)
				}
				err := do(k, part)
				mu.Lock()
				errs[k], done[k], running[k] = err, 1, ""
				failed = failed || err != nil
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// joinNonEmpty joins the non-empty strings of s with "; ".
func joinNonEmpty(s []string) string {
	var parts []string
	for _, v := range s {
		if v != "" {
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, "; ")
}

// weighedSum is the sum of x[k] w[k].
func weighedSum(x, w []float64) float64 {
	sum := 0.0
	for k := range x {
		sum += x[k] * w[k]
	}
	return sum
}

// mixNames names each mix for sideBySide.
func mixNames(cfgs []Config) []string {
	names := make([]string, len(cfgs))
	for k, cfg := range cfgs {
		names[k] = fmt.Sprintf("mix %dx%d (%d of %d)", cfg.Duplicates, cfg.Replicas, k+1, len(cfgs))
	}
	return names
}

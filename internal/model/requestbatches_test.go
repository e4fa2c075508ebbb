package model

import (
	"math"
	"testing"
)

// TestBatchServersAtHighLoad: Gridlab-D's batches on four groups of one
// server at 30% load, against the simulator. The back-to-back form
// (batchGroups) multiplied each group's work behind the request's first
// phase and the phases taken alone as independent, though both grow with
// the same wait: it was 0.040 low at the median bound; taking the last
// phase as starting at max(what the server holds, the first phase's end)
// given that end, within 0.01 (0.020 low with the servers' shares split
// from fixed totals but the last phases ahead counted with the other
// requests' T1 apart from this one's: 0.013 with them given it, 0.015
// with what they leave at T1 where the server idles: the waits' error,
// uncovered). With the servers' waits by the batch before's age, shared,
// its last phases still to come behind the first phases, and the batch
// after's first phases ahead of the last phases, within 0.007.
func TestBatchServersAtHighLoad(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("simulates 2x10^5 requests")
	}
	matchesSimulation(t, expRequests(gridlabd, 0.3), Config{Duplicates: 1, Replicas: 4}, 0.005, SimOptions{Requests: 200000, Seed: 7})
}

// TestBatchOneServerAtHighLoad: Gridlab-D's batches on one server at 30%
// load, against the simulator. A request's first phase waits only for the
// work queued when its batch arrives, not for the last phases of the last
// batch's requests still in their first phase (those are queued behind
// it): taking all of them ahead of it counted the batches arriving
// meanwhile over too long a window, 0.005 low at the 90th percentile's
// bound (4x10^6 simulated requests: standard error 0.0006).
func TestBatchOneServerAtHighLoad(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("simulates 4x10^6 requests")
	}
	matchesSimulation(t, expRequests(gridlabd, 0.3), Config{Duplicates: 1, Replicas: 1}, 0.001, SimOptions{Requests: 4000000, Seed: 2})
}

// TestBatchOneGroupAtHighLoad: Gridlab-D's batches on one group of four
// duplicates at 30% load, against the simulator. The work each duplicate
// finds is set by the instants of the batches before, which all
// duplicates share; taken apart beyond the last batch's age, the first
// duplicate done was far too soon (0.032 high at the 90th percentile's
// bound); given the gaps between the last batches, within 0.002.
func TestBatchOneGroupAtHighLoad(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("simulates 2x10^5 requests")
	}
	matchesSimulation(t, expRequests(gridlabd, 0.3), Config{Duplicates: 4, Replicas: 1}, 0.01, SimOptions{Requests: 200000, Seed: 7})
}

// TestBatchServersSplitTheBatch: Gridlab-D's batches on two groups of one
// server at 1% load, against the simulator. Each server's share of the
// batch's other work was drawn apart (binomial), where the batch's total
// is fixed (one server's heavy share is another's light one): 0.017 high
// at the median bound. Given the totals (depoissonised), within 0.005.
func TestBatchServersSplitTheBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 4x10^5 requests")
	}
	matchesSimulation(t, expRequests(gridlabd, 0.01), Config{Duplicates: 1, Replicas: 2}, 0.005, SimOptions{Requests: 400000, Seed: 7})
}

// TestBatchServersIdleBeforeLasts: Gridlab-D's batches on eight groups of
// one server at 1% load, against the simulator. A server that has served
// its share of the batch's first phases idles until another request's
// last phase reaches it at that request's T1; served back to back from
// the end of its first phases, those last phases were done too soon and
// the law 0.015 high at the median bound. With what they leave at this
// request's T1 as a floor where the server idles then, within 0.005.
func TestBatchServersIdleBeforeLasts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("simulates 4x10^5 requests")
	}
	matchesSimulation(t, expRequests(gridlabd, 0.01), Config{Duplicates: 1, Replicas: 8}, 0.005, SimOptions{Requests: 400000, Seed: 7})
}

// TestDepoissonisedSplit: the expectation of a product over r servers of
// a function of each server's count of A things spread over them
// uniformly (the multinomial split), from the same expectation with each
// count drawn Poisson apart at means near A/r (depoissonised), against
// every assignment of the things counted one by one. Drawn binomial apart
// (as batchServers did) it is up to 0.033 off at two servers and 0.018 at
// four; depoissonised, within 0.011 and 0.003.
func TestDepoissonisedSplit(t *testing.T) {
	k1, k2 := 2, 1
	for _, c := range []struct {
		r, A int
		tol  float64
	}{{2, 6, 0.011}, {2, 10, 0.011}, {4, 6, 0.003}} {
		for _, st := range [][2]float64{{3, 6}, {4, 8}, {5, 9}, {6, 11}} {
			// a server with n and m of the request's accesses and a of
			// the others: its first part by s, all by t (unit services)
			f := func(n, m, a int) float64 {
				v := 1.0
				if n > 0 {
					v = poissonAbove(st[0], a+n)
				}
				if m > 0 {
					v *= poissonAbove(st[1], a+n+m+2)
				}
				return v
			}
			over := func(counts []float64) float64 {
				fm := make([]float64, (k1+1)*(k2+1))
				for n := 0; n <= k1; n++ {
					for m := 0; m <= k2; m++ {
						for a, w := range counts {
							fm[n*(k2+1)+m] += w * f(n, m, a)
						}
					}
				}
				return newMultinomial2(k1, k2, c.r).top(fm)
			}
			exact := exactSplit(k1, k2, c.r, c.A, f)
			apart := over(binomial(c.A, 1/float64(c.r)))
			got := 0.0
			for _, e := range depoissonised(float64(c.A), 0, 0) {
				got += e.weight * over(poissonLaw(e.first/float64(c.r), 1e-15))
			}
			t.Logf("r=%d A=%d s,t=%v: exact %.5f, depoissonised %.5f, binomial apart %.5f", c.r, c.A, st, exact, got, apart)
			if math.Abs(got-exact) > c.tol {
				t.Errorf("r=%d A=%d s,t=%v: depoissonised %.5f, exact %.5f", c.r, c.A, st, got, exact)
			}
		}
	}
}

// exactSplit is E[prod over r servers of f(n, m, a)] over every
// assignment of k1, k2 and A things to the r servers.
func exactSplit(k1, k2, r, A int, f func(n, m, a int) float64) float64 {
	items := k1 + k2 + A
	counts := make([][3]int, r)
	total, ways := 0.0, 0
	var place func(i int)
	place = func(i int) {
		if i == items {
			p := 1.0
			for _, c := range counts {
				p *= f(c[0], c[1], c[2])
			}
			total += p
			ways++
			return
		}
		kind := 2
		if i < k1 {
			kind = 0
		} else if i < k1+k2 {
			kind = 1
		}
		for g := range counts {
			counts[g][kind]++
			place(i + 1)
			counts[g][kind]--
		}
	}
	place(0)
	return total / float64(ways)
}

// TestFirstGivenSharesQueues: on two servers, a request that reaches both
// (four accesses: with chance 1 - 2^-3) ends its first phase after the
// batch's earlier request, whose accesses are ahead of its own at both;
// and a later request ends its first phase first only if it reaches one
// server (2^-3). Taken apart, the two T1 gave 0.70 and 0.32 (requests 3
// and 5 against 4 at 1% load).
func TestFirstGivenSharesQueues(t *testing.T) {
	sys := expRequests(gridlabd, 0.01)
	cfg := Config{Duplicates: 1, Replicas: 2}
	st := serialTime(sys, cfg)
	g := grid{h: st / (maxRequestGridPts - 1), n: maxRequestGridPts}
	b := newBatchGrid(g, batchServersCells, sys, 4, 3, sys.Utilization(cfg), 2)
	t1 := func(j int) []float64 { // request 4's T1, as batchServers takes it
		before := convolve(b.wait, b.grid.countsOfSums(binomial((j-1)*4, 0.5), b.sums))
		a := make([][]float64, 5)
		a[0] = onesLike(b.grid.n)
		for n := 1; n <= 4; n++ {
			a[n] = cumulative(convolve(convolve(before, b.sums[n]), b.net))
		}
		return multinomialProduct(a, 2, b.grid.n)
	}(4)
	chance := func(i int) float64 {
		q, out, prev := b.firstGiven(b.pairT1(i, 4, 4, 2)), 0.0, 0.0
		for s, v := range t1 {
			out += (v - prev) * q[s]
			prev = v
		}
		return out
	}
	if p := chance(3); p < 1-0.125 {
		t.Errorf("request 3's T1 before request 4's with chance %.4f, want at least 0.875", p)
	}
	if p := chance(5); p > 0.125 {
		t.Errorf("request 5's T1 before request 4's with chance %.4f, want at most 0.125", p)
	}
}

// TestBatchServersEarlierDone: Gridlab-D's batches on three groups of one
// server at 1% load (nearly every batch alone), against the simulator at
// the bounds of the predicted 30th and 90th percentiles, where the lone
// batch's law was too wide. Whether an earlier request of the batch came
// first is tied to the servers' loads: it did at every server done with
// the earlier first phases by this request's T1, and those servers hold
// less. Taking the count of last phases ahead apart from the loads put
// the 30th percentile's bound 0.0047 high and the 90th's 0.0029 low (10^7
// simulated requests; here 0.0043 and 0.0034, over 0.002 and three
// standard errors); in two classes (every server done with the earlier
// first phases by T1, or not), 0.0005 and 0.0016 (here 0.0009, 0.0020).
func TestBatchServersEarlierDone(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("simulates 4x10^6 requests")
	}
	sys, cfg := expRequests(gridlabd, 0.01), Config{Duplicates: 1, Replicas: 3}
	pred, err := predictCovering(sys, cfg, []float64{0.9}, false)
	if err != nil {
		t.Fatal(err)
	}
	bounds := []float64{pred.Quantile(0.3), pred.Quantile(0.9)}
	sim, err := SimulateRequests(sys, cfg, bounds, SimOptions{Requests: 4000000, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range bounds {
		got, want := pred.At(b), sim.SLA[i]
		t.Logf("bound %s: predicted %.4f, simulated %.4f±%.4f", fmtDur(b), got, want, sim.StdErr[i])
		if math.Abs(got-want) > 0.002+3*sim.StdErr[i] {
			t.Errorf("bound %s: predicted %.4f, simulated %.4f±%.4f", fmtDur(b), got, want, sim.StdErr[i])
		}
	}
}

// TestBatchServersGridLimit: batchServers's law converges as its cells'
// width squared, so the law on 256 cells extrapolated with 128's is near
// the limit. On the error map's horizon for 1x2 at 8% load (112 ms), 256
// cells alone are up to 0.0022 off 512's; extrapolated from 256 and 128
// cells, the law is within 0.0005 of the same from 512 and 256.
func TestBatchServersGridLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("takes the law on 512 cells")
	}
	sys, cfg := expRequests(gridlabd, 0.08), Config{Duplicates: 1, Replicas: 2}
	g := grid{h: 0.112 / (maxRequestGridPts - 1), n: maxRequestGridPts}
	laws := map[int][]float64{}
	for _, cells := range []int{128, 256, 512} {
		laws[cells], _ = g.batchServersOn(sys, 4, 3, sys.Utilization(cfg), cfg.Replicas, cells, false)
	}
	limit := func(fine, coarse []float64) []float64 {
		out := make([]float64, len(fine))
		for i := range out {
			out[i] = fine[i] + (fine[i]-coarse[i])/3
		}
		return out
	}
	largest := func(a, b []float64) float64 {
		d := 0.0
		for i := range a {
			d = max(d, math.Abs(a[i]-b[i]))
		}
		return d
	}
	alone := largest(laws[256], laws[512])
	extrapolated := largest(limit(laws[256], laws[128]), limit(laws[512], laws[256]))
	t.Logf("256 against 512 cells: %.4f; extrapolated from 256 and 128 against from 512 and 256: %.4f", alone, extrapolated)
	if alone < 0.0015 || extrapolated > alone/3 {
		t.Errorf("256 against 512 cells %.4f (want the grid's error, >= 0.0015), extrapolated %.4f (want a third of it or less)", alone, extrapolated)
	}
}

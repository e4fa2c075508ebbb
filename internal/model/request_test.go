package model

import (
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

// olio is the thesis's Inner-Join Olio request (§2.2.1, chapter 6): 30
// parallel reads, a barrier, 20 parallel reads.
var olio = Request{Phases: []int{30, 20}}

// gridlabd is gait's Gridlab-D step (§2.2.2): 4 reads then 3 writes, in
// batches of 8.
var gridlabd = Request{Phases: []int{4, 3}, Batch: 8}

// threePhases is the error map's request of three phases: 10, 10 and 10
// parallel accesses.
var threePhases = Request{Phases: []int{10, 10, 10}}

// TestRequestPredictionMatchesSimulation checks the request predictor
// against the request simulator where it holds to the thesis's 0.002
// (docs/requests.md): one server up to 30% load, one group up to 8% with
// one duplicate or several (their shared arrivals conditioned on), up to
// 8 groups of one duplicate at 1%, and duplicates in two groups at 1%.
// The error must stay within 0.002 (plus three standard errors of the
// simulation) at the bounds of the predicted median, 90th and 99th
// percentiles.
func TestRequestPredictionMatchesSimulation(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("simulates about 5 million accesses per case")
	}
	svc := Exponential{1e-3}
	cases := []struct {
		req  Request
		util float64
		cfg  Config
		tol  float64
		// long: one server in several groups, whose predictions (3-4 s
		// each at 1%) run with GAIT_REQUEST_LONG=1;
		// TestSeveralGroupsSecondPhaseFollowsFirst holds that path.
		long bool
	}{
		{olio, 0.01, Config{1, 1}, 0.002, false},
		{olio, 0.08, Config{1, 1}, 0.002, false},
		{olio, 0.01, Config{1, 4}, 0.002, true},
		{olio, 0.01, Config{1, 8}, 0.002, true},
		{olio, 0.01, Config{4, 1}, 0.002, false},
		{olio, 0.08, Config{2, 1}, 0.002, false},
		{olio, 0.3, Config{1, 1}, 0.002, false},
		{olio, 0.01, Config{2, 2}, 0.002, false},
		{gridlabd, 0.08, Config{1, 1}, 0.002, false},
		// Batches on several groups or duplicates: within 0.002 at 1% with
		// one group; within 0.006 at 8% in four groups of one, and in two
		// of two (each request's first phase's end a barrier: batchBarrier;
		// the back-to-back form before it was 0.013 off).
		{gridlabd, 0.01, Config{2, 1}, 0.002, false},
		{gridlabd, 0.08, Config{1, 4}, 0.006, false},
		{gridlabd, 0.08, Config{2, 2}, 0.006, false},
	}
	for _, c := range cases {
		if c.long && os.Getenv("GAIT_REQUEST_LONG") == "" {
			continue
		}
		sys := System{Service: svc, Request: c.req}
		sys.Rate = c.util / (float64(c.req.Accesses()) * svc.Mean())
		matchesSimulation(t, sys, c.cfg, c.tol, SimOptions{Requests: 96000, Seed: 7})
	}
}

// expRequests is a system of req's requests with exp:1ms service, at
// utilization util (that of one server taking every access).
func expRequests(req Request, util float64) System {
	return System{Service: Exponential{1e-3}, Request: req, Rate: util / (float64(req.Accesses()) * 1e-3)}
}

// matchesSimulation fails t where the request predictor's SLA for sys on
// cfg is further than tol plus three standard
// errors from the simulator's, at the bounds where the predictor puts the
// median, the 90th and the 99th percentile.
func matchesSimulation(t *testing.T, sys System, cfg Config, tol float64, opt SimOptions) {
	t.Helper()
	util := sys.Rate * float64(sys.Request.Accesses()) * sys.Service.Mean()
	pred, err := predictCovering(sys, cfg, []float64{0.99}, false)
	if err != nil {
		t.Fatal(err)
	}
	bounds := []float64{pred.Quantile(0.5), pred.Quantile(0.9), pred.Quantile(0.99)}
	sim, err := SimulateRequests(sys, cfg, bounds, opt)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range bounds {
		got, want := pred.At(b), sim.SLA[i]
		t.Logf("%v at %g%%, %dx%d, bound %s: predicted %.4f, simulated %.4f±%.4f", sys.Request, 100*util, cfg.Duplicates, cfg.Replicas, fmtDur(b), got, want, sim.StdErr[i])
		if math.Abs(got-want) > tol+3*sim.StdErr[i] {
			t.Errorf("%v at %g%%, %dx%d, bound %s: predicted %.4f, simulated %.4f±%.4f", sys.Request, 100*util, cfg.Duplicates, cfg.Replicas, fmtDur(b), got, want, sim.StdErr[i])
		}
	}
}

// TestRequestOfOneAccessIsTheAccessModel: a request of one access arriving
// alone is what the model predicted before requests existed.
func TestRequestOfOneAccessIsTheAccessModel(t *testing.T) {
	sys := System{Service: Exponential{1e-3}, Rate: 100, Bound: 3e-3}
	one := sys
	one.Request = Request{Phases: []int{1}, Batch: 1}
	if one.Request.FanOut() {
		t.Fatal("phases [1] batch 1 counts as a fan-out")
	}
	a, err := Predict(sys, []int{1, 2}, []int{1}, AccurateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Predict(one, []int{1, 2}, []int{1}, AccurateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if a[i].SLA != b[i].SLA {
			t.Errorf("%dx1: %v without phases, %v with phases 1", a[i].Duplicates, a[i].SLA, b[i].SLA)
		}
	}
	// For one duplicate the request predictor agrees with the exact
	// M/G/1 response time too (it takes its own grid).
	fan := sys
	fan.Request = Request{Phases: []int{1}, Batch: 1}
	got, err := PredictRequest(fan, Config{1, 1}, 20e-3, false)
	if err != nil {
		t.Fatal(err)
	}
	if d := got.At(sys.Bound) - a[0].SLA; d > 1e-3 || d < -1e-3 {
		t.Errorf("one access: request predictor %.5f, access predictor %.5f", got.At(sys.Bound), a[0].SLA)
	}
}

func TestRequestValidate(t *testing.T) {
	for _, q := range []Request{
		{Phases: []int{}},
		{Phases: []int{30, 0}},
		{Phases: []int{-1}},
		{Phases: []int{MaxPhaseAccesses + 1}},
		{Phases: make([]int, MaxPhases+1)},
		{Phases: []int{30}, Batch: -2},
		{Phases: []int{30}, Batch: MaxBatch + 1},
		{Phases: []int{200, 200}, Batch: 10},
	} {
		var ie *InputError
		if err := q.Validate(); !errors.As(err, &ie) {
			t.Errorf("%+v: want an input error, got %v", q, err)
		}
	}
	if err := olio.Validate(); err != nil {
		t.Errorf("olio: %v", err)
	}
}

// Predict and the planner tell, for requests, which mix they weigh and
// how far its prediction (duplicates in several groups take seconds) or
// its bisection has come, forward, to the end; the best mix weighs only
// the mixes that fit.
func TestRequestPlannerProgress(t *testing.T) {
	t.Parallel()
	sys := System{Service: Exponential{1e-3}, Rate: 20, Bound: 40e-3, Request: Request{Phases: []int{4, 3}}}
	var seen []float64
	var said []string
	opt := AccurateOptions{Progress: func(what string, done float64) {
		if what == "" || done < 0 || done > 1 || (len(seen) > 0 && done < seen[len(seen)-1]) {
			t.Errorf("progress %q %v after %v", what, done, seen)
		}
		seen, said = append(seen, done), append(said, what)
	}}
	if _, err := Predict(sys, []int{1, 2}, []int{1, 2}, opt); err != nil {
		t.Fatal(err)
	}
	// Mixes run side by side: a line names each mix running.
	told := func(part string) bool {
		return slices.ContainsFunc(said, func(s string) bool { return strings.Contains(s, part) })
	}
	if !told("mix 2x2 (4 of 4)") || !told("mix 2x2 (4 of 4), behind another request") {
		t.Errorf("Predict told %q", said)
	}
	if seen[len(seen)-1] < 0.9 {
		t.Errorf("Predict ended at %v", seen[len(seen)-1])
	}
	seen, said = nil, nil
	_, cands, err := BestMix(sys, 2, PredictorAccurate, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != 3 || !told("mix 1x2 (3 of 3)") {
		t.Errorf("BestMix weighed %d mixes, told %q", len(cands), said)
	}
	seen, said = nil, nil
	if _, _, err := MaxRate(sys, Target{0.99, 40e-3}, 2, PredictorThesis, opt); err != nil {
		t.Fatal(err)
	}
	if !told("mix 1x2 (3 of 3), rate 2 of about 12") || seen[len(seen)-1] < 0.9 {
		t.Errorf("MaxRate told %q, ending at %v", said, seen[len(seen)-1])
	}
}

// TestOneGroupTwoPhasesCountsEveryArrival: with one duplicate the second
// phase waits for every lump that arrives before the first phase ends,
// which withArrivals gives exactly (Y + A(Y)); oneGroupTwoPhases's
// inclusion and exclusion over the arrivals must agree with it. Taking
// only the first arrival, as it once did, is 0.16 off here (several
// arrivals within a first phase).
func TestOneGroupTwoPhasesCountsEveryArrival(t *testing.T) {
	g := grid{h: 0.2e-3, n: 2048}
	svc := g.pmf(Exponential{1e-3})
	sum := func(k int) []float64 {
		out := make([]float64, g.n)
		out[0] = 1
		for range k {
			out = convolve(out, svc)
		}
		return out
	}
	y, last, lump := sum(10), sum(5), sum(3)
	const rate = 150 // arrivals per second: 1.5 within a first phase's mean
	got := g.oneGroupTwoPhases(y, g.newArrivalsAhead(last, lump, rate), 1)
	want := cumulative(convolve(g.withArrivals(y, rate, lump), last))
	worst := 0.0
	for i := range got {
		worst = max(worst, math.Abs(got[i]-want[i]))
	}
	if worst > 1e-3 {
		t.Errorf("one duplicate: largest difference from Y + A(Y) + G is %.4f, want at most 0.001", worst)
	}
	t.Logf("largest difference %.2g", worst)
}

// TestSeveralGroupsSecondPhaseFollowsFirst drives requests of two phases
// over two groups of one server at 30% load against the simulator (4x10^5
// requests). Their second phase's wait is what the first phase left at
// each group: the slowest group is free at T1, the others from their end
// of the first phase, and a request arriving meanwhile reaches every
// group at one instant. Taken as a fresh stationary wait, as before, the
// answer was 0.015-0.027 off. The groups also share the last request to
// arrive before (oneServerGroups conditions on its age): with each
// group's older work drawn apart it was +0.0047 and +0.0036 off at the
// p90 and p99 bounds; now within 0.0012.
func TestSeveralGroupsSecondPhaseFollowsFirst(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("simulates 8 million accesses")
	}
	matchesSimulation(t, expRequests(Request{Phases: []int{10, 10}}, 0.3), Config{1, 2}, 0.002, SimOptions{Requests: 400000, Seed: 1})
}

// TestDuplicatesInTwoGroupsAlone checks the several-group predictor with
// duplicates against the exact law of a request alone: one access, then
// one, on two groups of two duplicates (exp:1ms). The first phase ends
// with the first of its group's two duplicates, T1 ~ Exp(2/ms); the
// second access goes to the other group (both duplicates idle: Exp(2))
// or to the same one, where the slower duplicate is still busy for an
// Exp(1) more: min(S, E + S'), P(> x) = (1+x) e^(-2x). A horizon of 4 ms
// leaves 2% of a duplicate's first phase past the grid; counted as done
// it put the median 0.008 high.
func TestDuplicatesInTwoGroupsAlone(t *testing.T) {
	sys := System{Service: Exponential{1e-3}, Rate: 0.01, Request: Request{Phases: []int{1, 1}}}
	pred, err := PredictRequest(sys, Config{2, 2}, 4e-3, false)
	if err != nil {
		t.Fatal(err)
	}
	exact := func(t float64) float64 { // t in ms: ∫ 2e^(-2s) P(X <= t-s) ds
		const n = 4000
		h, sum := t/n, 0.0
		for i := range n {
			s := (float64(i) + 0.5) * h
			x := t - s
			sum += h * 2 * math.Exp(-2*s) * (1 - 0.5*math.Exp(-2*x) - 0.5*(1+x)*math.Exp(-2*x))
		}
		return sum
	}
	for _, b := range []float64{0.3, 0.94, 1.36, 2.1, 3.5} {
		got, want := pred.At(b*1e-3), exact(b)
		t.Logf("bound %.2f ms: predicted %.4f, exact %.4f", b, got, want)
		if math.Abs(got-want) > 0.002 {
			t.Errorf("bound %.2f ms: predicted %.4f, exact %.4f", b, got, want)
		}
	}
}

// TestDuplicatesInGroupsOnAFineGrid holds the law of duplicates in
// several groups to the one a grid four times as fine gives: two phases
// of 10 on 2x2 at 8%, up to 50 ms. On its 512 cells the law was up to
// 0.0013 above the fine grid's (and Olio's up to 0.003, toward where the
// predictor sat above the simulator); extrapolated from 512 and 256
// cells it is within 0.0003. (About 25 s: with GAIT_REQUEST_LONG=1.)
func TestDuplicatesInGroupsOnAFineGrid(t *testing.T) {
	if os.Getenv("GAIT_REQUEST_LONG") == "" {
		t.Skip("a law on 2048 cells: with GAIT_REQUEST_LONG=1")
	}
	sys := System{Service: Exponential{1e-3}, Request: Request{Phases: []int{10, 10}}}
	sys.Rate = 0.08 / (20 * 1e-3)
	const horizon = 0.05
	got, err := PredictRequest(sys, Config{2, 2}, horizon, false)
	if err != nil {
		t.Fatal(err)
	}
	fine := grid{h: horizon / 2047, n: 2048}
	want := RequestPrediction{Step: fine.h, CDF: fine.twoPhaseGroupsFor(sys, sys.Request.Phases, 2, 2, sys.Utilization(Config{2, 2}), nil)}
	for _, q := range []float64{0.1, 0.3, 0.5, 0.7, 0.9, 0.99} {
		b := want.Quantile(q)
		t.Logf("bound %s: %.4f, on 2048 cells %.4f", fmtDur(b), got.At(b), want.At(b))
		if d := math.Abs(got.At(b) - want.At(b)); d > 5e-4 {
			t.Errorf("bound %s: %.4f, on 2048 cells %.4f", fmtDur(b), got.At(b), want.At(b))
		}
	}
}

// TestMixSharesWeighCost: a pass over mixes gives each its share of the
// progress by its cost: two phases over groups of one server about 2
// one-group mixes, two or three groups of duplicates 7, one server next to
// nothing (the thesis's predictor costs the same for every mix).
func TestMixSharesWeighCost(t *testing.T) {
	sys := System{Service: Exponential{1e-3}, Rate: 1, Request: olio}
	cfgs := []Config{{4, 1}, {1, 4}, {2, 2}, {1, 1}}
	weight := mixShares(sys, cfgs, true)
	want := []float64{1 / 10.05, 2 / 10.05, 7 / 10.05, 0.05 / 10.05}
	for k := range cfgs {
		if math.Abs(weight[k]-want[k]) > 1e-12 {
			t.Errorf("%dx%d: weight %.4f, want %.4f", cfgs[k].Duplicates, cfgs[k].Replicas, weight[k], want[k])
		}
	}
	if weight := mixShares(sys, cfgs, false); weight[2] != 1.0/4 {
		t.Errorf("thesis: 2x2 weighs %.4f, want 1/4", weight[2])
	}
}

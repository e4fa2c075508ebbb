package model

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gait-dev/gait/internal/units"
)

func TestParseDistribution(t *testing.T) {
	good := map[string]float64{ // spec -> mean (s)
		"exp:2ms":            2e-3,
		"lognormal:1ms,0.5":  1e-3 * math.Exp(0.125),
		"pareto:1ms,3":       1.5e-3,
		"const:250us":        250e-6,
		"0.1ms":              1e-4,
		" exp:500us ":        500e-6,
		"LogNormal:2ms,1.25": 2e-3 * math.Exp(1.25*1.25/2),
	}
	for spec, mean := range good {
		d, err := ParseDistribution(spec)
		if err != nil {
			t.Errorf("%q: %v", spec, err)
			continue
		}
		if math.Abs(d.Mean()-mean) > 1e-12 {
			t.Errorf("%q: mean %v, want %v", spec, d.Mean(), mean)
		}
	}
	for _, spec := range []string{"exp:-1ms", "exp:0", "lognormal:1ms", "pareto:1ms,1", "gamma:1ms,2", "exp:abc", "lognormal:1ms,x"} {
		if _, err := ParseDistribution(spec); err == nil {
			t.Errorf("%q: accepted", spec)
		}
	}
	// A bare number is not seconds: it lacks its unit, the same error as
	// everywhere in gait, and is not mistaken for a path either.
	for _, spec := range []string{"exp:2", "2", "lognormal:1,0.5", "pareto:1,3"} {
		if _, err := ParseDistribution(spec); !errors.Is(err, units.ErrNoUnit) {
			t.Errorf("%q: %v, want a duration without a unit", spec, err)
		}
	}
	if _, err := ParseTarget("99.9%@10"); !errors.Is(err, units.ErrNoUnit) {
		t.Errorf("target without a unit: %v", err)
	}
	if _, err := ParseDistribution("runs/x"); !errors.Is(err, ErrNotParametric) {
		t.Errorf("a path should be ErrNotParametric, got %v", err)
	}
}

// Sampling and CDF describe the same distribution.
func TestSamplesFollowCDF(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, d := range []Distribution{Exponential{1e-3}, LogNormal{1e-3, 1}, Pareto{1e-3, 2.5}} {
		x := d.Mean() * 1.3
		hit := 0
		const n = 200000
		for i := 0; i < n; i++ {
			if d.Sample(r) <= x {
				hit++
			}
		}
		if got := float64(hit) / n; math.Abs(got-d.CDF(x)) > 0.005 {
			t.Errorf("%s: P(S <= %g) sampled %.4f, CDF %.4f", d, x, got, d.CDF(x))
		}
	}
}

func TestEmpiricalRejectsBadSamples(t *testing.T) {
	for _, s := range [][]float64{nil, {1, -1}, {math.NaN()}, {math.Inf(1)}} {
		if _, err := NewEmpirical(s, "x"); err == nil {
			t.Errorf("%v accepted", s)
		}
	}
	e, err := NewEmpirical([]float64{3, 1, 2}, "x")
	if err != nil || e.CDF(2) != 2.0/3 || e.Mean() != 2 {
		t.Errorf("empirical: err %v CDF(2)=%v mean=%v", err, e.CDF(2), e.Mean())
	}
}

// For M/M/1 the response time is exponential with rate mu-lambda, so one
// duplicate's SLA is known in closed form.
func TestAccurateMatchesMM1(t *testing.T) {
	for _, rho := range []float64{0.1, 0.5, 0.9} {
		sys := System{Service: Exponential{1e-3}, Rate: rho / 1e-3, Bound: 3e-3}
		p, err := Predict(sys, []int{1}, []int{1}, AccurateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := 1 - math.Exp(-(1-rho)*3)
		if math.Abs(p[0].SLA-want) > 2e-4 {
			t.Errorf("rho %.1f: SLA %.6f, M/M/1 gives %.6f", rho, p[0].SLA, want)
		}
	}
}

// The thesis predictor is 1-(1-Phi(tau'))^N with tau' = tau - net - M/G/1 mean wait.
func TestThesisFormula(t *testing.T) {
	sys := System{Service: Exponential{1e-3}, Net: Constant{2e-4}, Rate: 200, Bound: 4e-3}
	got, err := Thesis(sys, Config{3, 1})
	if err != nil {
		t.Fatal(err)
	}
	wq := 0.2 / 0.8 * 1e-3 // (1+1)/2 * rho/(1-rho) * E[S]
	phi := 1 - math.Exp(-(4e-3-2e-4-wq)/1e-3)
	if want := 1 - math.Pow(1-phi, 3); math.Abs(got-want) > 1e-12 {
		t.Errorf("thesis %v, want %v", got, want)
	}
}

// The accurate predictor agrees with simulation at every load, d = 1 being
// exact M/G/1; the tolerance is the goal (0.001) plus 4 standard errors of
// the difference. The old one-gap predictor was off by 0.003 (30%, d = 3)
// to 0.026 (60%, d = 2) in these cases.
func TestPredictorsAgainstSimulation(t *testing.T) {
	n := 400000
	if testing.Short() {
		n = 100000
	}
	cases := []struct {
		svc  Distribution
		rho  float64
		d    int
		name string
	}{
		{LogNormal{1e-3, 1}, 0.3, 1, "d=1 is exact M/G/1"},
		{Pareto{1e-3, 2.5}, 0.3, 1, "d=1, heavy tail"},
		{Exponential{1e-3}, 0.05, 2, "low load"},
		{LogNormal{1e-3, 1}, 0.15, 4, "moderate load"},
		{Exponential{1e-3}, 0.3, 3, "bursts at 30%"},
		{Pareto{1e-3, 2.5}, 0.6, 2, "bursts at 60%, heavy tail"},
		{LogNormal{1e-3, 1}, 0.6, 4, "bursts at 60%"},
	}
	for _, c := range cases {
		sys := System{Service: c.svc, Net: Constant{1e-4}, Rate: c.rho / c.svc.Mean(), Bound: 3 * c.svc.Mean()}
		sim, err := Simulate(sys, 1, c.d, SimOptions{Requests: n, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		p, err := Predict(sys, []int{c.d}, []int{1}, AccurateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s := sim[c.d-1]
		if diff := math.Abs(p[0].SLA - s.SLA); diff > 1e-3+4*math.Hypot(s.StdErr, p[0].SLAStdErr) {
			t.Errorf("%s (%s, rho %.2f, d %d): accurate %.5f±%.5f, simulated %.5f±%.5f", c.name, c.svc, c.rho, c.d, p[0].SLA, p[0].SLAStdErr, s.SLA, s.StdErr)
		}
	}
}

// The gap law alone is optimistic (Jensen: conditioning on less of the
// shared history can only lower E[Y^d]), clearly so at 60% load, and the
// correlation term is what closes the gap; for d = 1 there is none.
func TestCorrelationTermClosesTheGap(t *testing.T) {
	svc := Exponential{1e-3}
	sys := System{Service: svc, Rate: 0.6 / svc.Mean(), Bound: 3e-3}
	opt := AccurateOptions{}.withDefaults()
	law, err := newGapLaw(sys, sys.Rate, opt)
	if err != nil {
		t.Fatal(err)
	}
	gapMiss := law.miss(32)
	sla, se, err := groupSLA(sys, sys.Rate, seq(32), opt)
	if err != nil {
		t.Fatal(err)
	}
	if se[0] != 0 || math.Abs(1-gapMiss[0]-sla[0]) > 1e-12 {
		t.Errorf("d=1: SLA %v±%v, gap law %v: want the gap law, exactly", sla[0], se[0], 1-gapMiss[0])
	}
	for _, d := range []int{2, 4, 16} {
		if corr := 1 - gapMiss[d-1] - sla[d-1]; !(corr > 10*se[d-1]) {
			t.Errorf("d=%d: correlation term %.5f±%.5f, want clearly > 0", d, corr, se[d-1])
		}
	}
	// d = 16 lies beyond where the gap law's miss share is negligible; the
	// simulated width must have grown to cover it (simulation: 0.0027).
	if se[15] == 0 || 1-sla[15] < 0.0015 {
		t.Errorf("d=16: miss %.5f±%.5f, want about 0.0027 from a simulated width of 16 or more", 1-sla[15], se[15])
	}
}

func TestAccurateIsReproducible(t *testing.T) {
	sys := System{Service: LogNormal{1e-3, 1}, Rate: 300, Bound: 5e-3}
	a, err := Predict(sys, seq(8), []int{1, 2}, AccurateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Predict(sys, seq(8), []int{1, 2}, AccurateOptions{})
	c, _ := Predict(sys, seq(8), []int{1, 2}, AccurateOptions{Seed: 99})
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("same seed, different result: %+v vs %+v", a[i], b[i])
		}
		if diff := math.Abs(a[i].SLA - c[i].SLA); diff > 5*math.Hypot(a[i].SLAStdErr, c[i].SLAStdErr)+1e-6 {
			t.Errorf("seeds 1 and 99 disagree beyond their errors: %+v vs %+v", a[i], c[i])
		}
	}
}

// The thesis predictor, which reduces queueing to its mean, is far off for a
// heavy-tailed service at moderate load; the accurate one is not.
func TestThesisBreaksDownUnderQueueing(t *testing.T) {
	sys := System{Service: LogNormal{0.5e-3, 1.8}, Rate: 0.15 / LogNormal{0.5e-3, 1.8}.Mean(), Bound: 5e-3}
	p, err := Predict(sys, []int{2}, []int{1}, AccurateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sim, err := Simulate(sys, 1, 2, SimOptions{Requests: 100000, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if p[0].SLAThesis > 0.01 || math.Abs(p[0].SLA-sim[1].SLA) > 0.005 {
		t.Errorf("thesis %.4f (want ~0), accurate %.4f, simulated %.4f", p[0].SLAThesis, p[0].SLA, sim[1].SLA)
	}
}

// One simulation of m servers answers every d <= m; the d-subset estimate
// must agree with a direct run of d servers.
func TestSubsetEstimateMatchesDirectRun(t *testing.T) {
	sys := System{Service: Exponential{1e-3}, Rate: 300, Bound: 2e-3}
	wide, err := Simulate(sys, 1, 6, SimOptions{Requests: 200000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	direct, err := Simulate(sys, 1, 2, SimOptions{Requests: 200000, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	a, b := wide[1], direct[1]
	if math.Abs(a.SLA-b.SLA) > 4*math.Hypot(a.StdErr, b.StdErr)+1e-4 {
		t.Errorf("d=2 from 6 servers %.5f±%.5f, direct %.5f±%.5f", a.SLA, a.StdErr, b.SLA, b.StdErr)
	}
}

func TestRoundRobinIsSmootherThanRandom(t *testing.T) {
	sys := System{Service: Exponential{1e-3}, Rate: 1200, Bound: 3e-3}
	rr, err := Simulate(sys, 2, 1, SimOptions{Requests: 200000, Seed: 1, Split: SplitRoundRobin})
	if err != nil {
		t.Fatal(err)
	}
	rnd, err := Simulate(sys, 2, 1, SimOptions{Requests: 200000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Erlang-2 gaps queue less than Poisson ones.
	if rr[0].SLA <= rnd[0].SLA {
		t.Errorf("round-robin %.4f not above random %.4f", rr[0].SLA, rnd[0].SLA)
	}
}

func TestUnstableIsMarkedNotNaN(t *testing.T) {
	sys := System{Service: Exponential{1e-3}, Rate: 1500, Bound: 5e-3}
	ps, err := Predict(sys, []int{1, 2}, []int{1, 2}, AccurateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(ps)
	if err != nil {
		t.Fatal(err)
	}
	js := string(out)
	if strings.Contains(js, "NaN") || strings.Count(js, `"sla":"unstable"`) != 2 {
		t.Errorf("want the two r=1 configurations marked unstable: %s", js)
	}
	if _, err := Simulate(sys, 1, 1, SimOptions{Requests: 1000}); !errors.Is(err, ErrUnstable) {
		t.Errorf("simulate at utilization 1.5: %v", err)
	}
}

func TestBadInputs(t *testing.T) {
	base := System{Service: Exponential{1e-3}, Rate: 100, Bound: 5e-3}
	bad := map[string]System{
		"bound below network": {Service: Exponential{1e-3}, Net: Constant{6e-3}, Rate: 100, Bound: 5e-3},
		"zero rate":           {Service: Exponential{1e-3}, Bound: 5e-3},
		"no bound":            {Service: Exponential{1e-3}, Rate: 100},
	}
	for name, sys := range bad {
		if _, err := Predict(sys, []int{1}, []int{1}, AccurateOptions{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := Predict(base, []int{0}, []int{1}, AccurateOptions{}); err == nil {
		t.Error("0 duplicates accepted")
	}
	if _, err := Predict(base, nil, []int{1}, AccurateOptions{}); err == nil {
		t.Error("no duplicate counts accepted")
	}
}

func TestParseTarget(t *testing.T) {
	tg, err := ParseTarget("99.9%@10ms")
	if err != nil || math.Abs(tg.SLA-0.999) > 1e-12 || tg.Bound != 0.01 {
		t.Errorf("got %+v, %v", tg, err)
	}
	for _, s := range []string{"99.9@10ms", "100%@1ms", "99%@", "x%@1ms", "99%@-1ms"} {
		if _, err := ParseTarget(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestPlanner(t *testing.T) {
	svc := LogNormal{0.5e-3, 1.8}
	sys := System{Service: svc, Rate: 0.05 / svc.Mean(), Bound: 5e-3}
	best, cands, err := BestMix(sys, 8, PredictorAccurate, AccurateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cands {
		if c.Nodes > 8 || c.SLA > best.SLA+1e-12 {
			t.Errorf("candidate %+v beats or exceeds best %+v", c, best)
		}
	}
	target := Target{SLA: 0.999, Bound: 10e-3}
	few, err := FewestNodes(sys, target, 32, PredictorAccurate, AccurateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if few.SLA < target.SLA {
		t.Errorf("fewest nodes %+v misses the target", few)
	}
	// One node fewer must not meet it in any mix.
	sysT := sys
	sysT.Bound = target.Bound
	dups, reps := mixes(few.Nodes - 1)
	ps, _ := Predict(sysT, dups, reps, AccurateOptions{})
	for _, p := range ps {
		if p.Nodes < few.Nodes && !p.Unstable && p.SLA >= target.SLA {
			t.Errorf("%+v meets the target with fewer nodes than %d", p, few.Nodes)
		}
	}
	mr, all, err := MaxRate(sys, target, 4, PredictorAccurate, AccurateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all {
		if r.UpperBound && r.Rate > mr.Rate {
			t.Errorf("skipped mix %+v has a bound above the best rate %v", r, mr.Rate)
		}
	}
	sysR := sysT
	sysR.Rate = mr.Rate * 1.05
	over, _ := Predict(sysR, []int{mr.Duplicates}, []int{mr.Replicas}, AccurateOptions{})
	if !over[0].Unstable && over[0].SLA >= target.SLA {
		t.Errorf("5%% above the max rate %v the mix still meets the target: %+v", mr.Rate, over[0])
	}
}

func TestIndependence(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	n := 20000
	a, b, c := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range a {
		a[i], b[i] = r.ExpFloat64(), r.ExpFloat64()
		c[i] = a[i] + 0.1*r.ExpFloat64() // slow exactly when a is
	}
	ind, err := CheckIndependence(a, b, 0.9)
	if err != nil || !ind.Holds || math.Abs(ind.Lift-1) > 0.2 {
		t.Errorf("independent streams: %+v %v", ind, err)
	}
	dep, err := CheckIndependence(a, c, 0.9)
	if err != nil || dep.Holds || dep.Lift < 5 {
		t.Errorf("dependent streams judged independent: lift %v z %v", dep.Lift, dep.Z)
	}
	if _, err := CheckIndependence(a, b[:10], 0.9); err == nil {
		t.Error("different lengths accepted")
	}
}

package model

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Predictor names which model answers the planner's questions.
type Predictor string

const (
	PredictorAccurate Predictor = "accurate"
	PredictorThesis   Predictor = "thesis"
)

// ParsePredictor checks a predictor name.
func ParsePredictor(s string) (Predictor, error) {
	switch Predictor(s) {
	case PredictorAccurate, PredictorThesis:
		return Predictor(s), nil
	}
	return "", inputError("predictor", s, "want accurate or thesis")
}

// Pick is the SLA this predictor gives a prediction.
func (p Predictor) Pick(pr Prediction) float64 {
	if p == PredictorThesis {
		return pr.SLAThesis
	}
	return pr.SLA
}

// Target is an SLA goal such as 99.9% of requests within 10ms.
type Target struct {
	SLA   float64 // share of requests, 0..1
	Bound float64 // seconds
}

func (t Target) String() string {
	return strconv.FormatFloat(t.SLA*100, 'g', -1, 64) + "%@" + fmtDur(t.Bound)
}

// ParseTarget reads "99.9%@10ms".
func ParseTarget(s string) (Target, error) {
	pct, bound, ok := strings.Cut(s, "@")
	if !ok || !strings.HasSuffix(strings.TrimSpace(pct), "%") {
		return Target{}, fmt.Errorf("target %q: want PERCENT%%@BOUND, e.g. 99.9%%@10ms", s)
	}
	p, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(pct), "%"), 64)
	if err != nil || !(p > 0 && p < 100) {
		return Target{}, fmt.Errorf("target %q: percentage must be between 0 and 100 (exclusive)", s)
	}
	b, err := parseDur(bound)
	if err != nil {
		return Target{}, fmt.Errorf("target %q: %w", s, err)
	}
	if b <= 0 {
		return Target{}, fmt.Errorf("target %q: bound must be a positive duration", s)
	}
	return Target{SLA: p / 100, Bound: b}, nil
}

// MaxPlanNodes is the largest node budget the planner weighs: it predicts
// every mix of up to that many nodes.
const MaxPlanNodes = 256

func validatePlanNodes(input string, n int) error {
	if n < 1 || n > MaxPlanNodes {
		return inputError(input, n, "want 1 to %d", MaxPlanNodes)
	}
	return nil
}

// mixes lists every duplicates x replicas pair with at most nodes servers.
func mixes(nodes int) (dups, reps []int) {
	for i := 1; i <= nodes; i++ {
		dups = append(dups, i)
		reps = append(reps, i)
	}
	return dups, reps
}

// BestMix answers the thesis's first question (chapter 6): with at most
// nodes servers at the system's rate, which mix of duplicates and replicas
// gives the highest SLA. Ties go to fewer nodes. It also returns every
// stable candidate it weighed.
func BestMix(sys System, nodes int, pred Predictor, opt AccurateOptions) (Prediction, []Prediction, error) {
	if err := validatePlanNodes("nodes", nodes); err != nil {
		return Prediction{}, nil, err
	}
	dups, reps := mixes(nodes)
	var all []Prediction
	var err error
	if sys.Request.FanOut() && sys.Validate() == nil {
		// A request prediction takes up to seconds: weigh only the mixes
		// that fit.
		all, err = predictRequests(sys, configs(dups, reps, nodes), opt.Progress)
	} else {
		all, err = Predict(sys, dups, reps, opt)
	}
	if err != nil {
		return Prediction{}, nil, err
	}
	var best Prediction
	var cands []Prediction
	found := false
	for _, p := range all {
		if p.Nodes > nodes || p.Unstable {
			continue
		}
		cands = append(cands, p)
		if !found || better(pred.Pick(p), p.Nodes, pred.Pick(best), best.Nodes) {
			best, found = p, true
		}
	}
	if !found {
		return Prediction{}, nil, fmt.Errorf("no mix of %d nodes keeps utilization below 1 at %g requests/s: %w", nodes, sys.Rate, ErrUnstable)
	}
	if sys.Request.FanOut() {
		if best.Check, err = checkRequests(sys, best.Config, sys.Rate, sys.Bound, nil); err != nil {
			return Prediction{}, nil, err
		}
	}
	return best, cands, nil
}

func better(sla float64, nodes int, bestSLA float64, bestNodes int) bool {
	const eps = 1e-12
	return sla > bestSLA+eps || (math.Abs(sla-bestSLA) <= eps && nodes < bestNodes)
}

// FewestNodes answers the second question: the smallest node count, up to
// maxNodes, whose best mix meets the target at the system's rate. For each
// replica count it weighs the duplicate counts that could still beat the
// best answer so far; with the thesis predictor the accurate SLA is worked
// out for the answer only.
func FewestNodes(sys System, target Target, maxNodes int, pred Predictor, opt AccurateOptions) (Prediction, error) {
	sys.Bound = target.Bound
	if err := firstErr(sys.Validate(), validatePlanNodes("max-nodes", maxNodes)); err != nil {
		return Prediction{}, err
	}
	var best Prediction
	found := false
	limit := maxNodes
	progress := opt.Progress
	opt.Progress = nil
	for r := 1; r <= limit; r++ {
		if progress != nil {
			progress(fmt.Sprintf("%d replicas of up to %d", r, limit), float64(r-1)/float64(limit))
		}
		if sys.Utilization(Config{1, r}) >= 1 {
			continue
		}
		if sys.Request.FanOut() {
			// Each request prediction may take seconds: tell which.
			opt.Progress = progress.stage(fmt.Sprintf("%d replicas of up to %d", r, limit), float64(r-1)/float64(limit), 1/float64(limit))
		}
		ps, err := predictFor(sys, seq(limit/r), r, pred, opt)
		if err != nil {
			return Prediction{}, err
		}
		for _, p := range ps {
			if pred.Pick(p) < target.SLA {
				continue
			}
			if !found || p.Nodes < best.Nodes || (p.Nodes == best.Nodes && pred.Pick(p) > pred.Pick(best)) {
				best, found = p, true
			}
		}
		if found {
			limit = best.Nodes
		}
	}
	if !found {
		return Prediction{}, fmt.Errorf("no mix of up to %d nodes meets %s at %g requests/s", maxNodes, target, sys.Rate)
	}
	if pred == PredictorThesis {
		ps, err := Predict(sys, []int{best.Duplicates}, []int{best.Replicas}, opt)
		if err != nil {
			return Prediction{}, err
		}
		best = ps[0]
	}
	if sys.Request.FanOut() {
		check, err := checkRequests(sys, best.Config, sys.Rate, target.Bound, nil)
		if err != nil {
			return Prediction{}, err
		}
		best.Check = check
	}
	return best, nil
}

// predictFor is Predict for one replica count; the thesis predictor alone
// leaves SLA unset, sparing the Monte Carlo term.
func predictFor(sys System, dups []int, r int, pred Predictor, opt AccurateOptions) ([]Prediction, error) {
	if pred != PredictorThesis {
		return Predict(sys, dups, []int{r}, opt)
	}
	var ps []Prediction
	for _, d := range dups {
		cfg := Config{d, r}
		th, err := Thesis(sys, cfg)
		if err != nil {
			return nil, err
		}
		ps = append(ps, Prediction{Config: cfg, Nodes: cfg.Nodes(), Utilization: sys.Utilization(cfg), SLAThesis: th})
	}
	return ps, nil
}

// RateResult is the highest rate a mix carries at a target.
type RateResult struct {
	Config
	Nodes int     `json:"nodes"`
	Rate  float64 `json:"rate"`
	SLA   float64 `json:"sla"`
	// UpperBound marks a mix the accurate search skipped: Rate is then the
	// gap law's highest rate, which bounds the accurate one from above and
	// is already below the best mix's.
	UpperBound bool `json:"upper_bound,omitempty"`
	// Check is, for requests of several accesses, the answer's SLA by
	// simulation (the best mix only).
	Check *RequestCheck `json:"check,omitempty"`
}

// RequestCheck is a planner's answer for requests simulated: its search
// ends where each server is loaded far past the error map's loads, and
// there the request predictor can be off by more than its 0.002 (one
// server per group on Olio-like requests at 47% per server: 0.008
// optimistic), so the answer comes with what simulating it gives.
type RequestCheck struct {
	Requests  int     `json:"requests"`
	Simulated float64 `json:"sla_simulated"`
	StdErr    float64 `json:"stderr"`
}

// checkRequests simulates sys's requests on cfg at rate against bound.
func checkRequests(sys System, cfg Config, rate, bound float64, progress Progress) (*RequestCheck, error) {
	sys.Rate = rate
	const requests = 1000000
	sim, err := SimulateRequests(sys, cfg, []float64{bound}, SimOptions{Requests: requests, Seed: 1, Progress: progress})
	if err != nil {
		return nil, fmt.Errorf("check %dx%d at %g requests/s by simulation: %w", cfg.Duplicates, cfg.Replicas, rate, err)
	}
	return &RequestCheck{Requests: requests, Simulated: sim.SLA[0], StdErr: sim.StdErr[0]}, nil
}

// MaxRate finds the highest total rate that nodes servers can carry while
// meeting the target, over every mix that fits, by bisection on the rate
// (the SLA falls as the rate grows). sys.Rate is ignored.
//
// For the accurate predictor each mix is first searched with its gap law
// alone, whose SLA is never below the accurate one (the correlation term
// only adds misses); mixes are then searched with the accurate predictor
// from the highest bound down, skipping those whose bound cannot beat the
// best found.
func MaxRate(sys System, target Target, nodes int, pred Predictor, opt AccurateOptions) (RateResult, []RateResult, error) {
	if err := validatePlanNodes("nodes", nodes); err != nil {
		return RateResult{}, nil, err
	}
	sys.Bound = target.Bound
	if err := sys.validateShape(); err != nil {
		return RateResult{}, nil, err
	}
	opt = opt.withDefaults()
	progress := opt.Progress
	opt.Progress = nil
	// The gap law's bounds are most of the work (a bisection of every
	// mix); the accurate search skips most mixes. Requests have no
	// accurate search: their bisections are all of it.
	dups, reps := mixes(nodes)
	cfgs := configs(dups, reps, nodes)
	pass := progress.stage("the gap law's bound on every mix", 0, 0.8)
	if sys.Request.FanOut() {
		pass = progress.stage("", 0, 0.97) // the mixes' own names tell it
	}
	all := make([]RateResult, len(cfgs))
	err := sideBySide(mixNames(cfgs), mixShares(sys, cfgs, pred == PredictorAccurate), pass, func(k int, mix Progress) error {
		cfg := cfgs[k]
		// The queue is stable below r/(accesses x E[S]); search (0, that).
		hi := float64(cfg.Replicas) / (float64(sys.Request.Accesses()) * sys.Service.Mean())
		search := maxRateOf
		if sys.Request.FanOut() {
			search = maxRateOfSmooth
		}
		var err error
		all[k], err = search(cfg, target, rateSLA(sys, cfg, pred, opt, mix), hi, 1e-4)
		return err
	})
	if err != nil {
		return RateResult{}, nil, err
	}
	if pred == PredictorAccurate && !sys.Request.FanOut() {
		if err := refineAccurate(sys, target, all, opt, progress.stage("the accurate rate, from the highest bound down", 0.8, 0.2)); err != nil {
			return RateResult{}, nil, err
		}
	}
	var best RateResult
	for _, res := range all {
		if !res.UpperBound && (res.Rate > best.Rate || (res.Rate == best.Rate && res.Rate > 0 && res.Nodes < best.Nodes)) {
			best = res
		}
	}
	if best.Rate == 0 {
		return RateResult{}, all, fmt.Errorf("no mix of up to %d nodes meets %s even at a vanishing rate", nodes, target)
	}
	if sys.Request.FanOut() {
		check, err := checkRequests(sys, best.Config, best.Rate, target.Bound, progress.stage(fmt.Sprintf("the answer, %dx%d, by simulation", best.Duplicates, best.Replicas), 0.97, 0.03))
		if err != nil {
			return RateResult{}, nil, err
		}
		best.Check = check
	}
	return best, all, nil
}

// rateSLA is what MaxRate bisects for one mix: its SLA at a total rate,
// by the gap law (the accurate predictor's bound), the thesis's, or for
// requests the request predictor, telling mix of each bisection step.
func rateSLA(sys System, cfg Config, pred Predictor, opt AccurateOptions, mix Progress) func(rate float64) (float64, error) {
	if sys.Request.FanOut() {
		return requestRateSLA(sys, cfg, pred == PredictorThesis, mix)
	}
	if pred == PredictorThesis {
		return func(rate float64) (float64, error) {
			sys.Rate = rate
			return Thesis(sys, cfg)
		}
	}
	return func(rate float64) (float64, error) { return gapSLA(sys, rate, cfg, opt) }
}

// requestRateSLA is rateSLA for requests. maxRateOfSmooth's search is one
// probe, then 10-13 steps to 1e-4. Past 12 progress stays quiet rather
// than run backwards.
func requestRateSLA(sys System, cfg Config, thesis bool, mix Progress) func(rate float64) (float64, error) {
	const steps = 12
	step := 0
	return func(rate float64) (float64, error) {
		sys.Rate = rate
		step++
		var tell Progress
		if step <= steps && mix != nil {
			tell = mix.stage(fmt.Sprintf("rate %d of about %d", step, steps), float64(step-1)/steps, 1.0/steps)
			tell("", 0)
		}
		return requestSLA(sys, cfg, thesis, tell)
	}
}

// refineAccurate replaces the gap-law rates in all by accurate ones, from
// the highest down, marking the mixes it can skip.
func refineAccurate(sys System, target Target, all []RateResult, opt AccurateOptions, progress Progress) error {
	order := make([]int, len(all))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return all[order[a]].Rate > all[order[b]].Rate })
	bestRate := 0.0
	for k, i := range order {
		if progress != nil {
			progress(fmt.Sprintf("mix %d of %d", k+1, len(order)), float64(k)/float64(len(order)))
		}
		bound := all[i]
		if bound.Rate == 0 || bound.Rate <= bestRate {
			all[i].UpperBound = bound.Rate > 0
			continue
		}
		cfg := bound.Config
		decide := opt
		decide.decide = target.SLA
		acc := func(rate float64) (float64, error) {
			sla, _, err := groupSLA(sys, rate/float64(cfg.Replicas), []int{cfg.Duplicates}, decide)
			if err != nil {
				return 0, err
			}
			return sla[cfg.Duplicates-1], nil
		}
		hi := bound.Rate
		if cfg.Duplicates >= 2 {
			// Beyond corrLimit the accurate predictor is the gap law
			// alone, which is optimistic: search only where it is not.
			hi = min(hi, float64(cfg.Replicas)*corrLimit(opt)/sys.Service.Mean())
		}
		// Monte Carlo noise makes a finer search than 1e-3 meaningless.
		res, err := maxRateOf(cfg, target, acc, hi, 1e-3)
		if err != nil {
			return err
		}
		all[i] = res
		bestRate = max(bestRate, res.Rate)
	}
	return nil
}

// gapSLA is the gap law's SLA for one configuration at a total rate.
func gapSLA(sys System, rate float64, cfg Config, opt AccurateOptions) (float64, error) {
	law, err := newGapLaw(sys, rate/float64(cfg.Replicas), opt)
	if err != nil {
		return 0, err
	}
	return 1 - law.miss(cfg.Duplicates)[cfg.Duplicates-1], nil
}

// maxRateOf searches (0, hi) for the highest rate at which sla meets the
// target, to a relative precision tol, by bisection: sla may be a Monte
// Carlo estimate, whose noise an interpolating search would chase.
func maxRateOf(cfg Config, target Target, sla func(rate float64) (float64, error), hi, tol float64) (RateResult, error) {
	return searchRate(cfg, target, sla, hi, tol, false)
}

// maxRateOfSmooth is maxRateOf for an sla that is a smooth, exact
// function of the rate (the request predictor), by regula falsi with the
// Illinois rule on the log of the miss ratio, which a queue's tail makes
// nearly linear in the rate near the target: 10-13 predictions where
// bisection takes 15 (requests of phases 10,10 at 99%@40ms on 1x1, 2x1
// and 1x2), which matters when one takes seconds.
func maxRateOfSmooth(cfg Config, target Target, sla func(rate float64) (float64, error), hi, tol float64) (RateResult, error) {
	return searchRate(cfg, target, sla, hi, tol, true)
}

// searchRate keeps a bracket (lo meets the target, hi does not) and
// shrinks it to tol*hi. Its first step is bisection's; when it
// interpolates, the miss ratio at the stability limit hi is taken as 1
// (hi itself cannot be predicted), and a step that leaves more than half
// of the bracket is followed by a bisection, so the search never takes
// more than about twice bisection's steps (a step-shaped SLA defeats
// interpolation).
func searchRate(cfg Config, target Target, sla func(rate float64) (float64, error), hi, tol float64, interpolate bool) (RateResult, error) {
	res := RateResult{Config: cfg, Nodes: cfg.Nodes()}
	lo := 0.0
	low, err := sla(hi * 1e-6)
	if err != nil {
		return res, err
	}
	if low < target.SLA {
		return res, nil
	}
	res.SLA = low
	width := tol * hi
	// excess is how far an SLA is inside the target, on the log of the
	// miss ratio (>= 0 meets it); lo's is the probe's, hi's the limit's.
	excess := func(v float64) float64 {
		return math.Log(1-target.SLA) - math.Log(max(1-v, 1e-300))
	}
	fLo, fHi := excess(low), excess(0)
	side := 0 // which end the last step moved: -1 lo, +1 hi (Illinois)
	bisect := true
	for i := 0; i < 80 && hi-lo > width; i++ {
		mid := (lo + hi) / 2
		if !bisect {
			mid = hi - fHi*(hi-lo)/(fHi-fLo)
			// Stay a little inside the bracket: a point on its edge
			// would not shrink it.
			mid = min(max(mid, lo+width/4), hi-width/4)
		}
		before := hi - lo
		v, err := sla(mid)
		if err != nil {
			return res, err
		}
		if f := excess(v); v >= target.SLA {
			lo, fLo, res.SLA = mid, f, v
			if side == -1 {
				fHi /= 2
			}
			side = -1
		} else {
			hi, fHi = mid, f
			if side == +1 {
				fLo /= 2
			}
			side = +1
		}
		bisect = !interpolate || (!bisect && hi-lo > before/2)
	}
	res.Rate = lo
	return res, nil
}

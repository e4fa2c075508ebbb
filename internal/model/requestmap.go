package model

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// RequestErrorCell compares the request predictor with simulation for one
// mix at one load and one bound.
type RequestErrorCell struct {
	// Utilization is the load as the map was asked for it;
	// ServerUtilization is each server's under it (the same with one
	// group, 1/Replicas of it when the load is of one server taking every
	// access).
	Utilization       float64 `json:"utilization"`
	ServerUtilization float64 `json:"server_utilization"`
	Config
	// Quantile is the predicted share the bound was chosen for.
	Quantile  float64 `json:"quantile"`
	Bound     float64 `json:"bound_s"`
	Predicted float64 `json:"sla"`
	Thesis    float64 `json:"sla_thesis"`
	Simulated float64 `json:"sla_simulated"`
	StdErr    float64 `json:"stderr"`
}

// Error is the predictor's absolute error against simulation.
func (c RequestErrorCell) Error() float64 { return math.Abs(c.Predicted - c.Simulated) }

// RequestMapScope is what a request error map covers: its loads and its
// mixes.
type RequestMapScope struct {
	Utilizations []float64
	// PerServer makes each utilization every server's in every mix (a mix
	// of r groups then carries r times the requests), as a planner's
	// search for the highest rate reaches; otherwise it is the load of one
	// server taking every access, the same request rate for every mix.
	PerServer bool
	// Mixes are the mixes mapped; without them, every mix of at most
	// MaxNodes nodes.
	Mixes    []Config
	MaxNodes int
}

// rate is the request rate that puts load u on cfg.
func (l RequestMapScope) rate(sys System, u float64, cfg Config) float64 {
	rate := u / (float64(sys.Request.Accesses()) * sys.Service.Mean())
	if l.PerServer {
		rate *= float64(cfg.Replicas)
	}
	return rate
}

// RequestErrorMap runs the request predictor and the request simulator
// for every mix of at most maxNodes nodes at each load, at the bounds
// where the prediction reaches each quantile: a bound the predictor gets
// wrong shows there.
func RequestErrorMap(sys System, scope RequestMapScope, quantiles []float64, opt SimOptions) ([]RequestErrorCell, error) {
	cfgs, err := scope.mixes()
	if err != nil {
		return nil, err
	}
	utils := scope.Utilizations
	if len(utils) == 0 {
		return nil, inputError("utilizations", nil, "no utilization given")
	}
	for _, u := range utils {
		if !(u > 0 && u < 1) {
			return nil, inputError("utilizations", u, "must be in (0, 1)")
		}
	}
	for _, q := range quantiles {
		if !(q > 0 && q < 1) {
			return nil, inputError("quantiles", q, "must be in (0, 1)")
		}
	}
	if err := firstErr(sys.Request.Validate(), opt.validate()); err != nil {
		return nil, err
	}
	type cell struct {
		u   float64
		cfg Config
	}
	var cells []cell
	var names []string
	var weight []float64
	for _, u := range utils {
		for k, w := range mixShares(sys, cfgs, true) {
			cells = append(cells, cell{u, cfgs[k]})
			names = append(names, fmt.Sprintf("%dx%d at %g%% load", cfgs[k].Duplicates, cfgs[k].Replicas, 100*u))
			weight = append(weight, w/float64(len(utils)))
		}
	}
	rows := make([][]RequestErrorCell, len(cells))
	err = sideBySide(names, weight, opt.Progress, func(k int, part Progress) error {
		var err error
		opt := opt
		opt.Progress = part
		sys := sys
		sys.Rate = scope.rate(sys, cells[k].u, cells[k].cfg)
		rows[k], err = requestErrorCells(sys, cells[k].u, cells[k].cfg, quantiles, opt)
		return err
	})
	if err != nil {
		return nil, err
	}
	var out []RequestErrorCell
	for _, row := range rows {
		out = append(out, row...)
	}
	return out, nil
}

// mixes are the scope's mixes, or every mix of at most MaxNodes nodes.
func (l RequestMapScope) mixes() ([]Config, error) {
	for _, c := range l.Mixes {
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("mixes: %w", err)
		}
	}
	if len(l.Mixes) > 0 {
		return l.Mixes, nil
	}
	if err := validatePlanNodes("max-nodes", l.MaxNodes); err != nil {
		return nil, err
	}
	var cfgs []Config
	for r := 1; r <= l.MaxNodes; r++ {
		for d := 1; d*r <= l.MaxNodes; d++ {
			cfgs = append(cfgs, Config{d, r})
		}
	}
	return cfgs, nil
}

// requestErrorCells compares the predictor with the simulator for cfg at
// sys's rate (load u as asked for), at the bounds where the prediction
// reaches each quantile.
func requestErrorCells(sys System, u float64, cfg Config, quantiles []float64, opt SimOptions) ([]RequestErrorCell, error) {
	pred, err := predictCovering(sys, cfg, quantiles, false)
	if err != nil {
		return nil, err
	}
	th, err := PredictRequest(sys, cfg, pred.Step*float64(len(pred.CDF)-1), true)
	if err != nil {
		return nil, err
	}
	bounds := make([]float64, len(quantiles))
	for i, q := range quantiles {
		bounds[i] = pred.Quantile(q)
	}
	sim, err := SimulateRequests(sys, cfg, bounds, opt)
	if err != nil {
		return nil, fmt.Errorf("simulate %dx%d at %g%%: %w", cfg.Duplicates, cfg.Replicas, 100*u, err)
	}
	var out []RequestErrorCell
	for i, q := range quantiles {
		out = append(out, RequestErrorCell{Utilization: u, ServerUtilization: sys.Utilization(cfg), Config: cfg, Quantile: q, Bound: bounds[i],
			Predicted: pred.At(bounds[i]), Thesis: th.At(bounds[i]), Simulated: sim.SLA[i], StdErr: sim.StdErr[i]})
	}
	return out, nil
}

// predictCovering predicts over a horizon long enough that every quantile
// asked for falls inside it, doubling from serialTime.
func predictCovering(sys System, cfg Config, quantiles []float64, thesis bool) (RequestPrediction, error) {
	top := 0.0
	for _, q := range quantiles {
		top = math.Max(top, q)
	}
	horizon := serialTime(sys, cfg)
	for range 12 {
		p, err := PredictRequest(sys, cfg, horizon, thesis)
		if err != nil || p.CDF[len(p.CDF)-1] > top+(1-top)/2 {
			return p, err
		}
		horizon *= 2
	}
	return RequestPrediction{}, fmt.Errorf("%dx%d: the predicted latency does not reach the %g quantile within %s", cfg.Duplicates, cfg.Replicas, top, fmtDur(horizon))
}

// serialTime is twice the time all of a batch's accesses take one after
// the other on one of cfg's groups: a horizon that holds most of a
// request's latency law at loads where requests seldom meet.
func serialTime(sys System, cfg Config) float64 {
	return 2 * float64(sys.Request.batch()*sys.Request.Accesses()) * sys.Service.Mean() / float64(cfg.Replicas)
}

// MergeRequestCells joins the cells of several runs of one map (as a run
// of a few mixes redraws part of a whole one): a later run's cell replaces
// an earlier run's of the same load, mix and quantile. Cells written
// before they carried their servers' load get it from scope.PerServer.
// They come out by load (in the order first seen), then mix as
// RequestErrorMap orders them, then quantile.
func MergeRequestCells(scope RequestMapScope, runs ...[]RequestErrorCell) []RequestErrorCell {
	type key struct {
		u, q float64
		cfg  Config
	}
	at := map[key]int{}
	var out []RequestErrorCell
	for _, run := range runs {
		for _, c := range run {
			if c.ServerUtilization == 0 {
				c.ServerUtilization = c.Utilization
				if !scope.PerServer {
					c.ServerUtilization /= float64(c.Replicas)
				}
			}
			k := key{c.Utilization, c.Quantile, c.Config}
			if i, ok := at[k]; ok {
				out[i] = c
				continue
			}
			at[k] = len(out)
			out = append(out, c)
		}
	}
	loadOrder := map[float64]int{}
	for _, c := range out {
		if _, ok := loadOrder[c.Utilization]; !ok {
			loadOrder[c.Utilization] = len(loadOrder)
		}
	}
	slices.SortStableFunc(out, func(a, b RequestErrorCell) int {
		return cmp.Or(cmp.Compare(loadOrder[a.Utilization], loadOrder[b.Utilization]),
			cmp.Compare(a.Replicas, b.Replicas), cmp.Compare(a.Duplicates, b.Duplicates),
			cmp.Compare(a.Quantile, b.Quantile))
	})
	return out
}

// ResimulateRequestCells simulates the cells again at their recorded
// bounds with opt's requests and seed, keeping their predictions: a map's
// reference made finer (batches correlate their requests, so 10^6 of them
// leave a standard error near 0.0015 at 30% load, too coarse to judge
// 0.002) without predicting again. Each cell's request rate is read back
// from its servers' load.
func ResimulateRequestCells(sys System, cells []RequestErrorCell, opt SimOptions) ([]RequestErrorCell, error) {
	if err := firstErr(sys.Request.Validate(), opt.validate()); err != nil {
		return nil, err
	}
	type point struct {
		u   float64
		cfg Config
	}
	at := map[point][]int{} // a point's cells, by index
	var points []point
	for i, c := range cells {
		if !(c.ServerUtilization > 0 && c.ServerUtilization < 1) || !(c.Bound > 0) {
			return nil, fmt.Errorf("cell %dx%d at %g%% load, quantile %g: server load %g and bound %g: want a load in (0, 1) and a bound > 0",
				c.Duplicates, c.Replicas, 100*c.Utilization, c.Quantile, c.ServerUtilization, c.Bound)
		}
		p := point{c.Utilization, c.Config}
		if _, ok := at[p]; !ok {
			points = append(points, p)
		}
		at[p] = append(at[p], i)
	}
	out := slices.Clone(cells)
	names := make([]string, len(points))
	weight := make([]float64, len(points))
	total := 0.0
	for k, p := range points {
		names[k] = fmt.Sprintf("%dx%d at %g%% load", p.cfg.Duplicates, p.cfg.Replicas, 100*p.u)
		weight[k] = float64(p.cfg.Duplicates) // an access is drawn at every duplicate
		total += weight[k]
	}
	for k := range weight {
		weight[k] /= total
	}
	err := sideBySide(names, weight, opt.Progress, func(k int, part Progress) error {
		p, idx := points[k], at[points[k]]
		opt := opt
		opt.Progress = part
		sys := sys
		sys.Rate = cells[idx[0]].ServerUtilization * float64(p.cfg.Replicas) / (float64(sys.Request.Accesses()) * sys.Service.Mean())
		bounds := make([]float64, len(idx))
		for j, i := range idx {
			bounds[j] = cells[i].Bound
		}
		sim, err := SimulateRequests(sys, p.cfg, bounds, opt)
		if err != nil {
			return fmt.Errorf("simulate %s: %w", names[k], err)
		}
		for j, i := range idx {
			out[i].Simulated, out[i].StdErr = sim.SLA[j], sim.StdErr[j]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

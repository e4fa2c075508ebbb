package model

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// Prediction is the predicted SLA of one configuration.
type Prediction struct {
	Config
	Nodes       int     `json:"nodes"`
	Utilization float64 `json:"utilization"`
	// Unstable is set when utilization >= 1: the queues grow without bound
	// and neither SLA is a number.
	Unstable  bool    `json:"unstable"`
	SLAThesis float64 `json:"sla_thesis"`
	SLA       float64 `json:"sla"`
	// SLAStdErr is the Monte Carlo standard error of SLA (0 for one
	// duplicate, where the accurate predictor is exact up to its grid).
	SLAStdErr float64 `json:"sla_stderr"`
	// GapLawOnly is set for two or more duplicates at a utilization too
	// high for the correlation term's budget (above 0.961 by default): SLA
	// is then the gap law alone, which is optimistic, and SLAStdErr the
	// most it can be off by.
	GapLawOnly bool `json:"gap_law_only,omitempty"`
	// Check is, for a planner's answer for requests of several accesses,
	// its SLA by simulation.
	Check *RequestCheck `json:"check,omitempty"`
}

// MarshalJSON writes "unstable" in place of the SLA numbers of an unstable
// configuration, so no NaN or Inf ever reaches the output.
func (p Prediction) MarshalJSON() ([]byte, error) {
	type plain Prediction
	if !p.Unstable {
		return json.Marshal(plain(p))
	}
	return json.Marshal(struct {
		Config
		Nodes       int     `json:"nodes"`
		Utilization float64 `json:"utilization"`
		Unstable    bool    `json:"unstable"`
		SLAThesis   string  `json:"sla_thesis"`
		SLA         string  `json:"sla"`
	}{p.Config, p.Nodes, p.Utilization, true, "unstable", "unstable"})
}

// Thesis is the Zoolander predictor as written in §4.4: each duplicate meets
// the bound with probability Phi(tau - mu_net - mu_queue), Phi the service
// CDF and mu_queue the M/G/1 mean wait, and N independent identical
// duplicates give 1-(1-Phi)^N (the printed exponent N-1 is a slip).
func Thesis(sys System, cfg Config) (float64, error) {
	if err := firstErr(sys.Validate(), cfg.Validate()); err != nil {
		return 0, err
	}
	rho := sys.Utilization(cfg)
	if rho >= 1 {
		return 0, fmt.Errorf("configuration %dx%d at utilization %.3f: %w", cfg.Duplicates, cfg.Replicas, rho, ErrUnstable)
	}
	if sys.Request.FanOut() {
		return requestSLA(sys, cfg, true, nil)
	}
	tau := sys.Bound - sys.net().Mean() - ThesisQueueDelay(sys.Service, rho)
	phi := 0.0
	if tau > 0 {
		phi = sys.Service.CDF(tau)
	}
	return 1 - math.Pow(1-phi, float64(cfg.Duplicates)), nil
}

// Predict evaluates both predictors for every duplicates x replicas pair.
// Unstable configurations come back marked, not as an error.
func Predict(sys System, duplicates, replicas []int, opt AccurateOptions) ([]Prediction, error) {
	if err := sys.Validate(); err != nil {
		return nil, err
	}
	if err := validateGrid(duplicates, replicas); err != nil {
		return nil, err
	}
	if sys.Request.FanOut() {
		return predictRequests(sys, configs(duplicates, replicas, 0), opt.Progress)
	}
	opt = opt.withDefaults()
	var rates []float64
	for _, r := range replicas {
		if sys.Utilization(Config{1, r}) < 1 {
			rates = append(rates, sys.Rate/float64(r))
		}
	}
	slas, ses, err := groupSLAs(sys, rates, duplicates, opt)
	if err != nil {
		return nil, err
	}
	var out []Prediction
	stable := 0
	for _, r := range replicas {
		ok := sys.Utilization(Config{1, r}) < 1
		for _, d := range duplicates {
			cfg := Config{d, r}
			p := Prediction{Config: cfg, Nodes: cfg.Nodes(), Utilization: sys.Utilization(cfg)}
			if !ok {
				p.Unstable = true
				out = append(out, p)
				continue
			}
			th, err := Thesis(sys, cfg)
			if err != nil {
				return nil, err
			}
			p.SLAThesis, p.SLA, p.SLAStdErr = th, slas[stable][d-1], ses[stable][d-1]
			p.GapLawOnly = d >= 2 && !corrFits(p.Utilization, opt)
			out = append(out, p)
		}
		if ok {
			stable++
		}
	}
	return out, nil
}

// validateGrid checks every duplicates x replicas pair: the largest of each
// makes the largest configuration.
func validateGrid(duplicates, replicas []int) error {
	if len(duplicates) == 0 || len(replicas) == 0 {
		return fmt.Errorf("no configurations: duplicates %v, replicas %v", duplicates, replicas)
	}
	for _, d := range duplicates {
		if err := validateCount("duplicates", d); err != nil {
			return err
		}
	}
	for _, r := range replicas {
		if err := validateCount("replicas", r); err != nil {
			return err
		}
	}
	return Config{slices.Max(duplicates), slices.Max(replicas)}.Validate()
}

// configs lists every duplicates x replicas pair, replicas outer; with
// nodes > 0 only the pairs of at most nodes servers.
func configs(duplicates, replicas []int, nodes int) []Config {
	var out []Config
	for _, r := range replicas {
		for _, d := range duplicates {
			if cfg := (Config{d, r}); nodes <= 0 || cfg.Nodes() <= nodes {
				out = append(out, cfg)
			}
		}
	}
	return out
}

// predictRequests is Predict for requests of several accesses: both
// predictors are PredictRequest's, the thesis's with every wait at its mean.
func predictRequests(sys System, cfgs []Config, progress Progress) ([]Prediction, error) {
	out := make([]Prediction, len(cfgs))
	err := sideBySide(mixNames(cfgs), mixShares(sys, cfgs, true), progress, func(k int, mix Progress) error {
		cfg := cfgs[k]
		p := Prediction{Config: cfg, Nodes: cfg.Nodes(), Utilization: sys.Utilization(cfg)}
		if p.Utilization >= 1 {
			p.Unstable = true
			out[k] = p
			return nil
		}
		var err error
		if p.SLA, err = requestSLA(sys, cfg, false, mix); err != nil {
			return err
		}
		if p.SLAThesis, err = requestSLA(sys, cfg, true, nil); err != nil {
			return err
		}
		out[k] = p
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

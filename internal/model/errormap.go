package model

import (
	"fmt"
	"math"
)

// ErrorCell compares both predictors with simulation at one point.
type ErrorCell struct {
	Service     string  `json:"service"`
	Utilization float64 `json:"utilization"`
	Duplicates  int     `json:"duplicates"`
	Simulated   float64 `json:"sla_simulated"`
	StdErr      float64 `json:"stderr"`
	Accurate    float64 `json:"sla"`
	// AccurateStdErr is the accurate predictor's own Monte Carlo standard error.
	AccurateStdErr float64 `json:"sla_stderr"`
	Thesis         float64 `json:"sla_thesis"`
}

// MaxErrorMapDuplicates is the most duplicates ErrorMap maps: it
// summarises every d = 1..maxD of one simulated group, maxD^2 steps a batch.
const MaxErrorMapDuplicates = 1024

// ErrorMap runs both predictors and the simulator for one group (replicas
// = 1) of up to maxD duplicates at each utilization, with the bound at
// boundMeans times the mean service time and no network delay. One
// simulation of maxD servers answers every d (see Simulate). opt.Progress
// hears which distribution and load run, and the share of the simulated
// work done.
func ErrorMap(services []Distribution, utils []float64, maxD int, boundMeans float64, opt SimOptions) ([]ErrorCell, error) {
	if maxD < 1 || maxD > MaxErrorMapDuplicates {
		return nil, inputError("max-duplicates", maxD, "want 1 to %d", MaxErrorMapDuplicates)
	}
	if !(boundMeans > 0) || math.IsInf(boundMeans, 0) {
		return nil, inputError("bound-means", boundMeans, "want a finite multiple > 0 of the mean service time")
	}
	if len(utils) == 0 {
		return nil, inputError("utilizations", nil, "no utilization given")
	}
	for _, u := range utils {
		if !(u > 0 && u < 1) {
			return nil, inputError("utilizations", u, "must be in (0, 1)")
		}
	}
	if err := opt.validate(); err != nil {
		return nil, err
	}
	var out []ErrorCell
	progress := opt.Progress
	step, steps := 0, float64(len(services)*len(utils))
	for _, svc := range services {
		for _, u := range utils {
			sys := System{Service: svc, Rate: u / svc.Mean(), Bound: boundMeans * svc.Mean()}
			opt.Progress = progress.stage(fmt.Sprintf("%s at %g%% load", svc, 100*u), float64(step)/steps, 1/steps)
			step++
			sim, err := Simulate(sys, 1, maxD, opt)
			if err != nil {
				return nil, fmt.Errorf("simulate %s at %.0f%%: %w", svc, 100*u, err)
			}
			pred, err := Predict(sys, seq(maxD), []int{1}, AccurateOptions{})
			if err != nil {
				return nil, fmt.Errorf("predict %s at %.0f%%: %w", svc, 100*u, err)
			}
			for d := 1; d <= maxD; d++ {
				out = append(out, ErrorCell{Service: svc.String(), Utilization: u, Duplicates: d,
					Simulated: sim[d-1].SLA, StdErr: sim[d-1].StdErr, Accurate: pred[d-1].SLA, AccurateStdErr: pred[d-1].SLAStdErr, Thesis: pred[d-1].SLAThesis})
			}
		}
	}
	return out, nil
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i + 1
	}
	return s
}

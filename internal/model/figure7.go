package model

import "math"

// MaxFigure7Nodes is the largest node count Figure7 draws.
const MaxFigure7Nodes = 1024

// Figure7 is the thesis's Figure 7 for one utilization: the predicted SLA
// of 1..maxNodes nodes used for replication for predictability (n
// duplicates, one group) and for throughput (n replicas of one duplicate),
// by both predictors. Utilization is that of one server taking all the
// traffic; sys.Rate is ignored. Unstable configurations come back marked.
func Figure7(sys System, util float64, maxNodes int) ([]Prediction, error) {
	if !(util > 0) || math.IsInf(util, 0) {
		return nil, inputError("utilization", util, "must be finite and > 0")
	}
	if maxNodes < 1 || maxNodes > MaxFigure7Nodes {
		return nil, inputError("max-nodes", maxNodes, "want 1 to %d", MaxFigure7Nodes)
	}
	if sys.Service == nil {
		return nil, inputError("service", nil, "no service-time distribution")
	}
	sys.Rate = util / (sys.Service.Mean() * float64(sys.Request.Accesses()))
	if !(sys.Rate > 0) || math.IsInf(sys.Rate, 0) {
		return nil, inputError("utilization", util, "with a mean service time of %s that is %v requests/s; want a finite rate > 0", fmtDur(sys.Service.Mean()), sys.Rate)
	}
	// Only the two edges of the duplicates x replicas grid are drawn. Each
	// group's SLA depends on the duplicate counts asked of it only through
	// the correlation term, which d = 1 does not have, so asking the edges
	// alone gives the numbers the whole grid would.
	dups, err := Predict(sys, seq(maxNodes), []int{1}, AccurateOptions{})
	if err != nil {
		return nil, err
	}
	reps, err := Predict(sys, []int{1}, seq(maxNodes), AccurateOptions{})
	if err != nil {
		return nil, err
	}
	// In the order the whole grid gives: by replicas, then duplicates.
	out := append(dups, reps[1:]...)
	return out, nil
}

// Figure7Row pairs, for one node count, replication for predictability
// (Nodes duplicates) with replication for throughput (Nodes replicas).
type Figure7Row struct {
	Nodes                int
	Duplicates, Replicas Prediction
}

// Figure7Rows picks the rows of a text table from Figure7's predictions:
// node counts 1, 2, 4, ... up to maxNodes.
func Figure7Rows(preds []Prediction, maxNodes int) []Figure7Row {
	var rows []Figure7Row
	for n := 1; n <= maxNodes; n *= 2 {
		row := Figure7Row{Nodes: n}
		for _, p := range preds {
			if p.Nodes == n && p.Replicas == 1 {
				row.Duplicates = p
			}
			if p.Nodes == n && p.Duplicates == 1 {
				row.Replicas = p
			}
		}
		rows = append(rows, row)
	}
	return rows
}

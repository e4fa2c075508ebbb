// Package modelreport writes the model's results for people: the text
// tables gait model prints and the HTML pages with its figures (the
// thesis's Figures 5 and 7, the error map, the Limplock paper's Figure 3).
// The model's computations live in model and model/limplock, which know
// nothing of reports.
package modelreport

import (
	"fmt"
	"math"
	"sort"

	"github.com/gait-dev/gait/internal/model"
	"github.com/gait-dev/gait/internal/model/limplock"
	"github.com/gait-dev/gait/internal/report"
)

// missAxis shows 1-SLA on a log axis, where the nines are visible.
var missAxis = report.Axis{Label: "share of requests missing the bound (1 - SLA)", Log: true, Unit: "%"}

// SLAChart draws the share of requests missing the bound against nodes,
// one line per replica count (the accurate predictor; the thesis's dashed).
func SLAChart(title string, preds []model.Prediction) report.LineChart {
	byR := map[int][]model.Prediction{}
	var rs []int
	for _, p := range preds {
		if p.Unstable {
			continue
		}
		if _, ok := byR[p.Replicas]; !ok {
			rs = append(rs, p.Replicas)
		}
		byR[p.Replicas] = append(byR[p.Replicas], p)
	}
	sort.Ints(rs)
	c := report.LineChart{Title: title, X: report.Axis{Label: "nodes (duplicates x replicas)", Log: true}, Y: missAxis, Markers: true}
	for _, r := range rs {
		ps := byR[r]
		sort.Slice(ps, func(i, j int) bool { return ps[i].Nodes < ps[j].Nodes })
		acc := report.Series{Name: fmt.Sprintf("%d replica(s), accurate", r)}
		th := report.Series{Name: fmt.Sprintf("%d replica(s), thesis", r), Dashed: true}
		for _, p := range ps {
			acc.X, acc.Y = append(acc.X, float64(p.Nodes)), append(acc.Y, floorMiss(1-p.SLA))
			th.X, th.Y = append(th.X, float64(p.Nodes)), append(th.Y, floorMiss(1-p.SLAThesis))
		}
		c.Series = append(c.Series, acc, th)
	}
	return c
}

// floorMiss keeps a perfect SLA on the log axis at one in a billion.
func floorMiss(m float64) float64 { return math.Max(m, 1e-9) }

// Figure7Chart draws the thesis's Figure 7 for one utilization from
// model.Figure7's predictions: SLA against nodes for replication for
// predictability (duplicates) and for throughput (replicas), both predictors.
func Figure7Chart(bound, util float64, maxNodes int, preds []model.Prediction) report.LineChart {
	series := []report.Series{
		{Name: "predictability (duplicates), accurate"},
		{Name: "throughput (replicas), accurate"},
		{Name: "predictability, thesis", Dashed: true},
		{Name: "throughput, thesis", Dashed: true},
	}
	for _, p := range preds {
		if p.Unstable || (p.Replicas != 1 && p.Duplicates != 1) {
			continue
		}
		for k, on := range []bool{p.Replicas == 1, p.Duplicates == 1} {
			if !on {
				continue
			}
			series[k].X, series[k].Y = append(series[k].X, float64(p.Nodes)), append(series[k].Y, p.SLA)
			series[k+2].X, series[k+2].Y = append(series[k+2].X, float64(p.Nodes)), append(series[k+2].Y, p.SLAThesis)
		}
	}
	return report.LineChart{
		Title:   fmt.Sprintf("SLA within %s at %g%% utilization", model.FormatDuration(bound), 100*util),
		X:       report.Axis{Label: "nodes", Min: 0, Max: float64(maxNodes)},
		Y:       report.Axis{Label: "SLA (share within the bound)", Unit: "%", Min: 0, Max: 1},
		Series:  series,
		Markers: true,
	}
}

// ErrorChart draws |predicted - simulated| against duplicates for one
// service distribution, a line per utilization and predictor.
func ErrorChart(service string, cells []model.ErrorCell) report.LineChart {
	byU := map[float64][]model.ErrorCell{}
	var us []float64
	for _, c := range cells {
		if c.Service != service {
			continue
		}
		if _, ok := byU[c.Utilization]; !ok {
			us = append(us, c.Utilization)
		}
		byU[c.Utilization] = append(byU[c.Utilization], c)
	}
	sort.Float64s(us)
	ch := report.LineChart{Title: "absolute error against simulation, " + service,
		X: report.Axis{Label: "duplicates", Log: true}, Y: report.Axis{Label: "|predicted - simulated SLA|", Log: true}}
	for _, u := range us {
		acc := report.Series{Name: fmt.Sprintf("accurate, %g%%", 100*u)}
		th := report.Series{Name: fmt.Sprintf("thesis, %g%%", 100*u), Dashed: true}
		for _, c := range byU[u] {
			acc.X, acc.Y = append(acc.X, float64(c.Duplicates)), append(acc.Y, math.Max(1e-6, math.Abs(c.Accurate-c.Simulated)))
			th.X, th.Y = append(th.X, float64(c.Duplicates)), append(th.Y, math.Max(1e-6, math.Abs(c.Thesis-c.Simulated)))
		}
		ch.Series = append(ch.Series, acc, th)
	}
	return ch
}

// IndependenceChart is the thesis's Figure 5: each request's percentile in
// one duplicate against its percentile in the other.
func IndependenceChart(ind model.Independence) report.ScatterChart {
	return report.ScatterChart{
		Title:  "per-request percentile in duplicate A vs duplicate B",
		X:      report.Axis{Label: "percentile in A", Unit: "%", Min: 0, Max: 1},
		Y:      report.Axis{Label: "percentile in B", Unit: "%", Min: 0, Max: 1},
		Series: []report.Series{{Name: "requests", X: ind.RanksA, Y: ind.RanksB}},
	}
}

// Figure3Chart draws one panel of the Limplock paper's Figure 3: a line
// per parameter value by the formula, dashed by Monte Carlo.
func Figure3Chart(p limplock.Panel) report.LineChart {
	c := report.LineChart{Title: p.Title, X: report.Axis{Label: "cluster size (nodes)"}, Y: report.Axis{Label: "probability", Unit: "%", Min: 0, Max: 1}, Markers: true}
	for _, l := range p.Lines {
		f := report.Series{Name: fmt.Sprintf("%s=%d, formula", p.Param, l.Value)}
		m := report.Series{Name: fmt.Sprintf("%s=%d, Monte Carlo", p.Param, l.Value), Dashed: true}
		for i, n := range p.Sizes {
			f.X, f.Y = append(f.X, float64(n)), append(f.Y, l.Formula[i])
			m.X, m.Y = append(m.X, float64(n)), append(m.Y, l.MonteCarlo[i])
		}
		c.Series = append(c.Series, f, m)
	}
	return c
}

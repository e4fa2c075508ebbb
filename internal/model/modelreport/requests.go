package modelreport

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gait-dev/gait/internal/model"
	"github.com/gait-dev/gait/internal/report"
	"github.com/gait-dev/gait/internal/units"
)

// WriteRequestErrorMap is gait model errormap --phases's table.
func WriteRequestErrorMap(w io.Writer, sys model.System, cells []model.RequestErrorCell) error {
	fmt.Fprintf(w, "service %s, %s, %s: request predictor against request simulation\n", sys.Service, networkOf(sys), sys.Request)
	tw := table(w)
	fmt.Fprintln(tw, "load\tper server\tduplicates\treplicas\tquantile\tbound\tsla\tsla_thesis\tsimulated\tstderr\t|error|\t")
	for _, c := range cells {
		fmt.Fprintf(tw, "%g%%\t%.3g%%\t%d\t%d\t%g\t%s\t%s\t%s\t%s\t%.5f\t%.4f\t\n", 100*c.Utilization, 100*c.ServerUtilization, c.Duplicates, c.Replicas, c.Quantile,
			units.Seconds(c.Bound), Pct(c.Predicted), Pct(c.Thesis), Pct(c.Simulated), c.StdErr, c.Error())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	worst := 0.0
	for _, c := range cells {
		worst = math.Max(worst, c.Error())
	}
	header, rows, inside, total := requestMapSummary(cells)
	fmt.Fprintf(w, "\nlargest |error| over the quantiles, per mix: its range over each shape's mixes (within %g / mixes)\n", accuracyGoal)
	tw = table(w)
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d of %d mixes x loads within %g; largest |error|: %.4f (the thesis's accuracy: %g)\n", inside, total, accuracyGoal, worst, accuracyGoal)
	return err
}

// RequestErrorChart draws, for one load, the largest |predicted -
// simulated| over the quantiles asked for, per mix, for both predictors.
func RequestErrorChart(util float64, cells []model.RequestErrorCell) report.BarChart {
	type key struct{ d, r int }
	acc, th, noise := map[key]float64{}, map[key]float64{}, map[key]float64{}
	var keys []key
	for _, c := range cells {
		if c.Utilization != util {
			continue
		}
		k := key{c.Duplicates, c.Replicas}
		if _, ok := acc[k]; !ok {
			keys = append(keys, k)
		}
		acc[k] = math.Max(acc[k], c.Error())
		th[k] = math.Max(th[k], math.Abs(c.Thesis-c.Simulated))
		noise[k] = math.Max(noise[k], 2*c.StdErr)
	}
	sort.Slice(keys, func(i, j int) bool {
		if a, b := keys[i].d*keys[i].r, keys[j].d*keys[j].r; a != b {
			return a < b
		}
		return keys[i].d < keys[j].d
	})
	ch := report.BarChart{Title: fmt.Sprintf("largest |predicted - simulated SLA| per mix at %g%% load", 100*util),
		Y: report.Axis{Label: "absolute error", Log: true}}
	a := report.Series{Name: "request predictor"}
	t := report.Series{Name: "thesis (mean wait)"}
	// The simulation's own noise says which bars it can tell from the goal.
	sim := report.Series{Name: "simulation: 2 standard errors"}
	limit := report.Series{Name: "0.002 (the thesis's accuracy)"}
	for _, k := range keys {
		ch.Categories = append(ch.Categories, fmt.Sprintf("%dx%d", k.d, k.r))
		a.Y = append(a.Y, math.Max(1e-5, acc[k]))
		t.Y = append(t.Y, math.Max(1e-5, th[k]))
		sim.Y = append(sim.Y, math.Max(1e-5, noise[k]))
		limit.Y = append(limit.Y, 0.002)
	}
	ch.Series = []report.Series{a, t, sim, limit}
	return ch
}

// RequestErrorMapPage is the request error map's report: a figure per load.
// requests is how many requests each cell simulated; drawn says the
// cells came from earlier runs, whose counts they do not record.
func RequestErrorMapPage(sys model.System, scope model.RequestMapScope, requests int, drawn bool, cells []model.RequestErrorCell) *report.Page {
	page := report.NewPage("gait model errormap: requests of " + sys.Request.String())
	simulated := strconv.Itoa(requests) + " simulated requests per mix and load"
	if drawn {
		simulated += " as --requests says (the cells drawn from earlier runs do not record their own count)"
	}
	page.Paragraph(fmt.Sprintf("Service %s, %s, %s. A mix is duplicates x replicas; the bounds are where the request predictor puts the quantiles asked for, and each bar is the largest error over them. The simulation's bar is twice its largest standard error over them: a reference that noisy cannot tell the predictor's error from the goal.", sys.Service, networkOf(sys), simulated))
	header, rows, inside, total := requestMapSummary(cells)
	page.Paragraph(fmt.Sprintf("%d of %d mixes x loads are within %g (the thesis's accuracy). Each shape of mix's largest errors over the quantiles, their range over its mixes (within %g / mixes):", inside, total, accuracyGoal, accuracyGoal))
	page.Table(header, rows)
	var utils []float64
	seen := map[float64]bool{}
	for _, c := range cells {
		if !seen[c.Utilization] {
			seen[c.Utilization] = true
			utils = append(utils, c.Utilization)
		}
	}
	for _, u := range utils {
		of := "of one server taking every access: each of r groups' servers carries 1/r of it"
		if scope.PerServer {
			of = "of each server, in every mix"
		}
		page.Figure(fmt.Sprintf("Load %g%% (%s).", 100*u, of), RequestErrorChart(u, cells))
	}
	return page
}

// networkOf names the map's network delay.
func networkOf(sys model.System) string {
	if sys.Net == nil || sys.Net.Mean() == 0 {
		return "no network delay"
	}
	return "network " + sys.Net.String()
}

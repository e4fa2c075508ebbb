package suite

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gait-dev/gait/internal/bench"
	"github.com/gait-dev/gait/internal/report"
	"github.com/gait-dev/gait/internal/units"
	"github.com/gait-dev/gait/internal/verdict"
)

// Report builds the suite's HTML report: the Limplock paper's Figure 1
// (slowdown against factor per experiment), its Table 1 with gait's
// verdicts beside the paper's marks, and a section per experiment with its
// verdicts and their reasons, throughput and latency over time and its
// queues (Figure 4). Everything is read back from the experiments'
// directories.
func Report(results []Result, o verdict.Options) (*report.Page, error) {
	p := report.NewPage("gait bench")
	var wall float64
	for _, r := range results {
		wall += r.WallSeconds
	}
	p.Paragraph(fmt.Sprintf("%d experiments, %s of running time (the experiments' own, resumed ones counted as first run). "+
		"Verdicts after the Limplock paper's §3: operation limplock (OL) when the operations that involve the limping "+
		"component are over %gx slower than in the baseline; node limplock (NL) when operations a healthy member serves, "+
		"which do not involve the limpware, are over %gx slower; cluster limplock (CL) when throughput falls under %.0f%% "+
		"of the baseline's or every healthy member the clients use is in node limplock; a hidden backlog when a queue or "+
		"lag rises along a fitted line (p < %g) by more than %gx its baseline peak while the clients see neither OL nor NL. "+
		"%s The rules and thresholds are in docs/bench.md.",
		len(results), units.Seconds(wall), o.Slow, o.Slow, 100*o.Collapse, o.Alpha, o.Growth, MinRequestsText(results, o.MinRequests)))
	figure1(p, results)
	p.Heading("Table 1: verdicts beside the paper's marks")
	header, rows := Table1(results)
	p.Table(header, rows)
	legend := "gait: every verdict any step of the experiment gave, each with how many repetitions gave it (OL 3/3; none 3/3 when none gave any). " +
		"paper: the Limplock paper's marks for the row; same: whether gait's are the same (flips: the repetitions disagree on a verdict that decides it). " +
		"base tput: the baseline's throughput in requests per second."
	if slices.Contains(header, "expected") {
		legend += " expected: what a regression scenario of a reported bug predicts."
	}
	p.Paragraph(legend)
	if ds := Differences(results); len(ds) > 0 {
		p.Heading("Where gait differs from the paper or a prediction, and why")
		for _, d := range ds {
			p.Paragraph(d)
		}
	}
	if err := studies(p, results); err != nil {
		return nil, err
	}
	for _, r := range results {
		if err := section(p, r); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// figure1 draws slowdown against factor, one line per experiment with
// slowdown factors, both axes logarithmic.
func figure1(p *report.Page, results []Result) {
	series, crashes := slowdownLines(results)
	p.Heading("Slowdown against the limpware's factor")
	if len(series) == 0 {
		p.Paragraph("No experiment has slowdown factors.")
	} else {
		lo, hi := math.Inf(1), 0.0
		for _, s := range series {
			for _, y := range append(append(slices.Clone(s.Y), s.Lo...), s.Hi...) {
				if y > 0 {
					lo, hi = min(lo, y), max(hi, y)
				}
			}
		}
		y := report.Axis{Label: "slowdown", Log: true}
		if lo < hi {
			y.Min, y.Max = math.Min(lo, 0.5), math.Max(hi, 10)
		}
		p.Figure("Mean latency over the baseline's at each slowdown factor, one line per experiment (the Limplock paper's "+
			"Figure 1): the median over the repetitions, each repetition against its own baseline, with a bar from the "+
			"smallest to the largest; each line starts at the baseline (1x, a slowdown of 1). Both axes are logarithmic; a line "+
			"along the bottom is a system that tolerates the limpware.",
			report.LineChart{X: factorAxis(series), Y: y, Series: series, Markers: true})
	}
	if len(crashes) > 0 {
		p.Paragraph("Steps without a slowdown factor (crash, partition), for comparison: " + strings.Join(crashes, "; ") + ".")
	}
}

// slowdownLines are Figure 1's lines, one per experiment with slowdown
// factors, each starting at the baseline: 1x and a slowdown of 1, by
// definition, so that an experiment of one factor (--quick's) is a line
// too. crashes lists the steps without a factor.
func slowdownLines(results []Result) (series []report.Series, crashes []string) {
	for _, r := range results {
		sr := report.Series{Name: r.Experiment, X: []float64{1}, Y: []float64{1}, Lo: []float64{1}, Hi: []float64{1}}
		for _, st := range r.Steps {
			if st.Factor == nil {
				crashes = append(crashes, fmt.Sprintf("%s %s: %s", r.Experiment, st.Label, st.Slowdown.Ratio()))
				continue
			}
			sr.X, sr.Y = append(sr.X, *st.Factor), append(sr.Y, st.Slowdown.Median)
			sr.Lo, sr.Hi = append(sr.Lo, st.Slowdown.Min), append(sr.Hi, st.Slowdown.Max)
		}
		if len(sr.X) > 1 {
			series = append(series, sr)
		}
	}
	return series, crashes
}

// factorAxis runs from 1x, the baseline, to the decade of the largest
// factor, so that a suite of one factor (--quick's 1000x) is drawn at its
// place on the scale, not at the left end of a decade of its own.
func factorAxis(series []report.Series) report.Axis {
	hi := 10.0
	for _, s := range series {
		for _, x := range s.X {
			hi = max(hi, x)
		}
	}
	return report.Axis{Label: "limpware factor", Log: true, Min: 1, Max: math.Pow(10, math.Ceil(math.Log10(hi)-1e-9))}
}

// section adds one experiment: its verdicts with their reasons, then its
// figures.
func section(p *report.Page, r Result) error {
	p.Heading(r.Experiment)
	where := "no limpware"
	if r.Fault != "" {
		where = r.Fault + " on the " + r.Target
	}
	head := fmt.Sprintf("%s, %s (%s). Baseline: mean %s, %s requests/s. Results in %s.", r.System, where,
		r.File, units.Seconds(r.BaseMean), units.Sig(r.BaseThroughput), r.Dir)
	if r.Paper != nil {
		head += fmt.Sprintf(" The paper's row %s is marked %s; gait gives %s.", r.Paper.Row, MarkText(r.Paper.Marks), r.GotText())
		if verdict.Agreement(r.Paper.Marks, r.Got()) != "yes" {
			head += " Why they differ: " + whyDiffers(r, r.Paper.Marks, r.Paper.Differs)
		}
	}
	if r.Expect != nil {
		head += fmt.Sprintf(" Expected %s, got %s.", MarkText(r.Expect), r.GotText())
		if verdict.Agreement(r.Expect, r.Got()) != "yes" {
			head += " Why they differ: " + whyDiffers(r, r.Expect, r.ExpectDiffers)
		}
	}
	p.Paragraph(head)
	var rows [][]string
	for _, st := range r.Steps {
		for _, m := range verdict.MarkNames {
			rows = append(rows, []string{st.Label, st.Slowdown.Ratio(), m, Given(st.Counts, m), st.Why(m)})
		}
	}
	p.Table([]string{"step", "slowdown (median, range)", "verdict", "given", "why"}, rows)
	for _, st := range r.Steps {
		for _, w := range st.Warnings() {
			p.Note(st.Label + ": " + w + ".")
		}
		if st.Unplaced > 0 {
			p.Note(st.Label + ": " + UnplacedText(st.Unplaced) + ".")
		}
	}
	s, runs, err := bench.Reload(r.Dir)
	if err != nil {
		return err
	}
	return bench.Section(p, s, runs)
}

// MinRequestsText says how many baseline requests a group needs: the
// suite's number, and each experiment's own where its scenario sets
// min_requests (MapReduce's rows judge one job).
func MinRequestsText(results []Result, suite int) string {
	var own []string
	for _, r := range results {
		if r.MinRequests > 0 && r.MinRequests != suite {
			own = append(own, fmt.Sprintf("%s %d", r.Experiment, r.MinRequests))
		}
	}
	text := fmt.Sprintf("Groups need %d baseline requests", suite)
	if len(own) > 0 {
		text += " (where a scenario sets its own min_requests, that many: " + strings.Join(own, ", ") + ")"
	}
	return text + "."
}

package modelreport

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/gait-dev/gait/internal/model"
	"github.com/gait-dev/gait/internal/model/limplock"
	"github.com/gait-dev/gait/internal/units"
)

// Pct writes a share as a percentage with four decimals.
func Pct(v float64) string { return fmt.Sprintf("%.4f%%", 100*v) }

func table(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

// utilization writes a server's load with four decimals, or in four
// significant digits when it is far beyond 1 (an unstable configuration).
func utilization(u float64) string {
	if u >= 1e4 {
		return fmt.Sprintf("%.4g", u)
	}
	return fmt.Sprintf("%.4f", u)
}

// Describe is the one line that says what system a result is about.
func Describe(sys model.System) string {
	net := "none"
	if sys.Net != nil {
		net = sys.Net.String()
	}
	s := fmt.Sprintf("service %s (mean %s), network %s, bound %s", sys.Service, units.Seconds(sys.Service.Mean()), net, units.Seconds(sys.Bound))
	if sys.Rate > 0 {
		s += fmt.Sprintf(", rate %.6g requests/s", sys.Rate)
	}
	if sys.Request.FanOut() {
		s += fmt.Sprintf(", a request is %s (%d accesses; its latency is the sum of its phases' slowest accesses)", sys.Request, sys.Request.Accesses())
	}
	return s
}

func configs(preds []model.Prediction) []model.Config {
	out := make([]model.Config, len(preds))
	for i, p := range preds {
		out[i] = p.Config
	}
	return out
}

// WritePredictions is gait model predict's table.
func WritePredictions(w io.Writer, sys model.System, preds []model.Prediction) error {
	fmt.Fprintln(w, Describe(sys))
	defer fmt.Fprint(w, RequestNote(sys, configs(preds)))
	tw := table(w)
	fmt.Fprintln(tw, "duplicates\treplicas\tnodes\tutilization\tsla_thesis\tsla\tstderr\t")
	gapOnly := false
	for _, p := range preds {
		th, acc, se := Pct(p.SLAThesis), Pct(p.SLA), fmt.Sprintf("%.5f", p.SLAStdErr)
		if p.Unstable {
			th, acc, se = "unstable", "unstable", "-"
		}
		gapOnly = gapOnly || p.GapLawOnly
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\t%s\t\n", p.Duplicates, p.Replicas, p.Nodes, utilization(p.Utilization), th, acc, se)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if gapOnly {
		_, err := fmt.Fprintf(w, "above utilization %.3f, sla of 2 or more duplicates is the gap law alone (optimistic: the Monte Carlo term would need more than its budget of requests) and stderr the most it can be off by; gait model simulate measures it\n",
			model.AccurateOptions{}.CorrelationLimit())
		return err
	}
	return nil
}

// WriteSimulations is gait model simulate's table; for requests of several
// accesses it adds their latency's percentiles.
func WriteSimulations(w io.Writer, sys model.System, rows []model.SimRow) error {
	fmt.Fprintln(w, Describe(sys))
	tw := table(w)
	head := "duplicates\treplicas\tnodes\tutilization\tsla\tstderr\t"
	if sys.Request.FanOut() {
		for _, q := range model.PercentileLevels {
			head += fmt.Sprintf("p%g\t", 100*q)
		}
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		s := "unstable"
		if !r.Unstable {
			s = Pct(r.SLA)
		}
		line := fmt.Sprintf("%d\t%d\t%d\t%s\t%s\t%.5f\t", r.Duplicates, r.Replicas, r.Nodes, utilization(r.Utilization), s, r.StdErr)
		for _, p := range r.Percentiles {
			line += units.Seconds(p) + "\t"
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// BestMix is the planner's answer to "which mix of at most Nodes nodes".
type BestMix struct {
	System     model.System
	Nodes      int
	Predictor  model.Predictor
	Best       model.Prediction
	Candidates []model.Prediction
}

// JSON is the answer as gait model plan --format json writes it.
func (b BestMix) JSON() any {
	return map[string]any{"question": "best-mix", "nodes": b.Nodes, "predictor": b.Predictor, "best": b.Best, "candidates": b.Candidates}
}

// WriteText writes the answer in a sentence.
func (b BestMix) WriteText(w io.Writer) error {
	fmt.Fprintln(w, Describe(b.System))
	best, pred := b.Best, b.Predictor
	_, err := fmt.Fprintf(w, "best mix of at most %d nodes (%s): %d duplicates x %d replicas = %d nodes, utilization %.4f, SLA %s (thesis %s, accurate %s)\n%s",
		b.Nodes, pred, best.Duplicates, best.Replicas, best.Nodes, best.Utilization, Pct(pred.Pick(best)), Pct(best.SLAThesis), Pct(best.SLA), RequestNote(b.System, configs(b.Candidates)))
	if err != nil {
		return err
	}
	return writeCheck(w, pred.Pick(best), b.System.Bound, 0, "", best.Check)
}

// FewestNodes is the planner's answer to "how few nodes meet Target".
type FewestNodes struct {
	Rate      float64
	Target    model.Target
	Predictor model.Predictor
	Best      model.Prediction
}

// JSON is the answer as gait model plan --format json writes it.
func (f FewestNodes) JSON() any {
	return map[string]any{"question": "fewest-nodes", "target": f.Target.String(), "predictor": f.Predictor, "best": f.Best}
}

// WriteText writes the answer in a sentence.
func (f FewestNodes) WriteText(w io.Writer) error {
	best, pred := f.Best, f.Predictor
	_, err := fmt.Fprintf(w, "fewest nodes meeting %s at %.6g requests/s (%s): %d = %d duplicates x %d replicas, SLA %s (thesis %s)\n",
		f.Target, f.Rate, pred, best.Nodes, best.Duplicates, best.Replicas, Pct(pred.Pick(best)), Pct(best.SLAThesis))
	if err != nil {
		return err
	}
	return writeCheck(w, pred.Pick(best), f.Target.Bound, f.Target.SLA, "more nodes", best.Check)
}

// MaxRate is the planner's answer to "what rate can Nodes nodes carry".
type MaxRate struct {
	Nodes     int
	Target    model.Target
	Predictor model.Predictor
	Best      model.RateResult
	Mixes     []model.RateResult
}

// JSON is the answer as gait model plan --format json writes it.
func (m MaxRate) JSON() any {
	return map[string]any{"question": "max-rate", "target": m.Target.String(), "nodes": m.Nodes, "predictor": m.Predictor, "best": m.Best, "mixes": m.Mixes}
}

// WriteText writes the answer in a sentence.
func (m MaxRate) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "highest rate %d nodes carry at %s (%s): %.6g requests/s with %d duplicates x %d replicas (SLA %s)\n",
		m.Nodes, m.Target, m.Predictor, m.Best.Rate, m.Best.Duplicates, m.Best.Replicas, Pct(m.Best.SLA))
	if err != nil {
		return err
	}
	return writeCheck(w, m.Best.SLA, m.Target.Bound, m.Target.SLA, "lower rates", m.Best.Check)
}

// writeCheck tells what simulating a planner's answer gave (nothing when
// c is nil), whether the prediction it rests on held there and, with a
// target SLA want (0: none), whether the answer meets it, and if not
// what to try.
func writeCheck(w io.Writer, predicted, bound, want float64, try string, c *model.RequestCheck) error {
	if c == nil {
		return nil
	}
	off := predicted - c.Simulated
	verdict := "the prediction holds there"
	if math.Abs(off) > 0.002+2*c.StdErr {
		verdict = fmt.Sprintf("the prediction is %.4f %s there", math.Abs(off), map[bool]string{true: "optimistic", false: "pessimistic"}[off > 0])
		if c.Simulated < want {
			verdict += ", and the answer misses the target: try " + try + " with gait model simulate"
		}
	}
	_, err := fmt.Fprintf(w, "simulated (%d requests): %s within %s, standard error %.4f%%: %s\n",
		c.Requests, Pct(c.Simulated), units.Seconds(bound), 100*c.StdErr, verdict)
	return err
}

// Figure7 is the thesis's Figure 7 at each utilization.
type Figure7 struct {
	System       model.System // Rate unused
	Utilizations []float64
	MaxNodes     int
	// Predictions holds model.Figure7's predictions by fmt.Sprint(utilization).
	Predictions map[string][]model.Prediction
}

// WriteText writes, per utilization, the SLA of 1, 2, 4, ... nodes used
// either way.
func (f Figure7) WriteText(w io.Writer) error {
	tw := table(w)
	fmt.Fprintln(tw, "utilization\tnodes\tdup sla\tdup thesis\trep sla\trep thesis\t")
	both := func(p model.Prediction) (string, string) {
		if p.Unstable {
			return "unstable", "unstable"
		}
		return Pct(p.SLA), Pct(p.SLAThesis)
	}
	for _, u := range f.Utilizations {
		for _, row := range model.Figure7Rows(f.Predictions[fmt.Sprint(u)], f.MaxNodes) {
			ds, dt := both(row.Duplicates)
			rs, rt := both(row.Replicas)
			fmt.Fprintf(tw, "%g%%\t%d\t%s\t%s\t%s\t%s\t\n", 100*u, row.Nodes, ds, dt, rs, rt)
		}
	}
	return tw.Flush()
}

// WriteErrorMap is gait model errormap's table.
func WriteErrorMap(w io.Writer, cells []model.ErrorCell) error {
	tw := table(w)
	fmt.Fprintln(tw, "service\tutilization\tduplicates\tsimulated\tstderr\taccurate\tstderr\terr\tthesis\terr\t")
	for _, c := range cells {
		fmt.Fprintf(tw, "%s\t%g\t%d\t%.5f\t%.5f\t%.5f\t%.5f\t%+.5f\t%.5f\t%+.5f\t\n", c.Service, c.Utilization, c.Duplicates,
			c.Simulated, c.StdErr, c.Accurate, c.AccurateStdErr, c.Accurate-c.Simulated, c.Thesis, c.Thesis-c.Simulated)
	}
	return tw.Flush()
}

// Verdict says in words whether two duplicates' slow requests are independent.
func Verdict(ind model.Independence) string {
	if ind.Holds {
		return "independent: slow requests coincide no more than chance; the model's assumption holds"
	}
	return fmt.Sprintf("WARNING: slow requests coincide %.1fx more often than chance (z=%.1f); the predictors overstate the SLA of duplicates", ind.Lift, ind.Z)
}

// WriteIndependence is gait model independence's text.
func WriteIndependence(w io.Writer, ind model.Independence) error {
	_, err := fmt.Fprintf(w, "%d requests; slow = above each duplicate's p%.6g\nboth slow %.4f%%, independence expects %.4f%% (lift %.2f, z %.1f); Spearman %.3f\n%s\n",
		ind.Requests, 100*ind.Quantile, 100*ind.BothSlow, 100*ind.Expected, ind.Lift, ind.Z, ind.Spearman, Verdict(ind))
	return err
}

// WriteLimplock is gait model limplock's table: each cell formula / simulation.
func WriteLimplock(w io.Writer, blocks, requests, trials int, rows []limplock.Row) error {
	fmt.Fprintf(w, "blocks %d, requests %d, %d Monte Carlo trials; each cell: formula / simulation\n", blocks, requests, trials)
	tw := table(w)
	fmt.Fprintln(tw, "nodes\tP_rl\tP_wl\tP_nl\tP_cl\tp_bl\tP_bl\t")
	for _, r := range rows {
		f, e := r.Formula, r.Sim
		fmt.Fprintf(tw, "%d\t%.4f / %.4f\t%.4f / %.4f\t%.4f / %.4f\t%.4f / %.4f\t%.5f / %.5f\t%.4f / %.4f\t\n", f.N,
			f.PRL, e.PRL, f.PWL, e.PWL, f.PNL, e.PNL, f.PCL, e.PCL, f.PBlock, e.PBlock, f.PBL, e.PBL)
	}
	return tw.Flush()
}

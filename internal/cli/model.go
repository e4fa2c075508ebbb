package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/gait-dev/gait/internal/latency"
	"github.com/gait-dev/gait/internal/model"
	"github.com/gait-dev/gait/internal/model/limplock"
	"github.com/gait-dev/gait/internal/report"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newModelCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Predict, simulate and plan the SLA of replication strategies; HDFS limplock odds",
		Long: `The Zoolander model (replication for predictability vs for throughput) with
two predictors, a simulator that checks them, a planner, and the Limplock
paper's HDFS limplock probabilities. docs/model.md explains every number.

A service or network distribution (--service, --net) is one of
  exp:MEAN                 exponential, e.g. exp:2ms
  lognormal:MEDIAN,SIGMA   log-normal, SIGMA the std. dev. of ln(latency)
  pareto:XM,ALPHA          Pareto type I: minimum XM, tail index ALPHA > 1
  const:D or D             a constant, e.g. 0.2ms
  PATH                     measured latencies: a run directory, a CSV with a
                           latency_ns/us/ms/s column, or an HdrHistogram log`,
	}
	cmd.AddCommand(newModelPredictCmd(), newModelSimulateCmd(), newModelPlanCmd(),
		newModelFigure7Cmd(), newModelErrorMapCmd(), newModelIndependenceCmd(), newModelLimplockCmd())
	return cmd
}

// modelInputs are the flags every Zoolander subcommand shares.
type modelInputs struct {
	service, net, bound, config string
	rate, util                  float64
	load                        latency.Options
}

func (in *modelInputs) register(fs *pflag.FlagSet) {
	fs.StringVar(&in.service, "service", "", "service-time distribution of one duplicate (required; see gait model --help)")
	fs.StringVar(&in.net, "net", "0", "network delay per reply: a constant, a distribution or a PATH")
	fs.StringVar(&in.bound, "bound", "", "latency bound of the SLA, e.g. 10ms")
	fs.Float64Var(&in.rate, "rate", 0, "total arrival rate, requests/s (Poisson)")
	fs.Float64Var(&in.util, "utilization", 0, "instead of --rate: load of one server taking all traffic (0..1)")
	fs.StringVar(&in.config, "config", "", "when PATH holds several configurations, the one to use")
	fs.StringVar(&in.load.LatencyColumn, "latency-column", "", "CSV column holding the latency")
	fs.StringVar(&in.load.Unit, "unit", "", "unit of the CSV column or histogram log (ns, us, ms, s)")
}

// system builds the model's inputs; needRate and needBound say which must be set.
func (in *modelInputs) system(needRate, needBound bool) (model.System, error) {
	var sys model.System
	if in.service == "" {
		return sys, errors.New("--service is required")
	}
	svc, err := in.distribution("--service", in.service)
	if err != nil {
		return sys, err
	}
	net, err := in.distribution("--net", in.net)
	if err != nil {
		return sys, err
	}
	sys.Service, sys.Net = svc, net
	switch {
	case in.rate != 0 && in.util != 0:
		return sys, errors.New("give --rate or --utilization, not both")
	case in.util != 0:
		if !(in.util > 0) {
			return sys, fmt.Errorf("--utilization %v: must be > 0", in.util)
		}
		sys.Rate = in.util / svc.Mean()
	case in.rate < 0:
		return sys, fmt.Errorf("--rate %v: must be > 0", in.rate)
	default:
		sys.Rate = in.rate
	}
	if needRate && sys.Rate == 0 {
		return sys, errors.New("--rate (or --utilization) is required")
	}
	if in.bound != "" {
		b, err := model.ParseDuration(in.bound)
		if err != nil || b <= 0 {
			return sys, fmt.Errorf("--bound %q: want a positive duration such as 10ms", in.bound)
		}
		sys.Bound = b
	} else if needBound {
		return sys, errors.New("--bound is required")
	}
	return sys, nil
}

// distribution reads a parametric form, or else measured latencies from a path.
func (in *modelInputs) distribution(flag, spec string) (model.Distribution, error) {
	d, err := model.ParseDistribution(spec)
	if err == nil {
		return d, nil
	}
	if !errors.Is(err, model.ErrNotParametric) {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if _, statErr := os.Stat(spec); statErr != nil {
		return nil, fmt.Errorf("%s %q: neither a distribution (exp:, lognormal:, pareto:, const:, a duration) nor an existing file or run directory", flag, spec)
	}
	lat, err := loadLatencies(spec, in.config, in.load)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return model.NewEmpirical(lat, spec)
}

// loadLatencies reads one configuration's latencies (seconds) from path.
func loadLatencies(path, config string, opt latency.Options) ([]float64, error) {
	cs, err := latency.Load(path, opt)
	if err != nil {
		return nil, err
	}
	if config == "" && len(cs) == 1 {
		return cs[0].Latencies, nil
	}
	var names []string
	for _, c := range cs {
		if c.Name == config {
			return c.Latencies, nil
		}
		names = append(names, c.Name)
	}
	if config == "" {
		return nil, fmt.Errorf("%s holds %d configurations; pick one with --config (%s)", path, len(cs), strings.Join(names, "; "))
	}
	return nil, fmt.Errorf("%s: no configuration %q (have %s)", path, config, strings.Join(names, "; "))
}

func checkFormat(f string) error {
	if f != "text" && f != "json" {
		return fmt.Errorf("--format %q: want text or json", f)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func pct(v float64) string { return fmt.Sprintf("%.4f%%", 100*v) }

func newModelPredictCmd() *cobra.Command {
	var in modelInputs
	var dups, reps []int
	var format, html string
	cmd := &cobra.Command{
		Use:   "predict --service DIST --bound D --rate R [--duplicates 1,2,4] [--replicas 1,2]",
		Short: "Predicted SLA of every duplicates x replicas configuration, by both predictors",
		Long: `For every duplicates x replicas pair (d x r nodes), the share of requests
answered within --bound:
  sla_thesis  the thesis model (§4.4): bound reduced by the mean network delay
              and the M/G/1 mean wait, then 1-(1-Phi)^d
  sla         the accurate predictor: exact per-duplicate M/G/1 response time
              (waiting + service + network) with the duplicates of a group
              correlated through the shared gap to the previous request, plus
              a Monte Carlo term for the correlation older arrivals carry
              (bursts); stderr is that term's standard error (0 for d = 1)
A group sees a Poisson share rate/r of the arrivals. Utilization >= 1 prints
"unstable" instead of a number.`,
		Example: `  gait model predict --service lognormal:1ms,1 --net 0.1ms --bound 5ms --rate 300 \
      --duplicates 1,2,4,8 --replicas 1,2,4
  gait model predict --service runs/etcd/ --bound 10ms --utilization 0.05 --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			sys, err := in.system(true, true)
			if err != nil {
				return err
			}
			preds, err := model.Predict(sys, dups, reps, model.AccurateOptions{})
			if err != nil {
				return err
			}
			if html != "" {
				page := report.NewPage("gait model predict")
				page.Paragraph(describe(sys))
				page.Figure("Share of requests missing the bound against nodes, one line per replica count; solid: accurate predictor, dashed: thesis.", model.SLAChart("predicted SLA", preds))
				if err := page.WriteFile(html); err != nil {
					return err
				}
			}
			if format == "json" {
				return writeJSON(cmd.OutOrStdout(), preds)
			}
			return writePredictions(cmd.OutOrStdout(), sys, preds)
		},
	}
	in.register(cmd.Flags())
	cmd.Flags().IntSliceVar(&dups, "duplicates", []int{1, 2, 4, 8, 16}, "duplicate counts (replication for predictability)")
	cmd.Flags().IntSliceVar(&reps, "replicas", []int{1, 2, 4}, "replica counts (replication for throughput)")
	cmd.Flags().StringVar(&format, "format", "text", "text or json")
	cmd.Flags().StringVar(&html, "html", "", "also write an HTML report with the SLA-against-nodes figure")
	return cmd
}

func describe(sys model.System) string {
	net := "none"
	if sys.Net != nil {
		net = sys.Net.String()
	}
	s := fmt.Sprintf("service %s (mean %.4gms), network %s, bound %.4gms", sys.Service, 1e3*sys.Service.Mean(), net, 1e3*sys.Bound)
	if sys.Rate > 0 {
		s += fmt.Sprintf(", rate %.6g requests/s", sys.Rate)
	}
	return s
}

func writePredictions(w io.Writer, sys model.System, preds []model.Prediction) error {
	fmt.Fprintln(w, describe(sys))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "duplicates\treplicas\tnodes\tutilization\tsla_thesis\tsla\tstderr\t")
	for _, p := range preds {
		th, acc, se := pct(p.SLAThesis), pct(p.SLA), fmt.Sprintf("%.5f", p.SLAStdErr)
		if p.Unstable {
			th, acc, se = "unstable", "unstable", "-"
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.4f\t%s\t%s\t%s\t\n", p.Duplicates, p.Replicas, p.Nodes, p.Utilization, th, acc, se)
	}
	return tw.Flush()
}

// simRow is one simulated configuration, in predict's JSON shape.
type simRow struct {
	model.Config
	Nodes       int     `json:"nodes"`
	Utilization float64 `json:"utilization"`
	Unstable    bool    `json:"unstable"`
	SLA         any     `json:"sla"`
	StdErr      float64 `json:"stderr"`
	Requests    int     `json:"requests"`
	Split       string  `json:"split"`
}

func newModelSimulateCmd() *cobra.Command {
	var in modelInputs
	var dups, reps []int
	var format, split string
	var requests int
	var seed uint64
	cmd := &cobra.Command{
		Use:   "simulate --service DIST --bound D --rate R [--requests N] [--seed S]",
		Short: "Discrete-event simulation of the same system, to check the predictors",
		Long: `Simulates Poisson arrivals at --rate; each request goes to one replica group
(--split random: a uniformly random group, what the predictors assume; or
round-robin) and to every duplicate of it; each duplicate serves FIFO with its
own service draw, adds its own network draw, and the first reply wins.
The first N/20 requests warm the queues up and are not counted; stderr is the
batch-means standard error (32 batches).`,
		Example: `  gait model simulate --service exp:1ms --bound 3ms --utilization 0.3 \
      --duplicates 1,2,4 --replicas 1 --requests 2000000 --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			sp := model.SplitRandom
			switch split {
			case "random":
			case "round-robin":
				sp = model.SplitRoundRobin
			default:
				return fmt.Errorf("--split %q: want random or round-robin", split)
			}
			sys, err := in.system(true, true)
			if err != nil {
				return err
			}
			var rows []simRow
			for _, r := range reps {
				for _, d := range dups {
					cfg := model.Config{Duplicates: d, Replicas: r}
					if err := cfg.Validate(); err != nil {
						return err
					}
					row := simRow{Config: cfg, Nodes: cfg.Nodes(), Utilization: sys.Utilization(cfg), Requests: requests, Split: sp.String()}
					res, err := model.Simulate(sys, r, d, model.SimOptions{Requests: requests, Seed: seed, Split: sp})
					switch {
					case errors.Is(err, model.ErrUnstable):
						row.Unstable, row.SLA = true, "unstable"
					case err != nil:
						return err
					default:
						row.SLA, row.StdErr = res[d-1].SLA, res[d-1].StdErr
					}
					rows = append(rows, row)
				}
			}
			if format == "json" {
				return writeJSON(cmd.OutOrStdout(), rows)
			}
			fmt.Fprintln(cmd.OutOrStdout(), describe(sys))
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "duplicates\treplicas\tnodes\tutilization\tsla\tstderr\t")
			for _, r := range rows {
				s := "unstable"
				if v, ok := r.SLA.(float64); ok {
					s = pct(v)
				}
				fmt.Fprintf(tw, "%d\t%d\t%d\t%.4f\t%s\t%.5f\t\n", r.Duplicates, r.Replicas, r.Nodes, r.Utilization, s, r.StdErr)
			}
			return tw.Flush()
		},
	}
	in.register(cmd.Flags())
	cmd.Flags().IntSliceVar(&dups, "duplicates", []int{1, 2, 4, 8, 16}, "duplicate counts")
	cmd.Flags().IntSliceVar(&reps, "replicas", []int{1, 2, 4}, "replica counts")
	cmd.Flags().StringVar(&format, "format", "text", "text or json")
	cmd.Flags().StringVar(&split, "split", "random", "how groups share arrivals: random or round-robin")
	cmd.Flags().IntVar(&requests, "requests", 1000000, "measured requests per configuration")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "random seed")
	return cmd
}

func newModelPlanCmd() *cobra.Command {
	var in modelInputs
	var format, target, predictor, html string
	var nodes, maxNodes int
	cmd := &cobra.Command{
		Use:   "plan --service DIST (--nodes N --bound D --rate R | --target 99.9%@10ms --rate R | --target T --nodes N)",
		Short: "The thesis's management questions: best mix, fewest nodes, highest rate",
		Long: `Three questions (thesis chapter 6), picked by which flags are given:
  --nodes N --rate R --bound D      the mix of duplicates x replicas (at most N
                                    nodes) with the highest SLA
  --target P%@D --rate R            the fewest nodes (up to --max-nodes) and
                                    their mix that meet the target
  --target P%@D --nodes N           the highest total rate N nodes can carry
                                    at the target, and the mix that does it
--predictor picks the model (accurate by default, or thesis).`,
		Example: `  gait model plan --service lognormal:0.5ms,1.8 --bound 5ms --rate 20 --nodes 8
  gait model plan --service lognormal:0.5ms,1.8 --target 99.9%@10ms --rate 100
  gait model plan --service lognormal:0.5ms,1.8 --target 99.9%@10ms --nodes 16`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			pred, err := model.ParsePredictor(predictor)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			opt := model.AccurateOptions{}
			if target == "" {
				if nodes == 0 {
					return errors.New("give --nodes (best mix) or --target (fewest nodes / highest rate)")
				}
				sys, err := in.system(true, true)
				if err != nil {
					return err
				}
				best, cands, err := model.BestMix(sys, nodes, pred, opt)
				if err != nil {
					return err
				}
				if html != "" {
					page := report.NewPage("gait model plan: best mix")
					page.Paragraph(describe(sys))
					page.Note(fmt.Sprintf("Best mix of at most %d nodes: %d duplicates x %d replicas, SLA %s (%s predictor).", nodes, best.Duplicates, best.Replicas, pct(pred.Pick(best)), pred))
					page.Figure("Every mix that fits the budget: share missing the bound against nodes.", model.SLAChart("candidates", cands))
					if err := page.WriteFile(html); err != nil {
						return err
					}
				}
				if format == "json" {
					return writeJSON(out, map[string]any{"question": "best-mix", "nodes": nodes, "predictor": pred, "best": best, "candidates": cands})
				}
				fmt.Fprintln(out, describe(sys))
				fmt.Fprintf(out, "best mix of at most %d nodes (%s): %d duplicates x %d replicas = %d nodes, utilization %.4f, SLA %s (thesis %s, accurate %s)\n",
					nodes, pred, best.Duplicates, best.Replicas, best.Nodes, best.Utilization, pct(pred.Pick(best)), pct(best.SLAThesis), pct(best.SLA))
				return nil
			}
			t, err := model.ParseTarget(target)
			if err != nil {
				return fmt.Errorf("--target: %w", err)
			}
			if in.bound == "" {
				in.bound = fmt.Sprintf("%gs", t.Bound)
			}
			if nodes > 0 && in.rate == 0 && in.util == 0 {
				sys, err := in.system(false, false)
				if err != nil {
					return err
				}
				best, all, err := model.MaxRate(sys, t, nodes, pred, opt)
				if err != nil {
					return err
				}
				if format == "json" {
					return writeJSON(out, map[string]any{"question": "max-rate", "target": t.String(), "nodes": nodes, "predictor": pred, "best": best, "mixes": all})
				}
				fmt.Fprintf(out, "highest rate %d nodes carry at %s (%s): %.6g requests/s with %d duplicates x %d replicas (SLA %s)\n",
					nodes, t, pred, best.Rate, best.Duplicates, best.Replicas, pct(best.SLA))
				return nil
			}
			sys, err := in.system(true, false)
			if err != nil {
				return err
			}
			best, err := model.FewestNodes(sys, t, maxNodes, pred, opt)
			if err != nil {
				return err
			}
			if format == "json" {
				return writeJSON(out, map[string]any{"question": "fewest-nodes", "target": t.String(), "predictor": pred, "best": best})
			}
			fmt.Fprintf(out, "fewest nodes meeting %s at %.6g requests/s (%s): %d = %d duplicates x %d replicas, SLA %s (thesis %s)\n",
				t, sys.Rate, pred, best.Nodes, best.Duplicates, best.Replicas, pct(pred.Pick(best)), pct(best.SLAThesis))
			return nil
		},
	}
	in.register(cmd.Flags())
	cmd.Flags().StringVar(&format, "format", "text", "text or json")
	cmd.Flags().StringVar(&target, "target", "", "SLA target, e.g. 99.9%@10ms")
	cmd.Flags().StringVar(&predictor, "predictor", "accurate", "accurate or thesis")
	cmd.Flags().StringVar(&html, "html", "", "with --nodes: an HTML report of every candidate mix")
	cmd.Flags().IntVar(&nodes, "nodes", 0, "node budget")
	cmd.Flags().IntVar(&maxNodes, "max-nodes", 64, "largest deployment --target may propose")
	return cmd
}

func newModelFigure7Cmd() *cobra.Command {
	var in modelInputs
	var utils []float64
	var maxNodes int
	var html, format string
	cmd := &cobra.Command{
		Use:     "figure7 --service DIST --bound D --html FILE",
		Short:   "The thesis's Figure 7: SLA against 1..32 nodes for both strategies at 1%, 5%, 15% load",
		Example: `  gait model figure7 --service lognormal:0.5ms,1.8 --bound 5ms --html figure7.html`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			in.util = 0
			in.rate = 1 // replaced per panel
			sys, err := in.system(true, true)
			if err != nil {
				return err
			}
			page := report.NewPage("Zoolander Figure 7, reproduced by gait")
			page.Paragraph(describe(model.System{Service: sys.Service, Net: sys.Net, Bound: sys.Bound}) + "; utilization is that of one server taking all the traffic.")
			all := map[string][]model.Prediction{}
			for _, u := range utils {
				c, preds, err := model.Figure7(sys, u, maxNodes)
				if err != nil {
					return err
				}
				all[fmt.Sprint(u)] = preds
				page.Figure(fmt.Sprintf("SLA within %s at %g%% utilization: duplicates (predictability) vs replicas (throughput).", in.bound, 100*u), c)
			}
			if html != "" {
				if err := page.WriteFile(html); err != nil {
					return err
				}
			}
			if format == "json" {
				return writeJSON(cmd.OutOrStdout(), all)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "utilization\tnodes\tdup sla\tdup thesis\trep sla\trep thesis\t")
			for _, u := range utils {
				ps := all[fmt.Sprint(u)]
				for n := 1; n <= maxNodes; n *= 2 {
					var d, r model.Prediction
					for _, p := range ps {
						if p.Nodes == n && p.Replicas == 1 {
							d = p
						}
						if p.Nodes == n && p.Duplicates == 1 {
							r = p
						}
					}
					fmt.Fprintf(tw, "%g%%\t%d\t%s\t%s\t%s\t%s\t\n", 100*u, n, pct(d.SLA), pct(d.SLAThesis), pct(r.SLA), pct(r.SLAThesis))
				}
			}
			return tw.Flush()
		},
	}
	in.register(cmd.Flags())
	cmd.Flags().Float64SliceVar(&utils, "utilizations", []float64{0.01, 0.05, 0.15}, "loads to draw, one panel each")
	cmd.Flags().IntVar(&maxNodes, "max-nodes", 32, "largest node count")
	cmd.Flags().StringVar(&html, "html", "", "write the figure as an HTML report")
	cmd.Flags().StringVar(&format, "format", "text", "text or json")
	return cmd
}

func newModelErrorMapCmd() *cobra.Command {
	var utils []float64
	var maxD, requests int
	var boundMeans float64
	var measured, measuredConfig, html, format string
	var seed uint64
	var load latency.Options
	cmd := &cobra.Command{
		Use:   "errormap [--measured PATH] [--requests N] [--html FILE]",
		Short: "Where each predictor holds: absolute error against simulation over load and duplicates",
		Long: `Runs both predictors and the simulator for one group of 1..--max-duplicates
duplicates at each utilization, for exponential (exp:1ms), log-normal
(lognormal:1ms,1), heavy-tailed Pareto (pareto:1ms,2.5) and, with --measured,
a measured distribution; the bound is --bound-means x the mean service time.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			svcs := []model.Distribution{model.Exponential{M: 1e-3}, model.LogNormal{Median: 1e-3, Sigma: 1}, model.Pareto{Xm: 1e-3, Alpha: 2.5}}
			if measured != "" {
				lat, err := loadLatencies(measured, measuredConfig, load)
				if err != nil {
					return fmt.Errorf("--measured: %w", err)
				}
				e, err := model.NewEmpirical(lat, measured)
				if err != nil {
					return fmt.Errorf("--measured: %w", err)
				}
				svcs = append(svcs, e)
			}
			cells, err := model.ErrorMap(svcs, utils, maxD, boundMeans, model.SimOptions{Requests: requests, Seed: seed})
			if err != nil {
				return err
			}
			if html != "" {
				page := report.NewPage("gait model errormap")
				page.Paragraph(fmt.Sprintf("Bound %g x mean service, no network delay, %d simulated requests per point.", boundMeans, requests))
				for _, s := range svcs {
					page.Figure("|predicted - simulated| against duplicates for "+s.String()+"; solid: accurate, dashed: thesis (floored at 1e-6).", model.ErrorChart(s.String(), cells))
				}
				if err := page.WriteFile(html); err != nil {
					return err
				}
			}
			if format == "json" {
				return writeJSON(cmd.OutOrStdout(), cells)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "service\tutilization\tduplicates\tsimulated\tstderr\taccurate\tstderr\terr\tthesis\terr\t")
			for _, c := range cells {
				fmt.Fprintf(tw, "%s\t%g\t%d\t%.5f\t%.5f\t%.5f\t%.5f\t%+.5f\t%.5f\t%+.5f\t\n", c.Service, c.Utilization, c.Duplicates,
					c.Simulated, c.StdErr, c.Accurate, c.AccurateStdErr, c.Accurate-c.Simulated, c.Thesis, c.Thesis-c.Simulated)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().Float64SliceVar(&utils, "utilizations", []float64{0.01, 0.05, 0.15, 0.3, 0.6}, "loads")
	cmd.Flags().IntVar(&maxD, "max-duplicates", 32, "largest duplicate count")
	cmd.Flags().IntVar(&requests, "requests", 2000000, "simulated requests per (distribution, load)")
	cmd.Flags().Float64Var(&boundMeans, "bound-means", 3, "latency bound as a multiple of the mean service time")
	cmd.Flags().StringVar(&measured, "measured", "", "also map a measured distribution (run directory, CSV, histogram log)")
	cmd.Flags().StringVar(&measuredConfig, "config", "", "when --measured holds several configurations, the one to use")
	cmd.Flags().StringVar(&load.LatencyColumn, "latency-column", "", "CSV column holding the latency")
	cmd.Flags().StringVar(&load.Unit, "unit", "", "unit of the CSV column or histogram log")
	cmd.Flags().StringVar(&html, "html", "", "write the error figures as an HTML report")
	cmd.Flags().StringVar(&format, "format", "text", "text or json")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "random seed")
	return cmd
}

func newModelIndependenceCmd() *cobra.Command {
	var quantile float64
	var html, format string
	var load latency.Options
	cmd := &cobra.Command{
		Use:   "independence A B",
		Short: "Do two duplicates' slow requests coincide? (thesis §4.3.3, Figure 5)",
		Long: `Reads the latencies two duplicates gave to the same request stream, in
request order: two paths (run directories, CSVs, histogram logs), each a single
configuration. Warns when slow requests (above --quantile of
each duplicate) coincide more than chance: then the model's multiplication of
miss probabilities overstates the SLA.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			a, b, err := pairLatencies(args, load)
			if err != nil {
				return err
			}
			ind, err := model.CheckIndependence(a, b, quantile)
			if err != nil {
				return err
			}
			verdict := "independent: slow requests coincide no more than chance; the model's assumption holds"
			if !ind.Holds {
				verdict = fmt.Sprintf("WARNING: slow requests coincide %.1fx more often than chance (z=%.1f); the predictors overstate the SLA of duplicates", ind.Lift, ind.Z)
			}
			if html != "" {
				page := report.NewPage("gait model independence")
				page.Note(verdict)
				page.Figure("Each request's percentile in duplicate A against B (thesis Figure 5): independent anomalies fill the corners evenly.", model.IndependenceChart(ind))
				if err := page.WriteFile(html); err != nil {
					return err
				}
			}
			if format == "json" {
				return writeJSON(cmd.OutOrStdout(), ind)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d requests; slow = above each duplicate's p%g\nboth slow %.4f%%, independence expects %.4f%% (lift %.2f, z %.1f); Spearman %.3f\n%s\n",
				ind.Requests, 100*quantile, 100*ind.BothSlow, 100*ind.Expected, ind.Lift, ind.Z, ind.Spearman, verdict)
			return nil
		},
	}
	cmd.Flags().Float64Var(&quantile, "quantile", 0.9, "a request is slow above this quantile of its duplicate's latencies")
	cmd.Flags().StringVar(&load.LatencyColumn, "latency-column", "", "with two paths: the CSV latency column; with one CSV: two columns A,B")
	cmd.Flags().StringVar(&load.Unit, "unit", "", "unit of the latency values")
	cmd.Flags().StringVar(&html, "html", "", "write the Figure 5 scatter as an HTML report")
	cmd.Flags().StringVar(&format, "format", "text", "text or json")
	return cmd
}

// pairLatencies reads the two duplicates' latencies from two paths, or from
// one CSV's two columns.
func pairLatencies(args []string, opt latency.Options) ([]float64, []float64, error) {
	a, err := loadLatencies(args[0], "", opt)
	if err != nil {
		return nil, nil, err
	}
	b, err := loadLatencies(args[1], "", opt)
	return a, b, err
}

func newModelLimplockCmd() *cobra.Command {
	var nodes []int
	var blocks, requests, trials int
	var seed uint64
	var html, format string
	cmd := &cobra.Command{
		Use:   "limplock [--nodes 10,20,50,100] [--blocks 3200] [--requests 10]",
		Short: "HDFS limplock probabilities (Limplock paper Table 2) against Monte Carlo",
		Long: `Evaluates the Limplock paper's Table 2 (P_rl, P_wl, P_nl, P_cl, p_bl, P_bl)
for each cluster size and checks each against a Monte Carlo simulation of
HDFS-style random 3-way placement with one slow node and one dead node.
docs/model.md lists the assumptions. --html draws Figure 3's four panels.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			type row struct {
				Formula limplock.Formulas `json:"formula"`
				Sim     limplock.Estimate `json:"simulation"`
			}
			var rows []row
			for _, n := range nodes {
				f, err := limplock.Table2(n, blocks, requests)
				if err != nil {
					return err
				}
				e, err := limplock.Simulate(n, blocks, requests, trials, seed)
				if err != nil {
					return err
				}
				rows = append(rows, row{f, e})
			}
			if html != "" {
				page, err := limplockPage(trials, seed)
				if err != nil {
					return err
				}
				if err := page.WriteFile(html); err != nil {
					return err
				}
			}
			if format == "json" {
				return writeJSON(cmd.OutOrStdout(), rows)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "blocks %d, requests %d, %d Monte Carlo trials; each cell: formula / simulation\n", blocks, requests, trials)
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "nodes\tP_rl\tP_wl\tP_nl\tP_cl\tp_bl\tP_bl\t")
			for _, r := range rows {
				f, e := r.Formula, r.Sim
				fmt.Fprintf(tw, "%d\t%.4f / %.4f\t%.4f / %.4f\t%.4f / %.4f\t%.4f / %.4f\t%.5f / %.5f\t%.4f / %.4f\t\n", f.N,
					f.PRL, e.PRL, f.PWL, e.PWL, f.PNL, e.PNL, f.PCL, e.PCL, f.PBlock, e.PBlock, f.PBL, e.PBL)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntSliceVar(&nodes, "nodes", []int{10, 20, 30, 50, 100}, "cluster sizes")
	cmd.Flags().IntVar(&blocks, "blocks", 3200, "blocks to regenerate (blocks per dead node)")
	cmd.Flags().IntVar(&requests, "requests", 10, "user requests (reads or writes)")
	cmd.Flags().IntVar(&trials, "trials", 2000, "Monte Carlo trials per point")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "random seed")
	cmd.Flags().StringVar(&html, "html", "", "write Figure 3's four panels as an HTML report")
	cmd.Flags().StringVar(&format, "format", "text", "text or json")
	return cmd
}

// limplockPage draws Figure 3: formula lines with Monte Carlo points.
func limplockPage(trials int, seed uint64) (*report.Page, error) {
	page := report.NewPage("HDFS limplock probabilities (Limplock paper Figure 3)")
	page.Paragraph("Lines: Table 2's formulas. Dashed: Monte Carlo of random 3-way placement with one slow and one dead node.")
	sizes := []int{5, 10, 15, 20, 30, 40, 50, 70, 100}
	panels := []struct {
		title  string
		params []int
		label  string
		value  func(f limplock.Formulas) float64
		est    func(e limplock.Estimate) float64
		isReq  bool
	}{
		{"(a) read limplock P_rl", []int{1, 10, 100}, "requests", func(f limplock.Formulas) float64 { return f.PRL }, func(e limplock.Estimate) float64 { return e.PRL }, true},
		{"(b) write limplock P_wl", []int{1, 10, 100}, "requests", func(f limplock.Formulas) float64 { return f.PWL }, func(e limplock.Estimate) float64 { return e.PWL }, true},
		{"(c) block limplock P_bl", []int{100, 800, 3200}, "blocks", func(f limplock.Formulas) float64 { return f.PBL }, func(e limplock.Estimate) float64 { return e.PBL }, false},
		{"(d) cluster regeneration limplock P_cl", []int{100, 800, 3200}, "blocks", func(f limplock.Formulas) float64 { return f.PCL }, func(e limplock.Estimate) float64 { return e.PCL }, false},
	}
	for _, p := range panels {
		c := report.LineChart{Title: p.title, X: report.Axis{Label: "cluster size (nodes)"}, Y: report.Axis{Label: "probability", Unit: "%", Min: 0, Max: 1}, Markers: true}
		for _, v := range p.params {
			f := report.Series{Name: fmt.Sprintf("%s=%d, formula", p.label, v)}
			m := report.Series{Name: fmt.Sprintf("%s=%d, Monte Carlo", p.label, v), Dashed: true}
			for _, n := range sizes {
				b, r := v, 1
				if p.isReq {
					b, r = 100, v
				}
				fo, err := limplock.Table2(n, b, r)
				if err != nil {
					return nil, err
				}
				es, err := limplock.Simulate(n, b, r, trials, seed)
				if err != nil {
					return nil, err
				}
				f.X, f.Y = append(f.X, float64(n)), append(f.Y, p.value(fo))
				m.X, m.Y = append(m.X, float64(n)), append(m.Y, p.est(es))
			}
			c.Series = append(c.Series, f, m)
		}
		page.Figure(p.title+" against cluster size.", c)
	}
	return page, nil
}

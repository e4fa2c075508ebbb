package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/gait-dev/gait/internal/latency"
	"github.com/gait-dev/gait/internal/model"
	"github.com/gait-dev/gait/internal/model/limplock"
	"github.com/gait-dev/gait/internal/model/modelreport"
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
		newModelFigure7Cmd(), newModelErrorMapCmd(), newModelIndependenceCmd(), newModelLimplockCmd(), newModelChapter6Cmd())
	return cmd
}

// modelInputs are the flags every Zoolander subcommand shares.
type modelInputs struct {
	service, net, bound, config string
	rate, util                  float64
	load                        latency.Options
	phases                      string
	batch                       int
	fs                          *pflag.FlagSet
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
	fs.StringVar(&in.phases, "phases", "", "a request is phases of parallel accesses with a barrier between them, e.g. 30,20 (default: one access)")
	fs.IntVar(&in.batch, "batch", 1, "requests arriving together at each Poisson instant")
	in.fs = fs
}

// request is the request the flags describe; --rate counts requests.
func (in *modelInputs) request() (model.Request, error) {
	if err := checkBatch(in.batch); err != nil {
		return model.Request{}, err
	}
	q := model.Request{Batch: in.batch}
	if in.fs == nil || !in.fs.Changed("phases") {
		return q, nil
	}
	var err error
	q.Phases, err = parsePhases(in.phases)
	return q, err
}

// checkBatch refuses a --batch below 1: model.Request reads 0 as its
// default of one request an arrival, which a 0 given on purpose is not.
func checkBatch(b int) error {
	if b < 1 {
		return fmt.Errorf("--batch %d: want 1 to %d requests per arrival", b, model.MaxBatch)
	}
	return nil
}

// parsePhases reads --phases: parallel accesses per phase, like 30,20.
func parsePhases(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("--phases %q: empty; give the parallel accesses of each phase, like 30,20", s)
	}
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("--phases %q: phase %d is %q, not a count of parallel accesses", s, len(out)+1, part)
		}
		out = append(out, n)
	}
	return out, nil
}

// system builds the model's inputs; needRate and needBound say which must
// be set. The model checks the ranges; namedFlag names the flag.
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
	if sys.Request, err = in.request(); err != nil {
		return sys, err
	}
	if err := sys.Request.Validate(); err != nil {
		return sys, err
	}
	switch {
	case in.rate != 0 && in.util != 0:
		return sys, errors.New("give --rate or --utilization, not both")
	case in.util != 0:
		sys.Rate = in.util / (svc.Mean() * float64(sys.Request.Accesses()))
		if !(in.util > 0) || math.IsInf(sys.Rate, 0) {
			return sys, fmt.Errorf("--utilization %v: want a finite utilization > 0 (with a mean service time of %s, the rate is %v requests/s)", in.util, model.FormatDuration(svc.Mean()), sys.Rate)
		}
	case !(in.rate >= 0) || math.IsInf(in.rate, 0):
		return sys, fmt.Errorf("--rate %v: must be finite and > 0", in.rate)
	default:
		sys.Rate = in.rate
	}
	if needRate && sys.Rate == 0 {
		return sys, errors.New("--rate (or --utilization) is required")
	}
	if in.bound != "" {
		b, err := model.ParseDuration(in.bound)
		if err != nil {
			return sys, fmt.Errorf("--bound: %w", err)
		}
		if b <= 0 {
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
	lat, err := latency.LoadOne(spec, in.config, in.load)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	e, err := model.NewEmpirical(lat, spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return e, nil
}

// runE runs a subcommand's work and names the flag behind an input the
// model or limplock refuses: the rate is --utilization's when that gave
// it, and rename maps the other inputs whose flag has another name.
func (in *modelInputs) runE(rename map[string]string, work func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		names := map[string]string{}
		for k, v := range rename {
			names[k] = v
		}
		if in.util != 0 {
			names["rate"] = "utilization"
		}
		return namedFlag(work(cmd, args), names)
	}
}

// namedFlag rewrites an input error as --FLAG VALUE: reason.
func namedFlag(err error, rename map[string]string) error {
	var input, value, reason string
	var me *model.InputError
	var le *limplock.InputError
	switch {
	case errors.As(err, &me):
		input, value, reason = me.Input, me.Value, me.Reason
	case errors.As(err, &le):
		input, value, reason = le.Input, fmt.Sprint(le.Value), le.Reason
	default:
		return err
	}
	if r, ok := rename[input]; ok {
		input = r
	}
	if value == "" {
		return fmt.Errorf("--%s: %s", input, reason)
	}
	return fmt.Errorf("--%s %s: %s", input, value, reason)
}

func newModelPredictCmd() *cobra.Command {
	var in modelInputs
	var dups, reps []int
	var out ending
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
"unstable" instead of a number. Above utilization 0.961 the Monte Carlo term
does not run: sla of 2 or more duplicates is then the gap law alone and
stderr the most it can be off by.`,
		Example: `  gait model predict --service lognormal:1ms,1 --net 0.1ms --bound 5ms --rate 300 \
      --duplicates 1,2,4,8 --replicas 1,2,4
  # the service time measured by the bundled etcd run's healthy step
  gait model predict --service testdata/runs/etcd-leader-nic/f1-r1 --bound 10ms --utilization 0.05 --format json`,
		Args: cobra.NoArgs,
		RunE: in.runE(nil, func(cmd *cobra.Command, _ []string) error {
			if err := out.check(); err != nil {
				return err
			}
			sys, err := in.system(true, true)
			if err != nil {
				return err
			}
			progress := newProgressLine(cmd.ErrOrStderr(), "predict")
			defer progress.close()
			preds, err := model.Predict(sys, dups, reps, model.AccurateOptions{Progress: progress.report})
			if err != nil {
				return err
			}
			progress.close()
			return out.finish(cmd.OutOrStdout(), result{
				text: func(w io.Writer) error { return modelreport.WritePredictions(w, sys, preds) },
				json: jsonOf(preds),
				html: pageOf(func() *report.Page { return modelreport.PredictPage(sys, preds) }),
			})
		}),
	}
	in.register(cmd.Flags())
	cmd.Flags().IntSliceVar(&dups, "duplicates", []int{1, 2, 4, 8, 16}, "duplicate counts (replication for predictability)")
	cmd.Flags().IntSliceVar(&reps, "replicas", []int{1, 2, 4}, "replica counts (replication for throughput)")
	out.flags(cmd.Flags(), "text or json", "also write an HTML report with the SLA-against-nodes figure")
	return cmd
}

func newModelSimulateCmd() *cobra.Command {
	var in modelInputs
	var dups, reps []int
	var out ending
	var split string
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
batch-means standard error (32 batches). A run longer than a few seconds
shows its progress on standard error.`,
		Example: `  gait model simulate --service exp:1ms --bound 3ms --utilization 0.3 \
      --duplicates 1,2,4 --replicas 1 --requests 2000000 --format json`,
		Args: cobra.NoArgs,
		RunE: in.runE(nil, func(cmd *cobra.Command, _ []string) error {
			if err := out.check(); err != nil {
				return err
			}
			sp, err := model.ParseSplit(split)
			if err != nil {
				return err
			}
			sys, err := in.system(true, true)
			if err != nil {
				return err
			}
			progress := newProgressLine(cmd.ErrOrStderr(), "simulate")
			defer progress.close()
			rows, err := model.SimulateConfigs(sys, dups, reps, model.SimOptions{Requests: requests, Seed: seed, Split: sp, Progress: progress.report})
			if err != nil {
				return err
			}
			progress.close()
			return out.finish(cmd.OutOrStdout(), result{
				text: func(w io.Writer) error { return modelreport.WriteSimulations(w, sys, rows) },
				json: jsonOf(rows),
			})
		}),
	}
	in.register(cmd.Flags())
	cmd.Flags().IntSliceVar(&dups, "duplicates", []int{1, 2, 4, 8, 16}, "duplicate counts")
	cmd.Flags().IntSliceVar(&reps, "replicas", []int{1, 2, 4}, "replica counts")
	out.flags(cmd.Flags(), "text or json", "")
	cmd.Flags().StringVar(&split, "split", "random", "how groups share arrivals: random or round-robin")
	cmd.Flags().IntVar(&requests, "requests", 1000000, "measured requests per configuration")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "random seed")
	return cmd
}

func newModelPlanCmd() *cobra.Command {
	var in modelInputs
	var out ending
	var target, predictor string
	var nodes, maxNodes int
	var cmd *cobra.Command
	plan := func(cmd *cobra.Command, _ []string) error {
		if err := out.check(); err != nil {
			return err
		}
		pred, err := model.ParsePredictor(predictor)
		if err != nil {
			return err
		}
		progress := newProgressLine(cmd.ErrOrStderr(), "plan")
		defer progress.close()
		opt := model.AccurateOptions{Progress: progress.report}
		if target == "" {
			if nodes == 0 {
				return errors.New("give --nodes (best mix) or --target (fewest nodes / highest rate)")
			}
			if cmd.Flags().Changed("max-nodes") {
				return errors.New("--max-nodes: only --target with --rate (the fewest nodes) takes it; --nodes is the budget here")
			}
			sys, err := in.system(true, true)
			if err != nil {
				return err
			}
			best, cands, err := model.BestMix(sys, nodes, pred, opt)
			if err != nil {
				return err
			}
			progress.close()
			ans := modelreport.BestMix{System: sys, Nodes: nodes, Predictor: pred, Best: best, Candidates: cands}
			return out.finish(cmd.OutOrStdout(), result{text: ans.WriteText, json: jsonOf(ans.JSON()), html: pageOf(ans.Page)})
		}
		t, err := model.ParseTarget(target)
		if err != nil {
			return fmt.Errorf("--target: %w", err)
		}
		if in.bound != "" {
			return fmt.Errorf("--bound %s: --target %s already sets the bound; give only --target", in.bound, target)
		}
		if out.html != "" {
			return errors.New("--html: only the best mix (--nodes with --rate and --bound) draws a report")
		}
		if nodes != 0 && in.rate == 0 && in.util == 0 {
			if cmd.Flags().Changed("max-nodes") {
				return errors.New("--max-nodes: the highest rate (--target with --nodes) weighs the --nodes budget; drop --max-nodes")
			}
			sys, err := in.system(false, false)
			if err != nil {
				return err
			}
			best, all, err := model.MaxRate(sys, t, nodes, pred, opt)
			if err != nil {
				return err
			}
			progress.close()
			ans := modelreport.MaxRate{Nodes: nodes, Target: t, Predictor: pred, Best: best, Mixes: all}
			return out.finish(cmd.OutOrStdout(), result{text: ans.WriteText, json: jsonOf(ans.JSON())})
		}
		if nodes != 0 {
			return fmt.Errorf("--nodes %d: --target with --rate asks for the fewest nodes (up to --max-nodes); drop --nodes, or drop --rate to ask the highest rate %d nodes carry", nodes, nodes)
		}
		sys, err := in.system(true, false)
		if err != nil {
			return err
		}
		best, err := model.FewestNodes(sys, t, maxNodes, pred, opt)
		if err != nil {
			return err
		}
		progress.close()
		ans := modelreport.FewestNodes{Rate: sys.Rate, Target: t, Predictor: pred, Best: best}
		return out.finish(cmd.OutOrStdout(), result{text: ans.WriteText, json: jsonOf(ans.JSON())})
	}
	cmd = &cobra.Command{
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
		RunE: in.runE(nil, func(cmd *cobra.Command, args []string) error {
			err := plan(cmd, args)
			// With --target, the bound is the target's.
			var ie *model.InputError
			if target != "" && errors.As(err, &ie) && ie.Input == "bound" {
				return fmt.Errorf("--target %s: %s", target, ie.Reason)
			}
			return err
		}),
	}
	in.register(cmd.Flags())
	out.flags(cmd.Flags(), "text or json", "with --nodes: an HTML report of every candidate mix")
	cmd.Flags().StringVar(&target, "target", "", "SLA target, e.g. 99.9%@10ms")
	cmd.Flags().StringVar(&predictor, "predictor", "accurate", "accurate or thesis")
	cmd.Flags().IntVar(&nodes, "nodes", 0, "node budget")
	cmd.Flags().IntVar(&maxNodes, "max-nodes", 64, "largest deployment --target may propose")
	return cmd
}

func newModelFigure7Cmd() *cobra.Command {
	var in modelInputs
	var utils []float64
	var maxNodes int
	var out ending
	cmd := &cobra.Command{
		Use:     "figure7 --service DIST --bound D --html FILE",
		Short:   "The thesis's Figure 7: SLA against 1..32 nodes for both strategies at 1%, 5%, 15% load",
		Example: `  gait model figure7 --service lognormal:0.5ms,1.8 --bound 5ms --html figure7.html`,
		Args:    cobra.NoArgs,
		RunE: in.runE(map[string]string{"utilization": "utilizations"}, func(cmd *cobra.Command, _ []string) error {
			if err := out.check(); err != nil {
				return err
			}
			if in.rate != 0 || in.util != 0 {
				return errors.New("--rate and --utilization do not apply: figure7 draws the loads --utilizations names")
			}
			sys, err := in.system(false, true)
			if err != nil {
				return err
			}
			fig := modelreport.Figure7{System: sys, Utilizations: utils, MaxNodes: maxNodes, Predictions: map[string][]model.Prediction{}}
			for _, u := range utils {
				preds, err := model.Figure7(sys, u, maxNodes)
				if err != nil {
					return err
				}
				fig.Predictions[fmt.Sprint(u)] = preds
			}
			return out.finish(cmd.OutOrStdout(), result{text: fig.WriteText, json: jsonOf(fig.Predictions), html: pageOf(fig.Page)})
		}),
	}
	in.register(cmd.Flags())
	cmd.Flags().Float64SliceVar(&utils, "utilizations", []float64{0.01, 0.05, 0.15}, "loads to draw, one panel each")
	cmd.Flags().IntVar(&maxNodes, "max-nodes", 32, "largest node count")
	out.flags(cmd.Flags(), "text or json", "write the figure as an HTML report")
	return cmd
}

func newModelErrorMapCmd() *cobra.Command {
	var utils []float64
	var maxD, requests, batch, maxNodes int
	var phases, service, net, mixes string
	var perServer, resimulate bool
	var redraw []string
	var boundMeans float64
	var measured, measuredConfig string
	var out ending
	var seed uint64
	var load latency.Options
	cmd := &cobra.Command{
		Use:   "errormap [--measured PATH] [--requests N] [--html FILE]",
		Short: "Where each predictor holds: absolute error against simulation over load and duplicates",
		Long: `Runs both predictors and the simulator for one group of 1..--max-duplicates
duplicates at each utilization, for exponential (exp:1ms), log-normal
(lognormal:1ms,1), heavy-tailed Pareto (pareto:1ms,2.5) and, with --measured,
a measured distribution; the bound is --bound-means x the mean service time.
With --phases it maps requests of several accesses instead, over every mix
of up to --max-nodes nodes: each load is that of one server taking every
access (the same request rate for every mix), or with --per-server each
server's in every mix (the loads a planner's highest-rate search reaches);
--mixes maps only the mixes named; --redraw draws a map from the cells
earlier runs wrote (--format json), a later run's replacing an earlier's,
so a rerun of a few mixes updates a whole map; with --resimulate it
simulates those cells again at their bounds with --requests and --seed,
keeping their predictions (a finer reference without predicting again).
A run longer than a few seconds shows its progress on standard error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.check(); err != nil {
				return err
			}
			if cmd.Flags().Changed("phases") || cmd.Flags().Changed("batch") {
				if err := checkBatch(batch); err != nil {
					return err
				}
				if !cmd.Flags().Changed("requests") && batch > 1 {
					// A batch's requests share their arrival: the
					// reference's noise goes with arrivals, not requests.
					requests *= batch
				}
				return requestErrorMap(cmd, out, requestMapInputs{phases: phases, batch: batch, service: service, net: net, mixes: mixes, redraw: redraw, resimulate: resimulate,
					scope: model.RequestMapScope{Utilizations: utils, PerServer: perServer, MaxNodes: maxNodes}, requests: requests, seed: seed})
			}
			if perServer || mixes != "" || len(redraw) > 0 || resimulate || cmd.Flags().Changed("net") {
				return errors.New("--per-server, --mixes, --net, --redraw and --resimulate apply to requests: give --phases (the access map is of one group)")
			}
			svcs := []model.Distribution{model.Exponential{M: 1e-3}, model.LogNormal{Median: 1e-3, Sigma: 1}, model.Pareto{Xm: 1e-3, Alpha: 2.5}}
			if measured != "" {
				lat, err := latency.LoadOne(measured, measuredConfig, load)
				if err != nil {
					return fmt.Errorf("--measured: %w", err)
				}
				e, err := model.NewEmpirical(lat, measured)
				if err != nil {
					return fmt.Errorf("--measured: %w", err)
				}
				svcs = append(svcs, e)
			}
			progress := newProgressLine(cmd.ErrOrStderr(), "errormap")
			defer progress.close()
			cells, err := model.ErrorMap(svcs, utils, maxD, boundMeans, model.SimOptions{Requests: requests, Seed: seed, Progress: progress.report})
			if err != nil {
				return namedFlag(err, nil)
			}
			progress.close()
			return out.finish(cmd.OutOrStdout(), result{
				text: func(w io.Writer) error { return modelreport.WriteErrorMap(w, cells) },
				json: jsonOf(cells),
				html: pageOf(func() *report.Page { return modelreport.ErrorMapPage(boundMeans, requests, cells) }),
			})
		},
	}
	cmd.Flags().Float64SliceVar(&utils, "utilizations", []float64{0.01, 0.05, 0.15, 0.3, 0.6}, "loads")
	cmd.Flags().IntVar(&maxD, "max-duplicates", 32, "largest duplicate count")
	cmd.Flags().IntVar(&requests, "requests", 2000000, "simulated requests per (distribution, load), or per cell with --phases (times --batch unless given)")
	cmd.Flags().Float64Var(&boundMeans, "bound-means", 3, "latency bound as a multiple of the mean service time")
	cmd.Flags().StringVar(&measured, "measured", "", "also map a measured distribution (run directory, CSV, histogram log)")
	cmd.Flags().StringVar(&measuredConfig, "config", "", "when --measured holds several configurations, the one to use")
	cmd.Flags().StringVar(&load.LatencyColumn, "latency-column", "", "CSV column holding the latency")
	cmd.Flags().StringVar(&load.Unit, "unit", "", "unit of the CSV column or histogram log")
	out.flags(cmd.Flags(), "text or json", "write the error figures as an HTML report")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "random seed")
	cmd.Flags().StringVar(&phases, "phases", "", "map requests of these phases instead (e.g. 30,20): every mix of up to --max-nodes nodes")
	cmd.Flags().IntVar(&batch, "batch", 1, "with --phases: requests arriving together")
	cmd.Flags().StringVar(&service, "service", "exp:1ms", "with --phases: the service-time distribution")
	cmd.Flags().StringVar(&net, "net", "0", "with --phases: the network delay of each reply, a constant or a distribution (see gait model --help)")
	cmd.Flags().IntVar(&maxNodes, "max-nodes", 8, "with --phases: the largest mix")
	cmd.Flags().BoolVar(&perServer, "per-server", false, "with --phases: each load is every server's, not that of one server taking every access")
	cmd.Flags().StringSliceVar(&redraw, "redraw", nil, "with --phases: draw the map from the cells of earlier runs (--format json files) instead of running it; a later file's cell replaces an earlier one's of the same load, mix and quantile")
	cmd.Flags().BoolVar(&resimulate, "resimulate", false, "with --redraw: simulate the cells read again at their bounds with --requests and --seed, keeping their predictions")
	cmd.Flags().StringVar(&mixes, "mixes", "", "with --phases: map only these mixes (duplicates x replicas, e.g. 2x2,3x2) instead of every mix of up to --max-nodes")
	return cmd
}

// requestMapInputs are errormap's flags for requests of several accesses.
type requestMapInputs struct {
	phases, mixes string
	redraw        []string
	resimulate    bool
	batch         int
	service, net  string
	scope         model.RequestMapScope
	requests      int
	seed          uint64
}

func requestErrorMap(cmd *cobra.Command, out ending, in requestMapInputs) error {
	svc, err := model.ParseDistribution(in.service)
	if err != nil {
		return fmt.Errorf("--service: %w", err)
	}
	net, err := model.ParseDistribution(in.net)
	if err != nil {
		return fmt.Errorf("--net: %w", err)
	}
	phases, err := parsePhases(in.phases)
	if err != nil {
		return err
	}
	if in.mixes != "" {
		if in.scope.Mixes, err = model.ParseMixes(in.mixes); err != nil {
			return fmt.Errorf("--mixes %s: %w", in.mixes, err)
		}
	}
	sys := model.System{Service: svc, Net: net, Request: model.Request{Phases: phases, Batch: in.batch}}
	var cells []model.RequestErrorCell
	drawn := len(in.redraw) > 0 && !in.resimulate
	switch {
	case in.resimulate && len(in.redraw) == 0:
		return errors.New("--resimulate: give the cells to simulate again with --redraw")
	case len(in.redraw) > 0:
		if cells, err = readRequestCells(in.redraw, in.scope); err != nil {
			return err
		}
		if in.resimulate {
			progress := newProgressLine(cmd.ErrOrStderr(), "errormap")
			defer progress.close()
			if cells, err = model.ResimulateRequestCells(sys, cells, model.SimOptions{Requests: in.requests, Seed: in.seed, Progress: progress.report}); err != nil {
				return namedFlag(err, nil)
			}
			progress.close()
		}
	default:
		progress := newProgressLine(cmd.ErrOrStderr(), "errormap")
		defer progress.close()
		cells, err = model.RequestErrorMap(sys, in.scope, []float64{0.5, 0.9, 0.99}, model.SimOptions{Requests: in.requests, Seed: in.seed, Progress: progress.report})
		if err != nil {
			return namedFlag(err, nil)
		}
		progress.close()
	}
	return out.finish(cmd.OutOrStdout(), result{
		text: func(w io.Writer) error { return modelreport.WriteRequestErrorMap(w, sys, cells) },
		json: jsonOf(cells),
		html: pageOf(func() *report.Page { return modelreport.RequestErrorMapPage(sys, in.scope, in.requests, drawn, cells) }),
	})
}

// readRequestCells reads the cells errormap --phases --format json wrote
// in each file, merged (model.MergeRequestCells).
func readRequestCells(files []string, scope model.RequestMapScope) ([]model.RequestErrorCell, error) {
	var runs [][]model.RequestErrorCell
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("--redraw: %w", err)
		}
		var run []model.RequestErrorCell
		if err := json.Unmarshal(b, &run); err != nil {
			return nil, fmt.Errorf("--redraw %s: not the cells of gait model errormap --phases --format json: %w", f, err)
		}
		if len(run) == 0 {
			return nil, fmt.Errorf("--redraw %s: no cells", f)
		}
		runs = append(runs, run)
	}
	return model.MergeRequestCells(scope, runs...), nil
}

func newModelIndependenceCmd() *cobra.Command {
	var quantile float64
	var out ending
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
			if err := out.check(); err != nil {
				return err
			}
			a, err := latency.LoadOne(args[0], "", load)
			if err != nil {
				return err
			}
			b, err := latency.LoadOne(args[1], "", load)
			if err != nil {
				return err
			}
			ind, err := model.CheckIndependence(a, b, quantile)
			if err != nil {
				return namedFlag(err, nil)
			}
			return out.finish(cmd.OutOrStdout(), result{
				text: func(w io.Writer) error { return modelreport.WriteIndependence(w, ind) },
				json: jsonOf(ind),
				html: pageOf(func() *report.Page { return modelreport.IndependencePage(ind) }),
			})
		},
	}
	cmd.Flags().Float64Var(&quantile, "quantile", 0.9, "a request is slow above this quantile of its duplicate's latencies")
	cmd.Flags().StringVar(&load.LatencyColumn, "latency-column", "", "with two paths: the CSV latency column; with one CSV: two columns A,B")
	cmd.Flags().StringVar(&load.Unit, "unit", "", "unit of the latency values")
	out.flags(cmd.Flags(), "text or json", "write the Figure 5 scatter as an HTML report")
	return cmd
}

func newModelLimplockCmd() *cobra.Command {
	var nodes []int
	var blocks, requests, trials int
	var seed uint64
	var out ending
	cmd := &cobra.Command{
		Use:   "limplock [--nodes 10,20,50,100] [--blocks 3200] [--requests 10]",
		Short: "HDFS limplock probabilities (Limplock paper Table 2) against Monte Carlo",
		Long: `Evaluates the Limplock paper's Table 2 (P_rl, P_wl, P_nl, P_cl, p_bl, P_bl)
for each cluster size and checks each against a Monte Carlo simulation of
HDFS-style random 3-way placement with one slow node and one dead node.
docs/model.md lists the assumptions. --html draws Figure 3's four panels.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.check(); err != nil {
				return err
			}
			progress := newProgressLine(cmd.ErrOrStderr(), "limplock")
			defer progress.close()
			rows, err := limplock.Table(nodes, blocks, requests, trials, seed, progress.stage("Table 2"))
			if err != nil {
				return namedFlag(err, nil)
			}
			figure3 := func(w io.Writer) error {
				panels, err := limplock.Figure3(trials, seed, progress.stage("Figure 3"))
				if err != nil {
					return namedFlag(err, nil)
				}
				progress.close()
				_, err = modelreport.LimplockPage(panels).WriteTo(w)
				return err
			}
			err = out.finish(cmd.OutOrStdout(), result{
				text: func(w io.Writer) error {
					progress.close()
					return modelreport.WriteLimplock(w, blocks, requests, trials, rows)
				},
				json: func(w io.Writer) error { progress.close(); return jsonOf(rows)(w) },
				html: figure3,
			})
			return err
		},
	}
	cmd.Flags().IntSliceVar(&nodes, "nodes", []int{10, 20, 30, 50, 100}, "cluster sizes")
	cmd.Flags().IntVar(&blocks, "blocks", 3200, "blocks to regenerate (blocks per dead node)")
	cmd.Flags().IntVar(&requests, "requests", 10, "user requests (reads or writes)")
	cmd.Flags().IntVar(&trials, "trials", 2000, "Monte Carlo trials per point")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "random seed")
	out.flags(cmd.Flags(), "text or json", "write Figure 3's four panels as an HTML report")
	return cmd
}

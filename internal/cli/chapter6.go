package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gait-dev/gait/internal/chapter6"
	"github.com/gait-dev/gait/internal/interrupt"
	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/model"
	"github.com/spf13/cobra"
)

type chapter6Flags struct {
	mixes, preset, out string
	system             string
	cpus, serviceRate  float64
	loads, rates       []float64
	serviceTime, dur   time.Duration
	warmup             time.Duration
	seed               uint64
	report             bool
	pin                int
	target             string
	simRequests        int
	basis              string
	requests           int
	delays             []time.Duration
	delayShare         float64
	steps              int
}

func newModelChapter6Cmd() *cobra.Command {
	var f chapter6Flags
	cmd := &cobra.Command{
		Use:   "chapter6 --out DIR [--system gait-redis|gait-zookeeper] --mixes 1x4,2x2,4x1 --preset olio|gridlabd|single (--load U | --rate R) [--cpus C] [--pin N]",
		Short: "The thesis's chapter 6 on real servers: each mix as a gait-redis or gait-zookeeper deployment on hosts of a fixed CPU share, measured beside the model",
		Long: `Deploys each duplicates x replicas mix in turn as --system (gait-redis, or
gait-zookeeper: unmodified ZooKeeper servers behind gait's agents) on a
testbed of d*r hosts (root), each host limited to --cpus CPUs; the agents send every read
to d replicas, their own first, and answer with the first reply (--read any
--fanout d). On each it warms the servers up (single accesses for --warmup,
not recorded), measures the service time (single accesses at
--service-rate for --service-time: their latency, and the hosts' CPU time
per access beyond their idle use), then the preset's requests (olio: 30 then
20 parallel reads; gridlabd: 4 reads then 3 writes, batches of 8; single: one
access) at each --load (utilization of one server taking every access, as
gait model's --utilization, of the hosts' work per access) or --rate
(requests/s), Poisson arrivals, for --duration. With --delays instead
(Figure 2), --steps requests run back to back from one client, once per
delay, the delay added to --delay-share percent of the accesses. Every point
is appended to DIR/points.jsonl, which holds the points of one system.

--report reads DIR/points.jsonl instead of running, and prints every point
beside the model: the request simulator and predictor run from the service
run of the study's mix of one duplicate (--service-basis work: the hosts'
work per access queued, the rest of the access latency as network delay;
run: the same with the work per access of the point's own run; latency:
the whole access queued), and the hosts' CPU per request beside the
measured median. It writes DIR/report.html
(docs/requests.md).`,
		Example: `  # long: three deployments of gait-redis, a minute each (root)
  gait model chapter6 --out runs/fig14 --mixes 1x4,2x2,4x1 --preset olio --load 0.08 --duration 60s
  gait model chapter6 --out runs/fig14 --report
  # long: the same on ZooKeeper's servers, three deployments, a few minutes each (root)
  gait model chapter6 --out runs/fig14-zk --system gait-zookeeper --mixes 1x4,2x2,4x1 --preset olio --load 0.08 --duration 60s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runChapter6(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.out, "out", "", "directory of the points (required)")
	fl.BoolVar(&f.report, "report", false, "print the points in --out beside the model and write report.html; run nothing")
	fl.StringVar(&f.system, "system", "gait-redis", "the servers deployed: gait-redis or gait-zookeeper")
	fl.StringVar(&f.mixes, "mixes", "1x4,2x2,4x1", "duplicates x replicas mixes, each a deployment")
	fl.StringVar(&f.preset, "preset", "olio", "requests: olio, gridlabd or single")
	fl.Float64SliceVar(&f.loads, "load", nil, "utilizations of one server taking every access")
	fl.Float64SliceVar(&f.rates, "rate", nil, "requests per second (instead of --load)")
	fl.Float64Var(&f.cpus, "cpus", 0.4, "each host's CPU share")
	fl.IntVar(&f.pin, "pin", 0, "pin host i's processes to CPU i mod N (2: two hosts on a core each; 1: all on one core; 0: not pinned)")
	fl.Float64Var(&f.serviceRate, "service-rate", 200, "single accesses per second of the service-time run")
	fl.DurationVar(&f.serviceTime, "service-time", 10*time.Second, "length of the service-time run (0: none)")
	fl.DurationVar(&f.warmup, "warmup", 5*time.Second, "single accesses at --service-rate for this long, not recorded, before each deployment's first measured run (0: none)")
	fl.DurationVar(&f.dur, "duration", time.Minute, "length of each measured run, at most")
	fl.IntVar(&f.requests, "requests", 0, "requests of each measured run, at most (0: as many as --duration brings)")
	fl.DurationSliceVar(&f.delays, "delays", nil, "instead of --load/--rate, Figure 2: --steps requests back to back from one client, once per delay, the delay added to --delay-share of the accesses")
	fl.Float64Var(&f.delayShare, "delay-share", 2, "with --delays: percent of the accesses delayed")
	fl.IntVar(&f.steps, "steps", 500, "with --delays: requests (a simulation's steps) per run")
	fl.Uint64Var(&f.seed, "seed", 1, "random seed of arrivals and keys")
	fl.StringVar(&f.target, "target", "99%@10ms", "with --report: the SLA single accesses must meet (Figure 16)")
	fl.IntVar(&f.simRequests, "sim-requests", 100000, "with --report: requests the simulator runs per point")
	fl.StringVar(&f.basis, "service-basis", "work", "with --report: the model's service time: work (the hosts' CPU per access in the service run; the rest of the access latency is network), run (the same with the hosts' CPU per access of the point's own run) or latency (the whole access latency)")
	return cmd
}

func runChapter6(cmd *cobra.Command, f chapter6Flags) error {
	if f.out == "" {
		return errors.New("--out: required")
	}
	points := filepath.Join(f.out, "points.jsonl")
	if f.report {
		return chapter6Report(cmd, f, points)
	}
	sys, err := chapter6.LookupSystem(f.system)
	if err != nil {
		return fmt.Errorf("--system: %w", err)
	}
	mixes, err := chapter6.ParseMixes(f.mixes)
	if err != nil {
		return fmt.Errorf("--mixes: %w", err)
	}
	var shape load.Shape
	if f.preset != "single" {
		p, err := load.FindPreset(f.preset)
		if err != nil {
			return fmt.Errorf("--preset: %w", err)
		}
		if shape, err = p.Shape(sys.Ops, sys.Write); err != nil {
			return err
		}
	}
	gait, err := os.Executable()
	if err != nil {
		return err
	}
	st := chapter6.Study{Gait: gait, System: sys, CPUs: f.cpus, PinCPUs: f.pin, Mixes: mixes, Shape: shape, Loads: f.loads, Rates: f.rates,
		Delays: f.delays, DelayShare: f.delayShare / 100, Steps: f.steps,
		ServiceRate: f.serviceRate, ServiceTime: f.serviceTime, Warmup: f.warmup, Duration: f.dur, Requests: f.requests, Seed: f.seed, Log: cmd.ErrOrStderr(),
		Measured: func(p chapter6.Point) error { return chapter6.Append(points, p) }}
	if err := st.Check(); err != nil {
		return err
	}
	if err := chapter6.CheckAppend(points, sys.Name); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	sig := interrupt.Catch(cmd.Context(), cmd.ErrOrStderr(), interrupt.Messages{})
	defer sig.Stop()
	return st.Run(sig.Context())
}

func chapter6Report(cmd *cobra.Command, f chapter6Flags, points string) error {
	target, err := model.ParseTarget(f.target)
	if err != nil {
		return fmt.Errorf("--target: %w", err)
	}
	ps, err := chapter6.ReadPoints(points)
	if err != nil {
		return err
	}
	basis, err := chapter6.ParseBasis(f.basis)
	if err != nil {
		return err
	}
	rows, err := chapter6.Rows(ps, f.simRequests, basis)
	if err != nil {
		return err
	}
	caps, err := chapter6.Capacities(rows, target)
	if err != nil {
		return err
	}
	if err := chapter6.WriteText(cmd.OutOrStdout(), rows); err != nil {
		return err
	}
	for _, c := range caps {
		fmt.Fprintf(cmd.OutOrStdout(), "%s on %d nodes: highest rate with %s measured %.0f/s, planned %.0f/s\n",
			chapter6.MixName(c.Mix), c.Mix.Nodes(), target, c.Measured, c.Planned)
	}
	slow := chapter6.Slowdowns(ps)
	for _, d := range slow {
		fmt.Fprintf(cmd.OutOrStdout(), "%s: %d steps with %s on %.3g%% of accesses: %.2f s, %s ms per step more than without, expected %s ms from the mean, %s ms from the fan-out\n",
			chapter6.MixName(d.Mix), d.Steps, model.FormatDuration(d.Delay), 100*d.Share, d.Elapsed, strconv.FormatFloat(d.Extra*1e3, 'f', 2, 64),
			strconv.FormatFloat(d.ExpectedMean*1e3, 'f', 2, 64), strconv.FormatFloat(d.ExpectedFanOut*1e3, 'f', 2, 64))
	}
	system := "no system"
	if len(ps) > 0 {
		system = ps[0].System
	}
	return chapter6.Page("gait: the thesis's chapter 6 on "+system+" ("+f.out+")", system, rows, caps, target, slow).WriteFile(filepath.Join(f.out, "report.html"))
}

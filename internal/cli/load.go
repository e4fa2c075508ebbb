package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/procstat"
	"github.com/gait-dev/gait/internal/rundir"
	"github.com/gait-dev/gait/internal/systems"
	_ "github.com/gait-dev/gait/internal/systems/all" // the systems --system may name
	"github.com/spf13/cobra"
)

type loadFlags struct {
	system, addr, name, out       string
	clients, keys, requests       int
	rate, mix, keyDist, valueSize string
	poisson, noPreload            bool
	maxInFlight, calibrateClients int
	waitReplicas                  int
	duration, timeout, calibrate  time.Duration
	waitTimeout                   time.Duration
	seed                          uint64
	factors, pids                 []string
	// What one arrival is (load.Shape).
	phases, arrivals, delay, preset string
	batch                           int
}

func newLoadCmd() *cobra.Command {
	var f loadFlags
	cmd := &cobra.Command{
		Use:   "load --addr HOST:PORT --out RUNDIR [flags]",
		Short: "Drive a workload against a running server and record a run directory",
		Long: `Drive a workload against a server that is already running and record every
request in a run directory (docs/run-directory.md), then print a one-line summary.

Closed loop (the default): --clients N clients each issue their next request as
soon as the previous one returns. Open loop: --rate R issues requests on a fixed
schedule (or a Poisson one with --poisson) whatever the server does, and measures
each latency from the request's intended start, so a stall of the server shows in
the latency of every request that waited for it. R is either requests per second
(2000/s) or a share of the maximum throughput (50%), measured first by a short
closed-loop calibration run.

Every key is written once before the run (unless --no-preload), so reads hit.
--pid samples a process's CPU, memory, threads, context switches and page faults
from /proc once a second into the run's time series. See docs/load.md.`,
		Example: `  # needs: a Redis server at 127.0.0.1:6379 (docs/load.md starts one)
  gait load --addr 127.0.0.1:6379 --clients 8 --mix get:50,set:50 --value-size 1KiB \
      --duration 10s --out runs/redis-c8 --factor clients=8 --factor value_size=1KiB
  # needs: a Redis server at 127.0.0.1:6379
  gait load --addr 127.0.0.1:6379 --rate 50% --poisson --requests 100000 --out runs/redis-half`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runLoad(ctx, cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.system, "system", "redis", "system the server runs ("+strings.Join(dialableSystems(), ", ")+")")
	fl.StringVar(&f.addr, "addr", "", "server address HOST:PORT (required)")
	// Flags left at 0 take load.Spec's defaults, the same as a scenario's.
	fl.IntVar(&f.clients, "clients", 0, fmt.Sprintf("closed loop: concurrent clients (default %d)", load.DefaultClients))
	fl.StringVar(&f.rate, "rate", "", "open loop: arrival rate, 2000/s or a share of the maximum throughput like 50%")
	fl.BoolVar(&f.poisson, "poisson", false, "open loop: Poisson arrivals instead of evenly spaced ones")
	fl.IntVar(&f.maxInFlight, "max-in-flight", 0, fmt.Sprintf("open loop: most requests outstanding at once, one connection each (default %d)", load.DefaultMaxInFlight))
	fl.StringVar(&f.mix, "mix", "get:50,set:50", "operation mix, OP:WEIGHT,...")
	fl.IntVar(&f.keys, "keys", 0, fmt.Sprintf("number of keys (default %d)", load.DefaultKeys))
	fl.StringVar(&f.keyDist, "key-dist", "uniform", "key popularity: uniform, zipf or zipf:S (S > 1)")
	fl.StringVar(&f.valueSize, "value-size", load.FormatSize(load.DefaultValueSize), "bytes per written value: 64B, 1KiB, 16KiB, ... (at most "+load.FormatSize(load.MaxValueSize)+")")
	durationVar(fl, &f.duration, "duration", 0, fmt.Sprintf("run length (default %v unless --requests is given)", load.DefaultDuration))
	fl.IntVar(&f.requests, "requests", 0, "stop after this many requests")
	durationVar(fl, &f.timeout, "timeout", 0, fmt.Sprintf("per-request timeout (default %v)", load.DefaultTimeout))
	durationVar(fl, &f.calibrate, "calibrate", 0, fmt.Sprintf("length of the calibration run for a rate given in %% (default %v)", load.DefaultCalibrate))
	fl.IntVar(&f.calibrateClients, "calibrate-clients", 0, fmt.Sprintf("clients of the calibration run (default %d)", load.DefaultCalibrateClients))
	fl.IntVar(&f.waitReplicas, "wait-replicas", 0, "after every write, wait until this many replicas have it (Redis's WAIT); fewer in time is an error")
	durationVar(fl, &f.waitTimeout, "wait-timeout", 0, "longest a write waits for --wait-replicas (default: the request's own timeout)")
	fl.BoolVar(&f.noPreload, "no-preload", false, "do not write every key before the run")
	fl.Uint64Var(&f.seed, "seed", load.DefaultSeed, "random seed of the ops, keys, values and arrivals")
	fl.StringArrayVar(&f.factors, "factor", nil, "configuration factor NAME=VALUE stored with the run (repeatable)")
	fl.StringArrayVar(&f.pids, "pid", nil, "sample process [LABEL=]PID from /proc once a second (repeatable)")
	fl.StringVar(&f.name, "name", "", "run name (default load-SYSTEM)")
	fl.StringVar(&f.out, "out", "", "run directory to create (required; must not exist)")
	fl.StringVar(&f.phases, "phases", "", "a request is phases of parallel accesses with a barrier between them: 30,20 (ops from --mix) or 4:get,3:set; --rate and --requests then count requests")
	fl.IntVar(&f.batch, "batch", 0, "open loop: requests arriving together at each instant")
	fl.StringVar(&f.arrivals, "arrivals", "", "open loop: replay arrival instants from FILE (seconds from the start, one a line) instead of the rate's schedule")
	fl.StringVar(&f.delay, "delay", "", "add a delay to a share of accesses, SHARE%:DURATION like 2%:10ms (the Zoolander thesis's Figure 2)")
	fl.StringVar(&f.preset, "preset", "", "a workload of the Zoolander thesis: olio (phases 30,20, Poisson) or gridlabd (phases 4 reads, 3 writes, batches of 8, Poisson); flags given override it")
	return cmd
}

// dialableSystems are the systems gait load can drive at an address.
func dialableSystems() []string {
	var names []string
	for _, n := range systems.Names() {
		if sys, _ := systems.Lookup(n); sys.Dial != nil {
			names = append(names, n)
		}
	}
	return names
}

// loadPlan is the resolved, validated command line.
type loadPlan struct {
	sys     systems.System
	spec    load.Spec
	factors map[string]string
	targets []procstat.Target
}

func resolveLoad(cmd *cobra.Command, f loadFlags) (loadPlan, error) {
	var p loadPlan
	var err error
	if p.sys, err = systems.Lookup(f.system); err != nil {
		return p, fmt.Errorf("--system: %w", err)
	}
	if p.sys.Dial == nil {
		return p, fmt.Errorf("--system %q: gait load drives a running server of %s only; %s runs under gait run",
			f.system, strings.Join(dialableSystems(), ", "), f.system)
	}
	if f.addr == "" {
		return p, errors.New("--addr is required: the address of a running server, like 127.0.0.1:6379")
	}
	if f.out == "" {
		return p, errors.New("--out is required: the run directory to create")
	}
	if _, err := os.Stat(f.out); err == nil {
		return p, fmt.Errorf("--out %s: already exists", f.out)
	}
	if p.spec, err = loadSpec(cmd, f, p.sys.Ops, p.sys.Write); err != nil {
		return p, err
	}
	if p.factors, err = parseFactors(f.factors); err != nil {
		return p, err
	}
	p.targets, err = parsePIDs(f.pids)
	return p, err
}

// loadSpec reads the workload flags into load's one spec and resolves it
// there, naming a wrong field by its flag.
func loadSpec(cmd *cobra.Command, f loadFlags, ops []string, write string) (load.Spec, error) {
	s := load.NewSpec()
	var err error
	if s.Mix, err = load.ParseMix(f.mix, ops); err != nil {
		return s, fmt.Errorf("--mix: %w", err)
	}
	if s.KeyDist, err = load.ParseKeyDist(f.keyDist); err != nil {
		return s, fmt.Errorf("--key-dist: %w", err)
	}
	size, err := load.ParseSize(f.valueSize)
	if err != nil {
		return s, fmt.Errorf("--value-size: %w", err)
	}
	if f.rate != "" {
		if s.Rate, err = load.ParseRate(f.rate); err != nil {
			return s, fmt.Errorf("--rate: %w", err)
		}
	}
	s.ValueSize, s.Keys, s.Clients, s.Poisson, s.MaxInFlight = int(size), f.keys, f.clients, f.poisson, f.maxInFlight
	s.Calibrate, s.CalibrateClients, s.Preload, s.Seed = f.calibrate, f.calibrateClients, !f.noPreload, f.seed
	s.Duration, s.Requests, s.Timeout = f.duration, f.requests, f.timeout
	s.Wait = load.Wait{Replicas: f.waitReplicas, Timeout: f.waitTimeout}
	if s.Shape, err = loadShape(cmd, f, ops, write); err != nil {
		return s, err
	}
	if f.preset != "" && !cmd.Flags().Changed("poisson") && s.OpenLoop() {
		s.Poisson = true
	}
	// A flag left at 0 takes its default, so 0 given on purpose is refused.
	for _, v := range []struct {
		flag  string
		value int64
	}{{"keys", int64(f.keys)}, {"clients", int64(f.clients)}, {"max-in-flight", int64(f.maxInFlight)},
		{"calibrate-clients", int64(f.calibrateClients)}, {"requests", int64(f.requests)}, {"duration", int64(f.duration)},
		{"timeout", int64(f.timeout)}, {"calibrate", int64(f.calibrate)}, {"wait-replicas", int64(f.waitReplicas)}, {"batch", int64(f.batch)}} {
		if v.value < 0 || (v.value == 0 && cmd.Flags().Changed(v.flag)) {
			return s, fmt.Errorf("--%s %s: want a positive value", v.flag, cmd.Flags().Lookup(v.flag).Value)
		}
	}
	if s, err = s.Resolve(); err != nil {
		var se *load.SpecError
		if errors.As(err, &se) {
			return s, fmt.Errorf("--%s: %s", strings.NewReplacer("_", "-", ".", "-").Replace(se.Field), se.Msg)
		}
	}
	return s, err
}

// loadShape reads what one arrival is: a preset, then the flags given.
func loadShape(cmd *cobra.Command, f loadFlags, ops []string, write string) (load.Shape, error) {
	var sh load.Shape
	var err error
	if f.preset != "" {
		p, err := load.FindPreset(f.preset)
		if err != nil {
			return sh, fmt.Errorf("--preset: %w", err)
		}
		if sh, err = p.Shape(ops, write); err != nil {
			return sh, fmt.Errorf("--preset: %w", err)
		}
	}
	if cmd.Flags().Changed("phases") {
		if sh.Phases, err = load.ParsePhases(f.phases, ops); err != nil {
			return sh, fmt.Errorf("--phases: %w", err)
		}
	}
	if cmd.Flags().Changed("batch") {
		sh.Batch = f.batch
	}
	if f.arrivals != "" {
		if sh.Trace, err = load.ReadTrace(f.arrivals); err != nil {
			return sh, fmt.Errorf("--arrivals: %w", err)
		}
	}
	if cmd.Flags().Changed("delay") {
		if sh.Delay, err = load.ParseDelay(f.delay); err != nil {
			return sh, fmt.Errorf("--delay: %w", err)
		}
	}
	return sh, nil
}

// parseFactors reads NAME=VALUE pairs. Names and values end up as CSV cells
// and column names, so they may not hold commas, quotes or line breaks.
func parseFactors(args []string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range args {
		name, value, ok := strings.Cut(a, "=")
		if !ok || name == "" || value == "" || strings.ContainsAny(a, ",\"\n\r") {
			return nil, fmt.Errorf("--factor %q: want NAME=VALUE without commas, quotes or line breaks, like clients=8", a)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--factor %q: %s given twice", a, name)
		}
		out[name] = value
	}
	return out, nil
}

// parsePIDs reads [LABEL=]PID and checks each process can be read.
func parsePIDs(args []string) ([]procstat.Target, error) {
	var out []procstat.Target
	for _, a := range args {
		label, num, ok := strings.Cut(a, "=")
		if !ok {
			label, num = "pid"+a, a
		}
		pid, err := strconv.Atoi(num)
		if err != nil || pid <= 0 || label == "" {
			return nil, fmt.Errorf("--pid %q: want [LABEL=]PID, like redis=1234", a)
		}
		if _, err := procstat.Read(pid); err != nil {
			return nil, fmt.Errorf("--pid %q: cannot read process %d: %w", a, pid, err)
		}
		out = append(out, procstat.Target{Label: label, PID: pid})
	}
	return out, nil
}

func runLoad(ctx context.Context, cmd *cobra.Command, f loadFlags) error {
	p, err := resolveLoad(cmd, f)
	if err != nil {
		return err
	}
	status := newStatusLine(cmd.ErrOrStderr())
	fmt.Fprintf(status, "gait load: %s at %s, mix %s, %d keys (%s), %s values\n",
		f.system, f.addr, p.spec.Mix, p.spec.Keys, p.spec.KeyDist, load.FormatSize(int64(p.spec.ValueSize)))
	name := f.name
	if name == "" {
		name = "load-" + f.system
	}
	m := load.Measurement{Spec: p.spec, Dial: p.sys.Dial(f.addr), Ops: p.sys.Ops, Write: p.sys.Write, Dir: f.out,
		Run: rundir.Config{Name: name, System: f.system, Factor: 1, Hosts: []rundir.Host{{Name: f.system, Address: f.addr}},
			Factors: p.factors},
		Log:              func(format string, args ...any) { fmt.Fprintf(status, format+"\n", args...) },
		Progress:         loadProgress(status),
		AllFailedIsError: true,
	}
	if len(p.targets) > 0 {
		m.Probes = []load.Probe{procstat.NewSampler(p.targets...).Sample}
	}
	out, err := load.Measure(ctx, m)
	if err != nil && ctx.Err() != nil {
		// Ctrl-C or SIGTERM, not a failure of the server: say that.
		return fmt.Errorf("load %s: interrupted (nothing written)", f.out)
	}
	if err != nil {
		return fmt.Errorf("load %s: %w (nothing written)", f.out, err)
	}
	return printLoadSummary(cmd.OutOrStdout(), f.out, out)
}

// loadProgress shows the run's elapsed time, ETA, and requests done and failed.
func loadProgress(status *statusLine) func(load.Progress) {
	return func(p load.Progress) {
		if p.Final {
			status.clear()
			return
		}
		eta := "?"
		if p.ETA >= 0 {
			eta = p.ETA.Round(time.Second).String()
		}
		status.show(fmt.Sprintf("%v elapsed, ETA %s, %d requests done, %d errors", p.Elapsed.Round(time.Second), eta, p.Done, p.Failed))
	}
}

func printLoadSummary(w io.Writer, dir string, m load.Measured) error {
	s := m.Summary
	ms := func(sec float64) string { return strconv.FormatFloat(sec*1e3, 'f', 3, 64) + "ms" }
	what := "requests"
	if m.Requests != nil {
		what = "accesses"
	}
	line := fmt.Sprintf("%s: %d %s in %.2fs (%.0f/s), mean %s p50 %s p99 %s max %s, %d errors, %d timeouts",
		dir, s.Requests, what, s.Duration, s.Throughput, ms(s.Mean), ms(s.P50), ms(s.P99), ms(s.Max), s.Errors, s.Timeouts)
	if q := m.Requests; q != nil {
		line += fmt.Sprintf("\n%s: %d requests (intended start to the end of the last phase), mean %s p50 %s p99 %s max %s, %d failed",
			filepath.Join(dir, load.RequestsDir), q.Requests, ms(q.Mean), ms(q.P50), ms(q.P99), ms(q.Max), q.Errors+q.Timeouts)
	}
	if m.Result.FirstError != nil {
		line += fmt.Sprintf(" (first: %v)", m.Result.FirstError)
	}
	if g := s.Generator; g != nil {
		if warn := g.Warning(); warn != "" {
			advice := "lower --rate"
			if g.HeldBack > 0 {
				advice = "raise --max-in-flight or lower --rate"
			}
			line += "\nwarning: " + warn + ": " + advice
		} else {
			line += "\n" + g.Kept()
		}
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/procstat"
	"github.com/gait-dev/gait/internal/rundir"
	"github.com/gait-dev/gait/internal/systems/redis"
	"github.com/spf13/cobra"
)

// loadSystem is what gait load needs of a system.
type loadSystem struct {
	ops     []string
	preload int // operation that writes a key, -1 if none
	dialer  func(addr string) load.Dialer
}

var loadSystems = map[string]loadSystem{
	"redis": {ops: redis.Ops, preload: int(redis.OpSet), dialer: redis.Dialer},
}

type loadFlags struct {
	system, addr, name, out       string
	clients, keys, requests       int
	rate, mix, keyDist, valueSize string
	poisson, noPreload            bool
	maxInFlight, calibrateClients int
	duration, timeout, calibrate  time.Duration
	seed                          uint64
	factors, pids                 []string
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
		Example: `  gait load --addr 127.0.0.1:6379 --clients 8 --mix get:50,set:50 --value-size 1KiB \
      --duration 10s --out runs/redis-c8 --factor clients=8 --factor value_size=1KiB
  gait load --addr 127.0.0.1:6379 --rate 50% --poisson --requests 100000 --out runs/redis-half`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runLoad(ctx, cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.system, "system", "redis", "system the server runs (redis)")
	fl.StringVar(&f.addr, "addr", "", "server address HOST:PORT (required)")
	fl.IntVar(&f.clients, "clients", 8, "closed loop: concurrent clients")
	fl.StringVar(&f.rate, "rate", "", "open loop: arrival rate, 2000/s or a share of the maximum throughput like 50%")
	fl.BoolVar(&f.poisson, "poisson", false, "open loop: Poisson arrivals instead of evenly spaced ones")
	fl.IntVar(&f.maxInFlight, "max-in-flight", load.DefaultMaxInFlight, "open loop: most requests outstanding at once (one connection each)")
	fl.StringVar(&f.mix, "mix", "get:50,set:50", "operation mix, OP:WEIGHT,...")
	fl.IntVar(&f.keys, "keys", 1000, "number of keys")
	fl.StringVar(&f.keyDist, "key-dist", "uniform", "key popularity: uniform, zipf or zipf:S (S > 1)")
	fl.StringVar(&f.valueSize, "value-size", "1KiB", "bytes per written value: 64B, 1KiB, 16KiB, ...")
	fl.DurationVar(&f.duration, "duration", 0, "run length (default 10s unless --requests is given)")
	fl.IntVar(&f.requests, "requests", 0, "stop after this many requests")
	fl.DurationVar(&f.timeout, "timeout", 0, "per-request timeout; 0 waits as long as it takes")
	fl.DurationVar(&f.calibrate, "calibrate", 3*time.Second, "length of the calibration run for a rate given in %")
	fl.IntVar(&f.calibrateClients, "calibrate-clients", 16, "clients of the calibration run")
	fl.BoolVar(&f.noPreload, "no-preload", false, "do not write every key before the run")
	fl.Uint64Var(&f.seed, "seed", 1, "random seed of the ops, keys, values and arrivals")
	fl.StringArrayVar(&f.factors, "factor", nil, "configuration factor NAME=VALUE stored with the run (repeatable)")
	fl.StringArrayVar(&f.pids, "pid", nil, "sample process [LABEL=]PID from /proc once a second (repeatable)")
	fl.StringVar(&f.name, "name", "", "run name (default load-SYSTEM)")
	fl.StringVar(&f.out, "out", "", "run directory to create (required; must not exist)")
	return cmd
}

// loadPlan is the resolved, validated command line.
type loadPlan struct {
	sys     loadSystem
	cfg     load.Config
	rate    load.Rate
	factors map[string]string
	targets []procstat.Target
}

func resolveLoad(cmd *cobra.Command, f loadFlags) (loadPlan, error) {
	var p loadPlan
	var ok bool
	if p.sys, ok = loadSystems[f.system]; !ok {
		return p, fmt.Errorf("--system %q: unknown system (known: redis)", f.system)
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
	var err error
	if p.cfg.Workload, err = resolveWorkload(f, p.sys.ops); err != nil {
		return p, err
	}
	if err := resolveLoop(cmd, f, &p); err != nil {
		return p, err
	}
	if p.factors, err = parseFactors(f.factors); err != nil {
		return p, err
	}
	p.targets, err = parsePIDs(f.pids)
	return p, err
}

func resolveWorkload(f loadFlags, ops []string) (load.Workload, error) {
	var wl load.Workload
	var err error
	if wl.Mix, err = load.ParseMix(f.mix, ops); err != nil {
		return wl, fmt.Errorf("--mix: %w", err)
	}
	if f.keys <= 0 {
		return wl, fmt.Errorf("--keys %d: want a positive number of keys", f.keys)
	}
	wl.Keys = f.keys
	if wl.KeyDist, err = load.ParseKeyDist(f.keyDist); err != nil {
		return wl, fmt.Errorf("--key-dist: %w", err)
	}
	size, err := load.ParseSize(f.valueSize)
	if err != nil {
		return wl, fmt.Errorf("--value-size: %w", err)
	}
	if size > 512<<20 {
		return wl, fmt.Errorf("--value-size %s: at most 512MiB", f.valueSize)
	}
	wl.ValueSize = int(size)
	return wl, nil
}

func resolveLoop(cmd *cobra.Command, f loadFlags, p *loadPlan) error {
	c := &p.cfg
	if f.rate != "" {
		if cmd.Flags().Changed("clients") {
			return errors.New("--clients and --rate exclude each other: --clients runs a closed loop, --rate an open one")
		}
		var err error
		if p.rate, err = load.ParseRate(f.rate); err != nil {
			return fmt.Errorf("--rate: %w", err)
		}
		if f.maxInFlight <= 0 {
			return fmt.Errorf("--max-in-flight %d: want a positive number", f.maxInFlight)
		}
		if f.calibrateClients <= 0 || f.calibrate <= 0 {
			return errors.New("--calibrate and --calibrate-clients must be positive")
		}
		c.Rate, c.Poisson, c.MaxInFlight = p.rate.PerSecond, f.poisson, f.maxInFlight
	} else {
		if f.poisson {
			return errors.New("--poisson needs --rate (it shapes open-loop arrivals)")
		}
		if f.clients <= 0 {
			return fmt.Errorf("--clients %d: want a positive number of clients", f.clients)
		}
		c.Clients = f.clients
	}
	if f.duration < 0 || f.requests < 0 || f.timeout < 0 {
		return errors.New("--duration, --requests and --timeout must not be negative")
	}
	c.Duration, c.Requests, c.Timeout, c.Seed = f.duration, f.requests, f.timeout, f.seed
	if c.Duration == 0 && c.Requests == 0 {
		c.Duration = 10 * time.Second
	}
	return nil
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
	stderr := cmd.ErrOrStderr()
	dial := p.sys.dialer(f.addr)
	wl := p.cfg.Workload
	fmt.Fprintf(stderr, "gait load: %s at %s, mix %s, %d keys (%s), %s values\n",
		f.system, f.addr, wl.Mix, wl.Keys, wl.KeyDist, load.FormatSize(int64(wl.ValueSize)))
	if !f.noPreload && p.sys.preload >= 0 {
		fmt.Fprintf(stderr, "preloading %d keys\n", wl.Keys)
		if err := load.Preload(ctx, wl, uint8(p.sys.preload), dial, 16); err != nil {
			return err
		}
	}
	var maxThroughput float64
	if p.rate.Share > 0 {
		fmt.Fprintf(stderr, "calibrating: %v closed loop with %d clients\n", f.calibrate, f.calibrateClients)
		if maxThroughput, err = load.Calibrate(ctx, wl, dial, f.calibrateClients, f.calibrate, f.seed); err != nil {
			return err
		}
		p.cfg.Rate = p.rate.Share * maxThroughput
		fmt.Fprintf(stderr, "maximum throughput %.0f/s, so %s is %.0f/s\n", maxThroughput, p.rate, p.cfg.Rate)
	}
	if len(p.targets) > 0 {
		p.cfg.Probes = []load.Probe{procstat.NewSampler(p.targets...).Sample}
	}
	fmt.Fprintf(stderr, "running %s, %s\n", p.cfg.Mode(), planned(p.cfg))
	p.cfg.Progress = progressPrinter(stderr, p.cfg)

	name := f.name
	if name == "" {
		name = "load-" + f.system
	}
	w, err := rundir.Create(f.out, rundir.Config{Name: name, System: f.system, Factor: 1, Ops: p.sys.ops,
		Hosts: []rundir.Host{{Name: f.system, Address: f.addr}}, Factors: p.factors,
		Workload: workloadRecord(p, maxThroughput)})
	if err != nil {
		return err
	}
	res, err := load.Run(ctx, p.cfg, dial, w)
	if err == nil && res.Requests > 0 && res.Errors+res.Timeouts == res.Requests {
		err = fmt.Errorf("every one of %d requests failed, first: %w", res.Requests, res.FirstError)
	}
	if err != nil {
		w.Abort()
		return fmt.Errorf("load %s: %w (nothing written)", f.out, err)
	}
	extra := map[string]any{}
	if res.FirstError != nil {
		extra["first_error"] = res.FirstError.Error()
	}
	if err := w.Close(extra); err != nil {
		return err
	}
	return printLoadSummary(cmd.OutOrStdout(), f.out, res)
}

func planned(c load.Config) string {
	switch {
	case c.Duration > 0 && c.Requests > 0:
		return fmt.Sprintf("%d requests or %v", c.Requests, c.Duration)
	case c.Requests > 0:
		return fmt.Sprintf("%d requests", c.Requests)
	}
	return c.Duration.String()
}

// workloadRecord is the resolved workload as stored in run.json.
func workloadRecord(p loadPlan, maxThroughput float64) map[string]any {
	c := p.cfg
	w := map[string]any{"mix": c.Workload.Mix.String(), "keys": c.Workload.Keys,
		"key_dist": c.Workload.KeyDist.String(), "value_size": c.Workload.ValueSize, "seed": c.Seed}
	if c.Rate > 0 {
		w["loop"], w["rate"], w["poisson"], w["max_in_flight"] = "open", c.Rate, c.Poisson, c.MaxInFlight
	} else {
		w["loop"], w["clients"] = "closed", c.Clients
	}
	if p.rate.Share > 0 {
		w["rate_share"], w["max_throughput"] = p.rate.Share, maxThroughput
	}
	if c.Duration > 0 {
		w["duration"] = c.Duration.Seconds()
	}
	if c.Requests > 0 {
		w["requests"] = c.Requests
	}
	if c.Timeout > 0 {
		w["timeout"] = c.Timeout.Seconds()
	}
	return w
}

// progressPrinter rewrites one line on a terminal and prints a line a
// second elsewhere (a log keeps every line).
func progressPrinter(w io.Writer, c load.Config) func(load.Progress) {
	end := "\n"
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			end = "\r"
		}
	}
	return func(p load.Progress) {
		if p.Final {
			if end == "\r" {
				fmt.Fprint(w, "\033[K") // clear the progress line
			}
			return
		}
		eta := "?"
		if p.ETA >= 0 {
			eta = p.ETA.Round(time.Second).String()
		}
		fmt.Fprintf(w, "  %v elapsed, ETA %s, %d requests done%s", p.Elapsed.Round(time.Second), eta, p.Done, end)
	}
}

func printLoadSummary(w io.Writer, dir string, res load.Result) error {
	run, err := rundir.Open(dir)
	if err != nil {
		return err
	}
	s, err := run.Summary()
	if err != nil {
		return err
	}
	ms := func(sec float64) string { return strconv.FormatFloat(sec*1e3, 'f', 3, 64) + "ms" }
	line := fmt.Sprintf("%s: %d requests in %.2fs (%.0f/s), mean %s p50 %s p99 %s max %s, %d errors, %d timeouts",
		dir, s.Requests, s.Duration, s.Throughput, ms(s.Mean), ms(s.P50), ms(s.P99), ms(s.Max), s.Errors, s.Timeouts)
	if res.FirstError != nil {
		line += fmt.Sprintf(" (first: %v)", res.FirstError)
	}
	_, err = fmt.Fprintln(w, line)
	return err
}

package load

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gait-dev/gait/internal/rundir"
)

// Measurement is one measured run of a workload against a system: what gait
// run does for every run of a scenario and gait load does once.
type Measurement struct {
	Spec Spec // resolved
	Dial Dialer
	// PreloadDial, if set, dials the members the keys are preloaded
	// through: the clients' members may refuse writes (a Redis replica).
	// Nil preloads through Dial.
	PreloadDial Dialer
	Ops         []string // the system's operations, in Op kind order
	Write       string   // the operation that writes a key, for preloading
	Dir         string   // the run directory to create
	// Run describes the run in run.json; Measure adds the workload.
	Run rundir.Config
	// Record holds more of the workload for run.json (where the clients
	// connect, the links' bandwidth, ...).
	Record map[string]any
	// MaxThroughput is the maximum an earlier calibration of the same
	// workload found; 0 calibrates now if the rate is a share of it.
	MaxThroughput float64
	Probes        []Probe
	Progress      func(Progress)
	Log           func(format string, args ...any) // phase lines; nil discards them
	// Around, if set, is called just before the first request (a fault
	// schedule starts there); the function it returns is called right after
	// the last one, and what that returns is kept in run.json.
	Around func(ctx context.Context) (after func() map[string]any, err error)
	// AllFailedIsError fails the measurement when every request failed,
	// for a server the user pointed gait at (a wrong address or port shows
	// as an error, not as a run). Under limpware that is a result.
	AllFailedIsError bool
}

// Measured is what a measurement found.
type Measured struct {
	Summary rundir.Summary // of the samples: the accesses, for requests of several
	// Requests summarises the requests of several accesses, nil otherwise.
	Requests      *rundir.Summary
	Result        Result
	MaxThroughput float64 // the calibrated maximum, 0 without calibration
}

// Measure preloads the keys, calibrates an open loop given as a share,
// drives the workload and records it in m.Dir. On an error, or when ctx
// ends, the run directory is not left behind.
func Measure(ctx context.Context, m Measurement) (Measured, error) {
	logf := m.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	s := m.Spec
	out := Measured{MaxThroughput: m.MaxThroughput}
	write := slices.Index(m.Ops, m.Write)
	if err := preload(ctx, m, logf); err != nil {
		return out, err
	}
	dial := timedDialer(m.Dial, s.Timeout)
	if s.Wait.Replicas > 0 {
		if write < 0 {
			return out, fmt.Errorf("wait: the system has no write operation %q", m.Write)
		}
		dial = waitingDialer(dial, uint8(write), s.Wait)
	}
	rate := s.Rate.PerSecond
	if s.Rate.Share > 0 {
		if out.MaxThroughput == 0 {
			logf("calibrating: %v closed loop with %d clients", s.Calibrate, s.CalibrateClients)
			max, err := Calibrate(ctx, s.Workload(), dial, s.CalibrateClients, s.Calibrate, s.Seed)
			if err != nil {
				return out, err
			}
			out.MaxThroughput = max
		}
		rate = s.Rate.Share * out.MaxThroughput
		logf("maximum throughput %s, so %s is %s", FormatRate(out.MaxThroughput), s.Rate, FormatRate(rate))
	}
	cfg := s.Config(rate)
	cfg.Probes, cfg.Progress = m.Probes, m.Progress
	for _, h := range m.Run.Hosts {
		cfg.Hosts = append(cfg.Hosts, h.Name)
	}
	logf("running %s, %s", cfg.Mode(), cfg.Planned())
	rc := m.Run
	rc.Ops = m.Ops
	rc.Workload = record(s, cfg, out.MaxThroughput, m.Record)
	w, err := rundir.Create(m.Dir, rc)
	if err != nil {
		return out, err
	}
	var reqs *rundir.Writer
	if cfg.Shape.FanOut() {
		// The requests' own run directory is written beside the accesses'
		// and moved into it once both are complete.
		rr := rc
		rr.Ops = []string{"request"}
		rr.Workload = maps.Clone(rc.Workload)
		rr.Workload["samples"] = "requests: intended start to the end of the last phase"
		if reqs, err = rundir.Create(m.Dir+requestsSuffix, rr); err != nil {
			w.Abort()
			return out, err
		}
		cfg.RequestRecorder = reqs
	}
	abort := func() {
		w.Abort()
		if reqs != nil {
			reqs.Abort()
		}
	}
	after := func() map[string]any { return map[string]any{} }
	if m.Around != nil {
		if after, err = m.Around(ctx); err != nil {
			abort()
			return out, err
		}
	}
	out.Result, err = Run(ctx, cfg, dial, w)
	extra := after()
	if err == nil {
		err = failed(out.Result, m.AllFailedIsError)
	}
	if err != nil {
		abort()
		return out, err
	}
	if out.Result.FirstError != nil {
		extra["first_error"] = out.Result.FirstError.Error()
	}
	if lag := out.Result.Lag; lag != nil {
		w.SetGenerator(lag.Record())
	}
	if reqs != nil {
		if err := reqs.Close(extra); err != nil {
			w.Abort()
			return out, err
		}
	}
	if err := w.Close(extra); err != nil {
		os.RemoveAll(m.Dir + requestsSuffix)
		return out, err
	}
	if reqs != nil {
		if err := os.Rename(m.Dir+requestsSuffix, filepath.Join(m.Dir, RequestsDir)); err != nil {
			os.RemoveAll(m.Dir)
			os.RemoveAll(m.Dir + requestsSuffix)
			return out, fmt.Errorf("move the requests' samples into %s: %w", m.Dir, err)
		}
	}
	run, err := rundir.Open(m.Dir)
	if err != nil {
		return out, err
	}
	if out.Summary, err = run.Summary(); err != nil || reqs == nil {
		return out, err
	}
	rr, err := rundir.Open(filepath.Join(m.Dir, RequestsDir))
	if err != nil {
		return out, err
	}
	sum, err := rr.Summary()
	out.Requests = &sum
	return out, err
}

// RequestsDir is where, inside a run directory of requests of several
// accesses (whose own samples are the accesses), the requests' run
// directory is.
const RequestsDir = "requests"

// requestsSuffix names the requests' run directory while it is written.
const requestsSuffix = ".requests"

// failed says why a finished run does not count.
func failed(r Result, allFailedIsError bool) error {
	switch {
	case r.Requests == 0:
		return errors.New("no request completed")
	case allFailedIsError && r.Errors+r.Timeouts == r.Requests:
		return fmt.Errorf("every one of %d requests failed, first: %w", r.Requests, r.FirstError)
	}
	return nil
}

// record is the resolved workload as run.json keeps it.
func record(s Spec, c Config, maxThroughput float64, more map[string]any) map[string]any {
	w := map[string]any{"mix": s.Mix.String(), "keys": s.Keys, "key_dist": s.KeyDist.String(),
		"value_size": s.ValueSize, "seed": s.Seed, "timeout": s.Timeout.Seconds()}
	if c.Rate > 0 {
		w["loop"], w["rate"], w["poisson"], w["max_in_flight"] = "open", c.Rate, c.Poisson, c.MaxInFlight
	} else {
		w["loop"], w["clients"] = "closed", c.Clients
	}
	if sh := s.Shape; sh.FanOut() {
		w["phases"], w["batch"], w["accesses_per_request"] = FormatPhases(sh.phases()), sh.batch(), sh.Accesses()
		if sh.Delay.Share > 0 {
			w["delay_share"], w["delay"] = sh.Delay.Share, sh.Delay.Delay.Seconds()
		}
		if sh.Trace != nil {
			w["arrivals_traced"] = len(sh.Trace)
		}
	}
	if s.Wait.Replicas > 0 {
		w["wait_replicas"], w["wait_timeout"] = s.Wait.Replicas, s.Wait.Timeout.Seconds()
	}
	if s.Rate.Share > 0 {
		w["rate_share"], w["max_throughput"] = s.Rate.Share, maxThroughput
	}
	if c.Duration > 0 {
		w["duration"] = c.Duration.Seconds()
	}
	if c.Requests > 0 {
		w["requests"] = c.Requests
	}
	for k, v := range more {
		w[k] = v
	}
	return w
}

// Planned says how long c runs: "20s", "1000 requests", "1000 requests or 20s".
func (c Config) Planned() string {
	switch {
	case c.Duration > 0 && c.Requests > 0:
		return fmt.Sprintf("%d requests or %v", c.Requests, c.Duration)
	case c.Requests > 0:
		return fmt.Sprintf("%d requests", c.Requests)
	}
	return c.Duration.String()
}

// preload writes the workload's keys when it reads them.
func preload(ctx context.Context, m Measurement, logf func(string, ...any)) error {
	s := m.Spec
	write := slices.Index(m.Ops, m.Write)
	reads := slices.ContainsFunc(s.Mix, func(e MixEntry) bool { return e.Name != m.Write })
	if !s.Preload || !reads || write < 0 {
		return nil
	}
	logf("preloading %d keys", s.Keys)
	dial := m.PreloadDial
	if dial == nil {
		dial = m.Dial
	}
	return Preload(ctx, s.Workload(), uint8(write), timedDialer(dial, s.Timeout), 16)
}

// WarmUp drives m's workload for d, closed loop with its clients (an open
// loop's default number of them) and unrecorded, after preloading its keys
// when it reads them: a JVM server starts cold and compiles its hot paths
// in its first seconds, which a short measured run would otherwise pay for.
// Measure preloads again; the keys and values are the same.
func WarmUp(ctx context.Context, m Measurement, d time.Duration) error {
	logf := m.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := preload(ctx, m, logf); err != nil {
		return err
	}
	s := m.Spec
	clients := orDefault(s.Clients, DefaultClients)
	logf("warming up: %v closed loop with %d clients, not measured", d, clients)
	rate, err := Calibrate(ctx, s.Workload(), timedDialer(m.Dial, s.Timeout), clients, d, s.Seed)
	if err != nil {
		return fmt.Errorf("warm-up of %v before the measured run: %w", d, err)
	}
	logf("warmed up at %s", FormatRate(rate))
	return nil
}

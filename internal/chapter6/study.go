package chapter6

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/model"
	"github.com/gait-dev/gait/internal/systems"
)

// Study is one experiment of chapter 6: each mix deployed in turn, its
// service time measured with single accesses at a low rate, then the
// study's requests at each load.
type Study struct {
	Gait   string
	System systems.System // one of Systems (LookupSystem)
	CPUs   float64        // each host's fixed CPU share
	// PinCPUs, when not 0, puts host i on CPU i mod PinCPUs
	// (Deployment.Pin).
	PinCPUs int
	Mixes   []model.Config
	Shape   load.Shape // zero: single accesses (Figure 16)
	// Loads are utilizations of one server taking every access (the
	// model's --utilization): rate = load / (accesses x mean service).
	// Rates, when given instead, are requests per second.
	Loads, Rates []float64
	// Delays, instead of loads or rates, run Figure 2: Steps requests
	// back to back from one client (a simulation's steps), once per delay,
	// the delay added to DelayShare of the accesses.
	Delays     []time.Duration
	DelayShare float64
	Steps      int
	// ServiceRate is the single accesses' rate of the service-time run,
	// ServiceTime its length (0: none).
	ServiceRate float64
	ServiceTime time.Duration
	// Warmup is how long single accesses run at ServiceRate, unrecorded,
	// before a deployment's first measured run (0: none): on a fresh JVM
	// the first seconds run interpreted code and cold caches, which no
	// later run pays.
	Warmup   time.Duration
	Duration time.Duration // of each measured run, at most
	Requests int           // of each measured run, at most (0: no limit)
	Seed     uint64
	Log      io.Writer
	// Measured is called with every point as it is measured.
	Measured func(Point) error
}

// Check refuses bad input before anything starts.
func (s Study) Check() error {
	switch {
	case !slices.Contains(Systems, s.System.Name):
		return fmt.Errorf("--system %q: want one of %s", s.System.Name, strings.Join(Systems, ", "))
	case len(s.Mixes) == 0:
		return errors.New("--mixes: no mix")
	case !(s.CPUs > 0):
		return fmt.Errorf("--cpus %g: want a share above 0", s.CPUs)
	case s.PinCPUs < 0 || s.PinCPUs > runtime.NumCPU():
		return fmt.Errorf("--pin %d: want 0 (not pinned) to this machine's %d CPUs", s.PinCPUs, runtime.NumCPU())
	case len(s.Delays) > 0 && (len(s.Loads) > 0 || len(s.Rates) > 0):
		return errors.New("--delays runs steps back to back: give no --load or --rate with it")
	case len(s.Delays) > 0 && !(s.DelayShare > 0 && s.DelayShare <= 1):
		return fmt.Errorf("--delay-share %g%%: want above 0%% and at most 100%%", 100*s.DelayShare)
	case len(s.Delays) > 0 && s.Steps < 1:
		return fmt.Errorf("--steps %d: want at least 1", s.Steps)
	case len(s.Delays) == 0 && len(s.Loads) == 0 && len(s.Rates) == 0:
		return errors.New("no --load, --rate or --delays to run at")
	case s.Warmup < 0:
		return fmt.Errorf("--warmup %v: must not be negative", s.Warmup)
	case (s.ServiceTime > 0 || s.Warmup > 0) && !(s.ServiceRate > 0):
		return fmt.Errorf("--service-rate %g: want above 0 accesses/s for the service-time run and the warm-up", s.ServiceRate)
	case len(s.Loads) > 0 && s.ServiceTime <= 0:
		return errors.New("--load needs the service-time run (--service-time above 0) to turn a load into a rate")
	case s.Duration <= 0:
		return fmt.Errorf("--duration %v: want above 0", s.Duration)
	case s.Requests < 0:
		return fmt.Errorf("--requests %d: want 0 (no limit) or more", s.Requests)
	}
	for _, d := range s.Delays {
		if d < 0 {
			return fmt.Errorf("--delays %v: must not be negative", d)
		}
	}
	for _, u := range s.Loads {
		if !(u > 0 && u < 1) {
			return fmt.Errorf("--load %g: want a utilization between 0 and 1", u)
		}
	}
	for _, r := range s.Rates {
		if !(r > 0) {
			return fmt.Errorf("--rate %g: want above 0 requests/s", r)
		}
	}
	return nil
}

// Run deploys each mix in turn and measures it.
func (s Study) Run(ctx context.Context) error {
	if err := s.Check(); err != nil {
		return err
	}
	for _, mix := range s.Mixes {
		if err := s.runMix(ctx, mix); err != nil {
			return err
		}
	}
	return nil
}

func (s Study) runMix(ctx context.Context, mix model.Config) error {
	s.logf("%s: deploying %s on %d hosts of %.2g CPU each", MixName(mix), s.System.Name, mix.Nodes(), s.CPUs)
	d, err := Deploy(ctx, s.Gait, s.System, mix, s.CPUs, s.Log)
	if err != nil {
		return err
	}
	defer d.Close()
	if s.PinCPUs > 0 {
		if err := d.Pin(s.PinCPUs); err != nil {
			return fmt.Errorf("%s: %w", MixName(mix), err)
		}
	}
	if err := d.Preload(ctx); err != nil {
		return fmt.Errorf("%s: %w", MixName(mix), err)
	}
	if s.Warmup > 0 {
		n, err := d.warmUp(ctx, Run{Rate: s.ServiceRate, Duration: s.Warmup, Seed: s.Seed + 1, Mix: singles(s.System, s.Shape)})
		if err != nil {
			return fmt.Errorf("%s: warm-up: %w", MixName(mix), err)
		}
		s.logf("%s: warm-up: %d accesses, not recorded", MixName(mix), n)
	}
	if len(s.Delays) > 0 {
		return s.runSteps(ctx, d)
	}
	rates := s.Rates
	offered := make([]float64, len(rates))
	if s.ServiceTime > 0 {
		svc, err := d.Measure(ctx, Run{Rate: s.ServiceRate, Duration: s.ServiceTime, Seed: s.Seed, Mix: singles(s.System, s.Shape)})
		if err != nil {
			return err
		}
		if len(svc.Accesses) == 0 {
			return fmt.Errorf("%s: no access of the service-time run succeeded", MixName(mix))
		}
		svc.Study, svc.Service = shapeName(s.Shape), true
		s.logf("%s: service run: %d accesses, mean %s, the hosts' work per access %s, load %s", MixName(mix), len(svc.Accesses),
			model.FormatDuration(mean(svc.Accesses)), workText(svc), svc.Load)
		if err := s.Measured(svc); err != nil {
			return err
		}
		// A load is of the hosts' work per access when it was measured
		// (the service time the model queues), else of the access latency.
		per := svc.WorkPerAccess()
		if per <= 0 {
			per = mean(svc.Accesses)
		}
		for _, u := range s.Loads {
			rates = append(rates, u/(float64(s.Shape.Accesses())*per))
			offered = append(offered, u)
		}
	}
	for i, rate := range rates {
		p, err := d.Measure(ctx, Run{Shape: s.Shape, Rate: rate, Duration: s.Duration, Requests: s.Requests, Seed: s.Seed})
		if err != nil {
			return err
		}
		p.Study, p.Offered = shapeName(s.Shape), offered[i]
		s.logf("%s: %.4g requests/s: %d requests, %d failed, p99 %s, send lateness p99 %s, the hosts' work per access %s, load %s", MixName(mix), rate,
			len(p.Requests), p.Failed, model.FormatDuration(quantile(p.Requests, 0.99)), model.FormatDuration(p.LateP99),
			workText(p), p.Load)
		if err := s.Measured(p); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// runSteps runs the study's requests back to back from one client, once
// per delay (Figure 2): the run's length against the delay.
func (s Study) runSteps(ctx context.Context, d *Deployment) error {
	shape := s.Shape
	shape.Batch, shape.Trace = 0, nil
	study := "steps " + shapeName(shape)
	for _, delay := range s.Delays {
		shape.Delay = load.Delay{Share: s.DelayShare, Delay: delay}
		p, err := d.Measure(ctx, Run{Shape: shape, Clients: 1, Duration: s.Duration, Requests: s.Steps, Seed: s.Seed})
		if err != nil {
			return err
		}
		p.Study = study
		s.logf("%s: %d steps with %s: %s, load %s", MixName(d.Mix), len(p.Requests), shape.Delay, model.FormatDuration(p.Elapsed), p.Load)
		if err := s.Measured(p); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// singles is the service-time run's mix on sys: single accesses with the
// request's own share of reads (phases naming no op) and of each phase's
// named op.
func singles(sys systems.System, s load.Shape) load.Mix {
	reads := 0
	var mix load.Mix
	for _, ph := range s.Phases {
		if ph.Op == "" {
			reads += ph.Count
			continue
		}
		mix = append(mix, load.MixEntry{Kind: ph.Kind, Name: ph.Op, Weight: ph.Count})
	}
	if reads > 0 || len(mix) == 0 {
		mix = append(mix, read(sys, max(1, reads)))
	}
	return mix
}

func (s Study) logf(format string, args ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, format+"\n", args...)
	}
}

func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// quantile of sorted xs (0 when empty).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// LoadAverage is the machine's load average (1, 5, 15 minutes), as uptime
// prints it.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// workText says the hosts' work per access, or why there is none: a run
// whose accesses cost the hosts less than the error in their idle use
// (Gridlab-D's batches at 16/s, against four agents' raft heartbeats)
// would otherwise read as work of 0 s.
func workText(p Point) string {
	if w := p.WorkPerAccess(); w > 0 || p.HostCPU == 0 {
		return model.FormatDuration(w)
	}
	return fmt.Sprintf("not told from their idle use (%.2f CPU-s in the run, %.2f idle)", p.HostCPU, p.IdleCPU*p.Elapsed)
}

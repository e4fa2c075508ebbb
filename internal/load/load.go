// Package load is gait's workload engine. It drives a system through a small
// Client interface, either closed loop (N clients issuing back to back) or
// open loop (arrivals at a fixed or Poisson rate), and records every request
// into a run directory. In open loop a request's latency is measured from its
// intended start, fixed by the arrival schedule before it is issued, so a
// stall of the system shows as the growing latency of every request that had
// to wait for it instead of hiding behind fewer requests (coordinated omission).
package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/gait-dev/gait/internal/rundir"
)

// Op is one request. Kind indexes the system's operation names (the run's
// rundir.Config.Ops).
type Op struct {
	Kind  uint8
	Key   string
	Value []byte // shared by all requests: a client must not modify it
}

// Client issues one request at a time; the engine times it. A client is used
// by one goroutine only.
type Client interface {
	Do(ctx context.Context, op Op) error
	Close() error
}

// Involver is a client that can say which hosts its last request involved
// beyond the one it was sent to: an HDFS write's pipeline of DataNodes, the
// DataNode a read came from. The engine asks it after every request and
// records the hosts with the sample (rundir.Sample.Involved), so a verdict
// can tell the requests that passed through a limping host from those that
// did not. Nil means the client does not know (the request failed).
type Involver interface {
	Involved() []string // host names, as in Config.Hosts
}

// Dialer opens the client of worker number worker (from 0) and says which host
// it talks to, as an index into the run's hosts.
type Dialer func(worker int) (c Client, host uint8, err error)

// Recorder receives the measurements. *rundir.Writer is one. The engine calls
// it from a single goroutine.
type Recorder interface {
	Add(rundir.Sample)
	AddMetric(t int, name string, value float64)
}

// Probe reads white-box metrics; the engine calls it once a second and what it
// emits is recorded for the second that just ended.
type Probe func(emit func(name string, value float64))

// DefaultMaxInFlight bounds the open-loop worker pool unless Config says otherwise.
const DefaultMaxInFlight = 1024

// Config is one load run. Exactly one of Clients (closed loop) and Rate (open
// loop) is set, and at least one of Duration and Requests; with both, the run
// ends at whichever comes first.
type Config struct {
	Workload Workload
	Clients  int     // closed loop: concurrent clients, each issuing back to back
	Rate     float64 // open loop: arrivals per second
	Poisson  bool    // open loop: exponential gaps between arrivals instead of fixed ones
	// MaxInFlight bounds the open-loop workers (one client each). Arrivals
	// finding every worker busy wait in a queue with their intended start
	// kept, so the wait counts in their latency. 0 means DefaultMaxInFlight.
	MaxInFlight int
	Duration    time.Duration
	Requests    int
	Timeout     time.Duration // per request; 0 for none
	Seed        uint64        // same seed, same ops and arrival schedule
	// Hosts names the run's hosts in index order (rundir.Config.Hosts), so
	// the hosts an Involver names are recorded by index.
	Hosts  []string
	Probes []Probe
	// Shape makes each arrival requests of several accesses (phases,
	// batches, a trace, delayed accesses); then Rate and Requests count
	// requests, the samples are the accesses, and each request goes to
	// RequestRecorder too.
	Shape           Shape
	RequestRecorder Recorder
	// Progress, if set, is called every ProgressEvery (default 1s) and once at the end.
	Progress      func(Progress)
	ProgressEvery time.Duration
}

// Progress is a run's state for display.
type Progress struct {
	Elapsed time.Duration
	Done    int64         // requests completed
	Failed  int64         // of them, errors and timeouts
	ETA     time.Duration // estimated time left, -1 while unknown
	Final   bool          // the last call, after the run
}

// Result sums up a run.
type Result struct {
	Requests, Errors, Timeouts int
	Elapsed                    time.Duration // from the start to the last completion
	Throughput                 float64       // completed requests per second, failures included
	FirstError                 error         // the first failed request's error, if any
	// Lag is how well an open loop kept its schedule; nil for a closed loop.
	Lag *Lag
}

// ScheduleTolerance is the p99 send lateness within which an open loop
// counts as having kept its schedule.
const ScheduleTolerance = time.Millisecond

// Lag is the open-loop generator's own lateness, kept apart from the
// latency it is also part of: how late requests were sent after their
// intended start, and how many waited because the in-flight limit was
// reached.
type Lag struct {
	Sent          int // requests whose send lateness was measured
	P50, P99, Max time.Duration
	HeldBack      int // arrivals that found all MaxInFlight workers busy
	MaxInFlight   int
	Workers       int // the pool's size at the end, at most MaxInFlight
}

// Kept says whether the schedule was kept within ScheduleTolerance at p99.
func (l Lag) Kept() bool { return l.P99 <= ScheduleTolerance }

// Record is l as summary.json keeps it.
func (l Lag) Record() rundir.Generator {
	return rundir.Generator{Sent: l.Sent, SendLateP50: l.P50.Seconds(), SendLateP99: l.P99.Seconds(),
		SendLateMax: l.Max.Seconds(), HeldBack: l.HeldBack, MaxInFlight: l.MaxInFlight, Workers: l.Workers,
		Tolerance: ScheduleTolerance.Seconds(), KeptSchedule: l.Kept()}
}

// Mode names the loop of c for display: "closed loop, 8 clients" or "open loop, 2000/s fixed".
func (c Config) Mode() string {
	if c.Rate > 0 {
		kind := "fixed"
		if c.Poisson {
			kind = "poisson"
		}
		return fmt.Sprintf("open loop, %s %s", FormatRate(c.Rate), kind)
	}
	return fmt.Sprintf("closed loop, %d clients", c.Clients)
}

// FormatRate writes a rate of arrivals for people: whole requests per
// second from 100/s up (a calibrated rate has no meaningful decimals),
// three significant digits below.
func FormatRate(perSecond float64) string {
	if perSecond >= 100 {
		return strconv.FormatFloat(perSecond, 'f', 0, 64) + "/s"
	}
	return strconv.FormatFloat(perSecond, 'g', 3, 64) + "/s"
}

func (c Config) validate() error {
	switch {
	case c.Clients > 0 && c.Rate > 0:
		return errors.New("load: give either clients (closed loop) or a rate (open loop), not both")
	case c.Clients <= 0 && c.Rate <= 0:
		return errors.New("load: give clients > 0 (closed loop) or a rate > 0 (open loop)")
	case c.Clients < 0 || c.Rate < 0:
		return errors.New("load: clients and rate must not be negative")
	case c.Duration <= 0 && c.Requests <= 0:
		return errors.New("load: give a duration or a number of requests")
	case c.Duration < 0 || c.Requests < 0 || c.Timeout < 0 || c.MaxInFlight < 0:
		return errors.New("load: duration, requests, timeout and max in flight must not be negative")
	case c.Poisson && c.Rate <= 0:
		return errors.New("load: poisson arrivals need a rate (open loop)")
	case c.Shape.FanOut() && c.RequestRecorder == nil:
		return errors.New("load: requests of several accesses need a recorder of requests")
	case c.Shape.Trace != nil && c.Rate <= 0:
		return errors.New("load: an arrival trace is an open loop")
	}
	if err := c.Shape.check(); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	return c.Workload.validate()
}

// Run drives the workload of cfg through clients from dial and records every
// request into rec. It returns when the run is over, or early with ctx's error
// if ctx ends (what was recorded so far stays recorded).
func Run(ctx context.Context, cfg Config, dial Dialer, rec Recorder) (Result, error) {
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	if cfg.MaxInFlight == 0 {
		// A request in flight holds a connection per access of its widest phase.
		cfg.MaxInFlight = max(4, DefaultMaxInFlight/cfg.Shape.Width())
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = time.Second
	}
	r := &run{cfg: cfg, dial: dial, value: cfg.Workload.value(cfg.Seed),
		out: make(chan batch, 256), hostIndex: map[string]uint8{}}
	for i, h := range cfg.Hosts {
		r.hostIndex[h] = uint8(i)
	}
	recorded := make(chan Result, 1)
	go func() { recorded <- r.record(rec) }()

	err := r.drive(ctx)
	close(r.out)
	res := <-recorded
	res.FirstError = r.firstError()
	if res.Lag != nil {
		res.Lag.HeldBack, res.Lag.MaxInFlight, res.Lag.Workers = int(r.heldBack.Load()), cfg.MaxInFlight, r.workers
	}
	if cfg.Progress != nil && !r.start.IsZero() {
		// The count the periodic calls gave: requests, where res counts
		// the samples (a fan-out request's accesses).
		cfg.Progress(Progress{Elapsed: time.Since(r.start), Done: r.done.Load(), Failed: r.failed.Load(), Final: true})
	}
	if err == nil {
		err = ctx.Err()
	}
	return res, err
}

// run is the state one Run shares between its goroutines.
type run struct {
	cfg    Config
	dial   Dialer
	value  []byte
	start  time.Time
	out    chan batch // to the recording goroutine
	done   atomic.Int64
	failed atomic.Int64 // of done, errors and timeouts
	claims atomic.Int64 // closed loop: requests handed out, for cfg.Requests
	// heldBack counts open-loop arrivals that found the in-flight limit reached.
	heldBack atomic.Int64
	workers  int // open loop: the pool's size once the run is over
	// hostIndex is cfg.Hosts by name.
	hostIndex map[string]uint8

	mu       sync.Mutex
	firstErr error
}

// batch carries samples, metrics and open-loop send lateness to the one
// goroutine that records them.
type batch struct {
	samples  []rundir.Sample
	requests []rundir.Sample // of several accesses each
	metrics  []metric
	late     []time.Duration
}

type metric struct {
	t     int
	name  string
	value float64
}

const batchSize = 256

// drive runs the loop and the periodic goroutines, returning a dial error.
func (r *run) drive(ctx context.Context) error {
	var loop func(context.Context, func()) error
	if r.cfg.Rate > 0 {
		loop = r.openLoop
	} else {
		loop = r.closedLoop
	}
	stop := make(chan struct{})
	var periodic sync.WaitGroup
	// The loops call begin once their first clients are dialed, so dialing
	// never counts as latency.
	err := loop(ctx, func() {
		r.start = time.Now()
		periodic.Go(func() { r.probe(stop) })
		periodic.Go(func() { r.report(stop) })
	})
	close(stop)
	periodic.Wait()
	return err
}

// do issues one request and classifies its outcome.
func (r *run) do(ctx context.Context, c Client, op Op) rundir.Outcome {
	var err error
	if r.cfg.Timeout > 0 {
		tctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
		err = c.Do(tctx, op)
		cancel()
	} else {
		err = c.Do(ctx, op)
	}
	if err == nil {
		return rundir.OK
	}
	r.mu.Lock()
	if r.firstErr == nil {
		r.firstErr = err
	}
	r.mu.Unlock()
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return rundir.Timeout
	}
	return rundir.Error
}

// involved is the set of hosts c says its last request involved; a host
// not in the run is left out.
func (r *run) involved(c Client) rundir.HostSet {
	var s rundir.HostSet
	if iv, ok := c.(Involver); ok {
		for _, h := range iv.Involved() {
			if i, known := r.hostIndex[h]; known {
				s.Add(i)
			}
		}
	}
	return s
}

func (r *run) firstError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.firstErr
}

// add buffers one sample of a worker and ships full batches.
func (r *run) add(buf []rundir.Sample, s rundir.Sample) []rundir.Sample {
	if !r.cfg.Shape.FanOut() {
		r.count(s)
	}
	return push(r, buf, s, func(b []rundir.Sample) batch { return batch{samples: b} })
}

func (r *run) flush(buf []rundir.Sample) {
	ship(r, buf, func(b []rundir.Sample) batch { return batch{samples: b} })
}

// addRequest buffers one request's sample and ships full batches.
func (r *run) addRequest(buf []rundir.Sample, s rundir.Sample) []rundir.Sample {
	r.count(s)
	return push(r, buf, s, func(b []rundir.Sample) batch { return batch{requests: b} })
}

// count notes a completed request for the progress line.
func (r *run) count(s rundir.Sample) {
	r.done.Add(1)
	if s.Outcome != rundir.OK {
		r.failed.Add(1)
	}
}

func (r *run) flushRequests(buf []rundir.Sample) {
	ship(r, buf, func(b []rundir.Sample) batch { return batch{requests: b} })
}

// addLate buffers one open-loop send lateness and ships full batches.
func (r *run) addLate(buf []time.Duration, late time.Duration) []time.Duration {
	return push(r, buf, late, func(b []time.Duration) batch { return batch{late: b} })
}

func (r *run) flushLate(buf []time.Duration) {
	ship(r, buf, func(b []time.Duration) batch { return batch{late: b} })
}

// push appends v to a worker's buffer and, once it holds batchSize, ships
// it to the recorder as wrap makes it a batch, handing back a fresh buffer:
// workers never share a buffer, so they take no lock per sample.
func push[T any](r *run, buf []T, v T, wrap func([]T) batch) []T {
	buf = append(buf, v)
	if len(buf) == batchSize {
		r.out <- wrap(buf)
		buf = make([]T, 0, batchSize)
	}
	return buf
}

// ship sends what is left in a worker's buffer when it stops.
func ship[T any](r *run, buf []T, wrap func([]T) batch) {
	if len(buf) > 0 {
		r.out <- wrap(buf)
	}
}

// record is the only goroutine touching rec.
func (r *run) record(rec Recorder) Result {
	var res Result
	var end time.Duration
	var late *hdrhistogram.Histogram
	if r.cfg.Rate > 0 {
		// 1 ns to 1 h at 3 significant digits; later is clamped to the top.
		late = hdrhistogram.New(1, int64(time.Hour), 3)
	}
	for b := range r.out {
		for _, l := range b.late {
			if late.RecordValue(max(int64(l), 1)) != nil {
				late.RecordValue(late.HighestTrackableValue())
			}
		}
		for _, s := range b.samples {
			rec.Add(s)
			res.Requests++
			switch s.Outcome {
			case rundir.Error:
				res.Errors++
			case rundir.Timeout:
				res.Timeouts++
			}
			end = max(end, s.Start+s.Latency)
		}
		for _, s := range b.requests {
			r.cfg.RequestRecorder.Add(s)
		}
		for _, m := range b.metrics {
			rec.AddMetric(m.t, m.name, m.value)
		}
	}
	res.Elapsed = end
	if late != nil {
		res.Lag = &Lag{Sent: int(late.TotalCount()), P50: time.Duration(late.ValueAtQuantile(50)),
			P99: time.Duration(late.ValueAtQuantile(99)), Max: time.Duration(late.Max())}
	}
	if end > 0 {
		res.Throughput = float64(res.Requests) / end.Seconds()
	}
	return res
}

// probe calls the probes at every second of the run.
func (r *run) probe(stop <-chan struct{}) {
	if len(r.cfg.Probes) == 0 {
		return
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			t := int(now.Sub(r.start)/time.Second) - 1 // the second that just ended
			var ms []metric
			for _, p := range r.cfg.Probes {
				p(func(name string, v float64) { ms = append(ms, metric{t, name, v}) })
			}
			select {
			case r.out <- batch{metrics: ms}:
			case <-stop:
				return
			}
		}
	}
}

// report calls the progress callback periodically.
func (r *run) report(stop <-chan struct{}) {
	if r.cfg.Progress == nil {
		return
	}
	tick := time.NewTicker(r.cfg.ProgressEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			elapsed := time.Since(r.start)
			done := r.done.Load()
			r.cfg.Progress(Progress{Elapsed: elapsed, Done: done, Failed: r.failed.Load(), ETA: r.eta(elapsed, done)})
		}
	}
}

// eta estimates the time left from the planned duration or request count.
func (r *run) eta(elapsed time.Duration, done int64) time.Duration {
	eta := time.Duration(-1)
	shorter := func(d time.Duration) {
		d = max(d, 0)
		if eta < 0 || d < eta {
			eta = d
		}
	}
	if r.cfg.Duration > 0 {
		shorter(r.cfg.Duration - elapsed)
	}
	if n := int64(r.cfg.Requests); n > 0 {
		switch {
		case r.cfg.Rate > 0:
			shorter(time.Duration(float64(n)/r.cfg.Rate*1e9) - elapsed)
		case done > 0:
			shorter(time.Duration(float64(elapsed) * float64(n-done) / float64(done)))
		}
	}
	return eta
}

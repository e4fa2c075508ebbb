package load

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/rundir"
)

var testOps = []string{"get", "set", "del"}

func testWorkload(t *testing.T, mix string) Workload {
	t.Helper()
	m, err := ParseMix(mix, testOps)
	if err != nil {
		t.Fatal(err)
	}
	return Workload{Mix: m, Keys: 100, ValueSize: 64}
}

// memRecorder keeps what the engine records.
type memRecorder struct {
	samples []rundir.Sample
	metrics map[string][]float64
}

func (m *memRecorder) Add(s rundir.Sample) { m.samples = append(m.samples, s) }
func (m *memRecorder) AddMetric(t int, name string, v float64) {
	if m.metrics == nil {
		m.metrics = map[string][]float64{}
	}
	m.metrics[name] = append(m.metrics[name], v)
}

// slowSystem is a fakeSystem whose every operation takes d, or until
// the run ends.
func slowSystem(d time.Duration) *fakeSystem {
	return &fakeSystem{do: func(ctx context.Context, op Op) error {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
		return nil
	}}
}

// fakeSystem is an in-process system shared by all its clients.
type fakeSystem struct {
	mu       sync.Mutex
	ops      []Op
	inFlight atomic.Int64
	peak     atomic.Int64
	do       func(ctx context.Context, op Op) error // optional behaviour
}

type fakeClient struct {
	sys    *fakeSystem
	closed *atomic.Int64
}

func (c fakeClient) Do(ctx context.Context, op Op) error {
	s := c.sys
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	s.mu.Lock()
	s.ops = append(s.ops, op)
	s.mu.Unlock()
	if s.do != nil {
		return s.do(ctx, op)
	}
	return nil
}

func (c fakeClient) Close() error { c.closed.Add(1); return nil }

func (s *fakeSystem) dialer(dialed, closed *atomic.Int64) Dialer {
	return func(worker int) (Client, uint8, error) {
		dialed.Add(1)
		return fakeClient{sys: s, closed: closed}, uint8(worker % 3), nil
	}
}

// TestProgressCountsErrors: the progress line counts the failed requests
// as they happen, and its last call the run's errors and timeouts.
func TestProgressCountsErrors(t *testing.T) {
	var n atomic.Int64
	sys := &fakeSystem{do: func(ctx context.Context, op Op) error {
		time.Sleep(100 * time.Microsecond)
		if n.Add(1)%4 == 0 {
			return errors.New("down")
		}
		return nil
	}}
	var dialed, closed atomic.Int64
	var mu sync.Mutex
	var seen []Progress
	cfg := Config{Workload: testWorkload(t, "get"), Clients: 2, Requests: 800, Seed: 1, ProgressEvery: time.Millisecond,
		Progress: func(p Progress) { mu.Lock(); seen = append(seen, p); mu.Unlock() }}
	res, err := Run(context.Background(), cfg, sys.dialer(&dialed, &closed), &memRecorder{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 200 {
		t.Fatalf("%d errors, want 200 (every fourth of 800)", res.Errors)
	}
	mu.Lock()
	defer mu.Unlock()
	last := seen[len(seen)-1]
	if !last.Final || last.Failed != int64(res.Errors+res.Timeouts) {
		t.Errorf("last progress %+v, want final with %d failed", last, res.Errors+res.Timeouts)
	}
	var during bool
	for _, p := range seen[:len(seen)-1] {
		if p.Failed > p.Done {
			t.Errorf("progress %+v: more failed than done", p)
		}
		during = during || p.Failed > 0
	}
	if !during {
		t.Errorf("no progress line during the run counted a failure (%d lines)", len(seen)-1)
	}
}

func TestClosedLoopRequests(t *testing.T) {
	sys := &fakeSystem{do: func(ctx context.Context, op Op) error {
		time.Sleep(50 * time.Microsecond)
		return nil
	}}
	var dialed, closed atomic.Int64
	rec := &memRecorder{}
	var last Progress
	cfg := Config{Workload: testWorkload(t, "get:1,set:3"), Clients: 4, Requests: 2000, Seed: 7,
		Progress: func(p Progress) { last = p }}
	res, err := Run(context.Background(), cfg, sys.dialer(&dialed, &closed), rec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 2000 || len(rec.samples) != 2000 || len(sys.ops) != 2000 {
		t.Fatalf("requests: result %d, recorded %d, issued %d; want 2000", res.Requests, len(rec.samples), len(sys.ops))
	}
	if dialed.Load() != 4 || closed.Load() != 4 {
		t.Errorf("dialed %d clients, closed %d; want 4 and 4", dialed.Load(), closed.Load())
	}
	if p := sys.peak.Load(); p > 4 {
		t.Errorf("%d requests in flight at once, want at most 4 clients", p)
	}
	if !last.Final || last.Done != 2000 {
		t.Errorf("last progress %+v, want final with 2000 done", last)
	}
	var sets int
	for _, s := range rec.samples {
		if s.Outcome != rundir.OK || s.Latency <= 0 || s.Host > 3 {
			t.Fatalf("bad sample %+v", s)
		}
		if testOps[s.Op] == "set" {
			sets++
		}
	}
	// set has weight 3 of 4: binomial mean 1500, sd 19.4; 5 sd either side.
	if sets < 1400 || sets > 1600 {
		t.Errorf("%d sets of 2000, want about 1500", sets)
	}
	for _, op := range sys.ops {
		if testOps[op.Kind] == "set" && len(op.Value) != 64 {
			t.Fatalf("set carries %d bytes, want 64", len(op.Value))
		}
	}
}

func TestClosedLoopDuration(t *testing.T) {
	sys := &fakeSystem{do: func(ctx context.Context, op Op) error {
		time.Sleep(time.Millisecond)
		return nil
	}}
	var dialed, closed atomic.Int64
	rec := &memRecorder{}
	cfg := Config{Workload: testWorkload(t, "get"), Clients: 2, Duration: 100 * time.Millisecond}
	if _, err := Run(context.Background(), cfg, sys.dialer(&dialed, &closed), rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.samples) == 0 {
		t.Fatal("no samples")
	}
	for _, s := range rec.samples {
		if s.Start >= cfg.Duration {
			t.Fatalf("request started at %v, after the %v run", s.Start, cfg.Duration)
		}
	}
}

func TestOutcomes(t *testing.T) {
	boom := errors.New("boom")
	sys := &fakeSystem{do: func(ctx context.Context, op Op) error {
		switch testOps[op.Kind] {
		case "set":
			return boom
		case "del":
			<-ctx.Done() // hangs until the per-request timeout
			return ctx.Err()
		}
		return nil
	}}
	var dialed, closed atomic.Int64
	rec := &memRecorder{}
	cfg := Config{Workload: testWorkload(t, "get,set,del"), Clients: 3, Requests: 300,
		Timeout: time.Millisecond}
	res, err := Run(context.Background(), cfg, sys.dialer(&dialed, &closed), rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rec.samples {
		want := map[string]rundir.Outcome{"get": rundir.OK, "set": rundir.Error, "del": rundir.Timeout}[testOps[s.Op]]
		if s.Outcome != want {
			t.Fatalf("%s: outcome %v, want %v", testOps[s.Op], s.Outcome, want)
		}
	}
	if res.Errors == 0 || res.Timeouts == 0 || res.Errors+res.Timeouts >= res.Requests {
		t.Errorf("result %+v: want some errors, some timeouts and some successes", res)
	}
	if res.FirstError == nil {
		t.Error("no first error reported")
	}
}

func TestOpenLoopFixedSchedule(t *testing.T) {
	sys := &fakeSystem{}
	var dialed, closed atomic.Int64
	rec := &memRecorder{}
	cfg := Config{Workload: testWorkload(t, "get"), Rate: 20000, Requests: 1000}
	if _, err := Run(context.Background(), cfg, sys.dialer(&dialed, &closed), rec); err != nil {
		t.Fatal(err)
	}
	starts := intendedStarts(rec.samples)
	for i, s := range starts {
		if want := time.Duration(i) * 50 * time.Microsecond; s != want {
			t.Fatalf("request %d intended at %v, want %v", i, s, want)
		}
	}
	if len(starts) != 1000 {
		t.Fatalf("%d requests, want 1000", len(starts))
	}
	if dialed.Load() != closed.Load() {
		t.Errorf("dialed %d clients, closed %d", dialed.Load(), closed.Load())
	}
}

func TestOpenLoopPoisson(t *testing.T) {
	sys := &fakeSystem{}
	var dialed, closed atomic.Int64
	rec := &memRecorder{}
	const rate, n = 1e6, 20000
	cfg := Config{Workload: testWorkload(t, "get"), Rate: rate, Poisson: true, Requests: n, Seed: 3}
	if _, err := Run(context.Background(), cfg, sys.dialer(&dialed, &closed), rec); err != nil {
		t.Fatal(err)
	}
	starts := intendedStarts(rec.samples)
	var sum, sumSq float64
	for i := 1; i < len(starts); i++ {
		gap := (starts[i] - starts[i-1]).Seconds()
		sum += gap
		sumSq += gap * gap
	}
	k := float64(len(starts) - 1)
	mean := sum / k
	cv := math.Sqrt(sumSq/k-mean*mean) / mean
	// Exponential gaps: mean 1/rate (sd of the mean 0.7%), coefficient of variation 1.
	if math.Abs(mean*rate-1) > 0.03 || math.Abs(cv-1) > 0.05 {
		t.Errorf("gaps: mean %.3g s (want %.3g), cv %.3f (want 1)", mean, 1/rate, cv)
	}
}

// TestOpenLoopStallIsVisible injects a 300 ms stall into a system loaded at
// 1000/s by 4 workers. Every request intended during the stall must carry the
// wait for its end in its latency, and none may go missing: that is what
// measuring from the intended start buys over a closed loop.
func TestOpenLoopStallIsVisible(t *testing.T) {
	const stall = 300 * time.Millisecond
	var mu sync.Mutex
	var calls int
	var stallEnd time.Time
	sys := &fakeSystem{do: func(ctx context.Context, op Op) error {
		mu.Lock()
		if calls++; calls == 200 {
			stallEnd = time.Now().Add(stall)
		}
		wait := time.Until(stallEnd)
		mu.Unlock()
		if wait > 0 {
			time.Sleep(wait)
		}
		return nil
	}}
	var dialed, closed atomic.Int64
	rec := &memRecorder{}
	cfg := Config{Workload: testWorkload(t, "get"), Rate: 1000, Requests: 1000, MaxInFlight: 4}
	if _, err := Run(context.Background(), cfg, sys.dialer(&dialed, &closed), rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.samples) != 1000 {
		t.Fatalf("%d requests recorded, want all 1000", len(rec.samples))
	}
	if dialed.Load() > 4 {
		t.Errorf("%d workers, want at most 4", dialed.Load())
	}
	// Requests intended in the first 200 ms of the stall cannot finish before
	// it ends, so each waits at least 100 ms; at 1000/s that is 200 requests.
	var slow int
	var worst time.Duration
	for _, s := range rec.samples {
		if s.Latency >= 100*time.Millisecond {
			slow++
		}
		worst = max(worst, s.Latency)
	}
	if slow < 199 {
		t.Errorf("%d requests took >= 100ms, want >= 199 (the stall was hidden)", slow)
	}
	if worst < stall*9/10 {
		t.Errorf("worst latency %v, want about the %v stall", worst, stall)
	}
}

func TestProbes(t *testing.T) {
	sys := &fakeSystem{do: func(ctx context.Context, op Op) error {
		time.Sleep(time.Millisecond)
		return nil
	}}
	var dialed, closed atomic.Int64
	rec := &memRecorder{}
	probe := func(emit func(string, float64)) { emit("answer", 42) }
	cfg := Config{Workload: testWorkload(t, "get"), Clients: 1, Duration: 2100 * time.Millisecond,
		Probes: []Probe{probe}}
	if _, err := Run(context.Background(), cfg, sys.dialer(&dialed, &closed), rec); err != nil {
		t.Fatal(err)
	}
	if got := rec.metrics["answer"]; len(got) == 0 || got[0] != 42 {
		t.Errorf("probe metrics %v, want 42 at least once", got)
	}
}

func TestCancel(t *testing.T) {
	sys := &fakeSystem{}
	var dialed, closed atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	cfg := Config{Workload: testWorkload(t, "get"), Rate: 100, Duration: time.Hour}
	_, err := Run(ctx, cfg, sys.dialer(&dialed, &closed), &memRecorder{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the context's", err)
	}
	if dialed.Load() != closed.Load() {
		t.Errorf("dialed %d clients, closed %d", dialed.Load(), closed.Load())
	}
}

func TestDialError(t *testing.T) {
	dial := func(worker int) (Client, uint8, error) { return nil, 0, errors.New("refused") }
	for _, cfg := range []Config{
		{Workload: testWorkload(t, "get"), Clients: 2, Requests: 10},
		{Workload: testWorkload(t, "get"), Rate: 10, Requests: 10},
	} {
		if _, err := Run(context.Background(), cfg, dial, &memRecorder{}); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("%s: err %v, want the dial error", cfg.Mode(), err)
		}
	}
}

// A worker added while the run is going fails to connect: the run stops with its error.
func TestOpenLoopLateDialError(t *testing.T) {
	sys := slowSystem(10 * time.Millisecond)
	var dialed, closed atomic.Int64
	good := sys.dialer(&dialed, &closed)
	dial := func(worker int) (Client, uint8, error) {
		if worker >= initialWorkers {
			return nil, 0, errors.New("refused")
		}
		return good(worker)
	}
	cfg := Config{Workload: testWorkload(t, "get"), Rate: 10000, Duration: time.Minute, MaxInFlight: 64}
	_, err := Run(context.Background(), cfg, dial, &memRecorder{})
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("err %v, want the dial error", err)
	}
	if dialed.Load() != closed.Load() {
		t.Errorf("dialed %d clients, closed %d", dialed.Load(), closed.Load())
	}
}

func TestBadConfig(t *testing.T) {
	wl := testWorkload(t, "get")
	for _, cfg := range []Config{
		{Workload: wl, Requests: 1},
		{Workload: wl, Clients: 1, Rate: 5, Requests: 1},
		{Workload: wl, Clients: 1},
		{Workload: wl, Clients: 1, Poisson: true, Requests: 1},
		{Workload: Workload{Mix: wl.Mix}, Clients: 1, Requests: 1},
		{Workload: Workload{Keys: 1}, Clients: 1, Requests: 1},
	} {
		if _, err := Run(context.Background(), cfg, nil, &memRecorder{}); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

func TestKeys(t *testing.T) {
	for _, dist := range []KeyDist{{}, {Zipf: true, S: 1.1}} {
		wl := testWorkload(t, "get")
		wl.KeyDist = dist
		g := wl.generator(1, 0, nil)
		counts := map[string]int{}
		for range 10000 {
			counts[g.next().Key]++
		}
		for k := range counts {
			if !slices.Contains(allKeys(100), k) {
				t.Fatalf("%v: key %q outside the key space", dist, k)
			}
		}
		hottest := slices.MaxFunc(allKeys(100), func(a, b string) int { return counts[a] - counts[b] })
		if dist.Zipf && hottest != "key:0" {
			t.Errorf("zipf: hottest key %s, want key:0", hottest)
		}
		if !dist.Zipf && (len(counts) != 100 || counts[hottest] > 200) {
			t.Errorf("uniform: %d keys seen, hottest %d times; want all 100 about 100 times", len(counts), counts[hottest])
		}
	}
}

func TestPreload(t *testing.T) {
	sys := &fakeSystem{}
	var dialed, closed atomic.Int64
	wl := testWorkload(t, "get")
	if err := Preload(context.Background(), wl, 1, sys.dialer(&dialed, &closed), 8); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, op := range sys.ops {
		if op.Kind != 1 || len(op.Value) != 64 {
			t.Fatalf("preload op %+v, want a set of 64 bytes", op)
		}
		keys = append(keys, op.Key)
	}
	slices.Sort(keys)
	want := allKeys(100)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("preloaded %d keys, want each of the 100 once", len(keys))
	}
}

func TestCalibrate(t *testing.T) {
	sys := &fakeSystem{do: func(ctx context.Context, op Op) error {
		time.Sleep(time.Millisecond)
		return nil
	}}
	var dialed, closed atomic.Int64
	got, err := Calibrate(context.Background(), testWorkload(t, "get"), sys.dialer(&dialed, &closed), 2, 100*time.Millisecond, 0)
	// Two clients of a 1 ms system cannot exceed 2000/s.
	if err != nil || got <= 0 || got > 2000 {
		t.Errorf("calibrated %v/s, %v; want (0, 2000]", got, err)
	}
	failing := &fakeSystem{do: func(context.Context, Op) error { return errors.New("down") }}
	if _, err := Calibrate(context.Background(), testWorkload(t, "get"), failing.dialer(&dialed, &closed), 2, 20*time.Millisecond, 0); err == nil || !strings.Contains(err.Error(), "down") {
		t.Errorf("calibrating a failing system: err %v", err)
	}
}

func intendedStarts(samples []rundir.Sample) []time.Duration {
	var out []time.Duration
	for _, s := range samples {
		out = append(out, s.Start)
	}
	slices.Sort(out)
	return out
}

func allKeys(n int) []string {
	var out []string
	for k := range n {
		out = append(out, Key(k))
	}
	return out
}

// pipeClient reports, after each request, the hosts it involved: the
// request's own key names them, as a pipeline would.
type pipeClient struct {
	fakeClient
	last []string
}

func (c *pipeClient) Do(ctx context.Context, op Op) error {
	c.last = nil
	if op.Key == "key:1" {
		c.last = []string{"h2", "h9"} // h9 is not a host of the run
	}
	return c.fakeClient.Do(ctx, op)
}

func (c *pipeClient) Involved() []string { return c.last }

// The hosts a client says a request involved are recorded with it, by
// index among the run's hosts, in both loops.
func TestInvolvedHosts(t *testing.T) {
	sys := &fakeSystem{}
	var closed atomic.Int64
	dial := func(int) (Client, uint8, error) {
		return &pipeClient{fakeClient: fakeClient{sys: sys, closed: &closed}}, 0, nil
	}
	for _, cfg := range []Config{
		{Clients: 2, Requests: 400},
		{Rate: 4000, Requests: 400},
	} {
		cfg.Workload, cfg.Seed, cfg.Hosts = Workload{Mix: Mix{{Name: "get", Kind: 0, Weight: 1}}, Keys: 2, ValueSize: 8}, 1, []string{"h0", "h1", "h2"}
		rec := &memRecorder{}
		if _, err := Run(context.Background(), cfg, dial, rec); err != nil {
			t.Fatal(err)
		}
		var with int
		for _, s := range rec.samples {
			switch {
			case s.Involved.Empty():
			case slices.Equal(s.Involved.Hosts(), []uint8{2}):
				with++
			default:
				t.Fatalf("%s: sample involved %v, want none or [2]", cfg.Mode(), s.Involved.Hosts())
			}
		}
		if with == 0 || with == len(rec.samples) {
			t.Errorf("%s: %d of %d samples involved h2, want some but not all", cfg.Mode(), with, len(rec.samples))
		}
	}
}

// TestOpenLoopReportsItsOwnLag drives a system that takes 2 ms a request at
// 2000/s through at most 2 workers: the generator cannot keep its schedule
// (it can send 1000/s), and must say so apart from the latency, with how
// late it sent and how often the in-flight limit held a request back.
func TestOpenLoopReportsItsOwnLag(t *testing.T) {
	sys := &fakeSystem{do: func(ctx context.Context, op Op) error {
		time.Sleep(2 * time.Millisecond)
		return nil
	}}
	var dialed, closed atomic.Int64
	cfg := Config{Workload: testWorkload(t, "get"), Rate: 2000, Requests: 400, MaxInFlight: 2}
	res, err := Run(context.Background(), cfg, sys.dialer(&dialed, &closed), &memRecorder{})
	if err != nil {
		t.Fatal(err)
	}
	lag := res.Lag
	if lag == nil {
		t.Fatal("an open loop reported no lag")
	}
	// 400 requests due in 200 ms take at least 400 ms to send two at a
	// time: the last ones go out about 200 ms late.
	if lag.Sent != 400 || lag.Kept() || lag.P99 < 100*time.Millisecond || lag.Max < lag.P99 {
		t.Errorf("lag %+v: want 400 sent, p99 >= 100ms, schedule not kept", *lag)
	}
	if lag.HeldBack < 300 || lag.MaxInFlight != 2 || lag.Workers != 2 {
		t.Errorf("lag %+v: want >= 300 held back by the limit of 2 workers", *lag)
	}
	g := lag.Record()
	if g.KeptSchedule || !strings.Contains(g.Warning(), "held back") {
		t.Errorf("record %+v warns %q, want a warning naming the held-back requests", g, g.Warning())
	}

	closedRes, err := Run(context.Background(), Config{Workload: testWorkload(t, "get"), Clients: 1, Requests: 10},
		(&fakeSystem{}).dialer(&dialed, &closed), &memRecorder{})
	if err != nil || closedRes.Lag != nil {
		t.Errorf("closed loop: lag %+v, err %v; want none (it has no schedule)", closedRes.Lag, err)
	}
}

// TestOpenLoopKeepsItsSchedule is the other side: a system that answers at
// once, loaded at 200/s, leaves the generator on schedule; its lag is
// measured for every request and nothing is held back.
func TestOpenLoopKeepsItsSchedule(t *testing.T) {
	var dialed, closed atomic.Int64
	cfg := Config{Workload: testWorkload(t, "get"), Rate: 200, Requests: 100}
	res, err := Run(context.Background(), cfg, (&fakeSystem{}).dialer(&dialed, &closed), &memRecorder{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Lag == nil || res.Lag.Sent != 100 || res.Lag.HeldBack != 0 || res.Lag.MaxInFlight != DefaultMaxInFlight {
		t.Fatalf("lag %+v, want 100 sent, none held back", res.Lag)
	}
	// A shared 2-core machine may delay a wake-up now and then, so the
	// bound here is loose; the 1 ms tolerance is for the p99 on a real run.
	if res.Lag.P50 > 20*time.Millisecond {
		t.Errorf("median send lateness %v at 200/s with an instant system", res.Lag.P50)
	}
}

// TestModeRate: a calibrated rate is written as people read it, not with
// every digit of a float (73321.09319698153/s).
func TestModeRate(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want string
	}{{73321.09319698153, "open loop, 73321/s poisson"}, {2000, "open loop, 2000/s poisson"}, {12.345, "open loop, 12.3/s poisson"}} {
		if got := (Config{Rate: c.rate, Poisson: true}).Mode(); got != c.want {
			t.Errorf("rate %v: %q, want %q", c.rate, got, c.want)
		}
	}
}

// TestDialBoundedByTimeout: a server that never answers holds a dial for
// the request timeout, not for the driver's own (10 s for Redis).
func TestDialBoundedByTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var closed atomic.Int64
	slow := func(int) (Client, uint8, error) {
		<-release
		return fakeClient{sys: &fakeSystem{}, closed: &closed}, 0, nil
	}
	start := time.Now()
	_, _, err := timedDialer(slow, 50*time.Millisecond)(0)
	if err == nil || !strings.Contains(err.Error(), "no answer within 50ms") {
		t.Errorf("dial of a silent server: %v", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("dial waited %v, want about the 50ms timeout", waited)
	}
}

// TestPreloadErrorCountsItsConnections: a preload's failure counts its own
// connections, not "clients" the user did not ask for.
func TestPreloadErrorCountsItsConnections(t *testing.T) {
	refused := errors.New("connection refused")
	err := firstOf([]error{refused, refused, nil, refused}, "load: preload 10 keys")
	if err == nil || err.Error() != "load: preload 10 keys: connection refused (and 2 more of its 4 connections failed)" {
		t.Errorf("got %v", err)
	}
}

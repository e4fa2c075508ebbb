package load

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/rundir"
)

// TestFanOutPhases: a request of 3 then 2 parallel accesses sends each
// phase at once (3 in flight together), waits for it (never 4 or 5), and
// its latency spans both phases; accesses and requests are recorded apart.
func TestFanOutPhases(t *testing.T) {
	sys := &fakeSystem{do: func(ctx context.Context, op Op) error { time.Sleep(2 * time.Millisecond); return nil }}
	var dialed, closed atomic.Int64
	acc, reqs := &memRecorder{}, &memRecorder{}
	phases, err := ParsePhases("3:get,2:set", testOps)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Workload: testWorkload(t, "get"), Clients: 1, Requests: 10, Shape: Shape{Phases: phases}, RequestRecorder: reqs}
	res, err := Run(context.Background(), cfg, sys.dialer(&dialed, &closed), acc)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs.samples) != 10 || len(acc.samples) != 50 || res.Requests != 50 {
		t.Fatalf("%d requests and %d accesses recorded (result %d); want 10 and 50", len(reqs.samples), len(acc.samples), res.Requests)
	}
	if p := sys.peak.Load(); p != 3 {
		t.Errorf("at most %d accesses in flight; want 3 (the widest phase, one request at a time)", p)
	}
	if dialed.Load() != 3 || closed.Load() != 3 {
		t.Errorf("dialed %d, closed %d clients; want 3 and 3 (a lane per access of the widest phase)", dialed.Load(), closed.Load())
	}
	sets := 0
	for _, s := range acc.samples {
		if s.Op == 1 {
			sets++
		}
	}
	if sets != 20 {
		t.Errorf("%d sets among the accesses; want 20 (the second phase is 2 sets)", sets)
	}
	for _, r := range reqs.samples {
		if r.Latency < 4*time.Millisecond {
			t.Errorf("a request took %v; two phases of 2 ms each take at least 4 ms", r.Latency)
		}
	}
}

// TestFanOutBatchesAndDelay: an open loop of batches of 4 gives every
// request of a batch the same intended start; a delay on 100% of accesses
// shows in every access's latency.
func TestFanOutBatchesAndDelay(t *testing.T) {
	sys := &fakeSystem{}
	var dialed, closed atomic.Int64
	acc, reqs := &memRecorder{}, &memRecorder{}
	cfg := Config{Workload: testWorkload(t, "get"), Rate: 400, Requests: 12,
		Shape: Shape{Phases: []Phase{{Count: 2}}, Batch: 4, Delay: Delay{Share: 1, Delay: 3 * time.Millisecond}}, RequestRecorder: reqs}
	if _, err := Run(context.Background(), cfg, sys.dialer(&dialed, &closed), acc); err != nil {
		t.Fatal(err)
	}
	starts := map[time.Duration]int{}
	for _, r := range reqs.samples {
		starts[r.Start]++
	}
	if len(reqs.samples) != 12 || len(starts) != 3 {
		t.Fatalf("%d requests at %d instants; want 12 at 3", len(reqs.samples), len(starts))
	}
	for at, n := range starts {
		if n != 4 {
			t.Errorf("%d requests at %v; want batches of 4", n, at)
		}
	}
	for _, s := range acc.samples {
		if s.Latency < 3*time.Millisecond {
			t.Errorf("an access took %v with 3 ms added to every access", s.Latency)
		}
	}
}

// TestFanOutBatchDialedBeforeTheRun: a batch larger than the requesters
// dialed by default finds one requester per request from its first
// instant, dialed before the run; none is dialed once accesses are under
// way (that dial would make the batch late).
func TestFanOutBatchDialedBeforeTheRun(t *testing.T) {
	var started atomic.Bool
	sys := &fakeSystem{do: func(ctx context.Context, op Op) error {
		started.Store(true)
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		}
		return nil
	}}
	var dialed, closed atomic.Int64
	good := sys.dialer(&dialed, &closed)
	dial := func(worker int) (Client, uint8, error) {
		if started.Load() {
			return nil, 0, errors.New("dialed while accesses were under way")
		}
		return good(worker)
	}
	const batch = 3 * initialRequesters
	reqs := &memRecorder{}
	cfg := Config{Workload: testWorkload(t, "get"), Rate: 1, Requests: batch,
		Shape: Shape{Phases: []Phase{{Count: 2}}, Batch: batch}, RequestRecorder: reqs}
	res, err := Run(context.Background(), cfg, dial, &memRecorder{})
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs.samples) != batch || res.Lag.Workers != batch {
		t.Errorf("%d requests on %d requesters; want %d on %d", len(reqs.samples), res.Lag.Workers, batch, batch)
	}
}

// TestBatchFindingEveryRequesterBusy: a batch that arrives while the
// last one still holds every requester gets a requester per request,
// not one between them; each waits only for its own accesses.
func TestBatchFindingEveryRequesterBusy(t *testing.T) {
	const service = 300 * time.Millisecond
	sys := slowSystem(service)
	var dialed, closed atomic.Int64
	const batch = 2 * initialRequesters
	reqs := &memRecorder{}
	cfg := Config{Workload: testWorkload(t, "get"), Rate: 1, Duration: time.Minute, RequestRecorder: reqs,
		Shape: Shape{Phases: []Phase{{Count: 1}}, Batch: batch, Trace: []time.Duration{0, 5 * time.Millisecond}}}
	res, err := Run(context.Background(), cfg, sys.dialer(&dialed, &closed), &memRecorder{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs.samples {
		// Queued behind the first batch, a request takes twice the service.
		if r.Latency > service*3/2 {
			t.Errorf("a request intended at %v took %v on %d requesters; its own access takes %v", r.Start, r.Latency, res.Lag.Workers, service)
		}
	}
	if len(reqs.samples) != 2*batch {
		t.Errorf("%d requests; want %d", len(reqs.samples), 2*batch)
	}
}

// TestNextBatchFindsRequestersDialed: requesters are dialed ahead
// while the schedule waits for the next instant, so a batch that finds
// every requester busy is not late by the dials of new ones.
func TestNextBatchFindsRequestersDialed(t *testing.T) {
	const service, dialTime = 200 * time.Millisecond, 50 * time.Millisecond
	sys := slowSystem(service)
	var dialed, closed atomic.Int64
	good := sys.dialer(&dialed, &closed)
	slowDial := func(worker int) (Client, uint8, error) {
		time.Sleep(dialTime)
		return good(worker)
	}
	const batch = initialRequesters
	reqs := &memRecorder{}
	cfg := Config{Workload: testWorkload(t, "get"), Rate: 1, Duration: time.Minute, RequestRecorder: reqs,
		Shape: Shape{Phases: []Phase{{Count: 1}}, Batch: batch, Trace: []time.Duration{0, 100 * time.Millisecond}}}
	res, err := Run(context.Background(), cfg, slowDial, &memRecorder{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs.samples {
		if late := r.Latency - service; late > dialTime*4/5 {
			t.Errorf("a request intended at %v took %v on %d requesters: %v past its access, a dial is %v", r.Start, r.Latency, res.Lag.Workers, late, dialTime)
		}
	}
}

// TestFanOutProgressCountsRequests: the last progress call counts
// requests, as the ones during the run do, not their accesses.
func TestFanOutProgressCountsRequests(t *testing.T) {
	sys := &fakeSystem{}
	var dialed, closed atomic.Int64
	var last Progress
	cfg := Config{Workload: testWorkload(t, "get"), Clients: 2, Requests: 10, RequestRecorder: &memRecorder{},
		Shape: Shape{Phases: []Phase{{Count: 3}, {Count: 2}}}, Progress: func(p Progress) { last = p }}
	if _, err := Run(context.Background(), cfg, sys.dialer(&dialed, &closed), &memRecorder{}); err != nil {
		t.Fatal(err)
	}
	if !last.Final || last.Done != 10 {
		t.Errorf("last progress %+v; want final with the 10 requests done (50 accesses)", last)
	}
}

// TestFanOutTrace: traced instants are the requests' intended starts.
func TestFanOutTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "arrivals")
	os.WriteFile(path, []byte("# instants\n0\n0.01\n30ms\n"), 0o644)
	trace, err := ReadTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	sys := &fakeSystem{}
	var dialed, closed atomic.Int64
	reqs := &memRecorder{}
	cfg := Config{Workload: testWorkload(t, "get"), Rate: 1, Duration: time.Minute, Shape: Shape{Batch: 2, Trace: trace}, RequestRecorder: reqs}
	if _, err := Run(context.Background(), cfg, sys.dialer(&dialed, &closed), &memRecorder{}); err != nil {
		t.Fatal(err)
	}
	var got []time.Duration
	for _, r := range reqs.samples {
		got = append(got, r.Start)
	}
	if len(got) != 6 {
		t.Fatalf("%d requests from 3 traced instants in batches of 2; want 6", len(got))
	}
	for _, at := range got {
		if at != 0 && at != 10*time.Millisecond && at != 30*time.Millisecond {
			t.Errorf("a request intended at %v; the trace says 0, 10ms, 30ms", at)
		}
	}
}

// TestShapeBadInput: each bad shape is one error naming its field, before
// anything runs.
func TestShapeBadInput(t *testing.T) {
	get := testWorkload(t, "get").Mix
	for _, c := range []struct {
		spec  func(*Spec)
		field string
	}{
		{func(s *Spec) { s.Shape.Phases = []Phase{} }, "phases"},
		{func(s *Spec) { s.Shape.Phases = []Phase{{Count: 0}} }, "phases"},
		{func(s *Spec) { s.Shape.Phases = []Phase{{Count: MaxPhaseWidth + 1}} }, "phases"},
		{func(s *Spec) { s.Shape.Batch = 20; s.Requests = 10; s.Rate = Rate{PerSecond: 10} }, "batch"},
		{func(s *Spec) { s.Shape.Batch = 2 }, "batch"}, // closed loop
		{func(s *Spec) { s.Shape.Delay = Delay{Share: 1.5, Delay: time.Millisecond} }, "delay"},
		{func(s *Spec) { s.Shape.Delay = Delay{Share: -0.1} }, "delay"},
		{func(s *Spec) { s.Shape.Phases = []Phase{{Count: 2}}; s.Rate = Rate{Share: 0.5} }, "rate"},
	} {
		s := NewSpec()
		s.Mix = get
		c.spec(&s)
		_, err := s.Resolve()
		var se *SpecError
		if !errors.As(err, &se) || se.Field != c.field {
			t.Errorf("want an error on %s, got %v", c.field, err)
		}
	}
	for _, bad := range []string{"", "30,", "0", "-1", "30,x", "4:nosuchop", "2000"} {
		if _, err := ParsePhases(bad, testOps); err == nil {
			t.Errorf("phases %q: no error", bad)
		}
	}
	for _, bad := range []string{"2", "2%", "101%:1ms", "-1%:1ms", "2%:-1ms", "x%:1ms", "2%:soon"} {
		if _, err := ParseDelay(bad); err == nil {
			t.Errorf("delay %q: no error", bad)
		}
	}
	path := filepath.Join(t.TempDir(), "arrivals")
	for _, bad := range []string{"", "1\n0.5\n", "soon\n", "-1\n"} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, err := ReadTrace(path); err == nil || !strings.Contains(err.Error(), "arrivals") {
			t.Errorf("trace %q: want an arrivals error, got %v", bad, err)
		}
	}
}

// TestMeasureKeepsRequestsInside: a measurement of requests leaves the
// accesses' run directory with the requests' run directory inside it.
func TestMeasureKeepsRequestsInside(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	sys := &fakeSystem{}
	var dialed, closed atomic.Int64
	s := NewSpec()
	s.Mix, s.Keys, s.Preload = testWorkload(t, "get").Mix, 10, false
	s.Clients, s.Requests = 2, 20
	s.Shape = Shape{Phases: []Phase{{Count: 3}, {Count: 2}}}
	s, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Measure(context.Background(), Measurement{Spec: s, Dial: sys.dialer(&dialed, &closed), Ops: testOps, Write: "set", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	req, err := rundir.Open(filepath.Join(dir, RequestsDir))
	if err != nil {
		t.Fatal(err)
	}
	if acc.Len() != 100 || req.Len() != 20 {
		t.Errorf("%d accesses and %d requests; want 100 and 20", acc.Len(), req.Len())
	}
	if _, err := os.Stat(dir + requestsSuffix); !os.IsNotExist(err) {
		t.Errorf("the requests' directory is left beside the run: %v", err)
	}
}

// TestWarmUp: a warm-up drives the workload, preloading what it reads
// first, and records nothing; a warm-up in which nothing succeeds says so.
func TestWarmUp(t *testing.T) {
	sys := &fakeSystem{do: func(ctx context.Context, op Op) error {
		time.Sleep(100 * time.Microsecond)
		return nil
	}}
	var dialed, closed atomic.Int64
	s := NewSpec()
	s.Mix, s.Keys = testWorkload(t, "get").Mix, 10
	s.Clients = 2
	s, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	m := Measurement{Spec: s, Dial: sys.dialer(&dialed, &closed), Ops: testOps, Write: "set"}
	if err := WarmUp(context.Background(), m, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	sets, gets := 0, 0
	for _, op := range sys.ops {
		if testOps[op.Kind] == "set" {
			sets++
		} else {
			gets++
		}
	}
	if sets != 10 || gets == 0 {
		t.Errorf("warm-up: %d sets (want the 10 keys preloaded) and %d gets", sets, gets)
	}
	sys.do = func(_ context.Context, op Op) error {
		if testOps[op.Kind] == "get" {
			return errors.New("refused")
		}
		return nil
	}
	if err := WarmUp(context.Background(), m, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "warm-up") {
		t.Errorf("a warm-up where every request fails: %v, want a warm-up error", err)
	}
}

package chapter6

import (
	"context"
	"math"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gait-dev/gait/internal/gaitbin"
	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/model"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/testbed"
)

func TestParseMixes(t *testing.T) {
	got, err := ParseMixes("1x4, 2x2,4x1")
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Config{{Duplicates: 1, Replicas: 4}, {Duplicates: 2, Replicas: 2}, {Duplicates: 4, Replicas: 1}}
	if !slices.Equal(got, want) {
		t.Errorf("ParseMixes = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "4", "0x4", "2x", "ax2", "1x-1", "16x16"} {
		if _, err := ParseMixes(bad); err == nil {
			t.Errorf("ParseMixes(%q) accepted", bad)
		}
	}
}

func TestCheckRefusesBadInput(t *testing.T) {
	ok := Study{System: mustSystem(t, "gait-redis"), Mixes: []model.Config{{Duplicates: 1, Replicas: 1}}, CPUs: 0.4, Loads: []float64{0.08},
		ServiceTime: time.Second, ServiceRate: 100, Duration: time.Second}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		edit func(*Study)
		want string
	}{
		"no system":   {func(s *Study) { s.System = systems.System{} }, "--system"},
		"no mix":      {func(s *Study) { s.Mixes = nil }, "--mixes"},
		"no cpus":     {func(s *Study) { s.CPUs = 0 }, "--cpus"},
		"no rate":     {func(s *Study) { s.Loads = nil }, "--load, --rate or --delays"},
		"load 1":      {func(s *Study) { s.Loads = []float64{1} }, "--load 1"},
		"no service":  {func(s *Study) { s.ServiceTime = 0 }, "--service-time"},
		"bad rate":    {func(s *Study) { s.Loads, s.Rates = nil, []float64{-1} }, "--rate -1"},
		"no time":     {func(s *Study) { s.Duration = 0 }, "--duration"},
		"pin past":    {func(s *Study) { s.PinCPUs = runtime.NumCPU() + 1 }, "--pin"},
		"pin < 0":     {func(s *Study) { s.PinCPUs = -1 }, "--pin"},
		"warmup < 0":  {func(s *Study) { s.Warmup = -time.Second }, "--warmup"},
		"no svc rate": {func(s *Study) { s.ServiceRate = 0 }, "--service-rate"},
	} {
		s := ok
		c.edit(&s)
		if err := s.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Check = %v, want an error naming %s", name, err, c.want)
		}
	}
}

// TestSinglesKeepTheRequestsOps: the service-time run of Gridlab-D's
// requests reads and writes in their proportion (4 to 3), each as the
// system's own operation (ZooKeeper's get and set are not Redis's first
// two).
func TestSinglesKeepTheRequestsOps(t *testing.T) {
	p, err := load.FindPreset("gridlabd")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Systems {
		sys := mustSystem(t, name)
		s, err := p.Shape(sys.Ops, sys.Write)
		if err != nil {
			t.Fatal(err)
		}
		get, set := uint8(slices.Index(sys.Ops, "get")), uint8(slices.Index(sys.Ops, "set"))
		got := singles(sys, s)
		if len(got) != 2 || got[0].Name != "set" || got[0].Kind != set || got[0].Weight != 3 ||
			got[1].Name != "get" || got[1].Kind != get || got[1].Weight != 4 {
			t.Errorf("%s: singles(gridlabd) = %v, want set (kind %d):3 and get (kind %d):4", name, got, set, get)
		}
		if got := singles(sys, load.Shape{}); len(got) != 1 || got[0].Name != "get" || got[0].Kind != get {
			t.Errorf("%s: singles(single accesses) = %v, want get (kind %d)", name, got, get)
		}
	}
}

// TestLookupSystemTakesTheAgentsServers: a study deploys the servers
// gait's agents front and no other system.
func TestLookupSystemTakesTheAgentsServers(t *testing.T) {
	for _, name := range Systems {
		if _, err := LookupSystem(name); err != nil {
			t.Errorf("LookupSystem(%q): %v", name, err)
		}
	}
	for _, bad := range []string{"", "redis", "zookeeper", "etcd"} {
		if _, err := LookupSystem(bad); err == nil || !strings.Contains(err.Error(), "gait-zookeeper") {
			t.Errorf("LookupSystem(%q) = %v, want an error naming the systems", bad, err)
		}
	}
}

// TestPointsOfOneSystem: a points file holds one system's points, since
// its service runs predict its other points; points written before the
// system was recorded read as gait-redis's.
func TestPointsOfOneSystem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "points.jsonl")
	if err := CheckAppend(path, "gait-zookeeper"); err != nil {
		t.Fatalf("no file yet: %v", err)
	}
	if err := Append(path, Point{Mix: model.Config{Duplicates: 1, Replicas: 1}}); err != nil {
		t.Fatal(err)
	}
	ps, err := ReadPoints(path)
	if err != nil || len(ps) != 1 || ps[0].System != "gait-redis" {
		t.Fatalf("ReadPoints = %v, %v; want one point of gait-redis", ps, err)
	}
	if err := CheckAppend(path, "gait-redis"); err != nil {
		t.Errorf("CheckAppend(gait-redis) on gait-redis's points: %v", err)
	}
	if err := CheckAppend(path, "gait-zookeeper"); err == nil || !strings.Contains(err.Error(), "gait-redis") {
		t.Errorf("CheckAppend(gait-zookeeper) on gait-redis's points = %v, want an error naming gait-redis", err)
	}
	if err := Append(path, Point{System: "gait-zookeeper"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPoints(path); err == nil || !strings.Contains(err.Error(), path+":2") {
		t.Errorf("ReadPoints of two systems' points = %v, want an error at %s:2", err, path)
	}
}

func mustSystem(t *testing.T, name string) systems.System {
	t.Helper()
	sys, err := LookupSystem(name)
	if err != nil {
		t.Fatal(err)
	}
	return sys
}

// TestRowsPredictFromTheServiceRun: points written and read back are
// paired with the model's answer from the service run of a one-duplicate
// mix; a measured point drawn from the model's own system (exponential
// service, one server, single accesses) agrees with the simulator at its
// percentiles within sampling error.
func TestRowsPredictFromTheServiceRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	exp := func(n int, mean float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = rng.ExpFloat64() * mean
		}
		slices.Sort(out)
		return out
	}
	mix := model.Config{Duplicates: 1, Replicas: 1}
	// M/M/1 at utilization 0.5: the response time is exponential with
	// mean 2 x the service mean.
	svc := Point{Mix: mix, Study: "single", Service: true, Accesses: exp(20000, 1e-3)}
	meas := Point{Mix: mix, Study: "single", Rate: 500, Requests: exp(20000, 2e-3)}
	path := filepath.Join(t.TempDir(), "points.jsonl")
	for _, p := range []Point{svc, meas} {
		if err := Append(path, p); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := ReadPoints(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := Rows(ps, 200000, Latency)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	r := rows[0]
	if math.Abs(r.Utilization-0.5) > 0.02 {
		t.Errorf("utilization %.3f, want 0.5", r.Utilization)
	}
	for i, s := range Shares {
		if math.Abs(r.SimShares[i]-s) > 0.02 || math.Abs(r.Predicted[i]-s) > 0.02 {
			t.Errorf("at the measured p%g: simulated %.4f, predicted %.4f", 100*s, r.SimShares[i], r.Predicted[i])
		}
	}
	caps, err := Capacities(rows, model.Target{SLA: 0.99, Bound: 20e-3})
	if err != nil {
		t.Fatal(err)
	}
	// p99 of an exponential of mean 2 ms is 9.2 ms: 500/s meets 99% within
	// 20 ms; the plan for M/M/1 is 1000 - ln(100)/0.02 = 770/s.
	if len(caps) != 1 || caps[0].Measured != 500 || math.Abs(caps[0].Planned-770) > 40 {
		t.Errorf("capacities %+v, want measured 500/s and planned about 770/s", caps)
	}
	if _, err := Rows([]Point{meas}, 1000, Latency); err == nil {
		t.Error("Rows without a service run accepted")
	}
}

// TestWorkBasisSplitsTheAccess: with the hosts' CPU measured, the model
// queues the work per access (beyond the idle use) and draws the rest of
// each access's latency as network delay.
func TestWorkBasisSplitsTheAccess(t *testing.T) {
	svc := Point{Mix: model.Config{Duplicates: 1, Replicas: 4}, Service: true, Accesses: []float64{0.3e-3, 0.5e-3, 1e-3, 2e-3},
		HostCPU: 1.5, IdleCPU: 0.1, Elapsed: 10}
	if w := svc.WorkPerAccess(); math.Abs(w-0.125) > 1e-12 {
		t.Fatalf("work per access %g, want (1.5 - 0.1 x 10) / 4 = 0.125", w)
	}
	svc.HostCPU = 1.0 + 4*0.2e-3
	sys, _, err := Work.system(Point{Rate: 1}, svc)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := sys.Service.(model.Constant); !ok || math.Abs(c.V-0.2e-3) > 1e-12 {
		t.Errorf("service %v, want the constant 200µs", sys.Service)
	}
	if m := sys.Net.Mean(); math.Abs(m-(0.1e-3+0.3e-3+0.8e-3+1.8e-3)/4) > 1e-12 {
		t.Errorf("network mean %g, want the latencies less the work", m)
	}
	svc.HostCPU = 0
	if _, _, err := Work.system(Point{Rate: 1}, svc); err == nil {
		t.Error("a service run without the hosts' CPU accepted for the work basis")
	}
}

// TestSlowdowns: Figure 2's points give the time a step gained over the
// run without delay, beside what the mean and the fan-out expect.
func TestSlowdowns(t *testing.T) {
	mix := model.Config{Duplicates: 1, Replicas: 2}
	req := model.Request{Phases: []int{4, 3}}
	steps := func(delay, elapsed float64) Point {
		return Point{Mix: mix, Request: req, DelayShare: 0.02, Delay: delay, Elapsed: elapsed, Requests: make([]float64, 100)}
	}
	// Runs without delay before and after the delayed one: 10 and 12 ms a
	// step, so the base is 11 ms.
	got := Slowdowns([]Point{steps(0, 1), steps(0.05, 2), steps(0, 1.2), {Mix: mix, Rate: 5, Requests: []float64{1}}})
	if len(got) != 3 {
		t.Fatalf("%d slowdowns, want 3 (the point without a delay share is not one)", len(got))
	}
	d := got[1]
	fan := (1-math.Pow(0.98, 4))*0.05 + (1-math.Pow(0.98, 3))*0.05
	if math.Abs(d.Extra-0.009) > 1e-12 || math.Abs(d.ExpectedMean-2*0.02*0.05) > 1e-12 || math.Abs(d.ExpectedFanOut-fan) > 1e-12 {
		t.Errorf("slowdown %+v, want extra 9 ms per step over the two bases' 11, expected 2ms from the mean and %.4g from the fan-out", d, fan)
	}
	if math.Abs(got[0].Extra+0.001) > 1e-12 || math.Abs(got[2].Extra-0.001) > 1e-12 {
		t.Errorf("the bases' extras %.4g and %.4g, want -1 and +1 ms (their spread about their mean)", got[0].Extra, got[2].Extra)
	}
}

// TestStudyRefusesBadDelays: Figure 2's flags are checked before anything
// starts.
func TestStudyRefusesBadDelays(t *testing.T) {
	ok := Study{System: mustSystem(t, "gait-zookeeper"), Mixes: []model.Config{{Duplicates: 1, Replicas: 1}}, CPUs: 0.4, Duration: time.Second,
		Delays: []time.Duration{0, 5 * time.Millisecond}, DelayShare: 0.02, Steps: 10}
	if err := ok.Check(); err != nil {
		t.Fatalf("good study refused: %v", err)
	}
	for name, s := range map[string]Study{
		"share above 100%": func() Study { s := ok; s.DelayShare = 1.5; return s }(),
		"no steps":         func() Study { s := ok; s.Steps = 0; return s }(),
		"with a rate":      func() Study { s := ok; s.Rates = []float64{1}; return s }(),
		"negative delay":   func() Study { s := ok; s.Delays = []time.Duration{-time.Millisecond}; return s }(),
	} {
		if err := s.Check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestPinThreadsSetsEveryThread: a running process's threads all get the
// CPU asked for (a child of several threads, read back from the kernel).
func TestPinThreadsSetsEveryThread(t *testing.T) {
	cpu := runtime.NumCPU() - 1
	// python3 is in the machine's kind (README); a thread beside the main one.
	cmd := exec.Command("python3", "-c", "import threading,time; threading.Thread(target=time.sleep, args=(30,)).start(); time.sleep(30)")
	if err := cmd.Start(); err != nil {
		t.Skip("no python3:", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// Its second thread starts once python3 is up: seconds on a busy machine.
	var tasks []string
	for deadline := time.Now().Add(20 * time.Second); len(tasks) < 2 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		tasks, _ = filepath.Glob("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task/*")
	}
	if len(tasks) < 2 {
		t.Fatalf("threads of the child after 20 s: %v", tasks)
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := pinThreads(cmd.Process.Pid, &set); err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(filepath.Base(task))
		var got unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &got); err != nil {
			t.Fatal(err)
		}
		if got.Count() != 1 || !got.IsSet(cpu) {
			t.Errorf("thread %d: %d CPUs, CPU %d set %v; want only CPU %d", tid, got.Count(), cpu, got.IsSet(cpu), cpu)
		}
	}
}

// TestStudyOnTestbed runs a small Olio study on each of Systems, two
// duplicates (2x1: every read fanned out by the agents) on two testbed
// hosts: every access of every request is served by the real servers
// behind gait's agents, and a request takes at least its two phases'
// fastest accesses.
// (Rows from such points: TestRowsPredictFromTheServiceRun.)
func TestStudyOnTestbed(t *testing.T) {
	if testing.Short() {
		t.Skip("deploys gait-redis and gait-zookeeper on testbed hosts")
	}
	if err := testbed.NeedRoot(); err != nil {
		t.Skip(err)
	}
	bin, cleanup, err := gaitbin.Build()
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	preset, err := load.FindPreset("olio")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Systems {
		t.Run(name, func(t *testing.T) {
			sys := mustSystem(t, name)
			if drv, ok := sys.New().(interface{ Check() error }); ok {
				if err := drv.Check(); err != nil {
					t.Skip(err)
				}
			}
			shape, err := preset.Shape(sys.Ops, sys.Write)
			if err != nil {
				t.Fatal(err)
			}
			var points []Point
			st := Study{Gait: bin, System: sys, CPUs: 0.5, Mixes: []model.Config{{Duplicates: 2, Replicas: 1}}, Shape: shape,
				Rates: []float64{4}, ServiceRate: 100, Warmup: time.Second, ServiceTime: 2 * time.Second, Duration: 5 * time.Second, Requests: 8, Seed: 1,
				Measured: func(p Point) error { points = append(points, p); return nil }}
			if err := st.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if len(points) != 2 {
				t.Fatalf("%d points, want the service run and the requests", len(points))
			}
			for i, p := range points {
				if p.Service != (i%2 == 0) {
					t.Fatalf("point %d of %s: service run %v, want the service run first", i, MixName(p.Mix), p.Service)
				}
				if p.Service {
					if p.WorkPerAccess() <= 0 {
						t.Errorf("%s: the service run measured no work per access on the hosts", MixName(p.Mix))
					}
					continue
				}
				if p.System != name || p.Failed != 0 || len(p.Requests) != 8 || len(p.Accesses) != 50*len(p.Requests) {
					t.Fatalf("%s: system %q, %d requests (%d failed), %d accesses; want 8 requests of 50 accesses, none failed",
						MixName(p.Mix), p.System, len(p.Requests), p.Failed, len(p.Accesses))
				}
				if p.Requests[0] < 2*p.Accesses[0] {
					t.Errorf("%s: fastest request %.3g s, below its two phases' fastest access %.3g s each", MixName(p.Mix), p.Requests[0], p.Accesses[0])
				}
			}
		})
	}
}

// TestWorkTextBelowIdle: a run whose hosts used less CPU than their idle
// rate accounts for says so, rather than a work of 0 s.
func TestWorkTextBelowIdle(t *testing.T) {
	p := Point{HostCPU: 9.5, IdleCPU: 0.25, Elapsed: 40, Accesses: []float64{0.001, 0.002}}
	if got := workText(p); !strings.Contains(got, "not told from their idle use (9.50 CPU-s in the run, 10.00 idle)") {
		t.Errorf("workText = %q", got)
	}
	p.HostCPU = 12
	if got := workText(p); got != "1s" {
		t.Errorf("workText with 2 CPU-s over idle for 2 accesses = %q, want 1s", got)
	}
}

// TestTriedText: the rates a mix tried read from the lowest, as text the
// report wraps, whatever order the study ran them in.
func TestTriedText(t *testing.T) {
	c := Capacity{Tried: []float64{400, 3200, 1600}, P99s: []float64{0.00063, 0.00087, 0.0006}}
	want := "at 400/s 0.63 ms, at 1600/s 0.60 ms, at 3200/s 0.87 ms"
	if got := triedText(c); got != want {
		t.Errorf("triedText = %q, want %q", got, want)
	}
}

// TestPlanAtTheHostsShare: a host of half a CPU plans as a server whose
// every access takes twice its work: M/D/1 at 1 ms of work plans below
// its 500/s capacity, about half the rate of a whole CPU, and a host
// without a share (0) plans as a whole CPU.
func TestPlanAtTheHostsShare(t *testing.T) {
	mix := model.Config{Duplicates: 1, Replicas: 1}
	planned := func(cpus float64) float64 {
		row := Row{Point: Point{Mix: mix, Study: "single", Rate: 100, CPUs: cpus, Requests: []float64{1e-3}},
			sys: model.System{Service: model.Constant{V: 1e-3}}}
		caps, err := Capacities([]Row{row}, model.Target{SLA: 0.99, Bound: 20e-3})
		if err != nil {
			t.Fatal(err)
		}
		return caps[0].Planned
	}
	half, whole, unset := planned(0.5), planned(1), planned(0)
	if half >= 500 || half > 0.6*whole || half < 0.3*whole {
		t.Errorf("half a CPU planned %.0f/s, a whole one %.0f/s: want under 500/s and about half", half, whole)
	}
	if unset != whole {
		t.Errorf("hosts without a share planned %.0f/s, want a whole CPU's %.0f/s", unset, whole)
	}
}

// TestPredictionRows: the report's table of the model's answer puts each
// measured percentile as the bound, with the predicted and simulated
// shares and their errors against the measured share.
func TestPredictionRows(t *testing.T) {
	r := Row{Point: Point{Mix: model.Config{Duplicates: 2, Replicas: 1}, Rate: 16},
		Bounds: []float64{2e-3, 3e-3, 5e-3}, Predicted: []float64{0.6, 0.88, 0.995}, SimShares: []float64{0.55, 0.9, 0.99}}
	got := predictionRows([]Row{r, {Point: Point{Rate: 1}}})
	want := [][]string{
		{"2x1", "16", "p50", "2.00", "60.00%", "+0.1000", "55.00%", "+0.0500"},
		{"2x1", "16", "p90", "3.00", "88.00%", "-0.0200", "90.00%", "+0.0000"},
		{"2x1", "16", "p99", "5.00", "99.50%", "+0.0050", "99.00%", "+0.0000"},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("got %q, want %q", got, want)
	}
}

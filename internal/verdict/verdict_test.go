package verdict

import (
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
)

func lat(n int, mean float64) Latency { return Latency{N: n, Mean: mean} }

// ramp is a series rising by step a second, with a wobble of ±w.
func ramp(n int, step, w float64) ([]float64, []float64) {
	t, v := make([]float64, n), make([]float64, n)
	for i := range n {
		t[i] = float64(i)
		v[i] = step*float64(i) + w*float64(1-2*(i%2))
	}
	return t, v
}

func TestJudge(t *testing.T) {
	o := Defaults()
	readsOnFollowers := func(now1, now2 float64) []Group {
		return []Group{
			{Op: "get", Node: "follower 1, clients", Base: lat(5000, 0.002), Now: lat(5000, now1)},
			{Op: "get", Node: "follower 2, clients", Base: lat(5000, 0.002), Now: lat(5000, now2)},
		}
	}
	rt, rv := ramp(20, 50, 3)
	ft, fv := ramp(20, 0, 3)
	cases := []struct {
		name       string
		in         Input
		want       []string
		whySubstrs []string // each must appear in some reason
	}{
		{"nothing slowed", Input{Groups: readsOnFollowers(0.0021, 0.0019), BaseThroughput: 2000, Throughput: 1900},
			nil, []string{"no node limplock: the slowest, get on the follower 1, clients: mean 2.1ms against 2ms in the baseline, 1.05x, is within 5x",
				"no operation limplock: no operations that involve the limping component to compare",
				"no cluster limplock: throughput 1900/s is 95% of the baseline's 2000/s (threshold 20%)"}},
		{"writes through a slow leader", Input{
			Groups:         []Group{{Op: "put", Node: "follower 1, clients", Involved: true, Base: lat(4000, 0.004), Now: lat(100, 0.19)}},
			BaseThroughput: 2000, Throughput: 43},
			[]string{"OL", "CL"}, []string{"operation limplock: put on the follower 1, clients: mean 190ms against 4ms in the baseline, 47.50x, over the 5x threshold",
				"cluster limplock: throughput 43/s against 2000/s in the baseline, 2%, under the 20% threshold; 100% of the clients' time went to operations that involve the limping component"}},
		// C3: a closed loop of puts through a slow replica and gets that
		// keep their pace; the clients wait on the puts.
		{"a closed loop held by its slow operations", Input{
			Groups: []Group{{Op: "put", Node: "coordinator, clients", Involved: true, Base: lat(1700, 0.015), Now: lat(50, 0.85)},
				{Op: "get", Node: "coordinator, clients", Base: lat(1700, 0.009), Now: lat(45, 0.005)}},
			BaseThroughput: 670, Throughput: 16},
			[]string{"OL", "CL"}, []string{"no node limplock", "2%, under the 20% threshold; 99% of the clients' time went to operations that involve the limping component"}},
		{"just at the threshold is not slow", Input{
			Groups:         []Group{{Op: "put", Node: "leader", Involved: true, Base: lat(4000, 0.004), Now: lat(4000, 0.020)}},
			BaseThroughput: 2000, Throughput: 1000},
			nil, []string{"within 5x"}},
		{"one healthy follower slowed: node limplock only", Input{Groups: readsOnFollowers(0.02, 0.002), BaseThroughput: 2000, Throughput: 1500},
			[]string{"NL"}, []string{"node limplock: get on the follower 1, clients: mean 20ms against 2ms in the baseline, 10.00x"}},
		{"every healthy member in node limplock", Input{Groups: readsOnFollowers(0.02, 0.03), BaseThroughput: 2000, Throughput: 1500},
			[]string{"NL", "CL"}, []string{"cluster limplock: all 2 healthy members the clients use are in node limplock"}},
		{"one member observed cannot be every member", Input{
			Groups:         []Group{{Op: "get", Node: "follower, clients", Base: lat(5000, 0.002), Now: lat(5000, 0.02)}},
			BaseThroughput: 2000, Throughput: 1500},
			[]string{"NL"}, []string{"no cluster limplock"}},
		{"too few baseline requests to judge", Input{
			Groups:         []Group{{Op: "put", Node: "leader", Involved: true, Base: lat(5, 0.001), Now: lat(5, 1)}},
			BaseThroughput: 2000, Throughput: 1900},
			nil, []string{"no operation limplock: no operations that involve the limping component to compare (each needs 20 baseline requests)"}},
		{"no request completed under the fault", Input{
			Groups:         []Group{{Op: "put", Node: "leader", Involved: true, Base: lat(5000, 0.001), Now: lat(0, 0)}},
			BaseThroughput: 2000, Throughput: 0},
			[]string{"CL"}, []string{"throughput 0/s"}},
		{"empty baseline", Input{}, nil, []string{"no cluster limplock: the baseline completed no requests"}},
		// Z5: the backlog fills the leader's heap halfway through; the
		// whole run keeps half the baseline's throughput, its last third 4%.
		{"collapse late in the run", Input{Groups: readsOnFollowers(0.003, 0.003), BaseThroughput: 80, Throughput: 40, TailThroughput: ptr(3.2)},
			[]string{"CL"}, []string{"cluster limplock: throughput fell to 3.2/s in the last third of the run (40/s over the whole run) against 80/s in the baseline, 4%, under the 20% threshold"}},
		{"a steady last third is no collapse", Input{Groups: readsOnFollowers(0.003, 0.003), BaseThroughput: 80, Throughput: 40, TailThroughput: ptr(38)},
			nil, []string{"no cluster limplock: throughput 40/s is 50% of the baseline's 80/s"}},
		{"hidden backlog", Input{Groups: readsOnFollowers(0.002, 0.002), BaseThroughput: 2000, Throughput: 2000,
			Backlogs: []Series{{Metric: "zk_outstanding_requests", Node: "leader, fault", T: rt, V: rv, BaseMax: 4}}},
			[]string{"backlog"}, []string{"hidden backlog: zk_outstanding_requests on the leader, fault rose 949 over the run (50/s"}},
		{"backlog under a visible limplock is not hidden", Input{Groups: readsOnFollowers(0.02, 0.002), BaseThroughput: 2000, Throughput: 2000,
			Backlogs: []Series{{Metric: "lag", Node: "follower 3", T: rt, V: rv}}},
			[]string{"NL"}, []string{"not hidden: lag on the follower 3 rose"}},
		{"flat queue", Input{Groups: readsOnFollowers(0.002, 0.002), BaseThroughput: 2000, Throughput: 2000,
			Backlogs: []Series{{Metric: "lag", Node: "follower 3", T: ft, V: fv}}},
			nil, []string{"no backlog"}},
		{"a rise within the baseline's peak is no backlog", Input{Groups: readsOnFollowers(0.002, 0.002), BaseThroughput: 2000, Throughput: 2000,
			Backlogs: []Series{{Metric: "lag", Node: "follower 3", T: rt, V: rv, BaseMax: 600}}},
			nil, []string{"no backlog"}},
		{"too short a series", Input{Groups: readsOnFollowers(0.002, 0.002), BaseThroughput: 2000, Throughput: 2000,
			Backlogs: []Series{{Metric: "lag", Node: "follower 3", T: rt[:4], V: rv[:4]}}},
			nil, []string{"no backlog"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Judge(c.in, o)
			if v.Warning != "" {
				t.Errorf("warning %q", v.Warning)
			}
			if got := v.Marks(); !slices.Equal(got, c.want) {
				t.Errorf("marks %v, want %v\n%+v", got, c.want, v)
			}
			all := []string{v.Operation.Why, v.Node.Why, v.Cluster.Why, v.Backlog.Why}
			for _, w := range all {
				if w == "" || strings.Contains(w, "\n") {
					t.Errorf("reason %q: want one sentence", w)
				}
			}
			for _, sub := range c.whySubstrs {
				if !slices.ContainsFunc(all, func(w string) bool { return strings.Contains(w, sub) }) {
					t.Errorf("no reason says %q:\n  %s", sub, strings.Join(all, "\n  "))
				}
			}
		})
	}
}

func TestBaselineWarning(t *testing.T) {
	for _, c := range []struct {
		name string
		in   Input
		want string
	}{
		{"throughput far over the baseline's", Input{BaseThroughput: 1, Throughput: 134},
			"the baseline looks broken: this step's throughput 134/s is 134.0x the baseline's 1/s"},
		{"every group far faster", Input{BaseThroughput: 100, Throughput: 300, Groups: []Group{
			{Op: "set", Node: "follower", Base: lat(100, 5), Now: lat(100, 0.05)},
			{Op: "set", Node: "leader", Involved: true, Base: lat(100, 5), Now: lat(100, 0.5)}}},
			"the baseline looks broken: every group is over 5x faster than in the baseline (set on the follower: mean 50ms against 5s in the baseline, 0.01x)"},
		{"one group as slow as before", Input{BaseThroughput: 100, Throughput: 300, Groups: []Group{
			{Op: "set", Node: "follower", Base: lat(100, 5), Now: lat(100, 0.05)},
			{Op: "set", Node: "leader", Involved: true, Base: lat(100, 5), Now: lat(100, 5)}}}, ""},
	} {
		if got := Judge(c.in, Defaults()).Warning; got != c.want {
			t.Errorf("%s: warning %q, want %q", c.name, got, c.want)
		}
	}
}

func TestFit(t *testing.T) {
	x, y := ramp(30, 2, 0)
	tr, ok := Fit(x, y)
	if !ok || math.Abs(tr.Slope-2) > 1e-9 || math.Abs(tr.Rise-58) > 1e-9 || tr.P != 0 {
		t.Errorf("exact line: %+v %v", tr, ok)
	}
	// A falling line is not significant upward.
	for i := range y {
		y[i] = -y[i]
	}
	if tr, _ := Fit(x, y); tr.P != 1 {
		t.Errorf("falling exact line: p %g, want 1", tr.P)
	}
	// Noise around a flat line: the slope's p-value is large.
	x, y = ramp(30, 0, 5)
	if tr, _ := Fit(x, y); tr.P < 0.2 {
		t.Errorf("alternating noise: %+v, want an insignificant slope", tr)
	}
	// A weak rise buried in noise of ±5 over 10 points: 0.1/s is not significant.
	x, y = ramp(10, 0.1, 5)
	if tr, _ := Fit(x, y); tr.P < o().Alpha {
		t.Errorf("weak rise in noise: %+v, want p over %g", tr, o().Alpha)
	}
	for _, bad := range [][2][]float64{{{1, 2}, {1, 2}}, {{1, 1, 1}, {1, 2, 3}}, {{1, 2, 3}, {1, 2}}} {
		if _, ok := Fit(bad[0], bad[1]); ok {
			t.Errorf("Fit(%v, %v) fitted", bad[0], bad[1])
		}
	}
}

func o() Options { return Defaults() }

func TestOptionsCheck(t *testing.T) {
	if err := Defaults().Check(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		set  func(*Options)
		want string
	}{
		{func(o *Options) { o.Slow = 1 }, "slow threshold 1"},
		{func(o *Options) { o.Slow = math.NaN() }, "slow threshold NaN"},
		{func(o *Options) { o.Collapse = 1 }, "collapse threshold 1"},
		{func(o *Options) { o.MinRequests = 0 }, "minimum requests 0"},
		{func(o *Options) { o.Alpha = 0 }, "significance 0"},
		{func(o *Options) { o.Growth = -1 }, "backlog growth -1"},
		{func(o *Options) { o.MinPoints = 2 }, "minimum points 2"},
	} {
		o := Defaults()
		c.set(&o)
		if err := o.Check(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}

// An HDFS write is sent to the NameNode, which does not limp; its
// pipeline says whether it met the limping DataNode. Writes whose
// pipeline held it slow down and the rest do not: operation limplock, not
// node limplock, as the Limplock paper's F6 row has it.
func TestTallyPipelines(t *testing.T) {
	limps := func(m string) bool { return strings.Contains(m, "fault") }
	never := func(string) bool { return false }
	nn := "namenode, clients"
	with := []string{"datanode 1", "datanode 3", "datanode 5, fault"}
	without := []string{"datanode 1", "datanode 2", "datanode 4"}
	run := func(slow float64, failed int) ([]Request, map[Key]Latency, int) {
		var reqs []Request
		for i := range 40 {
			reqs = append(reqs, Request{Op: "create", Node: nn, Touched: with, Latency: 0.3 * slow * (1 + float64(i%3)/10)},
				Request{Op: "create", Node: nn, Touched: without, Latency: 0.3 * (1 + float64(i%3)/10)})
		}
		for range failed {
			reqs = append(reqs, Request{Op: "create", Node: nn, Latency: 180}) // timed out: no pipeline reported
		}
		sums := map[Key]Latency{}
		return reqs, sums, Tally(sums, reqs, limps, never)
	}
	_, base, _ := run(1, 0)
	_, now, unplaced := run(100, 3)
	if unplaced != 3 {
		t.Errorf("%d requests unplaced, want the 3 that reported no pipeline", unplaced)
	}
	var in Input
	for k, l := range now {
		in.Groups = append(in.Groups, Group{Op: k.Op, Node: k.Node, Involved: k.Involved, Base: meanOf(base[k]), Now: meanOf(l)})
	}
	in.BaseThroughput, in.Throughput = 6, 1.5
	if len(in.Groups) != 2 {
		t.Fatalf("groups %+v, want the writes through the limping DataNode and the rest", in.Groups)
	}
	v := Judge(in, Defaults())
	if !slices.Equal(v.Marks(), []string{"OL"}) {
		t.Errorf("marks %v, want OL only: %+v", v.Marks(), v)
	}
	if !strings.Contains(v.Operation.Why, "operation limplock: create on the namenode, clients, through the datanode 5, fault: mean 32.9s against 329ms") {
		t.Errorf("operation: %s", v.Operation.Why)
	}
	if !strings.Contains(v.Node.Why, "no node limplock: the slowest, create on the namenode, clients: mean 329ms against 329ms") {
		t.Errorf("node: %s", v.Node.Why)
	}

	// Requests sent to the limping member, or through a limping orderer,
	// involve it whatever they touched; a system whose clients report
	// nothing is grouped by where requests were sent, as before.
	sums := map[Key]Latency{}
	Tally(sums, []Request{
		{Op: "get", Node: "follower, fault", Latency: 1},
		{Op: "get", Node: "follower 2", Latency: 1},
		{Op: "put", Node: "follower 2", Latency: 1},
	}, limps, func(op string) bool { return op == "put" })
	want := map[Key]Latency{{"get", "follower, fault", true}: lat(1, 1), {"get", "follower 2", false}: lat(1, 1), {"put", "follower 2", true}: lat(1, 1)}
	if !maps.Equal(sums, want) {
		t.Errorf("groups %v, want %v", sums, want)
	}
}

// Creates cut at the timeout (F6 at 1000x: a create through the limping
// DataNode needs longer than the workload's 3 minutes) are placed by the
// pipeline they were waiting on when cut, and count with the timeout as
// their latency: with them, one create that finished is not the group's
// only request. A create cut before its client met any DataNode stays
// unplaced.
func TestTallyTimeouts(t *testing.T) {
	limps := func(m string) bool { return strings.Contains(m, "fault") }
	never := func(string) bool { return false }
	nn := "namenode, clients"
	with := []string{"datanode 1", "datanode 3", "datanode 5, fault"}
	without := []string{"datanode 1", "datanode 2", "datanode 4"}
	base := map[Key]Latency{}
	var reqs []Request
	for range 40 {
		reqs = append(reqs, Request{Op: "create", Node: nn, Touched: with, Latency: 1.4},
			Request{Op: "create", Node: nn, Touched: without, Latency: 1.4})
	}
	Tally(base, reqs, limps, never)
	now := map[Key]Latency{}
	unplaced := Tally(now, []Request{
		{Op: "create", Node: nn, Touched: with, Latency: 162},
		{Op: "create", Node: nn, Touched: with, Latency: 180}, // cut at the timeout
		{Op: "create", Node: nn, Touched: with, Latency: 180},
		{Op: "create", Node: nn, Touched: []string{"datanode 5, fault"}, Latency: 180}, // cut in its first pipeline's setup
		{Op: "create", Node: nn, Latency: 180},                                         // cut before any pipeline
	}, limps, never)
	if unplaced != 1 {
		t.Errorf("%d unplaced, want the 1 cut before it met a DataNode", unplaced)
	}
	through := Key{Op: "create", Node: nn + ", through the datanode 5, fault", Involved: true}
	if got := meanOf(now[through]); got.N != 4 || got.Mean != (162+3*180)/4.0 {
		t.Errorf("through the limping DataNode: %+v, want the finished create and the 3 cut while waiting on it", got)
	}
	in := Input{BaseThroughput: 2.9, Throughput: 0.02}
	for k, l := range now {
		in.Groups = append(in.Groups, Group{Op: k.Op, Node: k.Node, Involved: k.Involved, Base: meanOf(base[k]), Now: meanOf(l)})
	}
	v := Judge(in, Defaults())
	if !slices.Equal(v.Marks(), []string{"OL", "CL"}) {
		t.Errorf("marks %v, want OL and CL: %+v", v.Marks(), v)
	}
	if !strings.Contains(v.Operation.Why, "through the datanode 5, fault: mean 176s against 1.4s") {
		t.Errorf("operation: %s", v.Operation.Why)
	}
}

func meanOf(sum Latency) Latency {
	if sum.N > 0 {
		sum.Mean /= float64(sum.N)
	}
	return sum
}

func ptr(v float64) *float64 { return &v }

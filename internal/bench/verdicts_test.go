package bench

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/rundir"
	"github.com/gait-dev/gait/internal/verdict"
)

// Queue metrics are the member's by their host label; a host in another
// label is named as that member is in its run, so runs line up.
func TestQueueSeries(t *testing.T) {
	labels := map[string]string{"h0": "leader", "h2": "follower, fault"}
	rows := []rundir.Second{
		{T: 0, Metrics: map[string]float64{"zk_learner_handler_qp_size{host=h0,follower=h2}": 1, "zk_outstanding_requests{host=h0}": 3,
			"etcd_network_peer_sent_failures_total{host=h0}": 9, "proc_cpu{proc=h0}": 0.5}},
		{T: 1, Metrics: map[string]float64{"zk_learner_handler_qp_size{host=h0,follower=h2}": 4, "zk_outstanding_requests{host=h9}": 1}},
	}
	got := queueSeries(rows, labels)
	if len(got) != 2 {
		t.Fatalf("series %+v, want the qp size and the outstanding requests", got)
	}
	qp := got[0]
	if qp.Metric != "zk_learner_handler_qp_size{follower=follower, fault}" || qp.Node != "leader" || len(qp.V) != 2 || qp.V[1] != 4 {
		t.Errorf("qp size %+v", qp)
	}
	if o := got[1]; o.Metric != "zk_outstanding_requests" || len(o.V) != 1 {
		t.Errorf("outstanding %+v (a host not in the run is left out)", o)
	}
}

// pipelineRun writes a run of HDFS creates sent to the NameNode (h0):
// half with the last DataNode (h5) in their pipeline, taking slow, half
// without it, taking fast, and failed ones that reported no pipeline.
func pipelineRun(t *testing.T, out string, id RunID, fast, slow time.Duration, failed int) RunResult {
	t.Helper()
	with, without := pipelines()
	var samples []rundir.Sample
	for i := range 40 {
		at := time.Duration(i) * time.Second
		samples = append(samples, rundir.Sample{Start: at, Latency: slow, Involved: with},
			rundir.Sample{Start: at, Latency: fast, Involved: without})
	}
	for range failed {
		samples = append(samples, rundir.Sample{Start: 0, Latency: 3 * time.Minute, Outcome: rundir.Timeout})
	}
	return hdfsRun(t, out, id, samples)
}

// pipelines are two HDFS write pipelines: with the last DataNode (h5), and
// without it.
func pipelines() (with, without rundir.HostSet) {
	for _, h := range []uint8{1, 3, 5} {
		with.Add(h)
	}
	for _, h := range []uint8{1, 2, 4} {
		without.Add(h)
	}
	return with, without
}

// hdfsRun writes a run of hdfs-write-nic's hosts with these samples.
func hdfsRun(t *testing.T, out string, id RunID, samples []rundir.Sample) RunResult {
	t.Helper()
	dir := filepath.Join(out, id.Dir())
	roles := map[string]string{"h0": "namenode"}
	hosts := []rundir.Host{{Name: "h0", Role: "namenode"}}
	for i := 1; i <= 5; i++ {
		h := fmt.Sprintf("h%d", i)
		roles[h] = "datanode"
		hosts = append(hosts, rundir.Host{Name: h, Role: "datanode"})
	}
	w, err := rundir.Create(dir, rundir.Config{Name: "hdfs-write-nic", System: "hdfs", Factor: id.Step.Factor, Ops: []string{"create"}, Hosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range samples {
		w.Add(x)
	}
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	run, _ := rundir.Open(dir)
	sum, _ := run.Summary()
	return RunResult{ID: id, Dir: dir, Summary: sum, Roles: roles, Clients: []string{"h0"}}
}

// Every HDFS create is sent to the NameNode; the pipelines its client
// reported put the creates through the limping DataNode in the involved
// group and the rest in the other, so gait gives F6's operation limplock
// and no node limplock.
func TestJudgePipelines(t *testing.T) {
	s, err := Load("../../scenarios/limpbench/hdfs-write-nic.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	runs := s.Runs()
	last := runs[len(runs)-1]
	results := []RunResult{
		pipelineRun(t, out, runs[0], 300*time.Millisecond, 300*time.Millisecond, 0),
		pipelineRun(t, out, last, 320*time.Millisecond, 30*time.Second, 2),
	}
	vs := judgeRuns(t, s, out, results)
	if len(vs) != 1 {
		t.Fatalf("verdicts %+v, want the last step's", vs)
	}
	v := vs[0]
	if !slices.Equal(v.Marks(), []string{"OL"}) || v.Unplaced != 2 {
		t.Errorf("marks %v, %d unplaced; want OL and the 2 timeouts: %+v", v.Marks(), v.Unplaced, v.Verdict)
	}
	if !strings.Contains(v.Operation.Why, "create on the namenode, clients, through the datanode, fault: mean 30s against 300ms") {
		t.Errorf("operation: %s", v.Operation.Why)
	}
}

// The last third's rate is judged only when the baseline completed enough
// requests there to have a rate: two long operations a run (MapReduce's
// jobs) say only when they ended, and a step whose two ended outside the
// last third did not collapse; forty a second that stop do.
func TestTailNeedsBaselineRequests(t *testing.T) {
	s, err := Load("../../scenarios/limpbench/hdfs-write-nic.yaml")
	if err != nil {
		t.Fatal(err)
	}
	runs := s.Runs()
	last := runs[len(runs)-1]
	with, _ := pipelines()
	op := func(start, latency time.Duration) rundir.Sample {
		return rundir.Sample{Start: start, Latency: latency, Involved: with}
	}
	// The workload is 60 s: its last third is 40-60 s.
	for _, c := range []struct {
		name       string
		base, step []rundir.Sample
		cluster    bool
	}{
		{"two long operations", []rundir.Sample{op(0, 30*time.Second), op(30*time.Second, 30*time.Second)},
			[]rundir.Sample{op(0, 12*time.Second), op(0, 90*time.Second)}, false},
		{"a stream that stops", many(op, 60, time.Second), append(many(op, 35, time.Second), op(0, 90*time.Second)), true},
	} {
		out := t.TempDir()
		results := []RunResult{hdfsRun(t, out, runs[0], c.base), hdfsRun(t, out, last, c.step)}
		vs := judgeRuns(t, s, out, results)
		if len(vs) != 1 || vs[0].Cluster.On != c.cluster {
			t.Errorf("%s: cluster limplock %v, want %v: %+v", c.name, len(vs) == 1 && vs[0].Cluster.On, c.cluster, vs)
		}
	}
}

// judgeRuns sums the runs up and judges them with the default thresholds.
func judgeRuns(t *testing.T, s *Scenario, out string, results []RunResult) []StepVerdict {
	t.Helper()
	sum, err := Summarize(s, out, results)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := Judge(s, sum, results, verdict.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// many are n operations one after the other, each taking d.
func many(op func(start, latency time.Duration) rundir.Sample, n int, d time.Duration) []rundir.Sample {
	var out []rundir.Sample
	for i := range n {
		out = append(out, op(time.Duration(i)*d, d))
	}
	return out
}

// A step whose requests were cut (Options.Cut, --quick) says so beside
// its verdicts: the cut requests count at the bound, a lower bound of
// their time. A step without a cut says nothing of it.
func TestCutRequestsWarn(t *testing.T) {
	s, err := Load("../../scenarios/limpbench/hdfs-write-nic.yaml")
	if err != nil {
		t.Fatal(err)
	}
	runs := s.Runs()
	last := runs[len(runs)-1]
	for _, cut := range []time.Duration{0, 3 * time.Minute} {
		out := t.TempDir()
		step := pipelineRun(t, out, last, 320*time.Millisecond, 30*time.Second, 2)
		step.Cut = cut
		vs := judgeRuns(t, s, out, []RunResult{pipelineRun(t, out, runs[0], 300*time.Millisecond, 300*time.Millisecond, 0), step})
		if len(vs) != 1 {
			t.Fatalf("verdicts %+v, want the last step's", vs)
		}
		warned := strings.Contains(vs[0].Warning, "2 requests cut unfinished at 3m0s")
		if warned != (cut > 0) {
			t.Errorf("cut %v: warning %q", cut, vs[0].Warning)
		}
	}
}

// The bound is Cut times the repetition's slowest baseline request, for
// the steps after the baseline only, and none when the scenario's own
// timeout comes first or the baseline has not finished.
func TestCutBound(t *testing.T) {
	s, err := Load("../../scenarios/limpbench/mapreduce-h2-wordcount-reducer-nic.yaml")
	if err != nil {
		t.Fatal(err)
	}
	runs := s.Runs() // baseline r1, 1000x r1, baseline r2, ...
	r := &runner{s: s, opt: Options{Cut: 5.25}, slowestBase: map[int]time.Duration{}}
	r.noteBaseline(RunResult{ID: runs[0], Summary: rundir.Summary{Max: 38.9}})
	for _, c := range []struct {
		id   RunID
		want time.Duration
	}{
		{runs[0], 0},                         // the baseline itself
		{runs[1], 204225 * time.Millisecond}, // 5.25 x 38.9 s
		{runs[3], 0},                         // repetition 2's baseline has not run
	} {
		if got := r.cut(c.id); got != c.want {
			t.Errorf("%s: cut %v, want %v", c.id, got, c.want)
		}
	}
	r.opt.Cut = 30 // 1167 s: the scenario's 15-min timeout comes first
	if got := r.cut(runs[1]); got != 0 {
		t.Errorf("cut %v past the scenario's own timeout, want none", got)
	}
	r.opt.Cut = 0.1 // 3.9 s: raised to the default timeout, 10 s
	if got := r.cut(runs[1]); got != load.DefaultTimeout {
		t.Errorf("cut %v, want the default timeout %v", got, load.DefaultTimeout)
	}
}

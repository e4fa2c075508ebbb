package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/rundir"
)

// fakeRun writes a run directory whose requests complete every step from 0
// to the end, with a stall from stallFrom to stallTo, each taking lat.
func fakeRun(t *testing.T, out string, id RunID, lat, step time.Duration, end, stallFrom, stallTo time.Duration) RunResult {
	t.Helper()
	dir := filepath.Join(out, id.Dir())
	w, err := rundir.Create(dir, rundir.Config{Name: "t", System: "etcd", Factor: id.Step.Factor, Ops: []string{"put"},
		Hosts: []rundir.Host{{Name: "h0", Role: "leader"}, {Name: "h1", Role: "follower"}}})
	if err != nil {
		t.Fatal(err)
	}
	for s := time.Duration(0); s+lat <= end; s += step {
		if s+lat > stallFrom && s+lat < stallTo {
			continue
		}
		w.Add(rundir.Sample{Start: s, Latency: lat, Host: 1})
	}
	for sec := range int(end / time.Second) {
		w.AddMetric(sec, "etcd_server_proposals_pending{host=h0}", float64(sec*int(id.Step.Factor)))
		w.AddMetric(sec, "proc_cpu{proc=h1}", 0.5)
	}
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	run, _ := rundir.Open(dir)
	sum, _ := run.Summary()
	return RunResult{ID: id, Dir: dir, Summary: sum, Roles: map[string]string{"h0": "leader", "h1": "follower"},
		Clients: []string{"h1"}, Ready: time.Second, Wall: 5 * time.Second,
		Events: []Event{{T: 0, Action: "apply", Fault: "nic", Factor: id.Step.Factor, Target: "leader", Host: "h0", Role: "leader"}}}
}

func TestSummarizeAndReport(t *testing.T) {
	s, err := Parse("s.yaml", []byte(strings.Replace(good, "duration: 20s", "duration: 4s", 1)))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	runs := s.Runs()
	ms := time.Millisecond
	results := []RunResult{
		fakeRun(t, out, runs[0], 2*ms, 10*ms, 4*time.Second, 0, 0),
		fakeRun(t, out, runs[1], 4*ms, 10*ms, 4*time.Second, 0, 0),
		fakeRun(t, out, runs[2], 8*ms, 10*ms, 4*time.Second, time.Second, 2500*ms),
	}
	results[0].Events = nil
	results[2].Roles = map[string]string{"h0": "leader", "h1": "follower"}
	results[2].RoleChanges = roleChanges(1.25, results[2].Roles, map[string]string{"h0": "follower", "h1": "leader"})
	sum, err := Summarize(s, out, results[:3])
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Steps) != 3 {
		t.Fatalf("%d steps, want 3 (the 1000x run is missing)", len(sum.Steps))
	}
	base, ten, hundred := sum.Steps[0], sum.Steps[1], sum.Steps[2]
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9*max(1, math.Abs(b)) }
	if !near(base.Mean, 0.002) || !near(ten.Slowdown, 2) || !near(hundred.Slowdown, 4) || !near(base.Slowdown, 1) {
		t.Errorf("means %g %g %g, slowdowns %g %g %g", base.Mean, ten.Mean, hundred.Mean, base.Slowdown, ten.Slowdown, hundred.Slowdown)
	}
	if *ten.Factor != 10 || base.Label != "baseline" || ten.Label != "10x" || ten.Fault != "nic" || base.Fault != "" {
		t.Errorf("labels: %+v %+v", base, ten)
	}
	// Requests completing at 2ms, 12ms, ...: the longest gap is the stall
	// (nothing completes in (1s, 2.5s)), else one step or the tail to 4s.
	if math.Abs(hundred.LongestGap-1.5) > 0.011 || base.LongestGap > 0.011 {
		t.Errorf("longest gaps %g and %g, want 1.5 and 0.01", hundred.LongestGap, base.LongestGap)
	}
	if !(hundred.ThroughputRatio < 0.7) {
		t.Errorf("throughput ratio %g with a 1.5 s stall", hundred.ThroughputRatio)
	}
	// A request every 10 ms to the end: the last third keeps the pace;
	// the 100x run's stall is in its middle third, not its last.
	if math.Abs(base.TailThroughput-base.Throughput) > 0.05*base.Throughput || !(hundred.TailThroughput > 0.9*base.TailThroughput) {
		t.Errorf("last-third throughputs %g and %g, whole runs %g and %g", base.TailThroughput, hundred.TailThroughput,
			base.Throughput, hundred.Throughput)
	}

	var js bytes.Buffer
	if err := sum.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Steps []map[string]any `json:"steps"`
	}
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"factor", "throughput", "mean", "p50", "p99", "max", "slowdown", "errors", "timeouts", "longest_gap"} {
		if _, ok := decoded.Steps[1][k]; !ok {
			t.Errorf("JSON step lacks %s: %v", k, decoded.Steps[1])
		}
	}
	if decoded.Steps[1]["factor"] != 10.0 || decoded.Steps[0]["factor"] != 1.0 {
		t.Errorf("JSON factors: %v %v", decoded.Steps[0]["factor"], decoded.Steps[1]["factor"])
	}

	var text bytes.Buffer
	sum.WriteText(&text)
	roles := "100x (f100-r1): at the start h0 leader, h1 follower; 1.2s: h0 leader→follower, h1 follower→leader"
	if hundred.RoleChanges != 2 || ten.RoleChanges != 0 {
		t.Errorf("role changes %d at 100x, %d at 10x; want 2 and 0", hundred.RoleChanges, ten.RoleChanges)
	}
	if !strings.Contains(text.String(), "baseline") || !strings.Contains(text.String(), "4.00x") || !strings.Contains(text.String(), roles) {
		t.Errorf("text:\n%s", text.String())
	}

	if err := os.WriteFile(filepath.Join(out, "scenario.yaml"), s.Source, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := sum.Save(); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(out, "report.html")
	if err := WriteReport(html, s, sum, results); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gait run: etcd-leader-nic", "etcd_server_proposals_pending (leader, fault)",
		"Constant on the follower, clients in every run: proc_cpu = 0.5", "nic on leader", "Worst step: 100x", "Roles changed during these runs"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report lacks %q", want)
		}
	}

	// The output directory reads back into the same summary.
	s2, results2, err := Reload(out)
	if err != nil {
		t.Fatal(err)
	}
	sum2, err := Summarize(s2, out, results2)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum2.Steps) != 3 || sum2.Steps[2].Mean != hundred.Mean || sum2.Runs[2].Events[0].Host != "h0" || s2.File != "s.yaml" ||
		!slices.Equal(sum2.RoleLines(), []string{roles}) {
		t.Errorf("reloaded: %+v", sum2)
	}
}

// A member that did not answer, or that one reading lacks, changed nothing
// that is known; a leader that stepped down and one that took over did.
func TestRoleChanges(t *testing.T) {
	before := map[string]string{"h0": "follower", "h1": "follower", "h2": "leader"}
	now := map[string]string{"h0": "leader", "h1": "unreachable", "h2": "follower", "h3": "follower"}
	got := DescribeRoleChanges(roleChanges(4.21, before, now))
	if want := []string{"4.2s: h0 follower→leader, h2 leader→follower"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if cs := roleChanges(1, before, map[string]string{"h2": "unreachable"}); len(cs) != 0 {
		t.Errorf("an unreachable leader changed roles: %v", cs)
	}
}

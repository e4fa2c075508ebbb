package suite

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/bench"
	"github.com/gait-dev/gait/internal/verdict"
)

// TestSuiteResumes runs the two tiny testdata experiments on real etcd
// clusters, interrupting the suite in the second; run again, it reads the
// first back and runs the second. The verdicts must say what etcd does: a
// leader whose link is 100x slower slows every write (OL) and the
// throughput collapses (CL); a slow follower is left out of the quorum.
func TestSuiteResumes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root for network namespaces and tc")
	}
	if _, err := os.Stat("/usr/bin/etcd"); err != nil {
		t.Skip("skipped: no /usr/bin/etcd (make deps installs etcd-server)")
	}
	files, err := Files([]string{"testdata"})
	if err != nil {
		t.Fatal(err)
	}
	scenarios, err := Load(files, Selection{})
	if err != nil {
		t.Fatal(err)
	}
	out, state := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log bytes.Buffer
	o := Options{Out: out, StateDir: state, Verdict: verdict.Defaults(), Log: &log,
		Status: func(p Progress) {
			if p.Experiment == 2 {
				cancel()
			}
		}}
	first, err := Run(ctx, scenarios, o)
	t.Logf("interrupted suite:\n%s", log.String())
	if !errors.Is(err, context.Canceled) || len(first) != 1 {
		t.Fatalf("interrupted suite: %d results, error %v; want 1 and context.Canceled", len(first), err)
	}
	second := filepath.Join(out, scenarios[1].Name)
	if _, err := os.Stat(filepath.Join(second, resultFile)); err == nil {
		t.Errorf("the interrupted experiment has a %s", resultFile)
	}
	log.Reset()
	o.Status = nil
	results, err := Run(context.Background(), scenarios, o)
	t.Logf("resumed suite:\n%s", log.String())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "experiment 1/2 "+scenarios[0].Name+": finished earlier") {
		t.Errorf("the finished experiment was not skipped")
	}
	if left, _ := filepath.Glob(filepath.Join(state, "*.json")); len(left) > 0 {
		t.Errorf("testbed state left behind: %v", left)
	}
	var text bytes.Buffer
	if err := WriteText(&text, results); err != nil {
		t.Fatal(err)
	}
	t.Logf("suite:\n%s", text.String())
	rows := Rows(results)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want one per experiment and factor: %+v", len(rows), rows)
	}
	for _, r := range rows {
		for _, why := range []string{r.Reasons.Operation, r.Reasons.Node, r.Reasons.Cluster, r.Reasons.Backlog} {
			if why == "" {
				t.Errorf("%s: a verdict without its reason: %+v", r.Experiment, r.Reasons)
			}
		}
		collapsed := r.ThroughputRatio < o.Verdict.Collapse
		if (r.ClusterLL && !collapsed && !r.NodeLL) || (collapsed && !r.ClusterLL) {
			t.Errorf("%s: cluster limplock %v with throughput at %.2f of the baseline and node limplock %v", r.Experiment,
				r.ClusterLL, r.ThroughputRatio, r.NodeLL)
		}
		// Every request of the leader experiment involves the leader, so
		// its one group's slowdown is the step's.
		if r.Experiment == "t-etcd-leader-nic" && r.OperationLL != (r.Slowdown > o.Verdict.Slow) {
			t.Errorf("%s: operation limplock %v at %.1fx", r.Experiment, r.OperationLL, r.Slowdown)
		}
	}
	byName := map[string]Row{}
	for _, r := range rows {
		byName[r.Experiment] = r
	}
	if r := byName["t-etcd-leader-nic"]; !r.OperationLL || !r.ClusterLL {
		t.Errorf("leader NIC 100x: %+v, want operation and cluster limplock", r)
	}
	if r := byName["t-etcd-follower-nic"]; r.OperationLL || r.ClusterLL {
		t.Errorf("follower NIC 100x: %+v, want no operation or cluster limplock", r)
	}
	p, err := Report(results, o.Verdict)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WriteFile(filepath.Join(out, "report.html")); err != nil {
		t.Fatal(err)
	}
}

// TestClearUnfinished: an interrupted experiment of the same scenario text,
// or of the same but for its repeat:, keeps its finished runs to resume
// from; one of another text is removed; a directory bench did not make is
// left alone with an error.
func TestClearUnfinished(t *testing.T) {
	s := &bench.Scenario{Source: []byte("name: x\n")}
	dir := filepath.Join(t.TempDir(), "x")
	run := filepath.Join(dir, "baseline-r1", "summary.json")
	write := func(scenario string) {
		if err := os.MkdirAll(filepath.Dir(run), 0o755); err != nil {
			t.Fatal(err)
		}
		for f, text := range map[string]string{filepath.Join(dir, "scenario.yaml"): scenario, run: "{}"} {
			if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if resume, err := clearUnfinished(dir, s); resume || err != nil {
		t.Errorf("no directory: resume %v, error %v; want a fresh start", resume, err)
	}
	write("name: x\n")
	if resume, err := clearUnfinished(dir, s); !resume || err != nil {
		t.Errorf("same scenario: resume %v, error %v; want to resume", resume, err)
	}
	if _, err := os.Stat(run); err != nil {
		t.Errorf("same scenario: the finished run is gone: %v", err)
	}
	write("# a comment\nname: x\n")
	if resume, err := clearUnfinished(dir, s); !resume || err != nil {
		t.Errorf("the same scenario but for a comment: resume %v, error %v; want to resume", resume, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "scenario.yaml")); string(b) != string(s.Source) {
		t.Errorf("kept scenario.yaml %q, want the text the runs go on with", b)
	}
	write("name: x\nrepeat: 3\n")
	if resume, err := clearUnfinished(dir, s); !resume || err != nil {
		t.Errorf("the same runs with another repeat: resume %v, error %v; want to resume", resume, err)
	}
	if _, err := os.Stat(run); err != nil {
		t.Errorf("another repeat: the finished run is gone: %v", err)
	}
	write("name: y\n")
	if resume, err := clearUnfinished(dir, s); resume || err != nil {
		t.Errorf("another scenario: resume %v, error %v; want a fresh start", resume, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("another scenario's directory was kept: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := clearUnfinished(dir, s); err == nil || !strings.Contains(err.Error(), "not an experiment's results") {
		t.Errorf("a foreign directory: error %v, want one naming it", err)
	}
}

// TestSameExperiment: comments, the paper's row and expect: judge a
// result; anything else changes the experiment.
func TestSameExperiment(t *testing.T) {
	base := "# why\nname: x\nrepeat: 3\npaper: {row: Z1, marks: []}\n"
	for _, c := range []struct {
		other string
		same  bool
	}{
		{base, true},
		{"# another comment\nname: x\nrepeat: 3\npaper: {row: Z1, marks: []}\n", true},
		{"name: x\nrepeat: 3\npaper:\n  row: Z1\n  marks: []\n  differs: a pause\n", true},
		{"name: x\nrepeat: 3\npaper: {row: Z1, marks: []}\nquick: true\n", true},
		{"name: x\nrepeat: 1\npaper: {row: Z1, marks: []}\n", false},
		{"name: x\nrepeat: 3\npaper: {row: Z1, marks: [OL]}\n", true},
		{"name: x\nrepeat: 3\npaper: {row: Z1, marks: []}\nexpect: {marks: [NL], differs: fixed}\n", true},
		{"name: y\nrepeat: 3\npaper: {row: Z1, marks: []}\n", false},
		{"name: x\nrepeat: [3\n", false},
	} {
		if got := SameExperiment([]byte(base), []byte(c.other)); got != c.same {
			t.Errorf("%q: same %v, want %v", c.other, got, c.same)
		}
	}
}

// TestProgressPastThePlannedLength: a MapReduce run whose jobs outlast its
// 5-s schedule reads as waiting for them, not "4m2s of 5s".
func TestProgressPastThePlannedLength(t *testing.T) {
	p := Progress{Experiment: 6, Experiments: 9, Name: "mapreduce-h2-wordcount-reducer-nic",
		Run: bench.Status{ID: bench.RunID{Step: bench.Step{Index: 1, Factor: 1000}, Rep: 1},
			Elapsed: 4*time.Minute + 2*time.Second, Planned: 5 * time.Second},
		Elapsed: 9 * time.Minute, ETA: 2 * time.Minute}
	got := p.String()
	if !strings.Contains(got, "1000x r1: 5s of 5s, +3m57s for the requests in flight; suite 9m0s elapsed") {
		t.Errorf("past the plan: %q", got)
	}
}

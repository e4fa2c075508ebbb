package bench

import (
	"strings"
	"testing"
	"time"
)

// TestStepNames names a step without a slowdown by what it injects, in
// tables (Label) and run directories (Dir), and finds its runs under the
// old crash-r<rep> name too.
func TestStepNames(t *testing.T) {
	for _, c := range []struct {
		inject, label, dir string
	}{
		{"  - {fault: crash, target: leader, at: 1s, for: 1s}\n", "crash", "crash-r2"},
		{"  - {fault: partition, target: follower, at: 1s, for: 1s}\n", "partition", "partition-r2"},
		{"  - {fault: crash, target: leader, at: 1s}\n  - {fault: crash, target: follower, at: 2s}\n", "crash", "crash-r2"},
		{"  - {fault: partition, target: follower, at: 1s}\n  - {fault: crash, target: leader, at: 2s}\n", "partition+crash", "partition+crash-r2"},
		{"  - {fault: nic, target: leader, factors: [10]}\n  - {fault: partition, target: follower, at: 1s}\n", "10x", "f10-r2"},
	} {
		src := "name: n\nsystem: etcd\nnodes: 3\nworkload: {op: put}\nrepeat: 2\ninject:\n" + c.inject
		s, err := Parse("n.yaml", []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", c.inject, err)
		}
		steps := s.Steps()
		if len(steps) != 2 || steps[0].Label() != "baseline" || (RunID{Step: steps[0], Rep: 1}).Dir() != "f1-r1" {
			t.Fatalf("%s: steps %+v", c.inject, steps)
		}
		id := RunID{Step: steps[1], Rep: 2}
		if steps[1].Label() != c.label || id.Dir() != c.dir {
			t.Errorf("%s: label %q, dir %q; want %q, %q", c.inject, steps[1].Label(), id.Dir(), c.label, c.dir)
		}
		ids := s.runsByDir()
		if got, ok := ids[c.dir]; !ok || got.Step.Index != 1 || got.Rep != 2 {
			t.Errorf("%s: %s not found", c.inject, c.dir)
		}
		old, ok := ids["crash-r2"]
		if steps[1].Factor == 0 && (!ok || old.Step.Index != 1 || old.Rep != 2) {
			t.Errorf("%s: crash-r2 (the old name) not found", c.inject)
		}
		if steps[1].Factor != 0 && ok {
			t.Errorf("%s: crash-r2 found, but the step has a slowdown", c.inject)
		}
		want := len(s.Runs()) // plus crash-r1 and crash-r2 where they are old names
		if steps[1].Factor == 0 && c.label != "crash" {
			want += 2
		}
		if len(ids) != want {
			t.Errorf("%s: %d names for %d runs: %v", c.inject, len(ids), len(s.Runs()), ids)
		}
	}
}

// TestStatusPastThePlannedLength: once the schedule is over the line says
// the run waits for its requests in flight (not "24s of 20s"), and once
// the workload is done, what comes next.
func TestStatusPastThePlannedLength(t *testing.T) {
	st := Status{Run: 2, Runs: 4, ID: RunID{Step: Step{Index: 1, Factor: 10}, Rep: 1}, Elapsed: 24 * time.Second,
		Planned: 20 * time.Second, Requests: 900, ETA: time.Minute, ScenarioRun: 2 * time.Minute}
	if got := st.String(); !strings.Contains(got, ": 20s of 20s, +4s for the requests in flight, 900 requests") {
		t.Errorf("past the plan: %q", got)
	}
	st.Done = true
	if got := st.String(); !strings.Contains(got, "workload done, writing the run and resetting the cluster") || strings.Contains(got, "24s") {
		t.Errorf("done: %q", got)
	}
}

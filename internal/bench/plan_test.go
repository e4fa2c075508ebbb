package bench

import "testing"

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

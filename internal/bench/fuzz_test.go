package bench

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// maxScenarioError bounds an error message from Parse, whatever the input:
// it names the file, the line and the field, and quotes at most a short part
// of what is wrong.
const maxScenarioError = 1024

// maxScenarioRuns bounds the runs of a scenario that parses: 10^5 runs of
// a minimal 1s workload are already more than a day.
const maxScenarioRuns = 100_000

// FuzzScenario parses arbitrary bytes as a scenario file. Parse must not
// panic. An error must be one line, name the file and stay under
// maxScenarioError bytes, and a *FieldError must point at a line of the file
// (or just past its end). A scenario that parses must be one the runner can run: a name, at
// least one node and repetition, at most maxScenarioRuns runs, a baseline
// step of factor 1 first, finite slowdowns, non-negative fault times,
// distinct run directory names, one run per step and repetition; and
// parsing it again gives the same scenario.
func FuzzScenario(f *testing.F) {
	const file = "fuzz.yaml"
	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := Parse(file, src)
		if err != nil {
			msg := err.Error()
			switch {
			case !strings.HasPrefix(msg, file+":"):
				t.Fatalf("error does not name the file: %q", msg)
			case strings.ContainsAny(msg, "\n\r"):
				t.Fatalf("error of more than one line: %q", msg)
			case len(msg) > maxScenarioError:
				t.Fatalf("error of %d bytes: %.200q...", len(msg), msg)
			}
			var fe *FieldError
			if errors.As(err, &fe) {
				// One past the last line is the end of the file, where
				// yaml.v3 puts what is missing there ("---" alone).
				if lines := yamlLines(src); fe.Line < 1 || fe.Line > lines+1 {
					t.Fatalf("error at line %d of a %d-line file: %q", fe.Line, lines, msg)
				}
			}
			return
		}
		switch {
		case s.Name == "":
			t.Fatal("a scenario without a name")
		case s.Nodes < 1:
			t.Fatalf("%d nodes", s.Nodes)
		case s.Repeat < 1:
			t.Fatalf("repeat %d", s.Repeat)
		}
		for i, fault := range s.Inject {
			if fault.At < 0 || fault.For < 0 {
				t.Fatalf("inject[%d]: at %v, for %v", i, fault.At, fault.For)
			}
			for _, v := range fault.Factors {
				if math.IsNaN(v) || math.IsInf(v, 0) || v <= 1 {
					t.Fatalf("inject[%d]: factor %v", i, v)
				}
			}
		}
		steps := s.Steps()
		if len(steps) == 0 || steps[0].Index != 0 || steps[0].Factor != 1 || len(steps[0].Faults) != 0 {
			t.Fatalf("steps do not open with the baseline: %+v", steps)
		}
		for _, st := range steps[1:] {
			if len(st.Faults) != len(s.Inject) || math.IsNaN(st.Factor) || math.IsInf(st.Factor, 0) || st.Factor < 0 {
				t.Fatalf("step %+v of %d faults", st, len(s.Inject))
			}
		}
		// Every run is a fresh cluster and a full workload: a scenario that
		// parses must not ask for more runs than anyone could wait for (nor
		// a list of them larger than memory).
		if n := float64(s.Repeat) * float64(len(steps)); n > maxScenarioRuns {
			t.Fatalf("%d steps x repeat %d: %g runs accepted", len(steps), s.Repeat, n)
		}
		runs := s.Runs()
		if len(runs) != len(steps)*s.Repeat {
			t.Fatalf("%d runs of %d steps x %d repetitions", len(runs), len(steps), s.Repeat)
		}
		dirs := map[string]bool{}
		for _, r := range runs {
			if dirs[r.Dir()] {
				t.Fatalf("run directory %s twice", r.Dir())
			}
			dirs[r.Dir()] = true
		}
		again, err := Parse(file, src)
		if err != nil {
			t.Fatalf("parsed once, refused the second time: %v", err)
		}
		// The system's registry entry holds functions, which DeepEqual
		// never finds equal: it is compared by name.
		a, b := *s, *again
		var none Scenario
		a.sys, b.sys, a.Source, b.Source = none.sys, none.sys, nil, nil
		if !reflect.DeepEqual(a, b) || s.sys.Name != again.sys.Name {
			t.Fatalf("parsed twice, two scenarios:\n%+v\n%+v", a, b)
		}
	})
}

// yamlLines counts the lines of src as YAML does: \r\n, \r, \n and the
// Unicode breaks NEL, LS and PS each end one.
func yamlLines(src []byte) int {
	s := strings.ReplaceAll(string(src), "\r\n", "\n")
	return 1 + strings.Count(s, "\n") + strings.Count(s, "\r") +
		strings.Count(s, "\u0085") + strings.Count(s, "\u2028") + strings.Count(s, "\u2029")
}

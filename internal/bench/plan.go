package bench

import (
	"fmt"
	"strconv"
)

// Step is one configuration of a scenario: the baseline (no fault), or every
// fault applied at its k-th factor.
type Step struct {
	Index int
	// Factor is the slowdown of the step: 1 for the baseline, 0 for a step
	// that only crashes.
	Factor float64
	Faults []Injection
}

// Injection is a fault at the factor of one step (0 for a crash).
type Injection struct {
	Fault
	Factor float64
}

// Label names a step in tables and figures: "baseline", "10x", "crash".
func (s Step) Label() string {
	switch {
	case s.Index == 0:
		return "baseline"
	case s.Factor == 0:
		return "crash"
	}
	return FormatFactor(s.Factor) + "x"
}

// key names the step in run directory names: f1, f10, crash.
func (s Step) key() string {
	if s.Factor == 0 {
		return "crash"
	}
	return "f" + FormatFactor(s.Factor)
}

// FormatFactor writes a factor the shortest way: 10, 2.5.
func FormatFactor(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Steps returns the baseline and one step per factor of the faults (or a
// single step when every fault is a crash, none when there is no fault).
func (s *Scenario) Steps() []Step {
	steps := []Step{{Index: 0, Factor: 1}}
	if len(s.Inject) == 0 {
		return steps
	}
	n := 1
	for _, f := range s.Inject {
		if len(f.Factors) > 0 {
			n = len(f.Factors)
		}
	}
	for k := range n {
		st := Step{Index: k + 1}
		for _, f := range s.Inject {
			in := Injection{Fault: f}
			if len(f.Factors) > 0 {
				in.Factor = f.Factors[k]
				st.Factor = max(st.Factor, in.Factor)
			}
			st.Faults = append(st.Faults, in)
		}
		steps = append(steps, st)
	}
	return steps
}

// RunID is one run of a scenario: a step and a repetition (from 1).
type RunID struct {
	Step Step
	Rep  int
}

// Dir is the run's directory name under the output directory: f10-r1.
func (r RunID) Dir() string { return fmt.Sprintf("%s-r%d", r.Step.key(), r.Rep) }

func (r RunID) String() string {
	return fmt.Sprintf("%s, repetition %d", r.Step.Label(), r.Rep)
}

// Runs lists every run in the order they execute: each repetition of the
// baseline and all steps, so a slow drift of the machine touches every step.
func (s *Scenario) Runs() []RunID {
	var runs []RunID
	for rep := 1; rep <= s.Repeat; rep++ {
		for _, st := range s.Steps() {
			runs = append(runs, RunID{Step: st, Rep: rep})
		}
	}
	return runs
}

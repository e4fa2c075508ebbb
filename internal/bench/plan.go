package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Step is one configuration of a scenario: the baseline (no fault), or every
// fault applied at its k-th factor.
type Step struct {
	Index int
	// Factor is the slowdown of the step: 1 for the baseline, 0 for a step
	// whose faults all strike fully or not at all (crash, partition).
	Factor float64
	Faults []Injection
}

// Injection is a fault at the factor of one step (0 for a crash or a
// partition).
type Injection struct {
	Fault
	Factor float64
}

// Label names a step in tables and figures: "baseline", "10x", or for a
// step without a slowdown what it injects (see strikes): "crash",
// "partition", "crash+partition".
func (s Step) Label() string {
	switch {
	case s.Index == 0:
		return "baseline"
	case s.Factor == 0:
		return s.strikes()
	}
	return FormatFactor(s.Factor) + "x"
}

// key names the step in run directory names: f1, f10, or for a step
// without a slowdown what it injects: crash, partition, crash+partition.
func (s Step) key() string {
	if s.Factor == 0 {
		return s.strikes()
	}
	return "f" + FormatFactor(s.Factor)
}

// strikes names a step without a slowdown by the kinds of its faults,
// each once, in the scenario's order, joined by "+" as run.json's fault
// is: a leader crash and a follower crash make "crash", a crash and a
// partition "crash+partition".
func (s Step) strikes() string {
	var kinds []string
	for _, f := range s.Faults {
		if !slices.Contains(kinds, f.Kind) {
			kinds = append(kinds, f.Kind)
		}
	}
	return strings.Join(kinds, "+")
}

// FormatFactor writes a factor the shortest way: 10, 2.5.
func FormatFactor(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Steps returns the baseline and one step per factor of the faults (or a
// single step when no fault takes a factor, as a crash or a partition,
// none when there is no fault).
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

// Dir is the run's directory name under the output directory: f10-r1,
// crash-r1, partition-r1.
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

// legacyStrikeKey is what every step without a slowdown was called in run
// directory names before steps were named by what they inject, whatever
// it injected (a partition-only step ran in crash-r1).
const legacyStrikeKey = "crash"

// runsByDir maps the directory name of each of the scenario's runs to the
// run, for reading an output directory back. A step without a slowdown
// is also found under its old name, crash-r<rep>, so output directories
// written before the renaming still load.
func (s *Scenario) runsByDir() map[string]RunID {
	ids := map[string]RunID{}
	for _, id := range s.Runs() {
		ids[id.Dir()] = id
	}
	for _, id := range s.Runs() {
		if id.Step.Index > 0 && id.Step.Factor == 0 {
			old := fmt.Sprintf("%s-r%d", legacyStrikeKey, id.Rep)
			if _, taken := ids[old]; !taken {
				ids[old] = id
			}
		}
	}
	return ids
}

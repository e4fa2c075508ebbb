package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"time"

	"github.com/gait-dev/gait/internal/atomicfile"
	"github.com/gait-dev/gait/internal/bench"
	"github.com/gait-dev/gait/internal/units"
	"github.com/gait-dev/gait/internal/verdict"
	"gopkg.in/yaml.v3"
)

// Options say where a suite's results go and how it talks.
type Options struct {
	// Out holds one directory per experiment, named after it (bench's
	// output directory), with result.json once it has finished.
	Out      string
	StateDir string // the testbed's; empty means its default
	Verdict  verdict.Options
	Log      io.Writer // a line per phase; nil discards
	// Status, if set, is called every second while a workload runs.
	Status func(Progress)
	// Quick cuts a step's request once it has run QuickCut times the
	// repetition's slowest baseline request (bench.Options.Cut).
	Quick bool
}

// QuickCut is the bound of a --quick step's requests, in times the
// repetition's slowest baseline request: a little over both thresholds,
// so a cut request is a slowdown past o.Slow by itself, and a run that
// waited for one (a quick MapReduce run's clients run one job each, so
// its throughput is their count over its longest job) is under
// o.Collapse of the baseline's throughput. With the defaults, 5.25: a
// job of H2's quick baseline (38.9 s at the slowest in a quiet make demo)
// is cut at about 204 s, where one through the limping reducer waited
// 294 s for YARN's speculation in that demo and 149 s in another suite.
// Rows of short requests keep their own 10-s timeout (bench.Options.Cut).
func QuickCut(o verdict.Options) float64 { return 1.05 * max(o.Slow, 1/o.Collapse) }

// Progress is where a suite is.
type Progress struct {
	Experiment, Experiments int // this one (from 1) of how many
	Name                    string
	Run                     bench.Status
	Elapsed                 time.Duration // since the suite started
	ETA                     time.Duration // for the whole suite
}

func (p Progress) String() string {
	return fmt.Sprintf("experiment %d/%d %s, %s r%d: %s; suite %v elapsed, about %v left",
		p.Experiment, p.Experiments, p.Name, p.Run.ID.Step.Label(), p.Run.ID.Rep, p.Run.Phase(),
		p.Elapsed.Round(time.Second), p.ETA.Round(time.Second))
}

// Result is one finished experiment, as result.json keeps it.
type Result struct {
	Experiment string          `json:"experiment"`
	File       string          `json:"file"`
	System     string          `json:"system"`
	Fault      string          `json:"fault"`
	Target     string          `json:"target"`
	Paper      *bench.PaperRow `json:"paper,omitempty"`
	Expect     []string        `json:"expect"` // null when the scenario predicts nothing
	// ExpectDiffers says why the verdicts differ from Expect, from what
	// was measured (the scenario's expect.differs).
	ExpectDiffers string `json:"expect_differs,omitempty"`
	Quick         bool   `json:"quick"`
	Dir           string `json:"dir"` // bench's output directory: run directories, summary, report
	// BaseMean and BaseThroughput are the baseline's mean latency
	// (seconds) and throughput (requests per second).
	BaseMean       float64 `json:"base_mean"`
	BaseThroughput float64 `json:"base_throughput"`
	Steps          []Step  `json:"steps"`
	WallSeconds    float64 `json:"wall_seconds"`
	// MinRequests is the scenario's own min_requests, when it sets one in
	// place of the suite's: the baseline requests a group needs.
	MinRequests int `json:"min_requests,omitempty"`
	// Source is the scenario as it ran; a resumed suite redoes the
	// experiment if the scenario has changed since.
	Source string `json:"source"`
}

// Step is one step after the baseline, judged once per repetition: each
// repetition's step against the same repetition's baseline.
type Step struct {
	Label  string   `json:"label"`
	Factor *float64 `json:"factor"` // null for a crash or partition
	// Slowdown and ThroughputRatio are over the repetitions: the median
	// and range of each repetition's mean latency (throughput) over its
	// baseline's.
	Slowdown        verdict.Spread `json:"slowdown"`
	ThroughputRatio verdict.Spread `json:"throughput_ratio"`
	// Throughput and P99 pool the repetitions.
	Throughput float64 `json:"throughput"`
	P99        float64 `json:"p99"`
	// Unplaced counts requests left out of the verdicts, over all
	// repetitions (bench.StepVerdict).
	Unplaced int `json:"unplaced,omitempty"`
	// Counts says how many repetitions gave each verdict given at all.
	Counts []verdict.Count `json:"counts"`
	Reps   []Rep           `json:"repetitions"`
}

// Rep is one repetition of a step with its verdicts.
type Rep struct {
	Rep             int     `json:"repetition"`
	Slowdown        float64 `json:"slowdown"`
	ThroughputRatio float64 `json:"throughput_ratio"`
	Unplaced        int     `json:"unplaced,omitempty"`
	verdict.Verdict
}

// Steady says every repetition of the step gave the verdict.
func (st Step) Steady(mark string) bool {
	for _, c := range st.Counts {
		if c.Mark == mark {
			return c.Given == c.Of
		}
	}
	return false
}

// Why explains one verdict of the step: the reason of the first
// repetition that gave it, and when the repetitions disagree, of the first
// that did not too.
func (st Step) Why(mark string) string {
	var yes, no *string
	for _, r := range st.Reps {
		m := r.mark(mark)
		switch {
		case m.On && yes == nil:
			yes = &m.Why
		case !m.On && no == nil:
			no = &m.Why
		}
	}
	switch {
	case yes == nil && no == nil:
		return ""
	case yes == nil:
		return *no
	case no == nil:
		return *yes
	}
	return *yes + "; in another repetition: " + *no
}

func (r Rep) mark(name string) verdict.Mark {
	switch name {
	case "OL":
		return r.Operation
	case "NL":
		return r.Node
	case "CL":
		return r.Cluster
	}
	return r.Backlog
}

// Warnings are the repetitions' warnings, each once.
func (st Step) Warnings() []string {
	var out []string
	for _, r := range st.Reps {
		w := r.Warning
		if w != "" && len(st.Reps) > 1 {
			w = fmt.Sprintf("repetition %d: %s", r.Rep, w)
		}
		if w != "" && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// Got counts every verdict any step gave: per verdict, the step whose
// repetitions gave it most often.
func (r Result) Got() []verdict.Count {
	steps := make([][]verdict.Count, len(r.Steps))
	for i, st := range r.Steps {
		steps[i] = st.Counts
	}
	return verdict.Strongest(steps)
}

const resultFile = "result.json"

// perRunOverhead is a guess at a run's setup and teardown (hosts, cluster
// start, preload) beside its workload, for the ETA of experiments not yet
// started; the etcd scenarios measured about 3 s, ZooKeeper's JVMs more.
const perRunOverhead = 8 * time.Second

// Run runs the experiments one after the other. An experiment whose
// result.json is there from an earlier, interrupted suite, for the same
// scenario text, is read back instead of run; an unfinished one is removed
// and run again. An experiment that fails (a system that does not start)
// is reported in the error, after the others have run. When ctx ends it
// stops at once (bench's runner removes the hosts) and returns what
// finished with ctx's error.
func Run(ctx context.Context, scenarios []*bench.Scenario, o Options) ([]Result, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if err := o.Verdict.Check(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, fmt.Errorf("suite output directory: %w", err)
	}
	started := time.Now()
	var results []Result
	var failed []error
	for i, s := range scenarios {
		dir := filepath.Join(o.Out, s.Name)
		r, ok, err := finished(dir, s, o.Verdict)
		if err != nil {
			return results, fmt.Errorf("experiment %s: %w", s.Name, err)
		}
		if ok {
			fmt.Fprintf(o.Log, "experiment %d/%d %s: finished earlier, results in %s\n", i+1, len(scenarios), s.Name, dir)
			results = append(results, r)
			continue
		}
		resume, err := clearUnfinished(dir, s)
		if err != nil {
			return results, err
		}
		fmt.Fprintf(o.Log, "experiment %d/%d %s (%s): %s, results in %s\n", i+1, len(scenarios), s.Name, s.File, units.Count(len(s.Runs()), "run"), dir)
		rest := time.Duration(0)
		for _, later := range scenarios[i+1:] {
			rest += estimate(later)
		}
		status := func(st bench.Status) {
			if o.Status == nil {
				return
			}
			eta := st.ETA
			if eta < 0 {
				eta = estimate(s)
			}
			o.Status(Progress{Experiment: i + 1, Experiments: len(scenarios), Name: s.Name, Run: st,
				Elapsed: time.Since(started), ETA: eta + rest})
		}
		r, err = runOne(ctx, s, dir, resume, o, status)
		switch {
		case ctx.Err() != nil:
			return results, errors.Join(append([]error{ctx.Err()}, failed...)...)
		case err != nil:
			// One system that would not start must not cost the rest of
			// an hour's suite: the others run, the error is kept.
			err = fmt.Errorf("experiment %s: %w", s.Name, err)
			fmt.Fprintf(o.Log, "%v\n", err)
			failed = append(failed, err)
		default:
			results = append(results, r)
		}
	}
	return results, errors.Join(failed...)
}

func estimate(s *bench.Scenario) time.Duration {
	return time.Duration(len(s.Runs())) * (s.Workload.Duration + perRunOverhead)
}

// finished reads back an experiment that has a result.json made from the
// same scenario text, judging it again from its run directories so the
// verdicts follow the thresholds of this suite.
func finished(dir string, s *bench.Scenario, o verdict.Options) (Result, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, resultFile))
	if err != nil {
		return Result{}, false, nil
	}
	var old Result
	if json.Unmarshal(b, &old) != nil || !SameExperiment([]byte(old.Source), s.Source) {
		return Result{}, false, nil
	}
	rs, runs, err := bench.Reload(dir)
	if err != nil {
		return Result{}, false, err
	}
	sum, err := bench.Summarize(rs, dir, runs)
	if err != nil {
		return Result{}, false, err
	}
	r, err := judge(s, sum, runs, o)
	r.Dir, r.WallSeconds = dir, old.WallSeconds // the suite's directory may have moved
	return r, err == nil, err
}

// SameExperiment says whether two scenario texts run the same
// experiment: the same text but for comments, paper: and expect:, which
// judge a result (a finished experiment is judged again from the current
// scenario), and quick:, which only selects it for --quick; so a finished
// experiment's runs are kept when only those are edited.
func SameExperiment(a, b []byte) bool { return sameBut(a, b, "quick", "paper", "expect") }

// sameRuns says whether two scenario texts make the same runs but for how
// many: as SameExperiment, and repeat: may differ too (a repetition runs
// alike whatever the count), so a --repeat that differs from the one an
// experiment ran with resumes from its finished runs.
func sameRuns(a, b []byte) bool { return sameBut(a, b, "quick", "paper", "expect", "repeat") }

// sameBut compares two scenario texts but for comments and the top-level
// keys named.
func sameBut(a, b []byte, keys ...string) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y map[string]any
	if yaml.Unmarshal(a, &x) != nil || yaml.Unmarshal(b, &y) != nil {
		return false
	}
	for _, doc := range []map[string]any{x, y} {
		for _, k := range keys {
			delete(doc, k)
		}
	}
	return reflect.DeepEqual(x, y)
}

// clearUnfinished makes an interrupted experiment's directory ready to
// run: one that bench made for the same experiment (sameRuns: with
// another repeat: too) keeps its finished runs, which the experiment
// resumes from (resume true), so a long experiment can be run in pieces
// and given more repetitions later; one made for another is removed.
// Anything else in the way is not gait's to remove.
func clearUnfinished(dir string, s *bench.Scenario) (resume bool, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("experiment directory: %w", err)
	}
	had, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
	if err != nil {
		return false, fmt.Errorf("experiment directory %s: exists and is not an experiment's results; move it away", dir)
	}
	if sameRuns(had, s.Source) {
		// The runs read it back: keep the text they will be judged by.
		return true, atomicfile.WriteBytes(filepath.Join(dir, "scenario.yaml"), s.Source)
	}
	if err := os.RemoveAll(dir); err != nil {
		return false, fmt.Errorf("remove the unfinished experiment %s: %w", dir, err)
	}
	return false, nil
}

func runOne(ctx context.Context, s *bench.Scenario, dir string, resume bool, o Options, status func(bench.Status)) (Result, error) {
	begin := time.Now()
	bo := bench.Options{Out: dir, StateDir: o.StateDir, Log: o.Log, Status: status, Resume: resume}
	if o.Quick {
		bo.Cut = QuickCut(o.Verdict)
	}
	runs, err := bench.Run(ctx, s, bo)
	if err != nil {
		return Result{}, err
	}
	sum, err := bench.Summarize(s, dir, runs)
	if err != nil {
		return Result{}, err
	}
	if err := sum.Save(); err != nil {
		return Result{}, err
	}
	if err := bench.WriteReport(filepath.Join(dir, "report.html"), s, sum, runs); err != nil {
		return Result{}, err
	}
	r, err := judge(s, sum, runs, o.Verdict)
	if err != nil {
		return Result{}, err
	}
	r.Dir, r.WallSeconds = dir, time.Since(begin).Seconds()
	if resume { // the pieces' time: each run's own, earlier ones too
		r.WallSeconds = 0
		for _, run := range runs {
			r.WallSeconds += run.Wall.Seconds()
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return Result{}, fmt.Errorf("encode %s: %w", resultFile, err)
	}
	// Written last and whole: its presence says the experiment finished.
	return r, atomicfile.WriteBytes(filepath.Join(dir, resultFile), b.Bytes())
}

// judge sums an experiment up with its verdicts, judging each repetition
// on its own against its own baseline.
func judge(s *bench.Scenario, sum bench.Summary, runs []bench.RunResult, o verdict.Options) (Result, error) {
	r := Result{Experiment: s.Name, File: s.File, System: s.System, Paper: s.Paper, Expect: s.Expect, ExpectDiffers: s.ExpectDiffers,
		Quick: s.Quick, Source: string(s.Source), MinRequests: s.MinRequests}
	r.Fault, r.Target = s.FaultNames()
	if len(sum.Steps) > 0 {
		r.BaseMean, r.BaseThroughput = sum.Steps[0].Mean, sum.Steps[0].Throughput
	}
	byStep := map[string]*Step{}
	for _, ss := range sum.Steps[min(1, len(sum.Steps)):] {
		r.Steps = append(r.Steps, Step{Label: ss.Label, Factor: ss.Factor, Throughput: ss.Throughput, P99: ss.P99})
	}
	for i := range r.Steps {
		byStep[r.Steps[i].Label] = &r.Steps[i]
	}
	for rep := 1; rep <= s.Repeat; rep++ {
		var these []bench.RunResult
		for _, x := range runs {
			if x.ID.Rep == rep {
				these = append(these, x)
			}
		}
		if len(these) == 0 {
			continue
		}
		rsum, err := bench.Summarize(s, sum.Out, these)
		if err != nil {
			return Result{}, err
		}
		vs, err := bench.Judge(s, rsum, these, o)
		if err != nil {
			return Result{}, err
		}
		for _, v := range vs {
			st := byStep[v.Label]
			if st == nil {
				continue
			}
			one := Rep{Rep: rep, Unplaced: v.Unplaced, Verdict: v.Verdict}
			for _, ss := range rsum.Steps {
				if ss.Label == v.Label {
					one.Slowdown, one.ThroughputRatio = ss.Slowdown, ss.ThroughputRatio
				}
			}
			st.Reps = append(st.Reps, one)
		}
	}
	for i := range r.Steps {
		r.Steps[i].sum()
	}
	return r, nil
}

// sum sets the step's spreads, counts and unplaced requests from its
// repetitions.
func (st *Step) sum() {
	var slow, tput []float64
	var vs []verdict.Verdict
	st.Unplaced = 0
	for _, one := range st.Reps {
		slow, tput, vs = append(slow, one.Slowdown), append(tput, one.ThroughputRatio), append(vs, one.Verdict)
		st.Unplaced += one.Unplaced
	}
	st.Slowdown, st.ThroughputRatio, st.Counts = verdict.SpreadOf(slow), verdict.SpreadOf(tput), verdict.Counts(vs)
}

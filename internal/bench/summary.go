package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gait-dev/gait/internal/atomicfile"
	"github.com/gait-dev/gait/internal/rundir"
	"github.com/gait-dev/gait/internal/stats"
	"github.com/gait-dev/gait/internal/units"
)

// StepSummary sums up the runs of one step (all its repetitions pooled).
// Latencies are in seconds, throughput in operations per second.
type StepSummary struct {
	Label string `json:"label"` // baseline, 10x, or crash, partition, crash+partition
	// Factor is the step's slowdown, 1 for the baseline; null for a step
	// without a slowdown (only crashes and partitions).
	Factor     *float64 `json:"factor"`
	Fault      string   `json:"fault,omitempty"`
	Runs       int      `json:"runs"`
	Requests   int      `json:"requests"`
	Errors     int      `json:"errors"`
	Timeouts   int      `json:"timeouts"`
	Throughput float64  `json:"throughput"`
	Mean       float64  `json:"mean"`
	P50        float64  `json:"p50"`
	P99        float64  `json:"p99"`
	Max        float64  `json:"max"`
	// Slowdown is the mean latency over the baseline's; ThroughputRatio
	// the throughput over the baseline's.
	Slowdown        float64 `json:"slowdown"`
	ThroughputRatio float64 `json:"throughput_ratio"`
	// LongestGap is the longest time in any of the runs during which no
	// request completed (from the workload's start to its planned end): a
	// stall, such as a failover after a crash.
	LongestGap float64 `json:"longest_gap"`
	// TailThroughput is the requests per second completed in the last
	// third of each run (pooled): a collapse that comes late, once a
	// backlog has filled a heap (the paper's Z5), hides in the whole
	// run's mean.
	TailThroughput float64 `json:"tail_throughput"`
	// TailRequests is how many requests that rate counts.
	TailRequests int `json:"tail_requests"`
	// RoleChanges counts the members' role changes in the step's runs
	// (RunRecord.RoleChanges says which): where leadership moved, the
	// figures are of two arrangements of the cluster, not one.
	RoleChanges int      `json:"role_changes"`
	Dirs        []string `json:"dirs"` // the run directories
}

// Summary is what gait run prints and keeps as summary.json in the output
// directory.
type Summary struct {
	Name     string        `json:"name"`
	Scenario string        `json:"scenario"`
	System   string        `json:"system"`
	Out      string        `json:"out"`
	Steps    []StepSummary `json:"steps"`
	Runs     []RunRecord   `json:"runs"`
}

// RunRecord is one run as summary.json lists it.
type RunRecord struct {
	Dir          string            `json:"dir"`
	Step         string            `json:"step"`
	Repetition   int               `json:"repetition"`
	ReadySeconds float64           `json:"ready_seconds"` // cluster start until ready
	WallSeconds  float64           `json:"wall_seconds"`  // the whole run with setup and teardown
	Roles        map[string]string `json:"roles"`
	Clients      []string          `json:"clients_on"`
	Events       []Event           `json:"events"`
	RoleChanges  []RoleChange      `json:"role_changes,omitempty"`
}

// Summarize pools each step's runs, reading their latencies back from the
// run directories so repetitions combine exactly.
func Summarize(s *Scenario, out string, results []RunResult) (Summary, error) {
	sum := Summary{Name: s.Name, Scenario: s.File, System: s.System, Out: out}
	kinds, _ := faultNames(s.Inject)
	for _, st := range s.Steps() {
		ss := StepSummary{Label: st.Label()}
		if st.Factor > 0 {
			f := st.Factor
			ss.Factor = &f
		}
		if st.Index > 0 {
			ss.Fault = kinds
		}
		var lat []float64
		var dur float64
		tail, window := 0, 0.0
		for _, r := range results {
			if r.ID.Step.Index != st.Index {
				continue
			}
			l, gap, late, err := readRun(r.Dir, s.Workload.Duration, seconds(r.Summary.Duration))
			if err != nil {
				return sum, err
			}
			lat = append(lat, l...)
			tail += late.n
			window += late.seconds
			ss.LongestGap = max(ss.LongestGap, gap)
			ss.Runs++
			ss.Requests += r.Summary.Requests
			ss.Errors += r.Summary.Errors
			ss.Timeouts += r.Summary.Timeouts
			ss.RoleChanges += len(r.RoleChanges)
			dur += r.Summary.Duration
			ss.Dirs = append(ss.Dirs, r.Dir)
		}
		if ss.Runs == 0 {
			continue
		}
		d := stats.Describe(lat)
		ss.Mean, ss.P50, ss.P99, ss.Max = d.Mean, d.P50, d.P99, d.Max
		if dur > 0 {
			ss.Throughput = float64(ss.Requests) / dur
		}
		if window > 0 {
			ss.TailThroughput, ss.TailRequests = float64(tail)/window, tail
		}
		sum.Steps = append(sum.Steps, ss)
	}
	if len(sum.Steps) > 0 && sum.Steps[0].Label == "baseline" {
		base := sum.Steps[0]
		for i := range sum.Steps {
			if base.Mean > 0 {
				sum.Steps[i].Slowdown = sum.Steps[i].Mean / base.Mean
			}
			if base.Throughput > 0 {
				sum.Steps[i].ThroughputRatio = sum.Steps[i].Throughput / base.Throughput
			}
		}
	}
	for _, r := range results {
		sum.Runs = append(sum.Runs, RunRecord{Dir: r.Dir, Step: r.ID.Step.Label(), Repetition: r.ID.Rep,
			ReadySeconds: r.Ready.Seconds(), WallSeconds: r.Wall.Seconds(), Roles: r.Roles, Clients: r.Clients,
			Events: r.Events, RoleChanges: r.RoleChanges})
	}
	return sum, nil
}

// lateCount is how many requests completed in the last third of a run,
// and how long that third was.
type lateCount struct {
	n       int
	seconds float64
}

// readRun returns a run's latencies, its longest gap between
// completions, counting from 0 to the planned end of the workload, and
// its requests completed in the last third of the workload: of the time
// it ran, or of its planned duration when it ran longer, the requests
// still out then being stragglers, not the system's pace.
func readRun(dir string, planned, ran time.Duration) ([]float64, float64, lateCount, error) {
	run, err := rundir.Open(dir)
	if err != nil {
		return nil, 0, lateCount{}, err
	}
	samples, err := run.Samples()
	if err != nil {
		return nil, 0, lateCount{}, err
	}
	end := ran
	if planned > 0 && planned < end {
		end = planned
	}
	late := lateCount{seconds: (end - end*2/3).Seconds()}
	for _, x := range samples {
		if t := x.Start + x.Latency; t >= end*2/3 && t <= end {
			late.n++
		}
	}
	// Requests still out at the planned end complete later, after the
	// rest have stopped; that wait is not a stall of the system.
	done := make([]time.Duration, len(samples), len(samples)+1)
	for i, x := range samples {
		done[i] = x.Start + x.Latency
		if planned > 0 {
			done[i] = min(done[i], planned)
		}
	}
	slices.Sort(done)
	var gap, prev time.Duration
	for _, d := range append(done, planned) {
		gap, prev = max(gap, d-prev), max(prev, d)
	}
	lat, err := run.Latencies()
	return lat, gap.Seconds(), late, err
}

// WriteJSON writes the summary as indented JSON.
func (s Summary) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Save writes summary.json into the output directory.
func (s Summary) Save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	return atomicfile.WriteBytes(filepath.Join(s.Out, "summary.json"), append(b, '\n'))
}

// TableHeader and TableRows are the summary table, as printed and reported.
var TableHeader = []string{"step", "runs", "requests", "throughput", "mean", "p50", "p99", "max", "slowdown", "longest gap", "errors", "timeouts", "role changes"}

func (s Summary) TableRows() [][]string {
	var rows [][]string
	for _, st := range s.Steps {
		rows = append(rows, []string{st.Label, strconv.Itoa(st.Runs), strconv.Itoa(st.Requests),
			units.Rate(st.Throughput), units.Seconds(st.Mean), units.Seconds(st.P50),
			units.Seconds(st.P99), units.Seconds(st.Max), fmt.Sprintf("%.2fx", st.Slowdown), units.Seconds(st.LongestGap),
			strconv.Itoa(st.Errors), strconv.Itoa(st.Timeouts), strconv.Itoa(st.RoleChanges)})
	}
	return rows
}

// WriteText writes the summary table, aligned.
func (s Summary) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells []string) {
		for _, c := range cells {
			fmt.Fprint(tw, c, "\t")
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(w, "%s (%s): %s\n", s.Name, s.Scenario, s.Out)
	line(TableHeader)
	for _, r := range s.TableRows() {
		line(r)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if lines := s.RoleLines(); len(lines) > 0 {
		fmt.Fprintln(w, "Roles changed during these runs; their figures are of more than one arrangement of the cluster:")
		for _, l := range lines {
			fmt.Fprintln(w, "  "+l)
		}
	}
	return nil
}

// RoleLines says, for each run whose members' roles changed, who had
// which role at the start and what changed when.
func (s Summary) RoleLines() []string {
	var lines []string
	for _, r := range s.Runs {
		if len(r.RoleChanges) == 0 {
			continue
		}
		var began []string
		for _, h := range sortedKeys(r.Roles) {
			began = append(began, h+" "+r.Roles[h])
		}
		slices.SortFunc(began, func(a, b string) int { return hostOrder(strings.Fields(a)[0]) - hostOrder(strings.Fields(b)[0]) })
		lines = append(lines, fmt.Sprintf("%s (%s): at the start %s; %s", r.Step, filepath.Base(r.Dir),
			strings.Join(began, ", "), strings.Join(DescribeRoleChanges(r.RoleChanges), "; ")))
	}
	return lines
}

// Reload reads an output directory back (its scenario.yaml, summary.json
// and run directories), so its summary and report can be written again
// without running anything. The directory may have moved. Of an
// interrupted run, which wrote no summary.json, it reads the runs that
// finished.
func Reload(out string) (*Scenario, []RunResult, error) {
	src, err := os.ReadFile(filepath.Join(out, "scenario.yaml"))
	if err != nil {
		return nil, nil, fmt.Errorf("reload %s: %w (not the output directory of gait run?)", out, err)
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if errors.Is(err, os.ErrNotExist) {
		return reloadFinished(out, src)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reload %s: %w", out, err)
	}
	var old Summary
	if err := json.Unmarshal(b, &old); err != nil {
		return nil, nil, fmt.Errorf("reload %s: summary.json: %w", out, err)
	}
	s, err := Parse(old.Scenario, src)
	if err != nil {
		return nil, nil, fmt.Errorf("reload %s: %w", out, err)
	}
	ids := s.runsByDir()
	var results []RunResult
	for _, rec := range old.Runs {
		name := filepath.Base(rec.Dir)
		id, ok := ids[name]
		if !ok {
			return nil, nil, fmt.Errorf("reload %s: run %s is not one of the scenario's", out, name)
		}
		dir := filepath.Join(out, name)
		run, err := rundir.Open(dir)
		if err != nil {
			return nil, nil, err
		}
		sum, err := run.Summary()
		if err != nil {
			return nil, nil, err
		}
		results = append(results, RunResult{ID: id, Dir: dir, Summary: sum, Roles: rec.Roles, Clients: rec.Clients,
			Events: rec.Events, RoleChanges: rec.RoleChanges, Ready: seconds(rec.ReadySeconds), Wall: seconds(rec.WallSeconds)})
	}
	return s, results, nil
}

func seconds(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }

// reloadFinished reads the runs of an interrupted output directory that
// finished, from their run directories alone.
func reloadFinished(out string, src []byte) (*Scenario, []RunResult, error) {
	s, err := Parse(filepath.Join(out, "scenario.yaml"), src)
	if err != nil {
		return nil, nil, fmt.Errorf("reload %s: %w", out, err)
	}
	var results []RunResult
	for _, id := range s.Runs() {
		res, err := finishedRun(id, filepath.Join(out, id.Dir()))
		if errors.Is(err, os.ErrNotExist) {
			continue // not run, or interrupted
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reload %s: %w", out, err)
		}
		results = append(results, res)
	}
	if len(results) == 0 {
		return nil, nil, fmt.Errorf("reload %s: no run finished there", out)
	}
	return s, results, nil
}

// finishedRun reads a finished run back from its run directory: its
// summary, and what the runner kept in it (roles, clients, fault events,
// role changes). An error wrapping os.ErrNotExist means there is none.
func finishedRun(id RunID, dir string) (RunResult, error) {
	res := RunResult{ID: id, Dir: dir}
	if _, err := os.Stat(filepath.Join(dir, "run.json")); err != nil {
		return res, err
	}
	run, err := rundir.Open(dir)
	if err != nil {
		return res, err
	}
	if res.Summary, err = run.Summary(); err != nil {
		return res, err
	}
	res.Roles = map[string]string{}
	for _, h := range run.Config.Hosts {
		res.Roles[h.Name] = h.Role
	}
	var kept struct {
		Events      []Event      `json:"events"`
		Ready       float64      `json:"ready_seconds"`
		Clients     []string     `json:"clients_on"`
		RoleChanges []RoleChange `json:"role_changes"`
		Cut         float64      `json:"cut_seconds"`
	}
	b, err := json.Marshal(res.Summary.Extra)
	if err == nil {
		err = json.Unmarshal(b, &kept)
	}
	if err != nil {
		return res, fmt.Errorf("run directory %s: %w", dir, err)
	}
	res.Events, res.Ready, res.Clients, res.RoleChanges, res.Cut = kept.Events, seconds(kept.Ready), kept.Clients, kept.RoleChanges, seconds(kept.Cut)
	var wall struct {
		Seconds float64 `json:"wall_seconds"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, wallFile)); err == nil && json.Unmarshal(b, &wall) == nil {
		res.Wall = seconds(wall.Seconds)
	}
	return res, nil
}

// wallFile keeps a finished run's whole time, setup and teardown
// included, which its run directory, written before the teardown, cannot.
// A run without it (from before it was kept) counts 0.
const wallFile = "wall.json"

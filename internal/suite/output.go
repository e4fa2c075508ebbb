package suite

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gait-dev/gait/internal/units"
	"github.com/gait-dev/gait/internal/verdict"
)

// Row is one experiment at one factor, as `gait bench --format json`
// prints it.
type Row struct {
	Experiment  string   `json:"experiment"`
	System      string   `json:"system"`
	Fault       string   `json:"fault"`
	Target      string   `json:"target"`
	Step        string   `json:"step"`   // 10x, or crash, partition
	Factor      *float64 `json:"factor"` // null for a crash or partition
	Repetitions int      `json:"repetitions"`
	// Slowdown is the median over the repetitions of each one's mean
	// latency over its baseline's, SlowdownMin and SlowdownMax its range;
	// ThroughputRatio likewise.
	Slowdown        float64 `json:"slowdown"`
	SlowdownMin     float64 `json:"slowdown_min"`
	SlowdownMax     float64 `json:"slowdown_max"`
	Throughput      float64 `json:"throughput"`
	ThroughputRatio float64 `json:"throughput_ratio"`
	// A verdict is true when every repetition gave it; Counts says how
	// many did, for each verdict at least one gave (a verdict with a
	// count below the repetitions flips between them).
	OperationLL   bool            `json:"operation_limplock"`
	NodeLL        bool            `json:"node_limplock"`
	ClusterLL     bool            `json:"cluster_limplock"`
	HiddenBacklog bool            `json:"hidden_backlog"`
	Counts        []verdict.Count `json:"counts"`
	Reasons       Reasons         `json:"reasons"`
	// Warning says a repetition's baseline looks broken (see
	// verdict.Verdict).
	Warning  string `json:"warning,omitempty"`
	Unplaced int    `json:"unplaced,omitempty"`
	PaperRow string `json:"paper_row,omitempty"`
}

// Reasons says why each verdict was given or not, one sentence each.
type Reasons struct {
	Operation string `json:"operation_limplock"`
	Node      string `json:"node_limplock"`
	Cluster   string `json:"cluster_limplock"`
	Backlog   string `json:"hidden_backlog"`
}

// Given writes one verdict's count for a table: "yes 3/3" when every
// repetition gave it (yes 1/1 for a single one, so a table says how many
// runs stand behind it), "-" when none did, "flips 2/3" when they
// disagree.
func Given(cs []verdict.Count, mark string) string {
	for _, c := range cs {
		switch {
		case c.Mark != mark:
		case c.Flips():
			return "flips " + c.Ratio()
		default:
			return "yes " + c.Ratio()
		}
	}
	return "-"
}

// Repetitions is how many repetitions the experiment's steps ran: the
// most any step did (a resumed experiment's larger factors may have fewer).
func (r Result) Repetitions() int {
	n := 0
	for _, st := range r.Steps {
		n = max(n, len(st.Reps))
	}
	return n
}

// GotText writes the experiment's verdicts with how many repetitions gave
// each, also for one repetition ("OL 1/1 CL 1/1"), or "none 3/3" when no
// repetition gave any.
func (r Result) GotText() string {
	if got := r.Got(); len(got) > 0 {
		return verdict.CountText(got)
	}
	n := r.Repetitions()
	return fmt.Sprintf("none %d/%d", n, n)
}

// UnplacedText says why n requests are missing from a step's verdicts.
func UnplacedText(n int) string {
	return fmt.Sprintf("%d requests left out of the verdicts: they failed before their client said which members they touched", n)
}

// Rows lists every experiment's steps after the baseline.
func Rows(results []Result) []Row {
	var rows []Row
	for _, r := range results {
		for _, st := range r.Steps {
			row := Row{Experiment: r.Experiment, System: r.System, Fault: r.Fault, Target: r.Target, Step: st.Label,
				Factor: st.Factor, Repetitions: len(st.Reps), Slowdown: st.Slowdown.Median, SlowdownMin: st.Slowdown.Min,
				SlowdownMax: st.Slowdown.Max, Throughput: st.Throughput, ThroughputRatio: st.ThroughputRatio.Median,
				OperationLL: st.Steady("OL"), NodeLL: st.Steady("NL"), ClusterLL: st.Steady("CL"), HiddenBacklog: st.Steady("backlog"),
				Counts:  st.Counts,
				Reasons: Reasons{st.Why("OL"), st.Why("NL"), st.Why("CL"), st.Why("backlog")},
				Warning: strings.Join(st.Warnings(), "; "), Unplaced: st.Unplaced}
			if r.Paper != nil {
				row.PaperRow = r.Paper.Row
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// WriteJSON writes the rows as a JSON array.
func WriteJSON(w io.Writer, results []Result) error {
	rows := Rows(results)
	if rows == nil {
		rows = []Row{}
	}
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return fmt.Errorf("encode rows: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// MarkText writes marks for a table: "OL CL", or "-" for none.
func MarkText(marks []string) string {
	if len(marks) == 0 {
		return "-"
	}
	return strings.Join(marks, " ")
}

// Table1 is the suite's Table 1: one row per experiment, its baseline,
// gait's verdicts over all its steps, the paper's marks and a regression
// scenario's prediction; the prediction's two columns only when an
// experiment has one, so a suite of the paper's rows fits the page.
func Table1(results []Result) (header []string, rows [][]string) {
	header = []string{"row", "experiment", "limpware", "base latency", "base tput", "gait", "paper", "same", "expected", "as expected"}
	predicts := slices.ContainsFunc(results, func(r Result) bool { return r.Expect != nil })
	for _, r := range results {
		got := r.Got()
		row, paper, paperMatch := "", "", ""
		if r.Paper != nil {
			row, paper, paperMatch = r.Paper.Row, MarkText(r.Paper.Marks), verdict.Agreement(r.Paper.Marks, got)
		}
		cells := []string{row, r.Experiment, r.Limpware(), units.Seconds(r.BaseMean),
			units.Rate(r.BaseThroughput), r.GotText(), paper, paperMatch}
		if predicts {
			expected := ""
			if r.Expect != nil {
				expected = MarkText(r.Expect)
			}
			cells = append(cells, expected, verdict.Agreement(r.Expect, got))
		}
		rows = append(rows, cells)
	}
	if !predicts {
		header = header[:len(header)-2]
	}
	return header, rows
}

// Limpware names the experiment's faults and where: "nic on leader", or
// "none" for an experiment that injects nothing.
func (r Result) Limpware() string {
	if r.Fault == "" {
		return "none"
	}
	return r.Fault + " on " + r.Target
}

// Differences explains each experiment whose verdicts are not the paper's
// marks, or not a regression scenario's prediction: by its scenario's
// paper.differs (expect.differs), then by what this suite measured for
// each mark that differs (Measured), "Z5 zk-z5-...: gait ..., the paper
// ...: why. Measured: ...". One whose scenario does not say is listed
// too, with what was measured, so no difference passes unexplained.
func Differences(results []Result) []string {
	var out []string
	for _, r := range results {
		got := r.Got()
		if r.Paper != nil && verdict.Agreement(r.Paper.Marks, got) != "yes" {
			out = append(out, fmt.Sprintf("%s %s: gait %s, the paper %s: %s", r.Paper.Row, r.Experiment,
				r.GotText(), MarkText(r.Paper.Marks), whyDiffers(r, r.Paper.Marks, r.Paper.Differs)))
		}
		if r.Expect != nil && verdict.Agreement(r.Expect, got) != "yes" {
			out = append(out, fmt.Sprintf("%s: gait %s, expected %s: %s", r.Experiment,
				r.GotText(), MarkText(r.Expect), whyDiffers(r, r.Expect, r.ExpectDiffers)))
		}
	}
	return out
}

// whyDiffers is the scenario's reason (differs) and what was measured
// against the marks it expected.
func whyDiffers(r Result, marks []string, differs string) string {
	why := differs
	if why == "" {
		why = "the scenario does not say why."
	}
	if m := Measured(r, marks); m != "" {
		why = strings.TrimSuffix(why, ".") + ". Measured: " + m + "."
	}
	return why
}

// Measured gives, for each verdict where r differs from marks (the
// paper's, or a regression's prediction), the reason this suite's runs
// gave: from the step that gave it most often (a verdict not marked, or
// one that flips), or from the largest step (a mark that no repetition
// gave).
func Measured(r Result, marks []string) string {
	if len(r.Steps) == 0 {
		return ""
	}
	var parts []string
	for _, m := range verdict.MarkNames {
		wanted := slices.Contains(marks, m)
		st, given, of := r.Steps[len(r.Steps)-1], 0, 1
		for _, s := range r.Steps {
			for _, c := range s.Counts {
				if c.Mark == m && c.Given*of > given*c.Of {
					st, given, of = s, c.Given, c.Of
				}
			}
		}
		if (wanted && given > 0 && given == of) || (!wanted && given == 0) {
			continue
		}
		if why := st.Why(m); why != "" {
			parts = append(parts, st.Label+", "+why)
		}
	}
	return strings.Join(parts, "; ")
}

// WriteText writes one line per experiment and step, then Table 1.
func WriteText(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "experiment\tstep\tslowdown\tthroughput\tOL\tNL\tCL\tbacklog\t")
	var warnings []string
	for _, r := range Rows(results) {
		sp := verdict.Spread{Median: r.Slowdown, Min: r.SlowdownMin, Max: r.SlowdownMax}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Experiment, r.Step, sp.Ratio(), units.Rate(r.Throughput),
			Given(r.Counts, "OL"), Given(r.Counts, "NL"), Given(r.Counts, "CL"), Given(r.Counts, "backlog"))
		if r.Warning != "" {
			warnings = append(warnings, fmt.Sprintf("%s %s: %s", r.Experiment, r.Step, r.Warning))
		}
		if r.Unplaced > 0 {
			warnings = append(warnings, fmt.Sprintf("%s %s: %s", r.Experiment, r.Step, UnplacedText(r.Unplaced)))
		}
	}
	for _, w := range warnings {
		fmt.Fprintln(tw, "warning: "+w)
	}
	fmt.Fprintln(tw)
	header, rows := Table1(results)
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, d := range Differences(results) {
		fmt.Fprintln(w, "differs: "+d)
	}
	return nil
}

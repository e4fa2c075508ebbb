package suite

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gait-dev/gait/internal/bench"
	"github.com/gait-dev/gait/internal/units"
)

// Row is one experiment at one factor, as `gait bench --format json`
// prints it.
type Row struct {
	Experiment      string   `json:"experiment"`
	System          string   `json:"system"`
	Fault           string   `json:"fault"`
	Target          string   `json:"target"`
	Step            string   `json:"step"`   // 10x, or crash, partition
	Factor          *float64 `json:"factor"` // null for a crash or partition
	Slowdown        float64  `json:"slowdown"`
	Throughput      float64  `json:"throughput"`
	ThroughputRatio float64  `json:"throughput_ratio"`
	OperationLL     bool     `json:"operation_limplock"`
	NodeLL          bool     `json:"node_limplock"`
	ClusterLL       bool     `json:"cluster_limplock"`
	HiddenBacklog   bool     `json:"hidden_backlog"`
	Reasons         Reasons  `json:"reasons"`
	// Warning says the baseline looks broken (see verdict.Verdict).
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
				Factor: st.Factor, Slowdown: st.Slowdown, Throughput: st.Throughput, ThroughputRatio: st.ThroughputRatio,
				OperationLL: st.Operation.On, NodeLL: st.Node.On, ClusterLL: st.Cluster.On, HiddenBacklog: st.Backlog.On,
				Reasons: Reasons{st.Operation.Why, st.Node.Why, st.Cluster.Why, st.Backlog.Why}, Warning: st.Warning, Unplaced: st.Unplaced}
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

// Match compares what an experiment got with a prediction: "yes", "no",
// or "" when nothing was predicted.
func Match(want, got []string) string {
	switch {
	case want == nil:
		return ""
	case slices.Equal(want, got):
		return "yes"
	}
	return "no"
}

// Table1Header and Table1Rows are the suite's Table 1: one row per
// experiment, its baseline, gait's verdicts over all its steps, the
// paper's marks and a regression scenario's prediction.
var Table1Header = []string{"row", "experiment", "limpware", "base latency", "base tput", "gait", "paper", "same", "expected", "as expected"}

// Table1Rows are Table 1's rows, in the order of results.
func Table1Rows(results []Result) [][]string {
	var rows [][]string
	for _, r := range results {
		got := r.Got()
		row, paper, paperMatch := "", "", ""
		if r.Paper != nil {
			row, paper, paperMatch = r.Paper.Row, MarkText(r.Paper.Marks), Match(ordered(r.Paper.Marks), got)
		}
		expected := ""
		if r.Expect != nil {
			expected = MarkText(r.Expect)
		}
		rows = append(rows, []string{row, r.Experiment, r.Fault + " on " + r.Target, units.Seconds(r.BaseMean),
			units.Rate(r.BaseThroughput), MarkText(got), paper, paperMatch, expected, Match(ordered(r.Expect), got)})
	}
	return rows
}

// ordered puts marks in bench.Marks's order, keeping nil nil.
func ordered(marks []string) []string {
	if marks == nil {
		return nil
	}
	out := []string{}
	for _, m := range bench.Marks {
		if slices.Contains(marks, m) {
			out = append(out, m)
		}
	}
	return out
}

// WriteText writes one line per experiment and step, then Table 1.
func WriteText(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "experiment\tstep\tslowdown\tthroughput\tOL\tNL\tCL\tbacklog\t")
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "-"
	}
	var warnings []string
	for _, r := range Rows(results) {
		fmt.Fprintf(tw, "%s\t%s\t%.2fx\t%s\t%s\t%s\t%s\t%s\t\n", r.Experiment, r.Step, r.Slowdown, units.Rate(r.Throughput),
			yes(r.OperationLL), yes(r.NodeLL), yes(r.ClusterLL), yes(r.HiddenBacklog))
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
	fmt.Fprintln(tw, strings.Join(Table1Header, "\t")+"\t")
	for _, row := range Table1Rows(results) {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

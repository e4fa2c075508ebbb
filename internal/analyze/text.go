package analyze

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gait-dev/gait/internal/units"

	"github.com/gait-dev/gait/internal/stats"
)

// WriteJSON writes the result as indented JSON (docs/analyze.md).
func (r Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// WriteText writes the terminal report: one row per configuration, then the
// criteria in words.
func (r Result) WriteText(w io.Writer) error {
	b := bufio.NewWriter(w)
	for _, warn := range r.warnings() {
		b.WriteString("WARNING: " + warn + ".\n")
	}
	if common := r.common(); common != "" {
		b.WriteString(common + "\n")
	}
	writeAligned(b, r.table())
	b.WriteString("\n")
	for _, line := range r.summary() {
		b.WriteString(line + "\n")
	}
	return b.Flush()
}

// writeAligned writes rows as columns two spaces apart, the first (the
// configuration's name) aligned left and the numbers right.
func writeAligned(w *bufio.Writer, rows [][]string) {
	var width []int
	for _, row := range rows {
		for i, cell := range row {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(cell))
		}
	}
	for _, row := range rows {
		var line strings.Builder
		for i, cell := range row {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(cell))
			switch {
			case i == 0:
				line.WriteString(cell + pad)
			default:
				line.WriteString("  " + pad + cell)
			}
		}
		w.WriteString(line.String() + "\n")
	}
}

// tableHeader names the columns of the per-configuration table.
var tableHeader = []string{"configuration", "n", "mean", "p50", "p99", "p99.9", "max",
	"C1", "C2 (3σ)", "haircut max", "p99/mean", "p99 99% CI"}

// header is tableHeader, plus the share within the bound when there is one.
func (r Result) header() []string {
	if r.Bound == nil {
		return tableHeader
	}
	return append(slices.Clone(tableHeader), "within "+units.Seconds(*r.Bound))
}

func (r Result) table() [][]string {
	rows := [][]string{r.header()}
	for _, c := range r.Configurations {
		rows = append(rows, c.row())
	}
	return rows
}

func (c Configuration) row() []string {
	c1 := "no"
	if c.C1.Unpredictable {
		c1 = "yes"
	}
	row := []string{
		c.Label, strconv.Itoa(c.Count), units.Seconds(c.Mean), units.Seconds(c.P50), units.Seconds(c.P99), units.Seconds(c.P999),
		units.Seconds(c.Max), c1, fmt.Sprintf("%d (%s)", c.C2.Count, percent(c.C2.Share)),
		units.Seconds(c.Haircut.Max), ratioText(c.P99OverMean), c.P99CI99.text(),
	}
	if c.ShareWithinBound != nil {
		row = append(row, slaPercent(*c.ShareWithinBound))
	}
	return row
}

// slaPercent writes a share with three decimals of a percent: an SLA such as
// 99.9% needs more digits than the other columns' three significant ones.
func slaPercent(share float64) string {
	return strconv.FormatFloat(100*share, 'f', 3, 64) + "%"
}

func (iv Interval) text() string {
	if !iv.OK {
		return "n too small"
	}
	return "[" + units.Seconds(*iv.Lower) + ", " + units.Seconds(*iv.Upper) + "]"
}

// summary is the cross-configuration part, in words.
func (r Result) summary() []string {
	n := len(r.Configurations)
	var c1, c2 int
	for _, c := range r.Configurations {
		if c.C1.Unpredictable {
			c1++
		}
		if c.C2.Count > 0 {
			c2++
		}
	}
	lines := []string{
		fmt.Sprintf("C1 (max > %d x mean): %d of %d configurations.", stats.C1Factor, c1, n),
		fmt.Sprintf("C2 (samples beyond mean + 3σ): present in %d of %d configurations.", c2, n),
		"C3 (one-way ANOVA per factor, significant when p < 0.01):",
	}
	if len(r.Factors) == 0 {
		lines = append(lines, "  no factor has two or more levels, so there is nothing to compare.")
	}
	for _, f := range r.Factors {
		lines = append(lines, fmt.Sprintf("  %s (levels %s):", f.Factor, strings.Join(f.Levels, ", ")))
		for _, t := range []struct {
			what string
			a    ANOVA
		}{{"mean", f.Latency}, {"p99", f.P99}, {"max", f.Max}} {
			lines = append(lines, "    "+t.a.sentence(f.Factor, t.what))
		}
	}
	if len(r.SingleLevelFactors) > 0 {
		lines = append(lines, "  not tested, one level only: "+strings.Join(r.SingleLevelFactors, ", "))
	}
	lines = append(lines, "Headline (p99's upper 99% bound within 25 x mean): "+r.Headline.Verdict+".")
	for _, n := range r.notes() {
		lines = append(lines, "Note: "+n+".")
	}
	return lines
}

// common says what every configuration shares, which their labels leave
// out; empty when they share nothing.
func (r Result) common() string {
	if len(r.CommonFactors) == 0 {
		return ""
	}
	return fmt.Sprintf("All %d configurations: %s.", len(r.Configurations), strings.Join(r.CommonFactors, " "))
}

// warnings returns, first thing to read, each configuration whose latencies
// are not the server's alone, and why.
func (r Result) warnings() []string {
	var out []string
	for _, c := range r.Configurations {
		if c.Warning != "" {
			out = append(out, c.Label+": "+c.Warning)
		}
	}
	return out
}

// notes returns the configurations' reading notes, each once, with the
// configurations it applies to (all of them from one histogram log share it).
func (r Result) notes() []string {
	var order []string
	names := map[string][]string{}
	for _, c := range r.Configurations {
		if c.Note == "" {
			continue
		}
		if _, ok := names[c.Note]; !ok {
			order = append(order, c.Note)
		}
		names[c.Note] = append(names[c.Note], c.Label)
	}
	out := make([]string, len(order))
	for i, n := range order {
		out[i] = strings.Join(names[n], ", ") + ": " + n
	}
	return out
}

// sentence says one ANOVA's verdict, e.g. "clients influences the mean:
// F(3, 9996) = 12.5, p = 4.1e-08".
func (a ANOVA) sentence(factor, what string) string {
	if !a.OK {
		return fmt.Sprintf("%s: not tested (%s)", what, a.Reason)
	}
	verb := "does not influence"
	if *a.Influences {
		verb = "influences"
	}
	return fmt.Sprintf("%s %s the %s: F(%d, %d) = %s, p %s",
		factor, verb, what, *a.DFBetween, *a.DFWithin, units.Sig(*a.F), pValue(*a.P))
}

// pValue writes "= 0.041", or "< 1e-300" when the p-value underflows.
func pValue(p float64) string {
	if p == 0 {
		return "< 1e-300"
	}
	return "= " + strconv.FormatFloat(p, 'g', 2, 64)
}

func percent(share float64) string {
	return units.Sig(100*share) + "%"
}

func ratioText(v *float64) string {
	if v == nil {
		return "-"
	}
	return units.Sig(*v)
}

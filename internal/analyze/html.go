package analyze

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gait-dev/gait/internal/units"

	"github.com/gait-dev/gait/internal/report"
	"github.com/gait-dev/gait/internal/stats"
)

// WriteHTML writes a self-contained HTML report: the figures of the paper
// (latency distributions, the haircut of Fig. 2, the outliers of Fig. 4, the
// p99 bounds of Fig. 11) and the tables.
func (r Result) WriteHTML(w io.Writer, title string) error {
	p := report.NewPage(title)
	p.Paragraph(fmt.Sprintf("%d configurations, %d requests. Criteria of \"Middleware, Fault-Tolerance and the "+
		"Magical 1%%\": C1, the maximum exceeds %d x the mean; C2, samples beyond mean + 3σ; C3, a factor "+
		"influences the latency (one-way ANOVA, p < 0.01).", len(r.Configurations), r.requests(), stats.C1Factor))
	for _, warn := range r.warnings() {
		p.Note("WARNING: " + warn + ".")
	}
	p.Note("Headline: " + r.Headline.Verdict + ".")
	if common := r.common(); common != "" {
		p.Paragraph(common + " The legends and tables below name each configuration by what tells it from the others.")
	}

	order := r.byMean()
	p.Heading("Latency distributions")
	p.Figure("Fraction of requests at least as slow as x, per configuration, both axes logarithmic (a CCDF). "+
		"The tail reads off directly: the curve crosses 1% at p99 and 0.1% at p99.9, and its last point is "+
		"the maximum, a single request (1/n). A curve that drops steeply and then runs flat far to the right "+
		"is the paper's picture: a predictable 99% and a few large outliers.", r.ccdfChart())

	p.Heading("The haircut")
	p.Figure("Maximum, p99 and mean latency of each configuration, sorted by mean (x is the rank in the "+
		"configuration table below), logarithmic y, like the paper's Figure 2. Removing the top 1% of "+
		"requests brings the maximum down to p99, which follows the mean; the dashed line is 10 x the mean, "+
		"above which a maximum is unpredictable by C1.", r.haircutChart(order))

	p.Heading("Outliers")
	p.Figure("Number of 3σ outliers (C2) against the size of the largest one relative to the mean, one "+
		"point per configuration, like the paper's Figure 4; configurations without an outlier are not "+
		"shown. The paper finds the two negatively correlated: few outliers, but large ones.",
		r.outlierChart())

	p.Heading("Bounds for p99")
	p.Figure("Each configuration's p99 and the upper end of its 99% confidence interval, and its maximum, "+
		"relative to its mean, sorted by mean as above, like the paper's Figure 11. The headline check "+
		"holds when every upper bound stays under the dashed line at 25 x the mean.", r.boundsChart(order))

	p.Heading("Configurations")
	p.Table(append([]string{"#"}, r.header()...), r.htmlRows(order))
	p.Table([]string{"configuration", "std", "min", "p90", "C2 threshold", "largest outlier / mean",
		"haircut mean", "removed", "p99 95% CI", "source"}, r.detailRows(order))

	p.Heading("Does a factor influence the latency? (C3)")
	if len(r.Factors) == 0 {
		p.Paragraph("No factor has two or more levels, so there is nothing to compare.")
	} else {
		p.Table([]string{"factor", "levels", "tested", "F", "df", "p", "verdict"}, r.anovaRows())
	}
	if len(r.SingleLevelFactors) > 0 {
		p.Paragraph("Not tested, one level only: " + strings.Join(r.SingleLevelFactors, ", ") + ".")
	}
	for _, n := range r.notes() {
		p.Note(n + ".")
	}
	p.Paragraph("Percentiles use numpy's default (linear) definition; the confidence intervals are " +
		"distribution-free, from order statistics and the binomial distribution. Latencies are client-side " +
		"and include every request as recorded.")
	_, err := p.WriteTo(w)
	return err
}

func (r Result) requests() int {
	n := 0
	for _, c := range r.Configurations {
		n += c.Count
	}
	return n
}

// byMean returns the configuration indices sorted by mean latency.
func (r Result) byMean() []int {
	idx := make([]int, len(r.Configurations))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Compare(r.Configurations[a].Mean, r.Configurations[b].Mean)
	})
	return idx
}

// ccdfPointsPerDecade sets how finely the distribution is sampled for the
// figure: the chart needs a few hundred points per curve, not 10^7.
const ccdfPointsPerDecade = 60

// ccdf returns points (latency, fraction of requests >= latency) of a sorted
// sample: geometrically spaced fractions from 1 down to 1/n, and the last
// samples exactly, so every large outlier is drawn.
func ccdf(sorted []float64) (xs, ys []float64) {
	n := len(sorted)
	last := -1
	add := func(i int) {
		if i <= last || i >= n {
			return
		}
		xs = append(xs, sorted[i])
		ys = append(ys, float64(n-i)/float64(n))
		last = i
	}
	step := math.Pow(10, -1.0/ccdfPointsPerDecade)
	for f := 1.0; f*float64(n) >= 100; f *= step {
		add(n - int(math.Ceil(f*float64(n))))
	}
	for i := max(0, n-100); i < n; i++ {
		add(i)
	}
	return xs, ys
}

func (r Result) ccdfChart() report.Chart {
	c := report.LineChart{
		Title: "Latency distribution (CCDF)",
		X:     report.Axis{Label: "latency", Log: true, Unit: "s"},
		Y:     report.Axis{Label: "fraction of requests at least this slow", Log: true, Unit: "%"},
		Step:  true,
	}
	lo, hi := math.Inf(1), 0.0
	for i, s := range r.sorted {
		x, y := ccdf(s)
		c.Series = append(c.Series, report.Series{Name: r.Configurations[i].Label, X: x, Y: y})
		lo, hi = min(lo, s[0]), max(hi, s[len(s)-1])
	}
	if lo == 0 {
		lo = hi / 1e3 // a zero latency has no place on a log axis
	}
	c.Series = append(c.Series, report.Series{Name: "1% (p99)", X: []float64{lo, hi}, Y: []float64{0.01, 0.01}, Dashed: true})
	return c
}

func (r Result) haircutChart(order []int) report.Chart {
	var rank, mean, p99, maxs, c1 []float64
	for i, k := range order {
		c := r.Configurations[k]
		rank = append(rank, float64(i+1))
		mean = append(mean, c.Mean)
		p99 = append(p99, c.P99)
		maxs = append(maxs, c.Max)
		c1 = append(c1, stats.C1Factor*c.Mean)
	}
	return report.LineChart{
		Title:   "The haircut: max, p99 and mean per configuration",
		X:       report.Axis{Label: "configuration, by mean latency (rank)", Min: 0.5, Max: float64(len(order)) + 0.5},
		Y:       report.Axis{Label: "latency", Log: true, Unit: "s"},
		Markers: true,
		Series: []report.Series{
			{Name: "max", X: rank, Y: maxs},
			{Name: "p99", X: rank, Y: p99},
			{Name: "mean", X: rank, Y: mean},
			{Name: "10 x mean (C1)", X: rank, Y: c1, Dashed: true},
		},
	}
}

func (r Result) outlierChart() report.Chart {
	var count, size []float64
	for _, c := range r.Configurations {
		if c.C2.Count > 0 && c.C2.LargestOverMean != nil {
			count = append(count, float64(c.C2.Count))
			size = append(size, *c.C2.LargestOverMean)
		}
	}
	if len(count) == 0 {
		return nil
	}
	return report.ScatterChart{
		Title:  "Counts and sizes of outliers",
		X:      report.Axis{Label: "3σ outliers in the configuration", Log: true},
		Y:      report.Axis{Label: "largest outlier / mean", Log: true},
		Series: []report.Series{{Name: "configuration", X: count, Y: size}},
	}
}

func (r Result) boundsChart(order []int) report.Chart {
	var rank, p99, upper, maxs, limit []float64
	for i, k := range order {
		c := r.Configurations[k]
		if c.Mean == 0 {
			continue
		}
		rank = append(rank, float64(i+1))
		p99 = append(p99, c.P99/c.Mean)
		maxs = append(maxs, c.Max/c.Mean)
		limit = append(limit, stats.HeadlineFactor)
		u := math.NaN() // no interval: the chart skips the point
		if c.P99CI99.OK {
			u = *c.P99CI99.Upper / c.Mean
		}
		upper = append(upper, u)
	}
	return report.LineChart{
		Title:   "p99 and its 99% upper bound, relative to the mean",
		X:       report.Axis{Label: "configuration, by mean latency (rank)", Min: 0.5, Max: float64(len(order)) + 0.5},
		Y:       report.Axis{Label: "latency / mean", Log: true},
		Markers: true,
		Series: []report.Series{
			{Name: "max / mean", X: rank, Y: maxs},
			{Name: "p99 upper 99% bound / mean", X: rank, Y: upper},
			{Name: "p99 / mean", X: rank, Y: p99},
			{Name: "25 x mean", X: rank, Y: limit, Dashed: true},
		},
	}
}

func (r Result) htmlRows(order []int) [][]string {
	var rows [][]string
	for i, k := range order {
		rows = append(rows, append([]string{strconv.Itoa(i + 1)}, r.Configurations[k].row()...))
	}
	return rows
}

func (r Result) detailRows(order []int) [][]string {
	var rows [][]string
	for _, k := range order {
		c := r.Configurations[k]
		largest := "-"
		if c.C2.LargestOverMean != nil {
			largest = units.Sig(*c.C2.LargestOverMean)
		}
		rows = append(rows, []string{c.Label, units.Seconds(c.Std), units.Seconds(c.Min), units.Seconds(c.P90),
			units.Seconds(c.C2.Threshold), largest, units.Seconds(c.Haircut.Mean), strconv.Itoa(c.Haircut.Removed),
			c.P99CI95.text(), c.Source})
	}
	return rows
}

func (r Result) anovaRows() [][]string {
	var rows [][]string
	for _, f := range r.Factors {
		for _, t := range []struct {
			what string
			a    ANOVA
		}{{"mean (every request)", f.Latency}, {"p99 (per configuration)", f.P99}, {"max (per configuration)", f.Max}} {
			row := []string{f.Factor, strings.Join(f.Levels, ", "), t.what, "-", "-", "-", ""}
			if t.a.OK {
				row[3], row[4], row[5] = units.Sig(*t.a.F), fmt.Sprintf("%d, %d", *t.a.DFBetween, *t.a.DFWithin), pValue(*t.a.P)
				row[6] = "does not influence"
				if *t.a.Influences {
					row[6] = "influences"
				}
			} else {
				row[6] = "not tested: " + t.a.Reason
			}
			rows = append(rows, row)
		}
	}
	return rows
}

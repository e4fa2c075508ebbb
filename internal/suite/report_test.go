package suite

import (
	"slices"
	"strings"
	"testing"

	"github.com/gait-dev/gait/internal/report"
	"github.com/gait-dev/gait/internal/verdict"
)

// TestFactorAxis: Figure 1's factor axis runs from the baseline's 1x to
// the decade of the largest factor, so one factor alone (--quick's) sits
// at its place on the scale.
func TestFactorAxis(t *testing.T) {
	for _, c := range []struct {
		xs  [][]float64
		max float64
	}{
		{[][]float64{{1000}}, 1000},
		{[][]float64{{10, 100, 1000}, {1000}}, 1000},
		{[][]float64{{10}, {2000}}, 10000},
		{[][]float64{{2}}, 10},
	} {
		var series []report.Series
		for _, x := range c.xs {
			series = append(series, report.Series{X: x})
		}
		ax := factorAxis(series)
		if !ax.Log || ax.Min != 1 || ax.Max != c.max {
			t.Errorf("factors %v: axis log %v from %v to %v, want log from 1 to %v", c.xs, ax.Log, ax.Min, ax.Max, c.max)
		}
	}
}

// TestSlowdownLines: each experiment with factors is a line from the
// baseline (1x, slowdown 1) through its steps' medians, with their
// ranges; a crash step is listed apart, and an experiment of crash steps
// alone draws no line.
func TestSlowdownLines(t *testing.T) {
	f := 1000.0
	results := []Result{
		{Experiment: "one", Steps: []Step{{Label: "1000x", Factor: &f, Slowdown: verdict.Spread{Median: 40, Min: 30, Max: 50}}}},
		{Experiment: "crash", Steps: []Step{{Label: "crash", Slowdown: verdict.Spread{Median: 2, Min: 2, Max: 2}}}},
	}
	series, crashes := slowdownLines(results)
	if len(series) != 1 || series[0].Name != "one" {
		t.Fatalf("series %+v, want the one experiment with a factor", series)
	}
	s := series[0]
	if !slices.Equal(s.X, []float64{1, 1000}) || !slices.Equal(s.Y, []float64{1, 40}) ||
		!slices.Equal(s.Lo, []float64{1, 30}) || !slices.Equal(s.Hi, []float64{1, 50}) {
		t.Errorf("line %+v, want from (1, 1) to (1000, 40) with the range 30-50", s)
	}
	if len(crashes) != 1 || !strings.HasPrefix(crashes[0], "crash crash: ") {
		t.Errorf("crashes %q", crashes)
	}
}

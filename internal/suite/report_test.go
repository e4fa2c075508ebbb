package suite

import (
	"testing"

	"github.com/gait-dev/gait/internal/report"
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

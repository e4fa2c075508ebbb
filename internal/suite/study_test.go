package suite

import (
	"slices"
	"testing"

	"github.com/gait-dev/gait/internal/bench"
	"github.com/gait-dev/gait/internal/rundir"
)

// TestStudyPointsInOrder: a series' points are joined in order of x, not
// in the order the suite ran its experiments (10, 30, then 3 DataNodes
// drew a line from 30 back to 3).
func TestStudyPointsInOrder(t *testing.T) {
	st := &bench.Study{Figure: "f", X: "datanodes", Y: "throughput", Series: "10 handlers"}
	f := &studyFigure{study: st}
	for _, c := range []struct {
		nodes int
		tput  float64
	}{{11, 3.6}, {31, 3.9}, {4, 1.7}} {
		s := &bench.Scenario{Name: "e", Nodes: c.nodes, Study: st}
		if err := f.add(s, bench.RunResult{Summary: rundir.Summary{Throughput: c.tput}}); err != nil {
			t.Fatal(err)
		}
	}
	sr := f.series[0]
	if want := []float64{3, 10, 30}; !slices.Equal(sr.X, want) {
		t.Errorf("x %v, want %v", sr.X, want)
	}
	if want := []float64{1.7, 3.6, 3.9}; !slices.Equal(sr.Y, want) {
		t.Errorf("y %v, want %v (each with its own x)", sr.Y, want)
	}
}

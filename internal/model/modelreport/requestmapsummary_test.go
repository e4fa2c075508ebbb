package modelreport

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/gait-dev/gait/internal/model"
)

// The summary's rows are the shapes of mix present, each mix counted by
// its largest error over the quantiles, at each load.
func TestRequestMapSummary(t *testing.T) {
	cell := func(u float64, d, r int, q, pred, sim float64) model.RequestErrorCell {
		return model.RequestErrorCell{Utilization: u, Config: model.Config{Duplicates: d, Replicas: r}, Quantile: q, Predicted: pred, Simulated: sim}
	}
	cells := []model.RequestErrorCell{
		cell(0.3, 1, 1, 0.5, 0.5, 0.5005),
		cell(0.3, 1, 1, 0.9, 0.9, 0.903), // 1x1 at 30%: 0.0030, out
		cell(0.01, 1, 1, 0.5, 0.5, 0.5001),
		cell(0.01, 2, 2, 0.5, 0.5, 0.499),
		cell(0.01, 2, 3, 0.5, 0.5, 0.5025),
		cell(0.3, 2, 2, 0.5, 0.5, 0.5015),
	}
	header, rows, inside, total := requestMapSummary(cells)
	if want := []string{"mixes", "1% load", "30% load"}; !slices.Equal(header, want) {
		t.Errorf("header %q, want %q", header, want)
	}
	want := [][]string{
		{"one server (1x1)", "0.0001 (1/1)", "0.0030 (0/1)"},
		{"duplicates in several groups (dxr)", "0.0010–0.0025 (1/2)", "0.0015 (1/1)"},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %q, want %q", rows, want)
	}
	for i := range want {
		if !slices.Equal(rows[i], want[i]) {
			t.Errorf("row %d: %q, want %q", i, rows[i], want[i])
		}
	}
	if inside != 3 || total != 5 {
		t.Errorf("%d of %d within, want 3 of 5", inside, total)
	}
	var b bytes.Buffer
	if err := WriteRequestErrorMap(&b, model.System{Service: model.Exponential{M: 1e-3}, Request: model.Request{Phases: []int{2}}}, cells); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "3 of 5 mixes x loads within 0.002; largest |error|: 0.0030") {
		t.Errorf("text output lacks the count:\n%s", b.String())
	}
}

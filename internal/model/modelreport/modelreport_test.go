package modelreport

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gait-dev/gait/internal/model"
	"github.com/gait-dev/gait/internal/model/limplock"
)

func TestWritePredictions(t *testing.T) {
	sys := model.System{Service: model.Exponential{M: 1e-3}, Rate: 990, Bound: 5e-3}
	preds := []model.Prediction{
		{Config: model.Config{Duplicates: 1, Replicas: 1}, Nodes: 1, Utilization: 0.99, SLA: 0.5, SLAThesis: 0.25},
		{Config: model.Config{Duplicates: 2, Replicas: 1}, Nodes: 2, Utilization: 0.99, SLA: 0.75, SLAThesis: 0.4, SLAStdErr: 0.25, GapLawOnly: true},
		{Config: model.Config{Duplicates: 1, Replicas: 1}, Nodes: 1, Utilization: 3e20, Unstable: true},
	}
	var b bytes.Buffer
	if err := WritePredictions(&b, sys, preds); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"service exp:1ms (mean 1ms), network none, bound 5ms, rate 990 requests/s",
		"1         1      1       0.9900    25.0000%  50.0000%  0.00000",
		"unstable  unstable",
		"3e+20", // not a 21-digit column
		"the gap law alone",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

// Figure 7's table says unstable where a configuration is (it printed
// 0.0000% for a configuration it had dropped).
func TestFigure7TextMarksUnstable(t *testing.T) {
	sys := model.System{Service: model.Exponential{M: 1e-3}, Bound: 5e-3}
	preds, err := model.Figure7(sys, 1.5, 2)
	if err != nil {
		t.Fatal(err)
	}
	f := Figure7{System: sys, Utilizations: []float64{1.5}, MaxNodes: 2, Predictions: map[string][]model.Prediction{"1.5": preds}}
	var b bytes.Buffer
	if err := f.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || strings.Count(lines[1], "unstable") != 4 || strings.Count(lines[2], "unstable") != 2 || strings.Contains(b.String(), "0.0000%") {
		t.Errorf("want 1 node unstable both ways and 2 duplicates unstable:\n%s", b.String())
	}
	var page bytes.Buffer
	if _, err := f.Page().WriteTo(&page); err != nil || !strings.Contains(page.String(), "<svg") {
		t.Errorf("page: %v", err)
	}
}

func TestLimplockPageHasFourFigures(t *testing.T) {
	panels, err := limplock.Figure3(4, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := LimplockPage(panels).WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "<figure"); n != 4 {
		t.Errorf("%d figures", n)
	}
}

// TestMaxRateTellsItsCheck: a highest rate for requests comes with what
// simulating it gave, and says when the prediction it rests on did not
// hold there, and when the answer then misses the target.
func TestMaxRateTellsItsCheck(t *testing.T) {
	answer := func(sla float64, check *model.RequestCheck) string {
		var b strings.Builder
		m := MaxRate{Nodes: 4, Target: model.Target{SLA: 0.99, Bound: 0.04}, Predictor: model.PredictorAccurate,
			Best: model.RateResult{Config: model.Config{Duplicates: 1, Replicas: 4}, Nodes: 4, Rate: 94.5, SLA: sla, Check: check}}
		if err := m.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	for _, c := range []struct {
		sla   float64
		check *model.RequestCheck
		says  []string
	}{
		{0.99, nil, nil},
		{0.99, &model.RequestCheck{Requests: 1000000, Simulated: 0.9905, StdErr: 0.0002}, []string{"simulated (1000000 requests): 99.0500% within 40ms", "the prediction holds there"}},
		{0.99, &model.RequestCheck{Requests: 1000000, Simulated: 0.9818, StdErr: 0.0002}, []string{"98.1800%", "the prediction is 0.0082 optimistic there, and the answer misses the target"}},
		{0.99, &model.RequestCheck{Requests: 1000000, Simulated: 0.995, StdErr: 0.0002}, []string{"the prediction is 0.0050 pessimistic there\n"}},
	} {
		got := answer(c.sla, c.check)
		if c.check == nil && strings.Contains(got, "simulated") {
			t.Errorf("no check, yet: %q", got)
		}
		for _, s := range c.says {
			if !strings.Contains(got, s) {
				t.Errorf("%+v: %q lacks %q", c.check, got, s)
			}
		}
	}
}

package model

import (
	"math"
	"testing"
)

// TestSearchRateInterpolates: on a smooth SLA the interpolating search
// finds the same rate as bisection, to the tolerance, in fewer
// evaluations; on a step-shaped SLA, which defeats interpolation, it
// still finds the step and takes at most about twice bisection's steps.
func TestSearchRateInterpolates(t *testing.T) {
	target := Target{SLA: 0.99, Bound: 1}
	cases := []struct {
		name string
		sla  func(rate float64) float64
	}{
		// A queue's: the miss ratio falls exponentially with the
		// capacity left.
		{"queue", func(r float64) float64 { return 1 - math.Exp(-(100-r)*0.05) }},
		{"power", func(r float64) float64 { return 1 - math.Pow(r/100, 6) }},
		{"logistic", func(r float64) float64 { return 1 / (1 + math.Exp((r-60)/3)) }},
		{"step", func(r float64) float64 {
			if r < 37.3 {
				return 1
			}
			return 0.5
		}},
	}
	for _, c := range cases {
		count := func(n *int) func(float64) (float64, error) {
			return func(r float64) (float64, error) { *n++; return c.sla(r), nil }
		}
		var nb, ni int
		b, err := maxRateOf(Config{1, 1}, target, count(&nb), 100, 1e-4)
		if err != nil {
			t.Fatal(err)
		}
		in, err := maxRateOfSmooth(Config{1, 1}, target, count(&ni), 100, 1e-4)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(in.Rate-b.Rate) > 2e-4*100 || c.sla(in.Rate) < target.SLA || in.SLA != c.sla(in.Rate) {
			t.Errorf("%s: interpolating search found %.5f (SLA %.5f), bisection %.5f", c.name, in.Rate, in.SLA, b.Rate)
		}
		if (c.name == "queue" || c.name == "logistic") && ni > nb/2 {
			t.Errorf("%s: interpolating search took %d evaluations, bisection %d", c.name, ni, nb)
		}
		if ni > nb && c.name != "step" || ni > 2*nb+1 {
			t.Errorf("%s: interpolating search took %d evaluations, more than twice bisection's %d", c.name, ni, nb)
		}
		t.Logf("%s: bisection %d evaluations, interpolation %d (rate %.4f)", c.name, nb, ni, in.Rate)
	}
}

package limplock

import (
	"math"
	"testing"
)

// The read and write formulas are exact for random placement, so the
// simulation must agree within its own noise.
func TestOperationFormulasMatchSimulation(t *testing.T) {
	for _, c := range []struct{ n, r int }{{10, 5}, {30, 20}, {100, 50}} {
		f, err := Table2(c.n, 100, c.r)
		if err != nil {
			t.Fatal(err)
		}
		e, err := Simulate(c.n, 100, c.r, 20000, 1)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(f.PRL-e.PRL) > 4*e.SEPRL+1e-3 || math.Abs(f.PWL-e.PWL) > 4*e.SEPWL+1e-3 {
			t.Errorf("n=%d r=%d: formula rl=%.4f wl=%.4f, simulation rl=%.4f±%.4f wl=%.4f±%.4f",
				c.n, c.r, f.PRL, f.PWL, e.PRL, e.SEPRL, e.PWL, e.SEPWL)
		}
	}
}

// P_nl is a binomial approximation of the random source assignment; at a
// large b per node it should be close.
func TestNodeLimplockCloseForManyBlocks(t *testing.T) {
	f, _ := Table2(20, 3200, 1)
	e, err := Simulate(20, 3200, 1, 400, 2)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(f.PNL-e.PNL) > 0.05 {
		t.Errorf("P_nl formula %.4f, simulation %.4f±%.4f", f.PNL, e.PNL, e.SEPNL)
	}
}

func TestTable2KnownValues(t *testing.T) {
	f, err := Table2(10, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(f.PRL-0.1) > 1e-12 || math.Abs(f.PWL-0.3) > 1e-12 {
		t.Errorf("n=10 r=1: P_rl=%v P_wl=%v, want 0.1 and 0.3", f.PRL, f.PWL)
	}
	sum := 0.0
	for i := 0; i <= 8; i++ {
		sum += PNLi(10, i, f.PNL)
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("p_nl(i) sums to %v, want 1", sum)
	}
	for _, p := range []float64{f.PNL, f.PCL, f.PBlock, f.PBL} {
		if !(p >= 0 && p <= 1) {
			t.Errorf("probability %v outside [0,1]", p)
		}
	}
}

func TestBadInput(t *testing.T) {
	if _, err := Table2(3, 10, 1); err == nil {
		t.Error("n=3 accepted")
	}
	if _, err := Simulate(10, 0, 1, 10, 1); err == nil {
		t.Error("b=0 accepted")
	}
}

// p_nl(i) in logarithms: from about 1000 nodes C(n-2, i) overflowed and
// p_bl and P_bl came out NaN.
func TestLargeClustersStayProbabilities(t *testing.T) {
	for _, n := range []int{2000, MaxNodes} {
		for _, p := range []float64{0, 0.3, 1} {
			sum := 0.0
			for i := 0; i <= n-2; i++ {
				sum += PNLi(n, i, p)
			}
			if math.Abs(sum-1) > 1e-6 {
				t.Errorf("n=%d p=%v: p_nl(i) sums to %v", n, p, sum)
			}
		}
		f, err := Table2(n, 100, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []float64{f.PRL, f.PWL, f.PNL, f.PCL, f.PBlock, f.PBL} {
			if !(p >= 0 && p <= 1) {
				t.Errorf("n=%d: probability %v in %+v", n, p, f)
			}
		}
	}
}

func TestInputErrorsNameTheInput(t *testing.T) {
	for want, err := range map[string]error{
		"nodes":    Validate(MaxNodes+1, 1, 1),
		"blocks":   Validate(10, MaxBlocks+1, 1),
		"requests": Validate(10, 1, -1),
		"trials":   func() error { _, err := Simulate(10, 1, 1, MaxTrials+1, 1); return err }(),
	} {
		ie, ok := err.(*InputError)
		if !ok || ie.Input != want {
			t.Errorf("want an InputError for %s, got %v", want, err)
		}
	}
	if _, err := Table(nil, 10, 1, 10, 1, nil); err == nil {
		t.Error("no cluster size accepted")
	}
}

// Figure 3 runs each simulation once for two panels; its points are
// Table2 and Simulate at the same inputs, and its progress runs forward.
func TestFigure3(t *testing.T) {
	var seen []float64
	panels, err := Figure3(20, 3, func(_ string, done float64) { seen = append(seen, done) })
	if err != nil {
		t.Fatal(err)
	}
	if len(panels) != 4 {
		t.Fatalf("%d panels", len(panels))
	}
	for _, p := range panels {
		if len(p.Lines) != 3 || len(p.Sizes) != 9 {
			t.Fatalf("%s: %d lines, %d sizes", p.Title, len(p.Lines), len(p.Sizes))
		}
	}
	for i, n := range panels[1].Sizes {
		l := panels[1].Lines[1] // write limplock, 10 requests, 100 blocks
		f, _ := Table2(n, 100, l.Value)
		e, _ := Simulate(n, 100, l.Value, 20, 3)
		if l.Formula[i] != f.PWL || l.MonteCarlo[i] != e.PWL {
			t.Errorf("n=%d: panel (b) %v / %v, direct %v / %v", n, l.Formula[i], l.MonteCarlo[i], f.PWL, e.PWL)
		}
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] || seen[i] > 1 {
			t.Fatalf("progress went %v", seen)
		}
	}
}

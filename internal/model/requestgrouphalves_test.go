package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSplitTreeIsTheSplit: the halves-of-halves sum (and its first-order
// coefficients) is the expectation over both phases' multinomial splits
// summed one split at a time, for three to five groups of a request small
// enough that no split is left out.
func TestSplitTreeIsTheSplit(t *testing.T) {
	k1, k2 := 6, 4
	width := k2 + 1
	rng := rand.New(rand.NewPCG(1, 2))
	h := make([]float64, (k1+1)*width)
	for i := range h {
		h[i] = rng.Float64()
	}
	for r := 3; r <= 5; r++ {
		// Every split of k1 then k2 over r groups, by its chance.
		want, wantCoef := 0.0, make([]float64, len(h))
		n, m := make([]int, r), make([]int, r)
		var walk func(g, rest1, rest2 int, w float64)
		walk = func(g, rest1, rest2 int, w float64) {
			if g == r-1 {
				n[g], m[g] = rest1, rest2
				w /= math.Gamma(float64(rest1+1)) * math.Gamma(float64(rest2+1))
				p := w
				for i := range r {
					p *= h[n[i]*width+m[i]]
				}
				want += p
				for i := range r {
					wantCoef[n[i]*width+m[i]] += p / h[n[i]*width+m[i]]
				}
				return
			}
			for a := 0; a <= rest1; a++ {
				for b := 0; b <= rest2; b++ {
					n[g], m[g] = a, b
					walk(g+1, rest1-a, rest2-b, w/(math.Gamma(float64(a+1))*math.Gamma(float64(b+1))))
				}
			}
		}
		walk(0, k1, k2, math.Gamma(float64(k1+1))*math.Gamma(float64(k2+1))/math.Pow(float64(r), float64(k1+k2)))
		tree := newSplitTree(k1, k2, r, binomial(k1, 1/float64(r)), binomial(k2, 1/float64(r)))
		coef := make([]float64, len(h))
		got := tree.settle(h, coef)
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("%d groups: the tree's sum %.15f, the splits' %.15f", r, got, want)
		}
		for i := range coef {
			if math.Abs(coef[i]-wantCoef[i]) > 1e-12 {
				t.Errorf("%d groups: counts %d, %d: the tree's coefficient %.15f, the splits' %.15f", r, i/width, i%width, coef[i], wantCoef[i])
			}
		}
		rows := make([][]float64, len(h))
		for i := range rows {
			rows[i] = []float64{0, h[i], h[i] / 2}
		}
		out := make([]float64, 2)
		tree.full(out, rows, 1, 3)
		if math.Abs(out[0]-want) > 1e-12 || math.Abs(out[1]-want/math.Pow(2, float64(r))) > 1e-12 {
			t.Errorf("%d groups: the tree's cells %v, the splits' %.15f and %.15f", r, out, want, want/math.Pow(2, float64(r)))
		}
	}
}

// TestFourGroupsSplitBothPhases: requests of 3 then 2 accesses over four
// groups of two duplicates, arriving nearly alone (0.1% load), against
// the simulator, as TestThreeGroupsSplitBothPhases for three groups.
func TestFourGroupsSplitBothPhases(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("simulates 2 million requests")
	}
	sys := expRequests(Request{Phases: []int{3, 2}}, 0.001)
	matchesSimulation(t, sys, Config{2, 4}, 0.001, SimOptions{Requests: 2000000, Seed: 1})
}

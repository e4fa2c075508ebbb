package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFinishedLeftoverAgainstLoneRequests draws requests that run alone
// (Olio's phases on 2x2 and 4x2, exponential services: each duplicate
// serves its group's accesses in order, the second phase from the later
// of its end of the first and T1), finds each duplicate's work left when
// the request ends, and lets the next request arrive an exponential gap
// later. The leftover state of the alone part (no request present) must
// give a group's chance of having a duplicate still busy, a duplicate's
// chance, and a busy duplicate's mean leftover as the draws do. Without
// it every duplicate is idle there (chance 0, where the draws give
// 0.0197 on 2x2 and 0.0435 on 4x2 at 30%).
func TestFinishedLeftoverAgainstLoneRequests(t *testing.T) {
	const k1, k2, mean, draws = 30, 20, 1e-3, 200000
	rate := 0.3 / (float64(k1+k2) * mean)
	g := grid{h: 0.12 / 511, n: 512}
	sums := serviceSums(g.pmf(Exponential{mean}), k1)
	for _, c := range []Config{{Duplicates: 2, Replicas: 2}, {Duplicates: 4, Replicas: 2}} {
		d, r := c.Duplicates, c.Replicas
		rng := rand.New(rand.NewPCG(1, 2))
		var someBusy, busy, left float64
		free := make([][]float64, r)
		for i := range free {
			free[i] = make([]float64, d)
		}
		phase := func(at float64, k int) float64 {
			held := make([]bool, r)
			for range k {
				grp := rng.IntN(r)
				held[grp] = true
				for j := range free[grp] {
					free[grp][j] = math.Max(free[grp][j], at) + rng.ExpFloat64()*mean
				}
			}
			end := at
			for grp, f := range free {
				if held[grp] {
					end = math.Max(end, minOf(f))
				}
			}
			return end
		}
		for range draws {
			for _, f := range free {
				clear(f)
			}
			next := phase(phase(0, k1), k2) + rng.ExpFloat64()/rate
			for _, f := range free {
				n := 0
				for _, x := range f {
					if x > next {
						n++
						left += x - next
					}
				}
				busy += float64(n)
				if n > 0 {
					someBusy++
				}
			}
		}
		groups := float64(draws * r)
		drawn := leftover{weight: someBusy / groups, busy: busy / groups / float64(d)}
		drawnMean := left / busy
		got := g.finishedLeftover(k1, k2, r, d, rate, sums)
		gotMean := lawMean(g, cumulative(got.law)) / (1 - got.law[0])
		t.Logf("%dx%d: a group busy %.4f (drawn %.4f), a duplicate %.4f (%.4f), mean leftover %.2f ms (%.2f)", d, r, got.weight, drawn.weight, got.busy, drawn.busy, 1e3*gotMean, 1e3*drawnMean)
		for _, x := range [][2]float64{{got.weight, drawn.weight}, {got.busy, drawn.busy}, {gotMean, drawnMean}} {
			if math.Abs(x[0]/x[1]-1) > 0.05 {
				t.Errorf("%dx%d: the leftover %v against the draws' %v: off by more than 5%%", d, r, x[0], x[1])
			}
		}
	}
}

func minOf(x []float64) float64 {
	m := math.Inf(1)
	for _, v := range x {
		m = math.Min(m, v)
	}
	return m
}

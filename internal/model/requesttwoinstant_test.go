package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestArrivalStartAgainstDraws holds a duplicate's chance of not being
// done (arrivalStart's owedRow, with serve) against draws of what it
// does: its first phase (three exponential services) ends at F; given
// F <= s it serves the arriving request's k accesses from max(F, u) and
// its m second-phase accesses from the later of their end and s, with k
// and m drawn given k + m = c. Taken from s instead, as before
// arrivalStart, the chance is far off (0.478 against the draws' 0.278 at
// 40 cells; owedRow 0.273, within 0.007 at every cell tried).
func TestArrivalStartAgainstDraws(t *testing.T) {
	const mean, draws, s, u, c = 1e-3, 400000, 40, 15, 5
	g := grid{h: 0.1e-3, n: 512}
	sums := extendSums(serviceSums(g.pmf(Exponential{mean}), 1), c+4)
	f := sums[3]
	Fcdf := cumulative(f)
	arrival, second := binomial(6, 0.5), binomial(4, 0.5)
	var lcdf, Ubar [][]float64
	uEnd := make([]int, c+1)
	for j := range c + 1 {
		lcdf = append(lcdf, cumulative(sums[j]))
		row := make([]float64, g.n)
		for x, v := range lcdf[j] {
			row[x] = 1 - v
		}
		Ubar = append(Ubar, row)
		uEnd[j] = g.n
	}
	start := newArrivalStart(u, arrival, second, lcdf, c+1, g.n)
	owed := start.owedRow(Ubar, uEnd, c, start.serve(f, Fcdf, s), g.n-s)

	rng := rand.New(rand.NewPCG(1, 2))
	service := func(n int) float64 {
		sum := 0.0
		for range n {
			sum += rng.ExpFloat64() * mean
		}
		return sum
	}
	zs := []int{0, 8, 20, 40, 80}
	late := make([]float64, len(zs))
	atS := make([]float64, len(zs))
	for range draws {
		F := service(3)
		if F > s*g.h {
			continue
		}
		// k given k + m = c: arrival[k] second[c-k], normalised.
		x := rng.Float64() * start.normal(c)
		k := 0
		for ; k < c; k++ {
			if c-k >= len(second) {
				continue
			}
			if x -= arrival[k] * second[c-k]; x < 0 {
				break
			}
		}
		work, own := service(k), service(c-k)
		end := math.Max(s*g.h, math.Max(F, u*g.h)+work) + own
		from := s*g.h + work + own // everything from s
		for i, z := range zs {
			if end > (s+float64(z))*g.h {
				late[i]++
			}
			if from > (s+float64(z))*g.h {
				atS[i]++
			}
		}
	}
	for i, z := range zs {
		want := late[i] / draws
		if got := owed[z]; math.Abs(got-want) > 0.01 {
			t.Errorf("at s + %d cells: P(F <= s, not done) %.4f, the draws %.4f (from s: %.4f)", z, got, want, atS[i]/draws)
		}
	}
}

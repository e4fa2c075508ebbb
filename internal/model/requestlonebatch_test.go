package model

import (
	"math"
	"testing"
)

// TestDepoissonisedFixedTotals: the expectation of a product over r
// servers of a function of each server's counts (the request's n and m
// accesses, A others ahead of its first phase and X between its phases,
// each spread over the servers uniformly: multinomial splits), from the
// same expectation with the others' counts drawn Poisson apart at means
// near A and X (depoissonised), against the exact splits. To the second
// order (as batchServers and batchBarrierFor took it) it was up to 0.010
// off at two servers and 0.0023 at four; to the fourth order with the
// cross term, within 0.004 and 0.0005.
func TestDepoissonisedFixedTotals(t *testing.T) {
	k1, k2 := 2, 1
	for _, c := range []struct {
		r, A, X int
		tol     float64
	}{{2, 6, 4, 0.005}, {2, 10, 6, 0.005}, {4, 8, 6, 0.0006}} {
		for _, st := range [][2]float64{{3, 6}, {4, 8}, {5, 10}, {6, 12}, {7, 14}} {
			// a server with n and m of the request's accesses, a others
			// ahead of them and x between: its first part by s, all by t
			// (unit services)
			f := func(n, m, a, x int) float64 {
				v := 1.0
				if n > 0 {
					v = poissonAbove(st[0], a+n)
				}
				if m > 0 {
					v *= poissonAbove(st[1], a+n+x+m+2)
				}
				return v
			}
			got := 0.0
			for _, pt := range depoissonised(float64(c.A), float64(c.X), 0) {
				lawA := poissonLaw(pt.first/float64(c.r), 1e-15)
				lawX := poissonLaw(pt.then/float64(c.r), 1e-15)
				fm := make([]float64, (k1+1)*(k2+1))
				for n := 0; n <= k1; n++ {
					for m := 0; m <= k2; m++ {
						for a, wa := range lawA {
							for x, wx := range lawX {
								fm[n*(k2+1)+m] += wa * wx * f(n, m, a, x)
							}
						}
					}
				}
				got += pt.weight * newMultinomial2(k1, k2, c.r).top(fm)
			}
			exact := splitsExpectation([]int{k1, k2, c.A, c.X}, c.r, func(counts [][]int) float64 {
				p := 1.0
				for g := range c.r {
					p *= f(counts[0][g], counts[1][g], counts[2][g], counts[3][g])
				}
				return p
			})
			t.Logf("r=%d A=%d X=%d s,t=%v: exact %.5f, depoissonised %.5f", c.r, c.A, c.X, st, exact, got)
			if math.Abs(got-exact) > c.tol {
				t.Errorf("r=%d A=%d X=%d s,t=%v: depoissonised %.5f, exact %.5f (tolerance %g)", c.r, c.A, c.X, st, got, exact, c.tol)
			}
		}
	}
}

// splitsExpectation is E f over independent multinomial splits of each
// total over r servers (counts[kind][server]).
func splitsExpectation(totals []int, r int, f func(counts [][]int) float64) float64 {
	counts := make([][]int, len(totals))
	for k := range counts {
		counts[k] = make([]int, r)
	}
	// by each kind's compositions, with their multinomial chances
	total := 0.0
	var walk func(kind, g, left int, w float64)
	walk = func(kind, g, left int, w float64) {
		switch {
		case kind == len(totals):
			total += w * f(counts)
		case g == r-1:
			counts[kind][g] = left
			next := 0
			if kind+1 < len(totals) {
				next = totals[kind+1]
			}
			walk(kind+1, 0, next, w)
		default:
			// the servers g..r-1 share left uniformly: g gets c of them
			for c, p := range binomial(left, 1/float64(r-g)) {
				counts[kind][g] = c
				walk(kind, g+1, left-c, w*p)
			}
		}
	}
	walk(0, 0, totals[0], 1)
	return total
}

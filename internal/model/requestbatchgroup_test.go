package model

import (
	"math"
	"testing"
)

// TestBatchReleasedSplitsTheWholeWork: batchReleased splits what d
// duplicates find at a batch's instant by how many of the last batch's
// last phases are still to be released. Its terms are chances (each
// count's weight at least 0, all of them 1), and with the pending last
// phases put back into the work found they are the whole batches'
// workload given the last batch's age (pastStates) again: the chance that
// every duplicate's work is past t is the same at every t. Here batches
// of 8 requests of 4 then 3 accesses at 30% load, where on 2 duplicates
// 0.68 of a batch's 8 last phases are still pending when the next
// arrives, on average (logged).
func TestBatchReleasedSplitsTheWholeWork(t *testing.T) {
	const k1, k2, B = 4, 3, 8
	c := grid{h: 0.1 / 2047 * historyCoarse, n: 256}
	svc := coarsen(grid{h: 0.1 / 2047, n: 2048}.pmf(Exponential{1e-3}), historyCoarse)
	sums := serviceSums(svc, B*(k1+k2))
	whole := sums[B*(k1+k2)]
	mean := lawMean(c, cumulative(whole))
	rate := 0.3 / mean
	wait := c.waitingPMF(c.lumpEquilibrium(whole, mean), 0.3)
	pending := c.batchReleased(wait, sums, k1, k2, B, rate)
	for _, d := range []int{2, 3} {
		allLate := func(states []sharedState, p int) []float64 {
			out := make([]float64, c.n)
			for _, s := range states {
				for i, v := range cumulative(convolve(s.pmf[:c.n], sums[p*k2])) {
					out[i] += s.w * ipow(math.Max(0, s.mass-v), d)
				}
			}
			return out
		}
		total, expected := 0.0, 0.0
		got := make([]float64, c.n)
		for p, states := range pending {
			chance := 0.0
			for _, s := range states {
				chance += s.w * ipow(s.mass, d)
			}
			if chance < -1e-12 {
				t.Errorf("d=%d: %d pending with chance %.3g", d, p, chance)
			}
			total += chance
			expected += float64(p) * chance
			for i, v := range allLate(states, p) {
				got[i] += v
			}
		}
		t.Logf("d=%d: %.2f of %d last phases pending on average", d, expected, B)
		if math.Abs(total-1) > 1e-9 {
			t.Errorf("d=%d: the counts' chances add up to %.12f", d, total)
		}
		worst := 0.0
		for i, v := range allLate(lastArrival(c.pastStates(wait, whole, rate, lastAges)), 0) {
			worst = math.Max(worst, math.Abs(got[i]-v))
		}
		if worst > 1e-9 {
			t.Errorf("d=%d: with the pending last phases put back, the chance all are late moved by %.3g", d, worst)
		}
	}
}

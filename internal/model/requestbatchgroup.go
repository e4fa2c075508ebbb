package model

import (
	"math"

	"gonum.org/v1/gonum/dsp/fourier"
)

// Batches on one group. On one server, a request's first phase waits
// only for the work queued when its batch arrives: the last phases of the
// requests still in their first phase are queued behind it
// (batchOneServer).
//
// On one group of duplicates, every duplicate of the group serves
// the whole of every batch, so the work each finds at a batch's instant
// (the M/G/1 workload of whole batches) is set mostly by the arrival
// instants of the batches before, which all duplicates share: the last
// batch's age is one of them (pastStates), and at 30% load the batches
// before it are often still there too. Taken apart at each duplicate, the
// older batches' work let the first duplicate done be far sooner than any
// is (dx1 at 30% load: 0.021-0.036 optimistic at the 90th percentile's
// bound). As for requests arriving alone (historyCorrection), the
// duplicates' work is taken given the gaps between the last batches.

// batchOneGroupShared is the request law of two phases (k1 then k2
// accesses) arriving in batches of B at rate (batches per second) on one
// group of d > 1 duplicates: wait is a duplicate's stationary work of
// whole batches, sums[c] the law of c service times, net the
// reply's network delay. It is batchOneGroup's law given the last batch's
// age, plus what the gaps between the batches before it, and the last
// batch's last phases still to be released, change in that
// (batchHistoryCorrection).
func (g grid) batchOneGroupShared(k1, k2, B int, sums [][]float64, wait, net []float64, rate float64, d int) []float64 {
	whole := sums[B*(k1+k2)]
	law := g.batchOneGroup([][]sharedState{lastArrival(g.pastStates(wait, whole, rate, lastAges))}, k1, k2, B, sums, net, rate, d)
	for i, v := range g.batchHistoryCorrection(k1, k2, B, sums[1], net, rate, d) {
		law[i] = clamp01(law[i] + v)
	}
	return law
}

// batchOneGroup is the request law, unclamped, on one group of d
// duplicates given the terms of the work they find at a batch's instant
// (sharedState, one phase), pending[p] those with p last phases of the
// batch before still to be released, averaged over the request's place j
// in its batch. Request j's first phase ends at a duplicate after that
// work and the first phases of requests 1..j; its last phase then waits
// behind the batch's later first phases, the p last phases pending, the
// last phases of requests 1..j-1, and every batch that arrived before the
// first duplicate ended its first phase (their first phases, alike at
// every duplicate: oneGroupTwoPhases).
func (g grid) batchOneGroup(pending [][]sharedState, k1, k2, B int, sums [][]float64, net []float64, rate float64, d int) []float64 {
	law := make([]float64, g.n)
	for p, states := range pending {
		found := make([][]float64, len(states)) // the work found, then the reply's delay
		for s, st := range states {
			found[s] = convolve(st.pmf[:g.n], net)
		}
		for j := 1; j <= B && len(states) > 0; j++ {
			ahead := g.newArrivalsAhead(sums[p*k2+(B-j)*k1+j*k2], sums[B*k1], rate)
			for s, st := range states {
				part := g.oneGroupTwoPhasesPart(convolve(found[s], sums[j*k1]), st.mass, ahead, d)
				for i, c := range part {
					law[i] += st.w * c / float64(B)
				}
			}
		}
	}
	return law
}

// batchReleased is the terms of the work d duplicates find at a batch's
// instant given the last batch's age τ (agedStates), by how many (p) of
// that batch's last phases are still to be released: a request's last
// phase is queued when the first duplicate ends its first phase, so the p
// last phases of requests still in their first phase everywhere are
// queued behind the new batch's first phases, ahead of its last phases
// (batchOneGroup takes the terms of index p so). pastStates, the whole
// batches' workload, counts them ahead of the new first phases (as
// batchOneServer's found does not for one server). At a duplicate the
// last batch found V, and its request i's first phase ends at U_i = V +
// S(i k1); the first duplicate has ended it by τ unless every
// duplicate's U_i > τ, so k = B-p are released with chance a_{k+1}^d -
// a_k^d, a_i = P(U_i > τ) (a_0 = 0; all B: 1 - a_B^d), and on U_i > τ a
// duplicate holds U_i - τ + S((B-i) k1 + k k2), the batch's later first
// phases and the k last phases released.
func (g grid) batchReleased(wait []float64, sums [][]float64, k1, k2, B int, rate float64) [][]sharedState {
	out := make([][]sharedState, B+1)
	ends := make([][]float64, B+1) // U_i's law
	for i := range ends {
		ends[i] = convolve(wait, sums[i*k1])
	}
	for _, st := range g.agedStates(wait, sums[B*(k1+k2)], rate, lastAges) {
		out[0] = append(out[0], sharedState{w: st.w, mass: 1, pmf: st.pmf})
		if st.age < 0 {
			continue
		}
		for i := 1; i <= B; i++ {
			tail := make([]float64, g.n) // U_i - τ on U_i > τ
			mass := 0.0
			for c := st.age + 1; c < len(ends[i]) && c-st.age < g.n; c++ {
				tail[c-st.age] = ends[i][c]
				mass += ends[i][c]
			}
			if st.w*mass < 1e-12 {
				continue
			}
			// Every U_i > τ: i-1 released, and taken away from i released.
			out[B-i+1] = append(out[B-i+1], sharedState{w: st.w, mass: mass, pmf: convolve(tail, sums[(B-i)*k1+(i-1)*k2])})
			out[B-i] = append(out[B-i], sharedState{w: -st.w, mass: mass, pmf: convolve(tail, sums[(B-i)*k1+i*k2])})
		}
	}
	return out
}

// batchHistoryCorrection is what taking the duplicates' work given the
// gaps between the last historyLevels batches (sharedHistory, whose
// request is here the whole batch of one phase), and the last batch's
// last phases still to be released behind the new first phases
// (batchReleased), change in batchOneGroup's law taken given the last
// batch's age only, all on a grid historyCoarse times coarser, brought
// back onto g's cells (as historyCorrection).
func (g grid) batchHistoryCorrection(k1, k2, B int, svc, net []float64, rate float64, d int) []float64 {
	c := grid{h: g.h * historyCoarse, n: g.n / historyCoarse}
	cs := coarsen(svc, historyCoarse)
	sums := serviceSums(cs, B*(k1+k2))
	h := c.newSharedHistory([]int{B * (k1 + k2)}, cs, rate, nil)
	cnet := coarsen(net, historyCoarse)
	// The states merged for d (mergeShared). Merged by their laws' mean
	// instead, batches had been less pessimistic at the 90th percentile's
	// bound (dx1 at 30% load, 10^7 requests: 2x1 -0.0034 against
	// -0.0039, 4x1 -0.0016 against -0.0028), but that was the last
	// phases still to be released counted ahead of the first phases
	// (batchReleased): with them behind, the mean left 3x1 0.0026
	// optimistic there, merged for d 0.0015.
	with := c.batchOneGroup([][]sharedState{h.states(d)}, k1, k2, B, sums, cnet, rate, d)
	whole := h.whole[:c.n]
	wait := c.waitingPMF(c.lumpEquilibrium(whole, h.mean), rate*h.mean)
	without := c.batchOneGroup([][]sharedState{lastArrival(c.pastStates(wait, whole, rate, lastAges))}, k1, k2, B, sums, cnet, rate, d)
	// And what the last phases still to be released change, taken on c
	// with the history's (their second-order part left out): on g's grid
	// it was within 0.0002 (2x1 at 30% load) at eight times the cost.
	released := c.batchOneGroup(c.batchReleased(wait, sums, k1, k2, B, rate), k1, k2, B, sums, cnet, rate, d)
	for i, v := range released {
		with[i] += v - without[i]
	}
	return g.fromCoarse(with, without)
}

// batchOneServer is the request law of two phases (k1 then k2 accesses)
// arriving in batches of B at rate on one server: wait is the stationary
// work of whole batches (what comes ahead of a request's last phase: a
// last phase still to be queued is queued when its first phase ends,
// before the new batch's first phases are served), sums[c] the law of c
// service times, net the reply's network delay.
//
// The first phase waits only for the work already queued (as
// serverPhases takes it for B = 1). The last batch to arrive before,
// τ ago, found work V queued ahead of its B first phases; its requests'
// first phases end at U_i = V + S(i k1), each then queueing its last
// phase. Given that k of them ended by τ (U_k <= τ < U_{k+1}), the server
// holds W = U_{k+1} - τ + S((B-k-1) k1 + k k2), and the other B-k last
// phases come after the new batch's first phases but ahead of request j's
// last: L = Y + A(Y) + S((B-k) k2 + (B-j) k1 + j k2), Y = W + S(j k1) its
// first phase's end and A(Y) the first phases of the batches arriving
// within Y. With all B ended, W = max(0, U_B + S(B k2) - τ). V is taken
// the same way at the last batch's instant (batchQueued, batchPasses
// batches back; the last phases of that batch still pending then are
// queued behind the last batch's first phases): with V the whole
// stationary work, as if no batch before the last were in its first
// phases, 1x1 at 30% load was 0.0025 high at the 90th percentile's bound
// (seed 1, 10^6 requests), with one batch more 0.0016 and with two the
// same.
func (g grid) batchOneServer(wait []float64, sums [][]float64, k1, k2, B int, rate float64, net []float64) []float64 {
	// found[k]: the work queued at the arrival, k of the last batch's
	// requests done with their first phase (a part, of that chance), the
	// other B-k last phases pending.
	found := make([][]float64, B+1)
	found[B] = wait
	for range batchPasses {
		found = g.batchQueued(found, sums, k1, k2, B, rate)
	}
	// L's law is taken as one sum of transforms, over k, j and the count
	// n of batches arriving within Y: the three laws convolved (Y's part
	// with n arrivals, n batches' first phases, the work after) reach
	// 3 g.n cells, so the transforms span as many.
	size := fftSize(3 * g.n)
	ft := fourier.NewFFT(size)
	buf := make([]float64, size)
	transform := func(x []float64) []complex128 {
		clear(buf)
		copy(buf, x[:g.n])
		return ft.Coefficients(nil, buf)
	}
	var powers [][]complex128 // of n batches' first phases
	var chances [][]float64   // of n arrivals by each cell
	power := make([]float64, g.n)
	power[0] = 1
	for n := range g.arrivalsReach(rate) + 1 {
		if n > 0 {
			power = convolve(power, sums[B*k1])
		}
		powers = append(powers, transform(power))
		chances = append(chances, g.arrivalChances(rate, n))
	}
	after := map[int][]complex128{}
	sum := make([]complex128, size/2+1)
	part := make([]float64, g.n)
	for k, f := range found {
		f = convolve(f, net)
		for j := 1; j <= B; j++ {
			c := (B-k)*k2 + (B-j)*k1 + j*k2
			if after[c] == nil {
				after[c] = transform(sums[c])
			}
			y := convolve(f, sums[j*k1])
			for n, pw := range powers {
				mass := 0.0
				for i, c := range chances[n] {
					part[i] = y[i] * c
					mass += part[i]
				}
				if mass < 1e-13 {
					continue
				}
				for q, v := range transform(part) {
					sum[q] += v * pw[q] * after[c][q]
				}
			}
		}
	}
	seq := ft.Sequence(nil, sum)
	law := make([]float64, g.n)
	for i := range law {
		law[i] = math.Max(0, seq[i]/float64(size*B))
	}
	return cumulative(law)
}

// batchPasses is how many batches back batchOneServer follows the first
// phases still running: the first pass takes the work the last batch
// found as all queued ahead of its first phases, the second takes it as
// the first pass found it.
const batchPasses = 2

// batchQueued is batchOneServer's law of the work queued at a batch's
// instant, as parts by how many (k) of the last batch's requests are done
// with their first phase, given start, the same parts at the last batch's
// instant (nil for none).
func (g grid) batchQueued(start [][]float64, sums [][]float64, k1, k2, B int, rate float64) [][]float64 {
	found := make([][]float64, B+1)
	for k := range found {
		found[k] = make([]float64, g.n)
	}
	for was, w := range start {
		if w == nil {
			continue
		}
		pending := (B - was) * k2 // queued behind the last batch's first phases
		mass := 0.0
		for _, v := range w {
			mass += v
		}
		x, gap, older := g.sinceLast(w, rate)
		for k := range B {
			// U_{k+1} - τ = S(k1) - (τ - U_k): its part >= 0 is this
			// k's, the rest the next's.
			r, next := differenceLaw(sums[k1], gap)
			if k == 0 {
				for i, v := range convolve(x, sums[k1]) {
					r[i] += v
				}
			}
			for i, v := range convolve(r, sums[(B-k-1)*k1+k*k2+pending]) {
				found[k][i] += v
			}
			gap = next
		}
		found[B][0] += older * mass // max(0, S(B k2) - (τ - U_B))
		rest, idle := differenceLaw(sums[B*k2+pending], gap)
		for i, v := range rest {
			found[B][i] += v
		}
		for _, v := range idle[1:] {
			found[B][0] += v
		}
	}
	return found
}

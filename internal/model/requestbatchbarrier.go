package model

import "math"

// Batches of two-phase requests on several groups of duplicates: each
// request's first phase's end as a barrier.

// batchBarrierCells is the grid batchBarrier's law is taken on, and
// batchBarrierCoarse the coarser one its depoissonisation's terms are.
// The law converges as the cells' width squared (at 1% load the median's
// error against the simulator was +0.0059, +0.0020 and +0.0010 on 3x2
// and +0.0079, +0.0023 and +0.0009 on 4x2 on 128, 256 and 512 cells), so
// it is taken to its limit from the two grids (Richardson), the coarse
// one's law being among the depoissonisation's terms anyway: 512 cells
// cost 4.5 times 256.
const (
	batchBarrierCells  = 256
	batchBarrierCoarse = 128
)

// barrierGrid is a grid with what batchBarrier takes on it: the laws of
// sums of service times and a group's states when the batch comes (from
// batchServers's batchGrid: the wait a batch finds, whole batches' shares
// of a group, idle or busy).
type barrierGrid struct {
	grid
	sums   [][]float64
	states []weightedLaw
}

func newBarrierGrid(sys System, cells, k1, k2, r int, rho, horizon float64) barrierGrid {
	b := newBatchGrid(grid{h: horizon / float64(cells-1), n: cells}, cells, sys, k1, k2, rho, r)
	return barrierGrid{b.grid, b.sums, b.grid.idleOrBusy(b.wait, b.net)}
}

// law is batchBarrier's law with each group's count of the earlier
// requests' first phases Poisson of mean first/r and of the work between
// the request's phases of mean then/r.
func (b *barrierGrid) law(first, then float64, k1, k2, d, r, B int, batchRate float64) []float64 {
	p := 1 / float64(r)
	cLaw := poissonLaw(first*p, 1e-9)
	eLaw, eArrived := poissonLaw(then*p, 1e-9), poissonLaw((then+float64(B*k1))*p, 1e-9)
	b.sums = extendSums(b.sums, len(cLaw)+len(eArrived)+k1+k2)
	quiet := func(x int) float64 { return math.Exp(-batchRate * float64(x) * b.h) }
	return b.batchBarrier(b.states, b.sums, cLaw, eLaw, eArrived, quiet, k1, k2, d, r)
}

// batchBarrierFor is the request law of two phases (k1 then k2 accesses)
// arriving in batches on r > 1 groups of d > 1 duplicates, on
// batchBarrierCells cells up to horizon: batchBarrier's law averaged over
// the request's place j in its batch. The groups are idle or busy when
// the batch comes (the stationary work of whole batches' shares of a
// group, as batchGroups takes it), all of them alike.
//
// The batch's other work splits over the groups with its totals fixed:
// the earlier requests' first phases ((j-1) k1 accesses) and the work
// between the request's phases ((B-j) k1 + (j-1) k2), one group's heavy
// share another's light one. Drawn apart at each group (binomial), both
// can be light: with the load at nothing, 2x2, 4x2 and 2x4 were 0.024-0.034
// optimistic at the median against the simulator, as batchGroups is. So
// the law is taken with Poisson shares at the totals and one apart, and
// depoissonised (depoissonised, as batchServers takes it), those terms on
// batchBarrierCoarse cells.
func batchBarrierFor(sys System, k1, k2, r, d int, rho, horizon float64) RequestPrediction {
	B := sys.Request.batch()
	fine := newBarrierGrid(sys, batchBarrierCells, k1, k2, r, rho, horizon)
	coarse := newBarrierGrid(sys, batchBarrierCoarse, k1, k2, r, rho, horizon)
	law, coarseLaw, correction := make([]float64, fine.n), make([]float64, coarse.n), make([]float64, coarse.n)
	for j := 1; j <= B; j++ {
		A, E := float64((j-1)*k1), float64((B-j)*k1+(j-1)*k2)
		for i, v := range fine.law(A, E, k1, k2, d, r, B, sys.Rate/float64(B)) {
			law[i] += v / float64(B)
		}
		for e, pt := range depoissonised(A, E, 0) {
			w := pt.weight
			if e == 0 {
				w-- // the law itself, on the fine grid above
			}
			for i, v := range coarse.law(pt.first, pt.then, k1, k2, d, r, B, sys.Rate/float64(B)) {
				correction[i] += w * v / float64(B)
				if e == 0 {
					coarseLaw[i] += v / float64(B)
				}
			}
		}
	}
	lawAt := RequestPrediction{Step: fine.h, CDF: law}
	coarseAt := RequestPrediction{Step: coarse.h, CDF: coarseLaw}
	correctionAt := RequestPrediction{Step: coarse.h, CDF: correction}
	out := make([]float64, fine.n)
	for i := range out {
		x := (float64(i) + 0.5) * fine.h
		// it converges as the cells' width squared
		limit := richardson(lawAt.At(x), coarseAt.At(x), 2)
		out[i] = clamp01(limit + correctionAt.At(x))
	}
	return RequestPrediction{Step: fine.h, CDF: out}
}

// batchBarrier is the law (CDF) of the latency of a request of a batch
// of two-phase requests (k1 then k2 accesses, each to one of r groups of d
// duplicates uniformly) arriving together, all groups in one of states
// (the work each duplicate finds, drawn apart given the state) when they
// come; cLaw is the law of a group's count of the earlier requests'
// first-phase accesses, eLaw that of the accesses it serves between the
// request's two phases, eArrived the same when another batch arrived
// before the request's first phase ended (quiet(x): the chance that none
// did by cell x); sums[c] is the law of c service times.
//
// All the batch's first phases reach the groups at its instant, in batch
// order; the request's last phase reaches them at T1, when the slowest
// group holding part of its first phase has its first duplicate done with
// it. At a group holding m of the request's first-phase accesses, a
// duplicate ends them at Y = W + S(c + m) (W its wait, c the earlier
// requests' first-phase accesses there), then serves e more before the
// request's last phase: the later requests' first phases, queued behind
// its own, the earlier requests' last phases (their first phases ended
// before its own), and the first phases of a batch that arrived before
// T1, taken back to back: Z = Y + S(e). Holding n of the last phase, the
// duplicate is done at D = max(T1, Z) + S(n), and the group with its first
// duplicate. T1 and every group's D grow with the same first-phase work,
// so the law is taken given T1 = x cell by cell: P(T1 = x, every group
// done by t) is P(every G <= x, every H <= t) less the same with
// G <= x-1, G a group's first-phase end and H its last-phase end given
// the barrier at x, each group's duplicates drawn apart given the state
// and the group's counts, over the multinomial splits of both phases.
// The counts c and e are the same for every duplicate of a group, except
// in the chance that a duplicate is done with neither phase (by x and by
// t), where e is drawn apart at each duplicate (taken in three classes of
// e instead, the lone batch's law moved by less than 0.0001).
//
// batchGroups multiplies the chance that the back-to-back work has ended
// by t and that the request's phases alone have, as if apart, and takes
// the group's first duplicate done with each separately: with the load at
// nothing and the shares from fixed totals, this form took 2x2, 4x2 and
// 2x4 from 0.024-0.034 optimistic at the median to within 0.002-0.007 of
// the simulator. The batch that arrives before T1 (a Poisson stream of
// batches; two or more taken as one) put p99 at 8% load 0.004-0.008
// nearer. Whether a group is idle when the batch comes is the same at
// every group (every batch reaches every group; on one server per group
// the simulator has all idle 0.83-0.93 of the time where each is idle
// 0.85-0.96 and the product is 0.72-0.74): taken apart, at 30% load 2x2
// was 0.040 pessimistic at the median, taken alike 0.002. Left out: a
// duplicate idle before an earlier request's last phase or the arrived
// batch's first phases reach it (a Monte Carlo of a lone batch puts the
// first under 0.001 on 2x2 and 4x2, 0.005 on 2x4), and a busy group's
// duplicates' waits, drawn apart given the state (4x2 at 30% is 0.026
// optimistic at p90).
func (g grid) batchBarrier(states []weightedLaw, sums [][]float64, cLaw, eLaw, eArrived []float64, quiet func(x int) float64, k1, k2, d, r int) []float64 {
	n := g.n
	cLo := firstAbove(cLaw, 1e-11)
	uMax := len(cLaw) - 1 + k1 // c + m
	// Case k = 0: no batch arrived before the barrier (e of law eLaw);
	// k = 1: one did (eArrived). ce[k] is the law of c + e, Fe[k][l] the
	// CDF of S(e + l).
	eLaws := [2][]float64{eLaw, eArrived}
	var ce [2][]float64
	var ceLo [2]int
	var Fe [2][][]float64
	vMax := 0 // c + m + e
	for k, law := range eLaws {
		ce[k] = polyConvolve(cLaw, law)
		ceLo[k] = firstAbove(ce[k], 1e-11)
		vMax = max(vMax, len(ce[k])-1+k1)
		Fe[k] = make([][]float64, k2+1)
		for l := range Fe[k] {
			mixed := make([]float64, n)
			for e, w := range law {
				if w == 0 {
					continue
				}
				for i, v := range sums[e+l] {
					mixed[i] += w * v
				}
			}
			Fe[k][l] = cumulative(mixed)
		}
	}
	F := make([][]float64, k2+1) // F[l]: CDF of S(l)
	for l := range F {
		F[l] = cumulative(sums[l])
	}
	type stateLaws struct {
		w      float64
		pY, cY [][]float64 // Y's law and CDF, by c+m
		pZ, cZ [][]float64 // Z's, by c+m+e
		// gBeta[v][l][t] = P(Z > x, Z + S(l) <= t), gGamma[k][u][l][t] =
		// P(Y > x, Y + S(e + l) <= t), for the x at hand.
		gBeta  [][][]float64
		gGamma [2][][][]float64
		// aT[m], aT1[m]: a duplicate is not done with the first phase by
		// x (by x-1), to the d-th power, over c.
		aT, aT1 []float64
	}
	newTable := func(top int) [][][]float64 {
		out := make([][][]float64, top+1)
		for v := range out {
			out[v] = make([][]float64, k2+1)
			for l := 1; l <= k2; l++ {
				out[v][l] = make([]float64, n)
			}
		}
		return out
	}
	sts := make([]*stateLaws, len(states))
	for s, st := range states {
		sl := &stateLaws{w: st.w, gBeta: newTable(vMax), gGamma: [2][][][]float64{newTable(uMax), newTable(uMax)}, aT: make([]float64, k1+1), aT1: make([]float64, k1+1)}
		for u := 0; u <= vMax; u++ {
			y := convolve(st.pmf, sums[u])
			c := cumulative(y)
			if u <= uMax {
				sl.pY, sl.cY = append(sl.pY, y), append(sl.cY, c)
			}
			sl.pZ, sl.cZ = append(sl.pZ, y), append(sl.cZ, c)
		}
		sts[s] = sl
	}
	// J[k][m*w+l], J1[k][m*w+l]: a group holding m of the first phase
	// and l of the last is done with the first by x (x-1) and the last by
	// t; split takes their expected product over the groups.
	w := k2 + 1
	split := newMultinomial2(k1, k2, r)
	newJ := func() []float64 { return make([]float64, (k1+1)*w) }
	J, J1 := [2][]float64{newJ(), newJ()}, [2][]float64{newJ(), newJ()}
	bPow := make([]float64, vMax+1)
	ccPow, ccPow1 := make([]float64, uMax+1), make([]float64, uMax+1)
	law := make([]float64, n)
	for x := n - 1; x >= 0; x-- {
		for _, sl := range sts {
			if x+1 < n {
				for v := range sl.gBeta {
					if pz := sl.pZ[v][x+1]; pz != 0 {
						for l := 1; l <= k2; l++ {
							gb, f := sl.gBeta[v][l][x+1:], F[l]
							for t := range gb {
								gb[t] += pz * f[t]
							}
						}
					}
				}
				for u := 0; u <= uMax; u++ {
					if py := sl.pY[u][x+1]; py != 0 {
						for k := range Fe {
							for l := 1; l <= k2; l++ {
								gg, f := sl.gGamma[k][u][l][x+1:], Fe[k][l]
								for t := range gg {
									gg[t] += py * f[t]
								}
							}
						}
					}
				}
			}
			for m := 1; m <= k1; m++ {
				sl.aT[m], sl.aT1[m] = 0, 0
				for c := cLo; c < len(cLaw); c++ {
					u := c + m
					sl.aT[m] += cLaw[c] * ipow(1-sl.cY[u][x], d)
					if x > 0 {
						sl.aT1[m] += cLaw[c] * ipow(1-sl.cY[u][x-1], d)
					} else {
						sl.aT1[m] += cLaw[c]
					}
				}
			}
		}
		// The chance that T1 = x: skip the cell when it has none. (Whether
		// the groups are idle when the batch comes is the same at every
		// group: the state is taken for all of them at once.)
		atX := 0.0
		for _, sl := range sts {
			for m := 0; m <= k1; m++ {
				for l := range w {
					J[0][m*w+l], J1[0][m*w+l] = unit(1-sl.aT[m]), unit(1-sl.aT1[m])
				}
			}
			atX += sl.w * (split.top(J[0]) - split.top(J1[0]))
		}
		if atX < 1e-10 {
			continue
		}
		q := quiet(x)
		cases := 2
		if q > 1-1e-12 {
			cases = 1
		}
		for t := x; t < n; t++ {
			v := 0.0
			for _, sl := range sts {
				for k := range cases {
					for m := 0; m <= k1; m++ { // l = 0: the first phase only
						J[k][m*w], J1[k][m*w] = unit(1-sl.aT[m]), unit(1-sl.aT1[m])
					}
				}
				for l := 1; l <= k2; l++ {
					f := F[l][t-x]
					for v := range bPow {
						bPow[v] = ipow(1-min(1, sl.cZ[v][x]*f+sl.gBeta[v][l][t]), d)
					}
					for k := range cases {
						// Neither done with the first phase by x (x-1)
						// nor with the last by t, by c+m.
						for u := cLo + 1; u <= uMax; u++ {
							a1 := 1.0
							if x > 0 {
								a1 = 1 - sl.cY[u][x-1]
							}
							gm := sl.gGamma[k][u][l][t]
							ccPow[u] = ipow(max(0, 1-sl.cY[u][x]-gm), d)
							ccPow1[u] = ipow(max(0, a1-gm-sl.pY[u][x]*Fe[k][l][t-x]), d)
						}
						for m := 0; m <= k1; m++ {
							bT, ccT, ccT1 := 0.0, 0.0, 0.0
							for c := ceLo[k]; c < len(ce[k]); c++ {
								bT += ce[k][c] * bPow[c+m]
							}
							if m > 0 {
								for c := cLo; c < len(cLaw); c++ {
									ccT += cLaw[c] * ccPow[c+m]
									ccT1 += cLaw[c] * ccPow1[c+m]
								}
							}
							J[k][m*w+l] = unit(1 - sl.aT[m] - bT + ccT)
							J1[k][m*w+l] = unit(1 - sl.aT1[m] - bT + ccT1)
						}
					}
				}
				v += sl.w * q * (split.top(J[0]) - split.top(J1[0]))
				if cases > 1 {
					v += sl.w * (1 - q) * (split.top(J[1]) - split.top(J1[1]))
				}
			}
			law[t] += v
			if atX-v < 1e-9*atX {
				// Every group is done: the same for the later cells.
				for u := t + 1; u < n; u++ {
					law[u] += v
				}
				break
			}
		}
	}
	return law
}

// firstAbove is the first index of law whose weight is above tol.
func firstAbove(law []float64, tol float64) int {
	for i, w := range law {
		if w > tol {
			return i
		}
	}
	return len(law)
}

// unit clamps a chance to [0, 1] (math.Min and math.Max are not inlined
// in batchBarrier's inner loops).
func unit(x float64) float64 { return min(1, max(0, x)) }

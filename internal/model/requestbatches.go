package model

import "math"

// Batches of two-phase requests over several groups of one server: a
// request's last phase starts when its first phase ends, behind what its
// group still holds then.

// batchServersCells is the grid of batchServers: its work grows with the
// cells squared. Against 512 cells, 256 moved Gridlab-D's batches on 1x2,
// 1x4 and 1x8 (1% and 30% load) by at most 0.0015 at p10-p99, but for 1x4
// at 1% (0.004 lower at p90 and p99). The law converges as the cells'
// width squared (on 1x2 at 8% load, 128, 256 and 512 cells were 0.0112,
// 0.0042 and 0.0023 low at the median against lone batches simulated,
// 0.0155, 0.0069 and 0.0047 at p70), and the error map's horizon doubles
// with the load's tail (112 ms for 1x2 at 8% and 30%, 56 at 1%), so the
// law is taken on these cells and on half as many and extrapolated
// (Richardson): the pessimism at 8% and 30% load was partly the grid.
const batchServersCells = 256

// batchServers is the request law, on g, of requests of two phases (k1
// then k2 accesses) arriving in batches of sys.Request.Batch on r > 1
// groups of one server. Every request of a batch sends its first phase
// at the batch's instant, in batch order, and its last phase when its
// first ends, at T1. At a server, request j's own first-phase accesses end
// at E (the wait the batch found, the first phases of requests 1..j-1
// that went there, its own), the work queued after them ends at G = E + L
// (the first phases of requests j+1..B, then the last phases of the
// requests whose first phase ended before T1), and the request's
// last-phase accesses end at max(G, T1) + U (U its m services and the
// reply): a server that idles before T1 starts them at T1, one still busy
// when it is done. (batchGroups, which duplicates still use, took every
// group as busy and, apart, the phases as if alone: the two shared the
// wait and were multiplied as independent, which at 30% load put 1x2 0.06
// low at the median.)
//
// Given T1's cell s, a server with n first-phase and m last-phase
// accesses ended its first phase by s' and its last by t with chance
// P(E <= s', max(G, s) + U <= t). The request ends by t with T1 in cell s
// with the chance that every server did so with s' = s, less with
// s' = s - 1, over the multinomial splits of both phases, summed over s.
// Another request's last phase is counted ahead of this one's with the
// chance that its T1 came first given this one's T1 (firstGiven, taken
// over four spans of T1's law): at a server both reach, the later of the
// two in the batch is behind the earlier's accesses, so their T1 share
// the queues. (Taken apart, request 3's T1 came before request 4's on two
// groups with chance 0.70, and 5's with 0.32; given, 0.96 and 0.04, as a
// Monte Carlo of a lone batch has it: 0.97 and 0.03.)
//
// Whether an earlier request came first is tied to the servers' loads:
// it did wherever every server is done with the earlier requests' first
// phases by T1 (those hold less), and where one is not, some came later
// (those hold more). So the count of last phases ahead is taken in two
// classes: every server done with the earlier first phases by T1 (each
// of them ahead; the law with that condition), or not (each ahead with
// the chance left, (q - P(done))/(1 - P(done)), P(done) given T1 over
// the joint split of the request's and the earlier accesses:
// doneGivenT1), each class's law at its own count, the difference on the
// coarser grid. Taken apart from the loads, a lone batch's law was too
// wide: against a Monte Carlo of it, drawing the set of others ahead
// from another batch whose T1 fell in the same sixteenth of its law
// widened 1x2's law by 0.003 at p10-p30 and 0.002 at p70-p90, the
// model's whole error there; the two classes took the 1% cells' 1x3 from
// +0.0047/+0.0021/-0.0029 at p30/p50/p90 to -0.0005/-0.0013/-0.0016, and
// 1x5's median from +0.0035 to +0.0008. (The later requests' coming
// first is tied to the loads too, less: not taken.)
//
// The batch's other work splits over the servers with its totals fixed:
// the earlier requests' first phases ((j-1) k1 accesses) and the work
// between the request's phases (the later first phases and the last
// phases ahead), one server's heavy share another's light one. Drawn
// apart at each server (binomial), both could be light: a Monte Carlo of
// a lone batch put that at +0.02 at the median for 2 and 4 groups, and
// 1xr at 1% load was 0.013-0.017 high. Drawn Poisson apart, the shares
// given their totals are the multinomial split, so the law is taken with
// Poisson shares at the totals' means and near them, and depoissonised
// (depoissonised).
//
// G serves the last phases ahead back to back from E, but each reaches
// the server at its own T1: a server done with its first phases idles
// until then, and what such a last phase leaves at this request's T1
// delays this one's. Where the server idles at T1 (G <= T1) the last
// phase starts that much after T1 (lateLumps: each other request's
// last-phase accesses there less the time since its T1, given this T1 by
// the pair's joint law, taken at the middle of each span of T1, the
// largest over the others apart). Without it, a Monte Carlo of a lone
// batch on 8 groups put the law +0.016 high at the median, and 1x8 at 1%
// load was 0.015 high; with it, within 0.002 (6 groups: +0.0035). (Where G > T1 it is left
// out, and the others' accesses taken apart from G, which holds them
// too: in the lone batch's Monte Carlo the first is +0.009 at the median
// on 8 groups, the second -0.011, both of the same lone batch.)
//
// The wait a batch finds at a server is not the M/G/1 workload of whole
// batches: that counts the last phases of the batch before that are still
// to come (their T1 later than this batch's instant), which queue behind
// this batch's first phases, ahead of its last ones; and the servers'
// waits are set by the same instants, so they idle together (all at once
// 0.83-0.93 of the time at 30% load against 0.72-0.74 apart). So the law
// is corrected, on a coarser grid, by states of the batch before's age,
// shared by every server (agedWaits): in each the wait found (what of the
// batch before and its own wait had reached the server, less the age)
// and the last phases still to come, added to the work between the
// request's phases; less the law with the waits apart. And the batch
// after, arrived before T1 (a Poisson stream), puts its first phases
// ahead of the last phases, as a late lump too. At 30% load the worst of
// 1x2..1x8 at p50/p90/p99 went from 0.0071-0.0205 (pessimistic at the
// median) to 0.0023-0.0077 (10^7 simulated requests); the error at 8%
// less that at 1% (the lone batch's own, taken out) from 0.0020-0.0066
// to 0.0005-0.0043 at p10-p90.
//
// What is left: at 1% load the law is within 0.0018 at p50-p99 but slow
// at p10-p30 on 6-8 groups (1x8: -0.0042 at p10); at 30% load it is
// pessimistic at p50-p90 (1x2: 0.008, growing with the load: the
// batch before's own wait is still taken apart at each server); and the
// reply's network delay is counted in E as well as in U.
func (g grid) batchServers(sys System, k1, k2 int, rho float64, r int) []float64 {
	law, corrections := g.batchServersOn(sys, k1, k2, rho, r, batchServersCells, true)
	// the law's limit on finer cells (batchServersCells)
	half, _ := g.batchServersOn(sys, k1, k2, rho, r, batchServersCells/2, false)
	for i := range law {
		law[i] = richardson(law[i], half[i], 2) + corrections[i]
	}
	return law
}

// batchServersOn is batchServers's law on a grid of cells cells, read on
// g's cells, and apart from it (when corrections is set) the corrections
// taken on their own coarser grids: the depoissonisation's terms, the two
// classes and what the batches before and after share.
func (g grid) batchServersOn(sys System, k1, k2 int, rho float64, r, cells int, corrections bool) (law, corrected []float64) {
	B := sys.Request.batch()
	p := 1 / float64(r)
	fine := newBatchGrid(g, cells, sys, k1, k2, rho, r)
	c, sums, wait, net := fine.grid, fine.sums, fine.wait, fine.net
	// t1s[j-1]: request j's T1 (each server's count of the earlier first
	// phases binomial).
	// done[j-1]: per cell of T1, the chance that every server is done by
	// then with the earlier requests' first phases.
	t1s, done := make([][]float64, B), make([][]float64, B)
	upTo := make([][]float64, B*k1+1) // after the wait, c services and the reply
	for n := range upTo {
		upTo[n] = cumulative(convolve(convolve(wait, sums[n]), net))
	}
	for j := 1; j <= B; j++ {
		before := convolve(wait, c.countsOfSums(binomial((j-1)*k1, p), sums))
		A := make([][]float64, k1+1)
		A[0] = onesLike(c.n)
		for n := 1; n <= k1; n++ {
			A[n] = cumulative(convolve(convolve(before, sums[n]), net))
		}
		t1s[j-1] = multinomialProduct(A, r, c.n)
		done[j-1] = doneGivenT1(upTo, k1, (j-1)*k1, r)
	}
	coarse := newBatchGrid(g, batchCorrectionCells, sys, k1, k2, rho, r)
	nextFine := &nextBatch{sys.Rate / float64(B) * c.h, c.countsOfSums(binomial(B*k1, p), sums)}
	fineLaw, correction := make([]float64, c.n), make([]float64, coarse.grid.n)
	toCoarse := func(s int) int { return cellOnGrid(s, c.n, coarse.grid.n) }
	// the states by the batch before's age and the batch after's
	// arrival, on a grid coarser still
	shared := newBatchGrid(g, batchSharedCells, sys, k1, k2, rho, r)
	sharedCorrection := make([]float64, shared.grid.n)
	toShared := func(s int) int { return cellOnGrid(s, c.n, shared.grid.n) }
	t1Shared := make([][]float64, B)
	for i, cdf := range t1s {
		t1Shared[i] = make([]float64, shared.grid.n)
		for x := range t1Shared[i] {
			t1Shared[i][x] = cdf[min(c.n-1, cellOnGrid(x, shared.grid.n, c.n))]
		}
	}
	var aged []batchGrid
	if corrections {
		aged = shared.agedWaits(sys, t1Shared, k1, k2, r)
	}
	// the batch after at the server: its first phases' work, and that
	// work arriving before a T1 (none: the same chance, nothing)
	next := &nextBatch{sys.Rate / float64(B) * shared.grid.h, shared.grid.countsOfSums(binomial(B*k1, p), shared.sums)}
	none := &nextBatch{next.rate, shared.sums[0]}
	for j := 1; j <= B; j++ {
		// Per cell s of T1: the chance each other request's T1 came
		// first given this one's in s (their first phases share the
		// servers' queues).
		var first [][]float64
		var pairs []func(x, y int) float64
		for i := 1; i <= B; i++ {
			if i != j {
				pair := fine.pairT1(i, j, k1, r)
				pairs = append(pairs, pair)
				first = append(first, fine.firstGiven(pair))
			}
		}
		earlier := j - 1 // first[:earlier] are the requests before j
		spans := t1Spans(t1s[j-1], batchSpans)
		A := float64((j - 1) * k1)
		var meanAll float64 // the count between the phases, over T1
		for k := 0; k+1 < len(spans); k++ {
			from, to := spans[k], spans[k+1]
			// the work between the phases over the span: later first
			// phases and the last phases ahead, their count's mean and
			// variance
			// in two classes: every server done with the earlier
			// requests' first phases by T1 (then each of them came
			// first), or not
			var cls [2]struct{ mass, mean, second float64 }
			for s := from; s < to; s++ {
				w := t1s[j-1][s]
				if s > 0 {
					w -= t1s[j-1][s-1]
				}
				pd := done[j-1][s]
				for d, wd := range [2]float64{w * pd, w * (1 - pd)} {
					if wd <= 0 {
						continue
					}
					m, v := float64((B-j)*k1), 0.0
					for e, q := range first {
						qs := q[s]
						switch {
						case e < earlier && d == 0:
							qs = 1
						case e < earlier:
							qs = clamp01((qs - pd) / (1 - pd))
						}
						m += qs * float64(k2)
						v += qs * (1 - qs) * float64(k2*k2)
					}
					cls[d].mass += wd
					cls[d].mean += wd * m
					cls[d].second += wd * (v + m*m)
				}
			}
			mass := cls[0].mass + cls[1].mass
			if mass <= 0 {
				continue
			}
			mean, within := cls[0].mean+cls[1].mean, 0.0
			for _, cl := range cls {
				if cl.mass > 0 {
					within += cl.second - cl.mean*cl.mean/cl.mass
				}
			}
			meanX, varX := mean/mass, within/mass
			meanAll += mean
			// what the last phases ahead leave at T1, taken at the
			// span's middle
			s := from
			for s+1 < to && t1s[j-1][s] < (float64(k)+0.5)/batchSpans {
				s++
			}
			late := fine.lateLumps(pairs, nextFine, s, k2, r)
			lateCoarse := make([]float64, coarse.grid.n)
			for x, v := range late {
				lateCoarse[min(toCoarse(x), coarse.grid.n-1)] += v
			}
			for i, v := range fine.request(A, meanX, late, k1, k2, r, from, to) {
				fineLaw[i] += v / float64(B)
			}
			if !corrections {
				continue
			}
			// The depoissonisation's terms (over the count's law within
			// each class), on the coarser grid.
			var atMean []float64
			for e, pt := range depoissonised(A, meanX, varX) {
				w := pt.weight
				law := coarse.request(pt.first, pt.then, lateCoarse, k1, k2, r, toCoarse(from), toCoarse(to))
				if e == 0 {
					w-- // the law itself, on the fine grid above
					atMean = law
				}
				for i, v := range law {
					correction[i] += w * v / float64(B)
				}
			}
			// The two classes, each at its own count: the law with
			// every earlier request's first phase done by T1 at its
			// count, and the rest at theirs, less the law at the mean.
			if earlier > 0 && cls[0].mass > 0 && cls[1].mass > 0 {
				doneCoarse := coarse
				doneCoarse.earlierDone = true
				from, to := toCoarse(from), toCoarse(to)
				inDone, inRest := cls[0].mean/cls[0].mass, cls[1].mean/cls[1].mass
				plus := [][]float64{doneCoarse.request(A, inDone, lateCoarse, k1, k2, r, from, to), coarse.request(A, inRest, lateCoarse, k1, k2, r, from, to)}
				minus := [][]float64{doneCoarse.request(A, inRest, lateCoarse, k1, k2, r, from, to), atMean}
				for i := range correction {
					correction[i] += (plus[0][i] + plus[1][i] - minus[0][i] - minus[1][i]) / float64(B)
				}
			}
		}
		if !corrections {
			continue
		}
		// What the batches before and after share over the servers, on
		// the coarser grid and over all of T1 (the count between the
		// phases at its mean, what the last phases ahead leave at T1's
		// median): each state's law less the law with the waits apart.
		s := 0
		for s+1 < c.n && t1s[j-1][s] < 0.5 {
			s++
		}
		late := fine.lateLumps(pairs, nextFine, s, k2, r)
		lateShared := make([]float64, shared.grid.n)
		for x, v := range late {
			lateShared[min(toShared(x), shared.grid.n-1)] += v
		}
		apart := shared.request(A, meanAll, lateShared, k1, k2, r, 0, shared.grid.n)
		for _, st := range aged {
			for i, v := range st.request(A, meanAll, lateShared, k1, k2, r, 0, shared.grid.n) {
				sharedCorrection[i] += st.weight * (v - apart[i]) / float64(B)
			}
		}
		// The batch after, arrived before T1: its first phases go ahead
		// of the last ones.
		with, without := shared, shared
		with.next, without.next = next, none
		base := without.request(A, meanAll, lateShared, k1, k2, r, 0, shared.grid.n)
		for i, v := range with.request(A, meanAll, lateShared, k1, k2, r, 0, shared.grid.n) {
			sharedCorrection[i] += (v - base[i]) / float64(B)
		}
	}
	lawAt := RequestPrediction{Step: c.h, CDF: fineLaw}
	correctionAt := RequestPrediction{Step: coarse.grid.h, CDF: correction}
	sharedAt := RequestPrediction{Step: shared.grid.h, CDF: sharedCorrection}
	law, corrected = make([]float64, g.n), make([]float64, g.n)
	for i := range law {
		x := (float64(i) + 0.5) * g.h
		law[i] = lawAt.At(x)
		corrected[i] = correctionAt.At(x) + sharedAt.At(x)
	}
	return law, corrected
}

// batchSpans is how many spans of T1's law batchServers takes the count
// of last phases ahead in.
const batchSpans = 4

// t1Spans cuts the cells into n spans of T1's law (CDF t1) of equal
// chance: their first cells, then the end.
func t1Spans(t1 []float64, n int) []int {
	spans := []int{0}
	for k := 1; k < n; k++ {
		q := float64(k) / float64(n)
		s := spans[len(spans)-1] + 1
		for s < len(t1) && t1[s] < q {
			s++
		}
		if s < len(t1) {
			spans = append(spans, s)
		}
	}
	return append(spans, len(t1))
}

// pairT1 is the joint law of requests i's and j's T1: pair(x, y) is
// P(T1 of i in a cell <= x, T1 of j in a cell <= y), -1 for never and
// the grid's length for always. At a server both reach, the later of the
// two in the batch is behind the earlier's accesses, so the two T1 share
// the server's queue (each server's count of the others' first phases
// binomial, the two requests' split exact).
func (b batchGrid) pairT1(i, j, k1, r int) func(x, y int) float64 {
	c, p := b.grid, 1/float64(r)
	lo, hi := min(i, j), max(i, j)
	// at a server with hi's accesses: everything up to hi's; with only
	// lo's: everything up to lo's
	upToHi := make([][]float64, 2*k1+1)
	before := convolve(b.wait, c.countsOfSums(binomial((hi-2)*k1, p), b.sums))
	for n := 1; n <= 2*k1; n++ {
		upToHi[n] = cumulative(convolve(convolve(before, b.sums[n]), b.net))
	}
	upToLo := make([][]float64, k1+1)
	before = convolve(b.wait, c.countsOfSums(binomial((lo-1)*k1, p), b.sums))
	for n := 1; n <= k1; n++ {
		upToLo[n] = cumulative(convolve(convolve(before, b.sums[n]), b.net))
	}
	// atOnce[n]: the accesses between lo's and hi's and hi's n take no
	// cell
	atOnce := make([]float64, k1+1)
	for n := 1; n <= k1; n++ {
		for m, w := range binomial((hi-lo-1)*k1, p) {
			atOnce[n] += w * b.sums[m+n][0]
		}
	}
	pow := newMultinomial2(k1, k1, r)
	f := make([]float64, (k1+1)*(k1+1))
	// joint is P(lo's T1 <= xLo, hi's T1 <= xHi), a cell -1 for never
	// and g.n for always
	at := func(cdf []float64, x int) float64 {
		switch {
		case x < 0:
			return 0
		case x >= len(cdf):
			return 1
		}
		return cdf[x]
	}
	joint := func(xLo, xHi int) float64 {
		for nl := 0; nl <= k1; nl++ {
			for nh := 0; nh <= k1; nh++ {
				v := 1.0
				switch {
				case nh > 0 && nl > 0 && xHi > xLo && xHi >= c.n:
					v = at(upToLo[nl], xLo)
				case nh > 0 && nl > 0 && xHi > xLo:
					// lo's accesses end before hi's: by xLo = xHi - 1
					// unless in cell xHi with hi's after them at once
					v = at(upToHi[nl+nh], xHi) - (at(upToLo[nl], xHi)-at(upToLo[nl], xHi-1))*atOnce[nh]
				case nh > 0:
					v = at(upToHi[nl+nh], xHi)
				case nl > 0:
					v = at(upToLo[nl], xLo)
				}
				f[nl*(k1+1)+nh] = v
			}
		}
		return pow.top(f)
	}
	// with i's threshold x and j's y
	return func(x, y int) float64 {
		if i == lo {
			return joint(x, y)
		}
		return joint(y, x)
	}
}

// firstGiven is, per cell s, the chance request i's T1 came before
// request j's given j's in s, pair their joint law (pairT1): in the same
// cell, half.
func (b batchGrid) firstGiven(pair func(x, y int) float64) []float64 {
	c := b.grid
	out := make([]float64, c.n)
	for s := range out {
		mass := pair(c.n, s) - pair(c.n, s-1)
		if mass < 1e-13 {
			continue
		}
		both := pair(s, s) - pair(s, s-1) + pair(s-1, s) - pair(s-1, s-1)
		out[s] = math.Min(1, math.Max(0, both/2/mass))
	}
	return out
}

// lateLumps is the law, with request j's T1 in cell s, of what is left
// then at a server of the last phases of the requests whose T1 came
// first (pairs: each other's joint law with j's, pairT1). Request i's
// last-phase accesses there (each of k2 there with chance 1/r) arrived
// at its T1, s - d, and X - d of them is left if more than nothing; the
// largest over the others, taken apart.
func (b batchGrid) lateLumps(pairs []func(x, y int) float64, next *nextBatch, s, k2, r int) []float64 {
	c := b.grid
	lump := make([]float64, c.n)
	for m, w := range binomial(k2, 1/float64(r)) {
		for x, v := range b.sums[m] {
			lump[x] += w * v
		}
	}
	lumpCDF := cumulative(lump)
	cdf, own := onesLike(c.n), make([]float64, c.n)
	for _, pair := range pairs {
		mass := pair(c.n, s) - pair(c.n, s-1)
		if mass < 1e-13 {
			continue
		}
		for x := range own {
			own[x] = 1
		}
		prev := 0.0
		for x := 0; x <= s; x++ {
			// i's T1 in cell x (in j's cell, half of it)
			cur := (pair(x, s) - pair(x, s-1)) / mass
			w := cur - prev
			prev = cur
			if x == s {
				w /= 2
			}
			if w <= 0 {
				continue
			}
			leftBy(own, lumpCDF, w, s-x)
		}
		for y := range cdf {
			cdf[y] *= own[y]
		}
	}
	// the batch after, arrived in cell x before s: its first phases
	workCDF := cumulative(next.work)
	for x := range own {
		own[x] = 1
	}
	for x := 0; x <= s; x++ {
		w := math.Exp(-next.rate*float64(x)) - math.Exp(-next.rate*float64(x+1))
		if x == s {
			w /= 2
		}
		leftBy(own, workCDF, w, s-x)
	}
	for y := range cdf {
		cdf[y] *= own[y]
	}
	return differences(cdf)
}

// leftBy takes from own (the CDF of what is left of some work at a
// moment) the chance w that a lump of CDF lump arrived d cells before it
// and leaves more than each y.
func leftBy(own, lump []float64, w float64, d int) {
	for y := 0; y+d < len(own); y++ {
		own[y] -= w * (1 - lump[y+d])
	}
}

// batchAges is how many spans of the batch before's age agedWaits takes.
// Against 64, 8 put 1x2 at 30% load up to 0.004 higher (at p90), 1x3 and
// 1x4 within 0.001; 32 were within 0.0001 of 64, at twice the cost of 8.
const batchAges = 8

// agedWaits is the batch's states at a server by the age of the batch
// before, which every server shares: the wait it finds there (the work
// that had reached it and is not yet done) and the work of the batch
// before that is still to come (the last phases of its requests whose T1
// is later: they queue behind this batch's first phases but ahead of its
// last ones). The batch before found the wait b.wait, brought its first
// phases at once and each request's last phases at its T1 (t1: their
// CDFs on b's grid); the wait found is what of that had arrived by the
// age, less the age, or nothing. Ages beyond its reach (the batch
// before's work's 1 - 10^-5 quantile): no wait, nothing to come.
//
// Each span of ages is taken at its middle, the same age at every
// server. Taking each server's wait as the mixture over the span's ages
// drew the age apart at each server within the span: with 8 spans 1x2
// at 30% load came out 0.002-0.006 lower at p50-p90 than with 64.
func (b batchGrid) agedWaits(sys System, t1 [][]float64, k1, k2, r int) []batchGrid {
	B, p := sys.Request.batch(), 1/float64(r)
	long := grid{h: b.grid.h, n: 4 * b.grid.n}
	svc := long.pmf(sys.Service)
	sums := serviceSums(svc, B*max(k1, k2))
	wait := append(append([]float64(nil), b.wait...), make([]float64, long.n-b.grid.n)...)
	firsts := convolve(wait, long.countsOfSums(binomial(B*k1, p), sums))
	whole := cumulative(convolve(firsts, long.countsOfSums(binomial(B*k2, p), sums)))
	reach := 0
	for reach+1 < long.n && whole[reach] < 1-1e-5 {
		reach++
	}
	// counts of the batch before's last-phase accesses at the server
	// whose T1 came by age (cells) and those still to come
	lasts := func(age int) (came, toCome []float64) {
		came, toCome = []float64{1}, []float64{1}
		for _, cdf := range t1 {
			q := 1.0
			if age < len(cdf) {
				q = cdf[age]
			}
			mix := func(q float64) []float64 {
				out := binomial(k2, p)
				for m := range out {
					out[m] *= q
				}
				out[0] += 1 - q
				return out
			}
			came, toCome = polyConvolve(came, mix(q)), polyConvolve(toCome, mix(1-q))
		}
		return came, toCome
	}
	lump := make([]float64, long.n)
	for m, w := range binomial(k2, p) {
		for x, v := range sums[m] {
			lump[x] += w * v
		}
	}
	lumpCDF := cumulative(lump)
	rate := sys.Rate / float64(B)
	step := max(1, (reach+batchAges)/batchAges)
	var out []batchGrid
	for lo := 0; lo <= reach; lo += step {
		hi := min(lo+step, reach+1)
		w := math.Exp(-rate*float64(lo)*b.grid.h) - math.Exp(-rate*float64(hi)*b.grid.h)
		if w < 1e-15 {
			continue
		}
		age := (lo + hi) / 2
		came, toCome := lasts(age)
		// the wait found: no less than what each last phase that came
		// leaves (it came at its T1, perhaps to an idle server)
		priorCDF := cumulative(convolve(firsts, long.countsOfSums(came, sums)))
		lumps := onesLike(long.n)
		for _, cdf := range t1 {
			own := onesLike(long.n)
			for x := 0; x <= age && x < len(cdf); x++ {
				q := cdf[x]
				if x > 0 {
					q -= cdf[x-1]
				}
				if q <= 0 {
					continue
				}
				leftBy(own, lumpCDF, q, age-x)
			}
			for y := range lumps {
				lumps[y] *= own[y]
			}
		}
		foundCDF := make([]float64, long.n)
		for y := range foundCDF {
			foundCDF[y] = lumps[y]
			if y+age < long.n {
				foundCDF[y] *= priorCDF[y+age]
			}
		}
		found := differences(foundCDF)
		st := b
		st.wait = found[:b.grid.n]
		for _, v := range found[b.grid.n:] {
			st.wait[b.grid.n-1] += v
		}
		st.pending = b.grid.countsOfSums(toCome, b.sums)
		st.weight = w
		out = append(out, st)
	}
	idle := b
	idle.wait = make([]float64, b.grid.n)
	idle.wait[0] = 1
	idle.weight = math.Exp(-rate * float64(reach+1) * b.grid.h)
	return append(out, idle)
}

// cellOnGrid is the cell of a grid of m cells that cell s of a grid of n
// cells over the same span falls in (nearest).
func cellOnGrid(s, n, m int) int {
	return int(math.Round(float64(s) * float64(m-1) / float64(n-1)))
}

// batchSharedCells is the grid of what the batches before and after
// share over the servers (batchServers): differences of laws again.
const batchSharedCells = 128

// batchCorrectionCells is the grid of batchServers's depoissonisation
// terms (differences of laws, smooth): a quarter of the work of
// batchServersCells.
const batchCorrectionCells = 128

// batchGrid is what batchServers's laws take on one grid of cells cells
// spanning g's horizon: sums[c] the law of c services (up to the Poisson
// counts' tail), the wait a batch finds at a server, the network delay.
type batchGrid struct {
	grid      grid
	sums      [][]float64
	wait, net []float64
	// pending is the law of the work between a request's phases that is
	// not the batch's own: the last phases of the batch before still to
	// come when this one arrived (nil for none)
	pending []float64
	weight  float64 // the chance of this state, in agedWaits's
	next    *nextBatch
	// earlierDone takes the law with every server done by T1 with the
	// earlier requests' first phases
	earlierDone bool
}

// nextBatch is the batch after: arrived before the request's T1 (in
// cell s with chance 1 - exp(-rate (s + 1/2)), rate per cell, the batches
// a Poisson stream), its first phases' work at a server, work, queues
// ahead of the request's last phase.
type nextBatch struct {
	rate float64
	work []float64
}

// arrived is the chance the batch after came before a T1 in cell s.
func (nb *nextBatch) arrived(s int) float64 {
	return 1 - math.Exp(-nb.rate*(float64(s)+0.5))
}

func newBatchGrid(g grid, cells int, sys System, k1, k2 int, rho float64, r int) batchGrid {
	c := grid{h: g.h * float64(g.n-1) / float64(cells-1), n: cells}
	p := 1 / float64(r)
	total := sys.Request.batch() * (k1 + k2)
	svc := c.pmf(sys.Service)
	most := total + int(10*math.Sqrt(float64(total))) + 10
	sums := serviceSums(svc, most)
	whole := c.countsOfSums(binomial(total, p), sums)
	wait := c.waitingPMF(c.lumpEquilibrium(whole, float64(total)*p*sys.Service.Mean()), rho)
	return batchGrid{grid: c, sums: sums, wait: wait, net: c.pmf(sys.net())}
}

// request is batchRequest's law (T1 in cells from..to-1) with each
// server's counts of the earlier first phases and of the work between the
// request's phases drawn Poisson, their totals' means first and then.
func (b batchGrid) request(first, then float64, late []float64, k1, k2, r, from, to int) []float64 {
	p := 1 / float64(r)
	before := convolve(b.wait, b.grid.countsOfSums(b.poisson(first*p), b.sums))
	between := b.grid.countsOfSums(b.poisson(then*p), b.sums)
	if b.pending != nil {
		between = convolve(between, b.pending)
	}
	return b.grid.batchRequest(before, between, late, b.next, b.earlierDone, k1, k2, r, b.sums, b.net, from, to)
}

// poisson is the law of a Poisson count of the given mean, as far as
// sums reach.
func (b batchGrid) poisson(mean float64) []float64 {
	law := poissonLaw(mean, 1e-13)
	return law[:min(len(law), len(b.sums))]
}

// batchRequest is batchServers's law for one request of the batch, with
// T1 in cells from..to-1: before is the law of a server's work ahead of
// its first-phase accesses, then that of the work between them and its
// last-phase ones.
func (g grid) batchRequest(before, then, late []float64, next *nextBatch, earlierDone bool, k1, k2, r int, sums [][]float64, net []float64, from, to int) []float64 {
	nm := (k1 + 1) * (k2 + 1)
	idx := func(n, m int) int { return n*(k2+1) + m }
	survival := func(pmf []float64) []float64 {
		out := cumulative(pmf)
		for i := range out {
			out[i] = 1 - out[i]
		}
		return out
	}
	// Per n: E's and G's laws and CDFs; per m: P(U > x), P(L + U > x).
	fE, FE, fG, FG := make([][]float64, k1+1), make([][]float64, k1+1), make([][]float64, k1+1), make([][]float64, k1+1)
	for n := range fE {
		fE[n] = convolve(convolve(before, sums[n]), net)
		FE[n] = cumulative(fE[n])
		fG[n] = convolve(fE[n], then)
		if next != nil {
			fG[n] = convolve(fG[n], next.work)
		}
		FG[n] = cumulative(fG[n])
	}
	thenNext := then
	if next != nil {
		thenNext = convolve(then, next.work)
	}
	qU, qLU, qRU := make([][]float64, k2+1), make([][]float64, k2+1), make([][]float64, k2+1)
	for m := range qU {
		qU[m] = survival(convolve(sums[m], net))
		qLU[m] = survival(convolve(convolve(thenNext, sums[m]), net))
		qRU[m] = survival(convolve(convolve(late, sums[m]), net))
	}
	// With s going down, partE[n,m][t] is the sum over s < x <= t of
	// P(E = x) P(L + U > t - x), partG the same of G and U.
	partE, partG := make([][]float64, nm), make([][]float64, nm)
	for i := range partE {
		partE[i], partG[i] = make([]float64, g.n), make([]float64, g.n)
	}
	hi, lo := make([]float64, nm), make([]float64, nm)
	aHi, aLo := make([]float64, k1+1), make([]float64, k1+1)
	pow := newMultinomial2(k1, k2, r)
	law := make([]float64, g.n)
	for s := g.n - 1; s >= from; s-- {
		if x := s + 1; x < g.n {
			for n := 0; n <= k1; n++ {
				for m := 0; m <= k2; m++ {
					addShifted(partE[idx(n, m)], fE[n][x], qLU[m], x)
					addShifted(partG[idx(n, m)], fG[n][x], qU[m], x)
				}
			}
		}
		if s >= to {
			continue
		}
		// P(E <= s'), s' = s and s - 1 (no condition without first-phase
		// accesses), and the chance T1 is in cell s
		for n := 0; n <= k1; n++ {
			aHi[n], aLo[n] = 1, 1
			switch {
			case n > 0:
				aHi[n], aLo[n] = FE[n][s], 0
				if s > 0 {
					aLo[n] = FE[n][s-1]
				}
			case earlierDone:
				aHi[n], aLo[n] = FE[n][s], FE[n][s]
			}
			for m := 0; m <= k2; m++ {
				hi[idx(n, m)], lo[idx(n, m)] = aHi[n], aLo[n]
			}
		}
		mass := pow.top(hi) - pow.top(lo)
		if mass < 1e-13 {
			continue
		}
		share := 1.0 // of the laws with T1 in cell s taken here
		if next != nil {
			share = next.arrived(s)
			mass *= share
		}
		for t := s; t < g.n; t++ {
			settled, started := true, false
			for n := 0; n <= k1; n++ {
				aHi, aLo := aHi[n], aLo[n]
				for m := 0; m <= k2; m++ {
					if m == 0 {
						hi[idx(n, m)], lo[idx(n, m)] = aHi, aLo
						continue
					}
					// P(max(G, s) + U > t) and P(E > s', max(G, s) + U > t)
					b := FG[n][s]*qRU[m][t-s] + partG[idx(n, m)][t] + 1 - FG[n][t]
					cHi := partE[idx(n, m)][t] + 1 - FE[n][t]
					cLo := cHi + fE[n][s]*qLU[m][t-s]
					switch {
					case n == 0 && earlierDone:
						cLo = cHi // done by s either way
					case n == 0:
						cHi, cLo = 0, 0
					}
					if b > 1e-12 {
						settled = false
					}
					hi[idx(n, m)], lo[idx(n, m)] = 1-(1-aHi)-b+cHi, 1-(1-aLo)-b+cLo
					started = started || hi[idx(n, m)] > 1e-15
				}
			}
			if settled {
				for u := t; u < g.n; u++ {
					law[u] += mass
				}
				break
			}
			if started { // some group may have ended its last phase
				law[t] += share * (pow.top(hi) - pow.top(lo))
			}
		}
	}
	return law
}

// doneGivenT1 is, per cell s, the chance that every server is done by
// then with the e accesses of the earlier requests' first phases given
// that the request's T1 (the end of its k1) is in cell s, the two splits
// over the r servers taken together (multinomial): upTo[c] is the CDF of
// a server's end of c services after the wait it found. (Each server's
// earlier count drawn binomial apart put the chance 0.01-0.02 high on 4
// and 8 servers against a Monte Carlo of a lone batch.)
func doneGivenT1(upTo [][]float64, k1, e, r int) []float64 {
	pow := newMultinomial2(k1, e, r)
	size := (k1 + 1) * (e + 1)
	// T1 by s (hi) and s - 1 (lo), both with every server done by s
	doneHi, doneLo, t1Hi, t1Lo := make([]float64, size), make([]float64, size), make([]float64, size), make([]float64, size)
	out := make([]float64, len(upTo[0]))
	for s := range out {
		for n := 0; n <= k1; n++ {
			for a := 0; a <= e; a++ {
				i, cdf := n*(e+1)+a, upTo[n+a]
				prev := 0.0
				if s > 0 {
					prev = cdf[s-1]
				}
				if n == 0 {
					doneHi[i], doneLo[i], t1Hi[i], t1Lo[i] = cdf[s], cdf[s], 1, 1
				} else {
					doneHi[i], doneLo[i], t1Hi[i], t1Lo[i] = cdf[s], prev, cdf[s], prev
				}
			}
		}
		out[s] = 1
		if mass := pow.top(t1Hi) - pow.top(t1Lo); mass > 1e-13 {
			out[s] = clamp01((pow.top(doneHi) - pow.top(doneLo)) / mass)
		}
	}
	return out
}

// addShifted adds w*q[t-x] to out[t] for t >= x.
func addShifted(out []float64, w float64, q []float64, x int) {
	if w < 1e-16 {
		return
	}
	for t := x; t < len(out); t++ {
		out[t] += w * q[t-x]
	}
}

// multinomial2 is E[prod over r groups of f(n_g, m_g)] when k1 and k2
// things each go to a uniformly random one of r groups: k1! k2! r^-(k1+k2)
// times the coefficient of x^k1 y^k2 in (sum f(n, m) x^n y^m / (n! m!))^r.
type multinomial2 struct {
	k1, k2, r   int
	inv         []float64 // 1/(n! m!) at n*(k2+1)+m
	scale       float64
	acc, sq, tm []float64
}

func newMultinomial2(k1, k2, r int) *multinomial2 {
	nm := (k1 + 1) * (k2 + 1)
	mp := &multinomial2{k1: k1, k2: k2, r: r, inv: make([]float64, nm),
		acc: make([]float64, nm), sq: make([]float64, nm), tm: make([]float64, nm)}
	for n := 0; n <= k1; n++ {
		for m := 0; m <= k2; m++ {
			mp.inv[n*(k2+1)+m] = math.Exp(-lgammaInt(n+1) - lgammaInt(m+1))
		}
	}
	mp.scale = math.Exp(lgammaInt(k1+1) + lgammaInt(k2+1) - float64(k1+k2)*math.Log(float64(r)))
	return mp
}

// top is the expectation for f (f[n*(k2+1)+m] = f(n, m)): f's power r
// by squarings, its last product only at the top coefficient.
func (mp *multinomial2) top(f []float64) float64 {
	for i := range f {
		mp.sq[i] = f[i] * mp.inv[i]
	}
	have := false // acc holds the product of the powers taken so far
	for e := mp.r; e > 1; e >>= 1 {
		if e&1 == 1 {
			if have {
				mp.mul(mp.acc, mp.acc, mp.sq)
			} else {
				copy(mp.acc, mp.sq)
				have = true
			}
		}
		if e>>1 == 1 && !have {
			return mp.scale * mp.mulTop(mp.sq, mp.sq)
		}
		mp.mul(mp.sq, mp.sq, mp.sq)
	}
	if !have {
		return mp.scale * mp.sq[len(mp.sq)-1]
	}
	return mp.scale * mp.mulTop(mp.acc, mp.sq)
}

// mulTop is the coefficient of x^k1 y^k2 in a*b.
func (mp *multinomial2) mulTop(a, b []float64) float64 {
	w, v := mp.k2+1, 0.0
	for n1 := 0; n1 <= mp.k1; n1++ {
		for m1 := 0; m1 <= mp.k2; m1++ {
			v += a[n1*w+m1] * b[(mp.k1-n1)*w+mp.k2-m1]
		}
	}
	return v
}

// mul sets out to a*b truncated at degrees k1, k2 (out may be a or b).
func (mp *multinomial2) mul(out, a, b []float64) {
	w := mp.k2 + 1
	for n := 0; n <= mp.k1; n++ {
		for m := 0; m <= mp.k2; m++ {
			v := 0.0
			for n1 := 0; n1 <= n; n1++ {
				for m1 := 0; m1 <= m; m1++ {
					v += a[n1*w+m1] * b[(n-n1)*w+m-m1]
				}
			}
			mp.tm[n*w+m] = v
		}
	}
	copy(out, mp.tm)
}

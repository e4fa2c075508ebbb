package model

import (
	"math"
	"slices"
)

// Duplicates in several groups, three phases or more, requests arriving
// alone: the phases as a chain of barriers.

// groupChainCells is the grid of groupChain, and groupChainBins how many
// ranges of the barrier's instant it keeps the groups' state apart for.
const (
	groupChainCells = 512
	groupChainBins  = 32
)

// chainState is one state of a group's duplicates at a barrier (the end
// of a phase, where the next phase reaches every group): q0 is the law of
// the work duplicate 0 has left, q each other duplicate's, all drawn apart
// given the state, which has chance w.
type chainState struct {
	w     float64
	q0, q []float64
}

// chainBin is the barrier's instant within one range of cells: t its
// mass by cell, and the states of the group that ended the phase last
// (marked: none before the first phase) and of each other group, given
// the instant is in the range.
type chainBin struct {
	t            []float64
	marked, rest []chainState
}

// groupChain is the request law of P >= 3 phases (each access to one of r
// groups of d duplicates, uniformly) for a request arriving alone, on g:
// states are the shared states of a group's duplicates when the request
// arrives (each duplicate's wait law given it), sums[c] the law of c
// service times on g, net the reply's network delay.
//
// Phase i reaches every group when phase i-1's slowest group is done (the
// barrier T_{i-1}); a group's slower duplicates are then still serving
// their share of the earlier phases, and its part of phase i ends when its
// first duplicate is done with that and its new accesses. What a group
// carries past a barrier is its duplicates' work left: its first one is
// idle (it just ended its part), the others have some left. That work is
// tied to the barrier's instant (a late barrier has let the slow
// duplicates catch up, so the next phase is short: a Monte Carlo of a lone
// request on 2x2 and 4x2 that drew each phase's states apart from the
// barrier came out 0.01-0.03 off, and within 0.002 with the states kept by
// 20 ranges of the barrier), and to whether the group ended the phase last
// (its other duplicates, slower than its first, have the most left). So
// the chain keeps, for each range of the barrier's instant, the law of
// that instant and two group states: the last group's and the others'.
// Each phase then ends at the slowest group over the multinomial split of
// its accesses, the last group marked, and the next states are each
// duplicate's work left at the new barrier, over which group ended last
// (each group's count drawn apart) and with the others' counts weighed by
// their chance of having ended by it. Within a group, the duplicates but
// the first are drawn apart, as one law. Other requests' accesses that
// reach the groups while phase ph runs come ahead of the next one: ahead
// (ph, the phase's length) is the chance that none comes at any group
// (whether a request arrives is the same for all of them: the ranges keep
// the two cases apart) and, given some do, the law of a group's count.
func (g grid) groupChain(phases []int, r, d int, states []weightedLaw, ahead func(ph int, window float64) (quiet float64, counts []float64), sums [][]float64, net []float64) []float64 {
	p := 1 / float64(r)
	width := max(1, g.n/groupChainBins)
	idle := make([]float64, g.n)
	idle[0] = 1
	start := chainBin{t: idle}
	for _, st := range states {
		start.rest = append(start.rest, chainState{st.w, st.pmf, st.pmf})
	}
	bins := []chainBin{start}
	law := make([]float64, g.n)
	for ph, k := range phases {
		lastPhase := ph == len(phases)-1
		prior := binomial(k, p)
		splits := make([][]float64, k+1) // splits[m]: one of r-1 groups' share of m
		for m := range splits {
			splits[m] = binomial(m, 1/float64(r-1))
		}
		type acc struct {
			t              []float64
			w              float64
			markedQ, restQ [][]float64 // by class of the group's count
			markedW, restW []float64
			lumps          []float64 // the count of accesses that came ahead, by weight
		}
		// next[2j] is range j when nothing came ahead of the next phase,
		// next[2j+1] when something did (at every group alike).
		next := make([]acc, 2*((g.n+width-1)/width))
		// What comes ahead after a phase of x cells, by x.
		type aheadAt struct {
			quiet  float64
			counts []float64
		}
		aheadBy := map[int]aheadAt{}
		for _, b := range bins {
			mass := 0.0
			for _, v := range b.t {
				mass += v
			}
			if mass < 1e-12 {
				continue
			}
			marked := g.chainEnds(b.marked, prior, sums, net, d)
			rest := g.chainEnds(b.rest, prior, sums, net, d)
			var cdf []float64
			if b.marked == nil {
				cdf = multinomialProduct(rest.done, r, g.n)
			} else {
				cdf = multinomialProductMarked(marked.done, rest.done, r, 0, g.n)
			}
			dpmf := differences(cdf)
			if lastPhase {
				for x, w := range convolve(b.t, dpmf) {
					law[x] += w
				}
				continue
			}
			kinds := []chainKind{{rest, r}}
			if b.marked != nil {
				kinds = []chainKind{{marked, 1}, {rest, r - 1}}
			}
			for x, dw := range dpmf {
				if dw < 1e-13 {
					continue
				}
				lastQ, restQ, lastShares, restShares := g.chainLeft(kinds, prior, splits, r, d, x)
				if lastQ == nil {
					continue
				}
				at, ok := aheadBy[x]
				if !ok {
					at.quiet, at.counts = ahead(ph, float64(x)*g.h)
					aheadBy[x] = at
				}
				for c, share := range []float64{at.quiet, 1 - at.quiet} {
					if share < 1e-15 {
						continue
					}
					// The barrier's new instant s+x, by range.
					into := map[int]float64{}
					for s, tw := range b.t {
						if tw == 0 || s+x >= g.n {
							continue
						}
						m := tw * dw * share
						j := 2*((s+x)/width) + c
						a := &next[j]
						if a.t == nil {
							a.t = make([]float64, g.n)
							for range lastQ {
								a.markedQ = append(a.markedQ, make([]float64, g.n))
								a.restQ = append(a.restQ, make([]float64, g.n))
							}
							a.markedW, a.restW = make([]float64, len(lastQ)), make([]float64, len(lastQ))
						}
						a.t[s+x] += m
						into[j] += m
					}
					for j, m := range into {
						a := &next[j]
						a.w += m
						for c := range lastQ {
							ml, mr := m*lastShares[c], m*restShares[c]
							a.markedW[c] += ml
							a.restW[c] += mr
							for y, v := range lastQ[c] {
								a.markedQ[c][y] += ml * v
							}
							for y, v := range restQ[c] {
								a.restQ[c][y] += mr * v
							}
						}
						if c == 1 {
							for len(a.lumps) < len(at.counts) {
								a.lumps = append(a.lumps, 0)
							}
							for n, w := range at.counts {
								a.lumps[n] += m * w
							}
						}
					}
				}
			}
		}
		if lastPhase {
			break
		}
		bins = bins[:0]
		for _, a := range next {
			if a.t == nil || a.w < 1e-14 {
				continue
			}
			quiet := 1.0
			if a.lumps != nil {
				quiet = a.lumps[0] / a.w
			}
			var work []float64
			if busy := 1 - quiet; busy > 1e-9 {
				counts := make([]float64, len(a.lumps))
				for n := 1; n < len(counts); n++ {
					counts[n] = a.lumps[n] / (busy * a.w)
				}
				sums = extendSums(sums, len(counts))
				work = g.countsOfSums(counts, sums)
			}
			b := chainBin{t: a.t}
			// What came ahead waits at every duplicate of the group from the
			// barrier, after the work it has left, as the two-phase engine
			// takes it (a duplicate idle before the barrier starting it when
			// it came, uniformly in the phase, put Olio's 2x2 at 30% 0.017
			// fast at p90, against 0.002 slow, and three phases' 2x2 0.028
			// fast against 0.009): whether any came is the group's, the
			// count given some is drawn apart at each duplicate.
			add := func(states []chainState, q []float64, w float64) []chainState {
				if w <= 0 {
					return states
				}
				for y := range q {
					q[y] /= w
				}
				w /= a.w
				states = append(states, chainState{w * quiet, idle, q})
				if work != nil {
					states = append(states, chainState{w * (1 - quiet), work, convolve(q, work)})
				}
				return states
			}
			for c := range a.markedQ {
				b.marked = add(b.marked, a.markedQ[c], a.markedW[c])
				b.rest = add(b.rest, a.restQ[c], a.restW[c])
			}
			bins = append(bins, b)
		}
	}
	return cumulative(law)
}

// chainEnd is one state of a kind of group in a phase (its chance w): for
// each count n of the phase's accesses, the law of duplicate 0's end (y0,
// its CDF c0) and of each other's (y, c), and the group's chance of being
// done by each cell without the reply's delay (doneBy).
type chainEnd struct {
	w            float64
	y0, c0, y, c [][]float64
	doneBy       [][]float64
}

// chainGroupEnds is a kind of group's states in a phase, and its chance
// of being done (with the reply's delay) by each cell, done[n] for n of the
// phase's accesses, over them.
type chainGroupEnds struct {
	ends []chainEnd
	done [][]float64
}

// chainKind is a kind of group (the last to end the phase before, or
// another) and how many groups are of it.
type chainKind struct {
	e     chainGroupEnds
	count int
}

// chainEnds is chainGroupEnds for a kind of group in the states given, the
// phase's count of law prior.
func (g grid) chainEnds(states []chainState, prior []float64, sums [][]float64, net []float64, d int) chainGroupEnds {
	k := len(prior) - 1
	out := chainGroupEnds{done: make([][]float64, k+1)}
	for n := range out.done {
		out.done[n] = make([]float64, g.n)
	}
	withNet := net[0] < 1
	for _, st := range states {
		e := chainEnd{w: st.w}
		for n := 0; n <= k; n++ {
			y0, y := sums[n], convolve(st.q, sums[n])
			if st.q0[0] < 1 {
				y0 = convolve(st.q0, sums[n])
			}
			c0, c := cumulative(y0), cumulative(y)
			e.y0, e.c0, e.y, e.c = append(e.y0, y0), append(e.c0, c0), append(e.y, y), append(e.c, c)
			by := make([]float64, g.n)
			for x := range by {
				by[x] = 1 - (1-c0[x])*ipow(1-c[x], d-1)
			}
			e.doneBy = append(e.doneBy, by)
			reply := by
			if withNet && n > 0 {
				r0, r := cumulative(convolve(y0, net)), cumulative(convolve(y, net))
				reply = make([]float64, g.n)
				for x := range reply {
					reply[x] = 1 - (1-r0[x])*ipow(1-r[x], d-1)
				}
			}
			if n == 0 { // no access here: the group does not hold the phase
				reply = onesLike(g.n)
			}
			for x, v := range reply {
				out.done[n][x] += st.w * v
			}
		}
		out.ends = append(out.ends, e)
	}
	return out
}

// chainLeft is the law of the work a duplicate other than the first has
// left when the phase ends at cell x (the barrier moved by x): for the
// group that ended last (its first duplicate done in cell x) and for the
// others (done by x), each mixed over the groups' kinds, states and counts
// with their chance given the phase ended at x; nil when that has no
// weight. The counts split the phase's k accesses: given the last group's
// n, the others share k-n.
func (g grid) chainLeft(kinds []chainKind, prior []float64, splits [][]float64, r, d, x int) (last, rest [][]float64, lastShares, restShares []float64) {
	k := len(prior) - 1
	surv := func(c []float64, x int) float64 {
		if x < 0 {
			return 1
		}
		return 1 - c[x]
	}
	// The loser laws of each kind, state and count: ended last in cell x
	// (y0 and y from x on, weighed by lastA and lastB over lastTot) or by
	// it (the same with restA, restB over restTot, and rest0 at 0), and
	// the state's chance of having ended in x and by it.
	type combo struct {
		kind, n                    int
		w, ended, by               float64
		y0, y                      []float64
		lastA, lastB, lastTot      float64
		rest0, restA, restB, restT float64
	}
	var combos []combo
	top := g.n - 1
	for i, kd := range kinds {
		for _, e := range kd.e.ends {
			for n := range prior {
				y0, y, c0, c := e.y0[n], e.y[n], e.c0[n], e.c[n]
				s0a, s0b := surv(c0, x-1), surv(c0, x)
				sa, sb := surv(c, x-1), surv(c, x)
				cb := combo{kind: i, n: n, w: e.w, by: e.doneBy[n][x], y0: y0, y: y}
				cb.ended = kd.e.done[n][x]
				if x > 0 {
					cb.ended -= kd.e.done[n][x-1]
				}
				cb.ended = math.Max(0, cb.ended)
				cb.lastA = ipow(sa, d-1) - ipow(sb, d-1)
				cb.lastB = float64(d-1) * (s0a*ipow(sa, d-2) - s0b*ipow(sb, d-2))
				cb.lastTot = s0a*cb.lastA + sa*cb.lastB
				if cb.by > 1e-300 {
					cb.restA = 1 - ipow(sb, d-1)
					cb.restB = float64(d-1) * (1 - s0b*ipow(sb, d-2))
					cb.rest0 = math.Max(0, c0[x]+float64(d-1)*c[x]-cb.by)
					cb.restT = cb.rest0 + cb.restA*(c0[top]-c0[x]) + cb.restB*(c[top]-c[x])
				}
				combos = append(combos, cb)
			}
		}
	}
	// done[i][n]: a group of kind i with n accesses is done by x.
	done := make([][]float64, len(kinds))
	for i, kd := range kinds {
		done[i] = make([]float64, k+1)
		for n := range done[i] {
			done[i][n] = kd.e.done[n][x]
		}
	}
	// wl[i][n]: the last group is of kind i with n accesses (over its
	// states, each combo's part kept in lastCoef).
	wl := make([][]float64, len(kinds))
	others := make([][]float64, len(kinds))
	for i := range kinds {
		wl[i] = make([]float64, k+1)
		others[i] = make([]float64, k+1)
		counts := make([]int, len(kinds))
		for j, kj := range kinds {
			counts[j] = kj.count
		}
		counts[i]--
		for n := range others[i] {
			// The other r-1 groups share k-n accesses and are done by x.
			others[i][n] = splitDone(done, counts, k-n)
		}
	}
	lastW := 0.0
	lastCoef := make([]float64, len(combos))
	for ci, cb := range combos {
		if cb.lastTot <= 1e-300 || cb.ended <= 0 {
			continue
		}
		w := float64(kinds[cb.kind].count) * prior[cb.n] * cb.w * cb.ended * others[cb.kind][cb.n]
		if w < 1e-16 {
			continue
		}
		lastCoef[ci] = w
		wl[cb.kind][cb.n] += w
		lastW += w
	}
	if lastW <= 0 {
		return nil, nil, nil, nil
	}
	// Each other group's state and count, given the last group's kind i
	// and count n: Binomial(k-n, 1/(r-1)), weighed by its chance of being
	// done by x and the remaining r-2 groups' of being done with what is
	// left; averaged over the other groups.
	// rest2[i][j][m]: the groups but one of kind i and one of kind j are
	// done by x, sharing m accesses; norm[i][j][m] its sum over the kind-j
	// group's share of m.
	rest2 := make([][][]float64, len(kinds))
	norm := make([][][]float64, len(kinds))
	for i := range kinds {
		rest2[i] = make([][]float64, len(kinds))
		norm[i] = make([][]float64, len(kinds))
		for j := range kinds {
			counts := make([]int, len(kinds))
			for l, kl := range kinds {
				counts[l] = kl.count
			}
			counts[i]--
			counts[j]--
			if counts[j] < 0 {
				continue
			}
			rest2[i][j] = make([]float64, k+1)
			norm[i][j] = make([]float64, k+1)
			for m := range rest2[i][j] {
				rest2[i][j][m] = splitDone(done, counts, m)
			}
			for m := range norm[i][j] {
				for n, w := range splits[m] {
					norm[i][j][m] += w * done[j][n] * rest2[i][j][m-n]
				}
			}
		}
	}
	restCoef := make([]float64, len(combos))
	for cj, co := range combos {
		if co.restT <= 1e-300 {
			continue
		}
		sum := 0.0
		for i := range kinds {
			if rest2[i][co.kind] == nil {
				continue
			}
			others := kinds[co.kind].count
			if i == co.kind {
				others--
			}
			for n, w := range wl[i] {
				m := k - n
				if w == 0 || co.n > m || norm[i][co.kind][m] <= 0 {
					continue
				}
				sum += w * float64(others) / float64(r-1) * splits[m][co.n] * rest2[i][co.kind][m-co.n] / norm[i][co.kind][m]
			}
		}
		restCoef[cj] = sum * co.w * co.by
	}
	// With three duplicates or more, the losers of a group share its
	// count: the states are kept apart by it (below the mean or not).
	classes := 1
	if d > 2 {
		classes = 2
	}
	class := func(n int) int { return min(classes-1, n*r/max(1, k)) }
	last, rest = make([][]float64, classes), make([][]float64, classes)
	lastWs, restWs := make([]float64, classes), make([]float64, classes)
	for c := range last {
		last[c], rest[c] = make([]float64, g.n-x), make([]float64, g.n-x)
	}
	for ci, cb := range combos {
		c := class(cb.n)
		if w := lastCoef[ci]; w > 0 {
			lastWs[c] += w
			a, b := w*cb.lastA/cb.lastTot, w*cb.lastB/cb.lastTot
			y0, y := cb.y0[x:], cb.y[x:]
			for z := range last[c] {
				last[c][z] += a*y0[z] + b*y[z]
			}
		}
		if w := restCoef[ci]; w > 0 {
			restWs[c] += w
			w /= cb.restT
			a, b := w*cb.restA, w*cb.restB
			y0, y := cb.y0[x:], cb.y[x:]
			rest[c][0] += w * cb.rest0
			for z := 1; z < len(rest[c]); z++ {
				rest[c][z] += a*y0[z] + b*y[z]
			}
		}
	}
	restW := 0.0
	for c := range restWs {
		restW += restWs[c]
	}
	if restW <= 0 {
		return nil, nil, nil, nil
	}
	for c := range last {
		lastShare, restShare := lastWs[c]/lastW, restWs[c]/restW
		for z := range last[c] {
			if lastWs[c] > 0 {
				last[c][z] /= lastWs[c]
			}
			if restWs[c] > 0 {
				rest[c][z] /= restWs[c]
			}
		}
		lastShares = append(lastShares, lastShare)
		restShares = append(restShares, restShare)
	}
	return last, rest, lastShares, restShares
}

// splitDone is the chance that groups of several kinds (counts[i] of kind
// i) are all done when they share k accesses uniformly, done[i][n] a group
// of kind i with n of them done: E[prod over groups of done[kind][n_g]].
func splitDone(done [][]float64, counts []int, k int) float64 {
	groups := 0
	for _, c := range counts {
		groups += c
	}
	if groups == 0 {
		return 1
	}
	if k == 0 {
		out := 1.0
		for i, c := range counts {
			out *= ipow(done[i][0], c)
		}
		return out
	}
	col := func(i int) [][]float64 {
		a := make([][]float64, k+1)
		for n := range a {
			a[n] = []float64{done[i][n]}
		}
		return a
	}
	switch {
	case len(counts) == 1:
		return multinomialProduct(col(0), groups, 1)[0]
	case counts[0] == 0:
		return multinomialProduct(col(1), groups, 1)[0]
	case counts[1] == 0:
		return multinomialProduct(col(0), groups, 1)[0]
	}
	// One marked group (kind 0) and the rest of kind 1.
	return multinomialProductMarked(col(0), col(1), groups, 0, 1)[0]
}

// groupChainFor sets groupChain up for sys on groupChainCells cells up to
// horizon, as twoPhaseGroupsFor sets the two-phase engine up: with no
// other request in the system every duplicate is idle and only the
// requests arriving meanwhile come ahead of the later phases (their first
// phases, and the next phase of those that arrived in an earlier one);
// with one (by the chance a Poisson stream of requests, each staying as
// long as one alone, leaves one), a group is busy with the chance that
// makes its share of busy time right, each duplicate's wait then the
// stationary workload's given it is not 0 (lumps of each phase's share of
// a group), and that request brings its next phase ahead of each of this
// one's later phases while it has one left. (Drawn apart at each group,
// the arrivals put Olio's 2x2 at 30%, through this path, 0.044 slow at the
// median; kept together at every group, within 0.011.)
func groupChainFor(sys System, phases []int, r, d int, rho, horizon float64) RequestPrediction {
	g := grid{h: horizon / (groupChainCells - 1), n: groupChainCells}
	svc := g.pmf(sys.Service)
	sums := make([][]float64, 1, slices.Max(phases)+1)
	sums[0] = make([]float64, g.n)
	sums[0][0] = 1
	for c := 1; c < cap(sums); c++ {
		sums = append(sums, convolve(sums[c-1], svc))
	}
	p := 1 / float64(r)
	stationary := g.waitingPMF(g.lumpEquilibrium(g.phaseStartLump(phases, p, sums, sys.Service.Mean())), rho)
	net := g.pmf(sys.net())
	// The accesses that reach a group while phase ph runs (for window
	// seconds), ahead of the next: the requests arriving meanwhile (their
	// first phases), and those that arrived during the phases before (the
	// phase after the one they were in), each Binomial(k, 1/r) of a phase's
	// k, plus pending's.
	phaseLaw := phaseCounts(phases, p)
	aheadWith := func(left func(ph int) float64) func(ph int, window float64) (float64, []float64) {
		return func(ph int, window float64) (float64, []float64) {
			mean := sys.Rate * float64(ph+1) * window
			pending := make([]float64, len(phaseLaw))
			for c, w := range phaseLaw {
				pending[c] = left(ph) * w
			}
			pending[0] += 1 - left(ph)
			counts := polyConvolve(compoundPoissonCounts(mean, phaseCounts(phases[:ph+1], p), 1e-9), pending)
			// Nothing comes (at any group) when no request arrives and
			// none is pending; given something does, a group's count.
			quiet := math.Exp(-mean) * (1 - left(ph))
			if quiet > 1-1e-12 {
				return 1, []float64{1}
			}
			counts[0] -= quiet
			for c := range counts {
				counts[c] = math.Max(0, counts[c]) / (1 - quiet)
			}
			return quiet, counts
		}
	}
	none := func(int) float64 { return 0 }
	idle := make([]float64, g.n)
	idle[0] = 1
	alone := g.groupChain(phases, r, d, []weightedLaw{{1, idle}}, aheadWith(none), sums, net)
	// With another request present (at least as often as a duplicate is
	// busy), in any of its phases alike.
	present := 1 - math.Exp(-sys.Rate*lawMean(g, alone))
	busy := 1 - stationary[0]
	present = max(present, busy)
	states := idleOrBusy(stationary)
	if len(states) == 1 || present < 1e-12 {
		return RequestPrediction{Step: g.h, CDF: alone}
	}
	states[0].w, states[1].w = 1-busy/present, busy/present
	P := len(phases)
	pending := func(ph int) float64 { return float64(P-ph-1) / float64(P) }
	behind := g.groupChain(phases, r, d, states, aheadWith(pending), sums, net)
	law := make([]float64, g.n)
	for i := range law {
		law[i] = (1-present)*alone[i] + present*behind[i]
	}
	return RequestPrediction{Step: g.h, CDF: law}
}

// phaseCounts is the law of a group's count of one of phases's accesses
// (each to it with chance p), the phase drawn uniformly.
func phaseCounts(phases []int, p float64) []float64 {
	out := make([]float64, slices.Max(phases)+1)
	for _, k := range phases {
		for c, w := range binomial(k, p) {
			out[c] += w / float64(len(phases))
		}
	}
	return out
}

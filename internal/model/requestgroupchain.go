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
	// chainCountClasses is how many classes of a group's count of the
	// accesses that came ahead of a phase its duplicates share.
	chainCountClasses = 2
	// chainLoserClasses is how many classes of a group's count of a phase's
	// accesses its losers (three duplicates or more) are kept apart by, and
	// chainLastLoserClasses the same at the barrier before the last phase,
	// where they are kept apart by their class at the barrier before too
	// (see loserClasses).
	chainLoserClasses     = 3
	chainLastLoserClasses = 3
)

// chainState is one state of a group's duplicates at a barrier (the end
// of a phase, where the next phase reaches every group): q0 is the law of
// the work duplicate 0 has left, q each other duplicate's, all drawn apart
// given the state, which has chance w; class is the group's losers' class
// at that barrier (loserClasses).
type chainState struct {
	w     float64
	q0, q []float64
	class int
}

// chainBin is the barrier's instant within one range of cells: t its
// mass by cell, and the states of the group that ended the phase last
// (marked: none before the first phase) and of each other group, given
// the instant is in the range.
type chainBin struct {
	t            []float64
	marked, rest []chainState
	arrived      int
}

// chainArrived is the most requests arrived since this one that the chain
// tells apart (more count as that many: two kept apart from one moved a
// lone request on 2x2 at 30% by 0.0008 at most, at 1.5 times the cost).
const chainArrived = 1

// chainAhead is what comes ahead of the next phase at a group, given the
// requests arrived so far: arrived, the count of them after this phase,
// with chance w, and counts, the law of a group's count of accesses then
// (0 included).
type chainAhead struct {
	arrived int
	w       float64
	counts  []float64
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
// the first are drawn apart given the state, one law for each class of
// the group's counts (loserClasses). Other requests' accesses that
// reach the groups while phase ph runs come ahead of the next one: ahead
// (ph, the requests arrived since this one, the phase's length) gives,
// for each count of requests arrived by the phase's end (at every group
// alike: the ranges keep the counts apart), its chance and the law of a
// group's count of accesses.
func (g grid) groupChain(phases []int, r, d int, states []weightedLaw, ahead func(ph, arrived int, window float64) []chainAhead, sums [][]float64, net []float64) []float64 {
	p := 1 / float64(r)
	width := max(1, g.n/groupChainBins)
	idle := make([]float64, g.n)
	idle[0] = 1
	start := chainBin{t: idle}
	for _, st := range states {
		start.rest = append(start.rest, chainState{st.w, st.pmf, st.pmf, 0})
	}
	bins := []chainBin{start}
	law := make([]float64, g.n)
	// Each state is convolved with every count's sum of services (chainEnds):
	// by their spectra, each sum's taken once, one transform a
	// convolution instead of three.
	spec := g.newSpectra(slices.Max(phases)+1, func(n int) []float64 { return sums[n] })
	prevClasses := 1
	for ph, k := range phases {
		lastPhase := ph == len(phases)-1
		prior := binomial(k, p)
		classes, classOf := loserClasses(prior, d, prevClasses, ph == len(phases)-2)
		splits := make([][]float64, k+1) // splits[m]: one of r-1 groups' share of m
		for m := range splits {
			splits[m] = binomial(m, 1/float64(r-1))
		}
		type acc struct {
			t              []float64
			w              float64
			markedQ, restQ [][]float64 // by class of the group's count
			markedW, restW []float64
			restC          [][]float64 // by class: the other groups' first duplicates' credit
			lumps          []float64   // the count of accesses that came ahead, by weight
		}
		// next[(chainArrived+1)j+a] is range j with a requests arrived
		// since this one (at every group alike).
		next := make([]acc, (chainArrived+1)*((g.n+width-1)/width))
		// What comes ahead after a phase of x cells, by x and the
		// requests arrived before it.
		type aheadKey struct{ x, arrived int }
		aheadBy := map[aheadKey][]chainAhead{}
		for _, b := range bins {
			mass := 0.0
			for _, v := range b.t {
				mass += v
			}
			if mass < 1e-12 {
				continue
			}
			marked := g.chainEnds(b.marked, prior, sums, spec, net, d)
			rest := g.chainEnds(b.rest, prior, sums, spec, net, d)
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
				lastQ, restQ, restIdle, lastShares, restShares := g.chainLeft(kinds, prior, splits, r, d, x, classes, classOf)
				if lastQ == nil {
					continue
				}
				// The credit counts only where something arrived (a range
				// of the next barrier that nothing reached takes none).
				var credits [][]float64
				key := aheadKey{x, b.arrived}
				ats, ok := aheadBy[key]
				if !ok {
					ats = ahead(ph, b.arrived, float64(x)*g.h)
					aheadBy[key] = ats
				}
				for _, at := range ats {
					share := at.w
					if share < 1e-15 {
						continue
					}
					if credits == nil && len(at.counts) > 1 {
						credits = make([][]float64, len(restIdle))
						for c, idle := range restIdle {
							credits[c] = arrivalCredit(idle, x)
						}
					}
					// The barrier's new instant s+x, by range.
					into := map[int]float64{}
					for s, tw := range b.t {
						if tw == 0 || s+x >= g.n {
							continue
						}
						m := tw * dw * share
						j := (chainArrived+1)*((s+x)/width) + at.arrived
						a := &next[j]
						if a.t == nil {
							a.t = make([]float64, g.n)
							for range lastQ {
								a.markedQ = append(a.markedQ, make([]float64, g.n))
								a.restQ = append(a.restQ, make([]float64, g.n))
								a.restC = append(a.restC, make([]float64, g.n))
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
							if len(at.counts) > 1 {
								for y, v := range credits[c] {
									a.restC[c][y] += mr * v
								}
							}
						}
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
		if lastPhase {
			break
		}
		prevClasses = classes
		bins = bins[:0]
		for ai, a := range next {
			if a.t == nil || a.w < 1e-14 {
				continue
			}
			quiet := 1.0
			if a.lumps != nil {
				quiet = a.lumps[0] / a.w
			}
			var works []weightedLaw
			if busy := 1 - quiet; busy > 1e-9 {
				counts := make([]float64, len(a.lumps))
				for n := 1; n < len(counts); n++ {
					counts[n] = a.lumps[n] / (busy * a.w)
				}
				sums = extendSums(sums, len(counts))
				works = g.countClasses(counts, sums, chainCountClasses)
			}
			b := chainBin{t: a.t, arrived: ai % (chainArrived + 1)}
			// What came ahead waits at every duplicate of the group after
			// the work it has left at the barrier. A group's first
			// duplicate is idle then; in a group that ended before the
			// last it has been idle since it ended, and served what came
			// from when it came (uniformly in the phase) or ended, the
			// later (arrivalCredit); the last group's just ended. The
			// count is the group's, the same at each of its duplicates: it
			// is kept in chainCountClasses classes of about equal weight,
			// each drawn apart at the duplicates. (Against a Monte Carlo
			// of a lone request on 2x2 at 30%, with the arrived requests
			// kept: all from the barrier and the count drawn apart, p90
			// 0.004 slow; from when it came, 0.002 fast; and the count in
			// two classes, within 0.0017 at p50-p99.)
			add := func(states []chainState, q, credit []float64, w float64, class int) []chainState {
				if w <= 0 {
					return states
				}
				for y := range q {
					q[y] /= w
				}
				w /= a.w
				states = append(states, chainState{w * quiet, idle, q, class})
				if credit != nil {
					for y := range credit {
						credit[y] /= w * a.w
					}
				}
				for _, work := range works {
					q0 := work.pmf
					if credit != nil {
						q0 = creditedLaw(work.pmf, credit)
					}
					states = append(states, chainState{w * (1 - quiet) * work.w, q0, convolve(q, work.pmf), class})
				}
				return states
			}
			for c := range a.markedQ {
				b.marked = add(b.marked, a.markedQ[c], nil, a.markedW[c], c)
				b.rest = add(b.rest, a.restQ[c], a.restC[c], a.restW[c], c)
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
	class        int
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
// phase's count of law prior (spec: the spectra of sums, the sums of
// service times).
func (g grid) chainEnds(states []chainState, prior []float64, sums [][]float64, spec *spectra, net []float64, d int) chainGroupEnds {
	k := len(prior) - 1
	out := chainGroupEnds{done: make([][]float64, k+1)}
	for n := range out.done {
		out.done[n] = make([]float64, g.n)
	}
	withNet := net[0] < 1
	for _, st := range states {
		e := chainEnd{w: st.w, class: st.class}
		fq, fq0 := spec.transform(st.q), []complex128(nil)
		if st.q0[0] < 1 {
			fq0 = spec.transform(st.q0)
		}
		for n := 0; n <= k; n++ {
			y0, y := sums[n], spec.times(fq, n)
			if fq0 != nil {
				y0 = spec.times(fq0, n)
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
func (g grid) chainLeft(kinds []chainKind, prior []float64, splits [][]float64, r, d, x, classes int, classOf func(kind, class, n int) int) (last, rest, restIdle [][]float64, lastShares, restShares []float64) {
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
		kind, n, class             int
		w, ended, by               float64
		y0, y, byLaw               []float64
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
				cb := combo{kind: i, n: n, class: e.class, w: e.w, by: e.doneBy[n][x], y0: y0, y: y, byLaw: e.doneBy[n]}
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
		return nil, nil, nil, nil, nil
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
	last, rest, restIdle = make([][]float64, classes), make([][]float64, classes), make([][]float64, classes)
	lastWs, restWs := make([]float64, classes), make([]float64, classes)
	for c := range last {
		last[c], rest[c], restIdle[c] = make([]float64, g.n-x), make([]float64, g.n-x), make([]float64, x+1)
	}
	// Combos of negligible weight are left out (their parts are below
	// 1e-12 of the laws).
	restTot := 0.0
	for _, w := range restCoef {
		restTot += w
	}
	for ci, cb := range combos {
		c := classOf(cb.kind, cb.class, cb.n)
		if w := lastCoef[ci]; w > 1e-12*lastW {
			lastWs[c] += w
			a, b := w*cb.lastA/cb.lastTot, w*cb.lastB/cb.lastTot
			y0, y := cb.y0[x:], cb.y[x:]
			for z := range last[c] {
				last[c][z] += a*y0[z] + b*y[z]
			}
		}
		if w := restCoef[ci]; w > 1e-12*restTot {
			restWs[c] += w
			w /= cb.restT
			a, b := w*cb.restA, w*cb.restB
			y0, y := cb.y0[x:], cb.y[x:]
			rest[c][0] += w * cb.rest0
			for z := 1; z < len(rest[c]); z++ {
				rest[c][z] += a*y0[z] + b*y[z]
			}
			// The group's first duplicate ended in cell z <= x: idle for
			// x-z cells at the barrier.
			f, prev := restCoef[ci]/cb.by, 0.0
			for z := 0; z <= x; z++ {
				restIdle[c][x-z] += f * (cb.byLaw[z] - prev)
				prev = cb.byLaw[z]
			}
		}
	}
	restW := 0.0
	for c := range restWs {
		restW += restWs[c]
	}
	if restW <= 0 {
		return nil, nil, nil, nil, nil
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
		if restWs[c] > 0 {
			for z := range restIdle[c] {
				restIdle[c][z] /= restWs[c]
			}
		}
		lastShares = append(lastShares, lastShare)
		restShares = append(restShares, restShare)
	}
	return last, rest, restIdle, lastShares, restShares
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
	fine := groupChainOn(sys, phases, r, d, rho, horizon, groupChainCells)
	coarse := groupChainOn(sys, phases, r, d, rho, horizon, groupChainCells/2)
	// The chain's law converges as the cells' width (not its square, as
	// the two-phase engine's: against 10^7 lone requests on 3x2 and 4x2 the
	// error at p30-p90 halves from 256 to 512 cells and again to 1024), so
	// the law on a fine grid is the fine law plus its step from the
	// coarse one (Richardson to the first order): 4x2's lone median
	// +0.0050 on 512 cells, +0.0031 extrapolated, at about 1.2 times the
	// cost.
	law := make([]float64, len(fine.CDF))
	for i, v := range fine.CDF {
		law[i] = clamp01(richardson(v, coarse.At((float64(i)+0.5)*fine.Step), 1))
	}
	return RequestPrediction{Step: fine.Step, CDF: cumulative(differences(law))}
}

// groupChainOn is groupChainFor's law on a grid of cells cells.
func groupChainOn(sys System, phases []int, r, d int, rho, horizon float64, cells int) RequestPrediction {
	cs := newChainSetup(sys, phases, r, horizon, cells)
	g := cs.g
	alone := cs.alone(phases, r, d)
	// With another request present (at least as often as a duplicate is
	// busy), in any of its phases alike.
	stationary := g.waitingPMF(g.lumpEquilibrium(g.phaseStartLump(phases, 1/float64(r), cs.sums, sys.Service.Mean())), rho)
	present := 1 - math.Exp(-sys.Rate*lawMean(g, alone))
	busy := 1 - stationary[0]
	present = max(present, busy)
	states := g.presentStates(stationary, phases, 1/float64(r), sys.Rate, sys.Service.Mean(), cs.sums, busy/present)
	if states == nil || present < 1e-12 {
		return RequestPrediction{Step: g.h, CDF: alone}
	}
	P := len(phases)
	pending := func(ph int) float64 { return float64(P-ph-1) / float64(P) }
	behind := g.groupChain(phases, r, d, states, cs.ahead(pending), cs.sums, cs.net)
	law := make([]float64, g.n)
	for i := range law {
		law[i] = (1-present)*alone[i] + present*behind[i]
	}
	return RequestPrediction{Step: g.h, CDF: law}
}

// chainSetup is what groupChain takes for sys on a number of cells up to
// a horizon: the grid, the sums of service times, the reply's delay,
// and what comes ahead of each phase (with left, the chance that the
// request present still has a phase to bring then).
type chainSetup struct {
	g     grid
	sums  [][]float64
	net   []float64
	ahead func(left func(ph int) float64) func(ph, arrived int, window float64) []chainAhead
}

func newChainSetup(sys System, phases []int, r int, horizon float64, cells int) chainSetup {
	g := grid{h: horizon / float64(cells-1), n: cells}
	svc := g.pmf(sys.Service)
	sums := serviceSums(svc, slices.Max(phases))
	p := 1 / float64(r)
	// The accesses that reach a group while phase ph runs (for window
	// seconds), ahead of the next: the first phase of each request
	// arriving meanwhile, the next phase of each that arrived in an
	// earlier one (the same requests phase after phase: drawn afresh each
	// phase, as a Poisson count over the phases so far, they spread the
	// work over more requests than bear it, and a lone request on 2x2 at
	// 30% came out 0.019 slow at its median against a Monte Carlo of it,
	// within 0.002 kept), each Binomial(k, 1/r) of a phase's k, and the
	// present request's next phase.
	phaseLaw := phaseCounts(phases, p)
	first := binomial(phases[0], p)
	ahead := func(left func(ph int) float64) func(ph, arrived int, window float64) []chainAhead {
		return func(ph, arrived int, window float64) []chainAhead {
			base := []float64{1 - left(ph)}
			for c, w := range phaseLaw {
				if c >= len(base) {
					base = append(base, 0)
				}
				base[c] += left(ph) * w
			}
			if arrived > 0 {
				later := phaseCounts(phases[1:ph+1], p)
				for range arrived {
					base = polyConvolve(base, later)
				}
			}
			out := make([]chainAhead, chainArrived+1)
			for a := range out {
				out[a].arrived = a
			}
			counts := base
			for n, w := range poissonLaw(sys.Rate*window, 1e-9) {
				if n > 0 {
					counts = polyConvolve(counts, first)
				}
				o := &out[min(chainArrived, arrived+n)]
				o.w += w
				for len(o.counts) < len(counts) {
					o.counts = append(o.counts, 0)
				}
				for c, v := range counts {
					o.counts[c] += w * v
				}
			}
			for a := range out {
				for c := range out[a].counts {
					out[a].counts[c] /= out[a].w
				}
			}
			return out
		}
	}
	return chainSetup{g, sums, g.pmf(sys.net()), ahead}
}

// alone is the request law when no other request is in the system: every
// duplicate idle, only the requests arriving meanwhile ahead.
func (cs chainSetup) alone(phases []int, r, d int) []float64 {
	idle := make([]float64, cs.g.n)
	idle[0] = 1
	none := func(int) float64 { return 0 }
	return cs.g.groupChain(phases, r, d, []weightedLaw{{1, idle}}, cs.ahead(none), cs.sums, cs.net)
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

// arrivalCredit is the law of the cells of arrived work a duplicate idle
// for a law idle of cells before a barrier x cells after the last one has
// served by it: min(V, idle), V the time from the arrival (uniform in the
// phase) to the barrier.
func arrivalCredit(idle []float64, x int) []float64 {
	out := make([]float64, x+1)
	if x == 0 {
		out[0] = 1
		return out
	}
	// tail[z] = P(idle >= z)
	tail := make([]float64, x+2)
	for z := x; z >= 0; z-- {
		tail[z] = tail[z+1]
		if z < len(idle) {
			tail[z] += idle[z]
		}
	}
	ge := func(z int) float64 {
		if z > x {
			return 0
		}
		return (1 - float64(z)/float64(x)) * tail[z] / max(tail[0], 1e-300)
	}
	for z := range out {
		out[z] = ge(z) - ge(z+1)
	}
	return out
}

// creditedLaw is the law of max(0, W - C), W of law work, C of law credit,
// apart.
func creditedLaw(work, credit []float64) []float64 {
	out := make([]float64, len(work))
	for z, cw := range credit {
		if cw < 1e-15 {
			continue
		}
		for y, v := range work {
			out[max(0, y-z)] += cw * v
		}
	}
	return out
}

// countClasses splits the law of a group's count (counts) into classes
// of about equal weight, each the law of its counts' work.
func (g grid) countClasses(counts []float64, sums [][]float64, classes int) []weightedLaw {
	var out []weightedLaw
	total := 0.0
	for _, v := range counts {
		total += v
	}
	cur := make([]float64, len(counts))
	curW, done := 0.0, 0.0
	for n, v := range counts {
		cur[n] = v
		curW += v
		done += v
		if curW > 0 && (done >= total*float64(len(out)+1)/float64(classes)-1e-12 || n == len(counts)-1) {
			for i := range cur {
				cur[i] /= curW
			}
			out = append(out, weightedLaw{curW / total, g.countsOfSums(cur, sums)})
			cur, curW = make([]float64, len(counts)), 0
		}
	}
	return out
}

// loserClasses is how many classes the losers of a group (its duplicates
// but the first done) are kept apart by at a barrier, and a group's class
// by its kind (the last group to end the phase before, or another), its
// class at the barrier before and its count n of this phase's accesses (of
// law prior). Given the counts of every phase so far a group's losers are
// apart (each has served them one after the other), but they share those
// counts: drawn apart from one law, the first of three or four losers
// done drew mostly from the groups with few accesses, and a lone request
// on 3x2 and 4x2 came out fast at the median. With one loser (two
// duplicates) there is nothing to share: one class. Otherwise the classes
// are chainLoserClasses of n of about equal weight; at the barrier before
// the last phase (last), those of chainLastLoserClasses within each class
// before. (A Monte Carlo of a lone request on 4x2, its losers drawn apart
// at each barrier from all losers of the same kind and range of the
// barrier's instant: 0.008 fast at the median; kept apart by two classes
// of the phase's count, 0.005; by the count, 0.003, all of it at the
// second barrier; there also by the first phase's count, in 3 classes,
// 0.0005. Whether the group ended the first phase last moved groupChain's
// law by 0.0001 at most: it is not kept.)
func loserClasses(prior []float64, d, prevClasses int, last bool) (int, func(kind, class, n int) int) {
	if d <= 2 {
		return 1, func(int, int, int) int { return 0 }
	}
	byCount := func(classes int) []int {
		out := make([]int, len(prior))
		below := 0.0
		for n, w := range prior {
			out[n] = min(classes-1, int((below+w/2)*float64(classes)))
			below += w
		}
		return out
	}
	if !last {
		of := byCount(chainLoserClasses)
		return chainLoserClasses, func(_, _, n int) int { return of[n] }
	}
	of := byCount(chainLastLoserClasses)
	return prevClasses * chainLastLoserClasses, func(_, class, n int) int {
		return class*chainLastLoserClasses + of[n]
	}
}

package model

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/dsp/fourier"
	"gonum.org/v1/gonum/floats"
)

// Two phases over several groups: the second phase waits for what the
// first left at each group.

// twoPhaseGroupsCells is the grid of the predictor of two phases over
// several groups of duplicates: its work grows with the cells squared
// times the phases' accesses squared.
const twoPhaseGroupsCells = 512

// twoPhaseGroups is the request law of two phases (k1 then k2 accesses,
// each to a uniformly random one of r groups of d duplicates) for a
// request arriving alone, given on g: states are what a group's duplicates
// share of the wait they find (whether they are idle), each with a
// duplicate's wait law given it (the duplicates independent given it),
// sums[c] the law of c service times, net the reply's network delay.
//
// A group's duplicates are still serving its share of the first phase
// when the slowest group ends that phase at T1 and the second phase
// arrives: its second-phase accesses queue behind them. Given T1 = s,
// a duplicate j of a group that got n first-phase and m second-phase
// accesses ends at max(F_j, s) + U_j (F_j its end of the first phase, U_j
// the work ahead and the m services), and the group is done when its
// first duplicate is; the group's first phase ended by s. So, with
// a = P(F > s), b = P(max(F, s) + U > t) and c = P(F > s, F + U > t), the
// group is done by t with chance (1 - a^d - b^d + c^d) / (1 - a^d).
//
// The work ahead is the accesses that reached the group while the first
// phase ran (other requests' phases starting in (0, s)): their count is
// the same at every duplicate of the group (they received the same
// accesses) and only the service draws differ, so the group's chance is
// taken given the count and then averaged over it. How many requests
// arrived in (0, s) is the same at every group: the cases of ahead(s)
// (none, one, more) each take the product over the groups apart. With
// one server per group (d = 1) a group other than the last that is free
// before s starts that work when it arrives, not at s: it ends at
// max(s, max(F, u) + L) + V (u the instant, L the work, V the m services
// and the reply), its first-phase end F mixed over the groups' states
// given it ended by s; one arrival's instant is taken at a few points of
// (0, s), the same at every group. With duplicates in two to four groups
// one arrival's work starts at max(F_j, u) too (arrivalStart, at the
// midpoint of (0, s)); otherwise at max(F_j, s). The groups are taken as independent given
// T1 and the case, each with its first-phase count weighed by the chance
// it ended by s; the second phase's accesses split over the groups
// exactly (multinomially), and T1's law is exact given the waits. With
// two to four groups of duplicates no group is marked (requesttwogroups.go,
// requestgroupsplit.go, requestgrouphalves.go): the law is a difference of
// two products over the groups, in which both phases' splits are exact;
// the marked form with its other groups' counts taken around the mean
// rest made Olio's 2x2 to 2x4 fast at the median at 1% and 8% load, and
// five groups or more still take it.
//
// aheads are several sets of cases of the work ahead, one result each:
// everything but the final average over the work ahead is shared
// between them.
func (g grid) twoPhaseGroups(k1, k2, r, d int, states []weightedLaw, aheads []func(window float64) []aheadCase, sums [][]float64, net []float64, replies *replyLaws, progress Progress) [][]float64 {
	p := 1 / float64(r)
	n2 := k2 + 1
	prior := binomial(k1, p)
	// A group's first-phase count n and the state st of its duplicates
	// (what they share) are one index, i = n*len(states)+st, weighing
	// prior[n] * states[st].w.
	ns := len(states)
	ni := (k1 + 1) * ns
	count := func(i int) int { return i / ns }
	pri := make([]float64, ni)
	for i := range pri {
		pri[i] = prior[count(i)] * states[i%ns].w
	}
	f := make([][]float64, ni) // f[i]: F's law, a duplicate's end of its n first-phase accesses
	A := make([][]float64, ni) // A[i][s]: the group's first phase ended by s
	Fcdf := make([][]float64, ni)
	e := make([][]float64, ni) // e[i]: E's law, the duplicate's last service's end
	Ecdf := make([][]float64, ni)
	for i := range f {
		n := count(i)
		e[i] = convolve(states[i%ns].pmf, sums[n])
		Ecdf[i] = cumulative(e[i])
		f[i] = convolve(states[i%ns].pmf, replies.ends[n])
		Fcdf[i] = cumulative(f[i])
		A[i] = onesLike(g.n)
		if n > 0 {
			for s := range A[i] {
				A[i][s] = 1 - ipow(1-Fcdf[i][s], d)
			}
		}
	}
	// T1's law: a group's chance of having ended by s, over its states.
	An := make([][]float64, k1+1)
	for n := range An {
		An[n] = make([]float64, g.n)
		for st := range states {
			for s, v := range A[n*ns+st] {
				An[n][s] += states[st].w * v
			}
		}
	}
	t1 := differences(multinomialProduct(An, r, g.n))
	last := len(t1) - 1
	for last > 0 && t1[last] < 1e-13 {
		last--
	}
	first := 0 // the first phase ends no sooner
	for first < last && t1[first] < 1e-13 {
		first++
	}
	// The most accesses that may come ahead, over the longest first phase:
	// ncs[k] for aheads[k], nc the most of them.
	ncs := make([]int, len(aheads))
	nc := 0
	for k, ahead := range aheads {
		for _, c := range ahead(float64(last) * g.h) {
			ncs[k] = max(ncs[k], countReach(c.law, 1e-6)+n2) // U_c: c = ahead + own second-phase accesses
		}
		nc = max(nc, ncs[k])
	}
	sums = extendSums(sums, nc)
	Ubar := make([][]float64, nc) // Ubar[c][x]: P(U > x), U the network delay and c services
	uEnd := make([]int, nc)       // uEnd[c]: Ubar[c] is below 1e-13 from here on
	for c := range Ubar {
		cdf := cumulative(convolve(net, sums[c]))
		Ubar[c] = make([]float64, g.n)
		for x, v := range cdf {
			Ubar[c][x] = 1 - v
		}
		uEnd[c] = g.n
		for uEnd[c] > 0 && Ubar[c][uEnd[c]-1] < 1e-13 {
			uEnd[c]--
		}
	}

	// cc[i][c][t] + tail[i][t] = P(E_i > s, E_i + U_c > t), kept for the
	// current s: cc holds the last services' ends v in (s, t], tail those
	// past t (for them U does not matter), the mass past the grid's end
	// included: a duplicate still in its first phase there is not done by
	// any t on the grid, and leaving it out made the last group's slower
	// duplicates too fast.
	tail := make([][]float64, ni)
	for i := range tail {
		tail[i] = make([]float64, g.n)
		tail[i][g.n-1] = math.Max(0, 1-Ecdf[i][g.n-1]) // past the grid
		for t := g.n - 2; t >= 0; t-- {
			tail[i][t] = tail[i][t+1] + e[i][t+1]
		}
	}
	cc := make([][][]float64, ni)
	for i := range cc {
		cc[i] = make([][]float64, nc)
		for c := range cc[i] {
			cc[i][c] = make([]float64, g.n)
		}
	}
	// d = 1: the reply's delay and m+1 services, m = 0..k2-1 (a group
	// holding none of the second phase is done at the barrier:
	// averageAhead).
	var second *spectra
	if d == 1 {
		second = g.newSpectra(n2-1, func(m int) []float64 { return replies.ends[m+1] })
	}
	laws := make([][]float64, len(aheads))
	for k := range laws {
		laws[k] = make([]float64, g.n)
	}
	// G[c][t] and Gstar[c][t]: a group (the last group, whose first
	// duplicate ended the first phase at s) is done by t given c accesses
	// ahead of and in its second phase, over its first-phase states.
	G, Gstar := make([][]float64, nc), make([][]float64, nc)
	for c := range G {
		G[c], Gstar[c] = make([]float64, g.n), make([]float64, g.n)
	}
	h, hStar := make([][]float64, n2), make([][]float64, n2) // as multinomialProduct takes them
	for m := range h {
		h[m], hStar[m] = make([]float64, g.n), make([]float64, g.n)
	}
	weight, weightStar := make([]float64, ni), make([]float64, ni)
	var pair *twoGroups
	if splitExactly(r, d) {
		pair = newTwoGroups(states, k1, k2, nc, g.n, r, prior, sums)
	}
	var slight, slightStar []bool
	for s := last; s >= first; s-- {
		if progress != nil && s%32 == 0 {
			progress("", float64(last-s)/float64(last-first+1))
		}
		// cc(s) from cc(s+1): E in cell s+1 is now past s. (With one
		// server per group nothing reads cc: see lastAlone.)
		if s+1 < g.n && d > 1 {
			for i := range cc {
				fv := e[i][s+1]
				if fv < 1e-300 || pri[i] < 1e-9 {
					continue
				}
				for c, row := range cc[i] {
					// Past uEnd the terms are below 1e-13 of fv: left out.
					ub := Ubar[c][:min(uEnd[c], g.n-s-1)]
					row := row[s+1 : s+1+len(ub)]
					for x, u := range ub {
						row[x] += fv * u
					}
				}
			}
		}
		// The first phase's ends that weigh under 1e-8 are left out
		// (together about 1e-7 of the law on Olio's 1x4 and 2x2 at 8%):
		// a third of the cells, at a third of the cost.
		if t1[s] < 1e-8 {
			continue
		}
		// Only the counts that may come ahead at this s.
		cases := make([][]aheadCase, len(aheads))
		reaches := make([][]int, len(aheads))
		reach := 0
		for k, ahead := range aheads {
			cases[k] = ahead(float64(s) * g.h)
			reaches[k] = make([]int, len(cases[k]))
			for j, c := range cases[k] {
				reaches[k][j] = max(n2, min(ncs[k], countReach(c.law, 1e-9)+n2))
				reach = max(reach, reaches[k][j])
			}
		}
		if pair != nil { // two to four groups of duplicates: no group marked
			g.twoGroupsTerms(pair.ended, pair.before, pair.stop, pair.w, prior, f, Fcdf, e, Ecdf, tail, cc, Ubar, uEnd, pri, nil, d, reach, s)
			for k := range aheads {
				for j, c := range cases[k] {
					if c.w < 1e-14 {
						continue
					}
					ended, before, stop := pair.ended, pair.before, pair.stop
					if c.at >= 0 { // one arrival, at its instant
						ended, before, stop = pair.atEnded, pair.atBefore, pair.atStop
						start := newArrivalStart(c.at*float64(s), c.law, pair.second, pair.lcdf, nc, g.n)
						g.twoGroupsTerms(ended, before, stop, pair.w, prior, f, Fcdf, e, Ecdf, tail, cc, Ubar, uEnd, pri, start, d, reaches[k][j], s)
					}
					done := g.twoGroupsDone(pair.split, pair.scr, pair.h1, pair.h0, ended, before, stop, c.w, c.law, prior, pair.second, reaches[k][j], s)
					for t := s; t < g.n; t++ {
						laws[k][t] += c.w * done[t]
					}
				}
			}
			continue
		}
		totalStar, marked := 0.0, 0.0
		for i := range weightStar {
			weightStar[i] = 0
			if a := 1 - Fcdf[i][s]; count(i) > 0 {
				// The chance the first duplicate ends in cell s: ties
				// with the others count (on a coarse grid, or a constant
				// service time, they are most of it).
				weightStar[i] = pri[i] * (ipow(a+f[i][s], d) - ipow(a, d))
				totalStar += weightStar[i]
				marked += float64(count(i)) * weightStar[i]
			}
		}
		if totalStar == 0 {
			continue
		}
		// The other groups share what the last group left of the first
		// phase: their counts split k1 less its mean count at s.
		others := othersPrior(float64(k1)-marked/totalStar, r-1, k1)
		total := 0.0
		for i := range weight {
			weight[i] = others[count(i)] * states[i%ns].w * A[i][s]
			total += weight[i]
		}
		// The states that together weigh less than 1e-7 are left out of
		// each sum (most of them, at any s, weigh next to nothing).
		slight, slightStar = negligible(weight, total, 1e-7, slight), negligible(weightStar, totalStar, 1e-7, slightStar)
		for c := range reach {
			clear(G[c][s:])
			clear(Gstar[c][s:])
		}
		// With one server per group startOnArrival gives the groups'
		// chances; without a gap, the last group's needs no sum.
		gapless := d == 1 && replies.gapless()
		if gapless {
			lastAlone(Gstar, Ubar, weightStar, totalStar, slightStar, reach, s)
		} else if d > 1 {
			for i, w := range weight {
				// A group's states weigh in the other groups (w) or the last
				// group (ws), often in only one of them: with two groups the
				// other's count is all but fixed, and that sum is most of the work.
				ws := weightStar[i]
				other, lastGroup := w > 0 && !slight[i], ws > 0 && !slightStar[i]
				if !other && !lastGroup {
					continue
				}
				w, ws = w/total, ws/totalStar
				a, aE := 1-Fcdf[i][s], 1-Ecdf[i][s]
				ad := ipow(a, d)
				fs := f[i][s]                // the last group's other duplicates end in cell s or later
				inv, invNot := 0.0, 1/(1-ad) // 1/P(F >= s), for their ratio; 1/(1-a^d)
				if a+fs > 1e-300 {
					inv = 1 / (a + fs)
				}
				tl := tail[i]
				for c := range reach {
					row, gc, gs, ub := cc[i][c], G[c], Gstar[c], Ubar[c]
					for t := s; t < g.n; t++ {
						x := row[t] + tl[t] // P(E > s, E + U > t)
						u := ub[t-s]
						if u < 1e-13 && x < 1e-13 {
							// Done by t, and by every later t: both fall with t.
							for ; t < g.n; t++ {
								if other {
									gc[t] += w
								}
								if lastGroup {
									gs[t] += ws
								}
							}
							break
						}
						// c: P(F > s, max(E, s) + U > t), a duplicate
						// served by s but its reply not in among them.
						c := x + (a-aE)*u
						if other {
							b := (1-aE)*u + x
							if count(i) == 0 {
								gc[t] += w * (1 - ipow(b, d))
								continue
							}
							if v := (1 - ad - ipow(b, d) + ipow(c, d)) * invNot; v > 0 {
								gc[t] += w * min(v, 1)
							}
						}
						if lastGroup {
							// The last group: its first duplicate ended the
							// first phase at s and then serves U; each other
							// duplicate (at s or past it) fails with chance
							// (c + P(F = s) u) / P(F >= s).
							gs[t] += ws * (1 - ipow(min(1, (c+fs*u)*inv), d-1)*u)
						}
					}
				}
			}
		}
		var firstEnd, lastEnd []float64
		if d == 1 {
			firstEnd = g.serverFree(e, replies.gaps, weight, total, slight, count, s, false)
			if !gapless {
				lastEnd = g.serverFree(e, replies.gaps, weightStar, totalStar, slightStar, count, s, true)
			}
		}
		for k := range aheads {
			for j, c := range cases[k] {
				if c.w < 1e-14 {
					continue
				}
				if d == 1 {
					g.startOnArrival(h[1:], g.freeAt(firstEnd, s, c), c.law, sums, second, s)
					if !gapless {
						g.startOnArrival(hStar[1:], g.freeAt(lastEnd, s, c), c.law, sums, second, s)
					}
				}
				// hStar from the case before stands when its law is this one's
				// (and that case was not skipped above).
				same := d == 1 && !gapless || c.sameLaw && j > 0 && cases[k][j-1].w >= 1e-14
				done := g.averageAhead(h, hStar, G, Gstar, c.law, reaches[k][j], r, s, d == 1, same)
				for t := s; t < g.n; t++ {
					laws[k][t] += t1[s] * c.w * done[t]
				}
			}
		}
	}
	return laws
}

// lastAlone sets Gstar (cells s on, counts below reach) for one server
// per group whose replies take no time (gapless): the last group's server
// ended the first phase at s and then serves U, whatever its state was,
// so it is done by t with P(U <= t-s), weighed by the states' share that
// counts (the others left out as negligible). It is serverFree's and
// startOnArrival's answer for the last group then, at a third of their
// cost for Olio on 1x4 (the same to 1e-9).
func lastAlone(Gstar, Ubar [][]float64, weightStar []float64, totalStar float64, slightStar []bool, reach, s int) {
	kept := 0.0
	for i, ws := range weightStar {
		if ws > 0 && !slightStar[i] {
			kept += ws / totalStar
		}
	}
	for c := range reach {
		gs, ub := Gstar[c], Ubar[c]
		for t := s; t < len(gs); t++ {
			gs[t] = kept * (1 - ub[t-s])
		}
	}
}

// aheadCase is one case of the work that reaches every group while the
// first phase runs, shared by all of them: its chance w, the law of the
// count of accesses it brings a group, and the instant it arrives as a
// share of the first phase's length (at < 0: spread evenly over it).
type aheadCase struct {
	w   float64
	law []float64
	at  float64
	// sameLaw: law is the case before's, so the average over it that does
	// not depend on the instant is that case's too.
	sameLaw bool
	// from, when set, is the CDF of the instant the work arrives, in cells
	// from the request's arrival, in place of at.
	from []float64
}

// serverFree is, for one server per group (d = 1), the CDF of when a
// group's server is free of its first phase, its last service's end E,
// mixed over the groups' states with their weights: given the group's
// last reply came by s (the groups other than the last) or at s (the
// last, atS). The reply's gap Y after E (gaps[n], its CDF) is taken apart
// from E: P(E <= x | E + Y <= s) is Σ_{e<=x} p_E(e) F_Y(s-e) over its
// total, and given E + Y = s each e weighs p_E(e) p_Y(s-e). (Taking the
// server busy until its last reply instead, as when the gap was a part's
// network delay, kept it from what came behind the phase.) A group with
// no first-phase access is free after its older work, unconditioned.
func (g grid) serverFree(e, gaps [][]float64, weight []float64, total float64, slight []bool, count func(int) int, s int, atS bool) []float64 {
	cdf := make([]float64, g.n)
	part := make([]float64, s+1)
	for i, w := range weight {
		if w <= 0 || slight[i] {
			continue
		}
		w /= total
		n := count(i)
		if n == 0 {
			floats.AddScaled(cdf, w, cumulative(e[i]))
			continue
		}
		fy := gaps[n]
		acc := 0.0
		for x := range part {
			y := fy[s-x]
			if atS && s-x > 0 {
				y -= fy[s-x-1]
			}
			acc += e[i][x] * y
			part[x] = acc
		}
		for x := range cdf {
			if x >= s || acc <= 0 {
				cdf[x] += w
				continue
			}
			cdf[x] += w * part[x] / acc
		}
	}
	return cdf
}

// freeAt is the law of M = max(F, u), when a group (F's CDF firstEnd) is
// free to start the work of case c, which reaches it at u: of CDF c.from
// (taken apart from F) when that is set, else u = c.at*s, or uniform in
// (0, s) when c.at < 0.
func (g grid) freeAt(firstEnd []float64, s int, c aheadCase) []float64 {
	cdf := append([]float64(nil), firstEnd...)
	if c.from != nil {
		for x := range cdf {
			cdf[x] *= c.from[x]
		}
		return differences(cdf)
	}
	at := c.at
	for x := range cdf {
		switch {
		case at >= 0 && float64(x) < at*float64(s):
			cdf[x] = 0
		case at < 0 && s > 0:
			cdf[x] *= min(1, (float64(x)+0.5)/float64(s))
		}
	}
	return differences(cdf)
}

// startOnArrival sets h[m] (cells s on) for one server per group: a group
// other than the last, free from M (law free), serves the work ahead
// (aheadLaw's count of services, all reaching it at M's instant) from
// then, and its second-phase accesses (second's law m: with the reply's
// network delay) from the later of that work's end and T1 = s.
func (g grid) startOnArrival(h [][]float64, free, aheadLaw []float64, sums [][]float64, second *spectra, s int) {
	work := make([]float64, g.n)
	for c, w := range aheadLaw {
		if w < 1e-14 || c >= len(sums) {
			continue
		}
		for x, v := range sums[c] {
			work[x] += w * v
		}
	}
	z := convolve(free, work)
	for x := 0; x < s; x++ { // done before T1: the second phase starts at s
		z[s] += z[x]
		z[x] = 0
	}
	second.each(z, func(m int, pmf []float64) {
		acc := 0.0
		for t := range pmf[:s] {
			acc += pmf[t]
		}
		for t := s; t < g.n; t++ {
			acc += pmf[t]
			h[m][t] = min(1, acc)
		}
	})
}

// spectra holds the Fourier transforms of a family of laws on the grid,
// to convolve one law with each of them at the cost of one transform each.
type spectra struct {
	n, size int
	ft      *fourier.FFT
	coef    [][]complex128
	buf     []float64
	prod    []complex128
}

func (g grid) newSpectra(k int, law func(int) []float64) *spectra {
	size := fftSize(2 * g.n)
	sp := &spectra{n: g.n, size: size, ft: fourier.NewFFT(size), buf: make([]float64, size), prod: make([]complex128, size/2+1)}
	for i := range k {
		sp.coef = append(sp.coef, sp.transform(law(i)))
	}
	return sp
}

func (sp *spectra) transform(x []float64) []complex128 {
	clear(sp.buf)
	copy(sp.buf, x[:min(len(x), sp.n)])
	return sp.ft.Coefficients(nil, sp.buf)
}

// each calls f with x convolved with each law in turn (truncated to the
// grid; the slice is reused).
func (sp *spectra) each(x []float64, f func(i int, pmf []float64)) {
	cx := sp.transform(x)
	out := make([]float64, sp.n)
	for i := range sp.coef {
		sp.product(out, cx, i)
		f(i, out)
	}
}

// times is the law whose transform is cx convolved with law i, truncated
// to the grid, in a new slice.
func (sp *spectra) times(cx []complex128, i int) []float64 {
	out := make([]float64, sp.n)
	sp.product(out, cx, i)
	return out
}

// product puts into out the law whose transform is cx convolved with law
// i, truncated to the grid.
func (sp *spectra) product(out []float64, cx []complex128, i int) {
	for j, c := range sp.coef[i] {
		sp.prod[j] = cx[j] * c
	}
	seq := sp.ft.Sequence(sp.buf, sp.prod)
	for t := range out {
		out[t] = math.Max(0, seq[t]/float64(sp.size))
	}
}

// negligible marks, in out (reused when long enough), the smallest of
// weights whose sum stays below share of total.
func negligible(weights []float64, total, share float64, out []bool) []bool {
	if len(out) < len(weights) {
		out = make([]bool, len(weights))
	}
	order := make([]int, len(weights))
	for i := range order {
		order[i] = i
		out[i] = false
	}
	sort.Slice(order, func(a, b int) bool { return weights[order[a]] < weights[order[b]] })
	left := share * total
	for _, i := range order {
		if left -= weights[i]; left < 0 {
			break
		}
		out[i] = true
	}
	return out
}

// averageAhead is, at cells s and on, the chance that every group is done
// given the last group ended the first phase at s: each group's chance
// (G for the others, Gstar for the last, by the count c of accesses ahead
// of and in its second phase) averaged over the accesses ahead, whose law
// aheadLaw is the same at every duplicate, then over the split of the
// second phase (reach bounds c). h and hStar are scratch, one row per
// count of the second phase.
func (g grid) averageAhead(h, hStar, G, Gstar [][]float64, aheadLaw []float64, reach, r, s int, hGiven, hStarGiven bool) []float64 {
	if !hGiven || !hStarGiven {
		g.averageRows(h, hStar, G, Gstar, aheadLaw, reach, s, hGiven)
	}
	// A group that holds none of the second phase's accesses is not waited
	// for, whatever work it has queued.
	for _, row := range [][]float64{h[0], hStar[0]} {
		for t := s; t < g.n; t++ {
			row[t] = 1
		}
	}
	return multinomialProductMarked(hStar, h, r, s, g.n)
}

// averageRows fills hStar's rows (and h's unless hGiven) from s on: each
// count's chance averaged over the accesses ahead (averageAhead).
func (g grid) averageRows(h, hStar, G, Gstar [][]float64, aheadLaw []float64, reach, s int, hGiven bool) {
	for m := range h {
		if !hGiven {
			clear(h[m][s:])
		}
		clear(hStar[m][s:])
	}
	for m := range h {
		hm, hs := h[m][s:g.n], hStar[m][s:g.n]
		for k, w := range aheadLaw[:max(0, min(len(aheadLaw), reach-m))] {
			if w < 1e-14 {
				continue
			}
			if !hGiven {
				floats.AddScaled(hm, w, G[k+m][s:g.n])
			}
			floats.AddScaled(hs, w, Gstar[k+m][s:g.n])
		}
	}
}

// othersPrior is the law of one of groups groups' count when they split
// rest accesses (not a whole number: the split is mixed between the two
// nearest), as a slice of k+1.
func othersPrior(rest float64, groups, k int) []float64 {
	out := make([]float64, k+1)
	rest = math.Max(0, math.Min(float64(k), rest))
	lo := int(rest)
	frac := rest - float64(lo)
	for c, w := range binomial(lo, 1/float64(groups)) {
		out[c] += (1 - frac) * w
	}
	if frac > 0 {
		for c, w := range binomial(lo+1, 1/float64(groups)) {
			out[c] += frac * w
		}
	}
	return out
}

// countReach is the least count beyond which law holds less than tail.
func countReach(law []float64, tail float64) int {
	rest := 1.0
	for c, w := range law {
		if rest -= w; rest < tail {
			return c
		}
	}
	return len(law) - 1
}

// extendSums makes sums (sums[c] the law of c service times, sums[1] one
// service time's) at least n long.
func extendSums(sums [][]float64, n int) [][]float64 {
	for c := len(sums); c < n; c++ {
		sums = append(sums, convolve(sums[c-1], sums[1]))
	}
	return sums
}

// twoPhaseGroupsExtrapolated is twoPhaseGroupsFor's law up to horizon on
// twoPhaseGroupsCells cells and, with duplicates, extrapolated to a fine
// grid's. With duplicates the law converges slowly with the cells, about
// as their width squared: Olio on 2x2 (1% and 8% load per node, its
// p10-p90 bounds) moved by up to 0.014 from 256 to 512 cells and by
// 0.0036 from 512 to 1024 (a ratio of 3.5-4), its error against the
// simulator at the median from +0.0023 to +0.0012 and from +0.0093 to
// +0.0059. So a second law on half the cells (a quarter of the cost) gives
// Richardson's estimate of the limit, L + (L - L_half)/3, which came
// within 0.001 of the 1024-cell law or nearer the simulator. With one
// server per group the law had converged at 512 cells (within 0.0003 of
// 1024's), so it is not extrapolated.
func twoPhaseGroupsExtrapolated(sys System, phases []int, r, d int, rho, horizon float64, progress Progress) RequestPrediction {
	g := grid{h: horizon / (twoPhaseGroupsCells - 1), n: twoPhaseGroupsCells}
	if d == 1 {
		return RequestPrediction{Step: g.h, CDF: g.twoPhaseGroupsFor(sys, phases, r, d, rho, progress)}
	}
	fine := g.twoPhaseGroupsFor(sys, phases, r, d, rho, progress.stage("", 0, 0.8))
	half := grid{h: horizon / (twoPhaseGroupsCells/2 - 1), n: twoPhaseGroupsCells / 2}
	coarse := RequestPrediction{Step: half.h, CDF: half.twoPhaseGroupsFor(sys, phases, r, d, rho, progress.stage("on half the cells", 0.8, 0.2))}
	law := make([]float64, g.n)
	for i, v := range fine {
		law[i] = clamp01(v + (v-coarse.At((float64(i)+0.5)*g.h))/3)
	}
	return RequestPrediction{Step: g.h, CDF: cumulative(differences(law))}
}

// twoPhaseGroupsFor sets twoPhaseGroups up for sys on g: the wait of
// lumps of each phase's share of a group, and the accesses that reach a
// group while a first phase runs.
func (g grid) twoPhaseGroupsFor(sys System, phases []int, r, d int, rho float64, progress Progress) []float64 {
	k1, k2 := phases[0], phases[1]
	if d == 1 { // what the groups share: the last request, by its age
		return g.oneServerGroups(sys, k1, k2, r, rho, g.pmf(sys.net()), progress)
	}
	// The service law keeps its mean on the grid (g.pmf), as every path's
	// does. With duplicates the law is extrapolated from 512 and 256 cells
	// (twoPhaseGroupsExtrapolated), which takes the grid's error of order
	// h² out, the rounding's with it: against 4x10^6 simulated requests
	// Olio's 15 dxr cells (2x2, 2x3, 2x4, 3x2, 4x2 at 1%, 8%, 30%) came
	// out the same within 1e-4 at p10-p99 with nearest rounding and
	// with this.
	svc := g.pmf(sys.Service)
	sums := serviceSums(svc, max(k1, k2))
	// Lumps reach a group at each phase's start: a first phase's
	// Binomial(k1, 1/r) accesses, a second phase's Binomial(k2, 1/r).
	p := 1 / float64(r)
	stationary := g.waitingPMF(g.lumpEquilibrium(g.phaseStartLump(phases, p, sums, sys.Service.Mean())), rho)
	net := g.pmf(sys.net())
	first := binomial(k1, p)
	// What the groups share: whether any other request is in the system.
	// With none, only the first phases of requests arriving while the
	// first phase runs come ahead of the second, and a group's duplicates
	// are idle but for what the last request left: duplicates are not
	// cancelled, so a group's slower ones may still serve its accesses
	// (finishedLeftover: on Olio at 30%, 1-5% of the groups).
	// Where both phases split exactly one arrival starts at its instant
	// (arrivalStart); the marked form starts it at T1.
	var at []float64
	if splitExactly(r, d) {
		at = dupInstants
	}
	arrivals := arrivalCases(sys.Rate, first, []float64{1}, at, nil)
	left := g.finishedLeftover(k1, k2, r, d, sys.Rate, sums)
	idle := g.pmf(Constant{0})
	aloneStates := []weightedLaw{{1, idle}}
	if left.weight > 0 {
		aloneStates = []weightedLaw{{1 - left.weight, idle}, {left.weight, left.law}}
	}
	replies := g.partReplies(sums, net)
	alone := g.twoPhaseGroups(k1, k2, r, d, aloneStates, []func(float64) []aheadCase{arrivals}, sums, net, &replies, progress.stage("alone", 0, 0.2))[0]
	// With some, a group is busy with the chance that makes its share of
	// busy time right (each duplicate's wait then its busy law, the
	// duplicates of a group busy alike), and the request present may still
	// be in its first phase (for a share k1/(k1+k2) of its time, as of its
	// work): its second phase then comes ahead at every group alike. The
	// chance of some is that a Poisson stream of requests, each staying
	// as long as one alone does, leaves one.
	present := 1 - math.Exp(-sys.Rate*lawMean(g, cumulative(differences(alone))))
	busy := 1 - stationary[0]
	if present < busy {
		present = busy
	}
	// A duplicate is busy with chance busy, (1-present)*left.busy of it
	// with no request present (the leftover's): the present part holds
	// the rest.
	busyGivenPresent := max(0, busy-(1-present)*left.busy) / present
	states := g.presentStates(stationary, phases, p, sys.Rate, sys.Service.Mean(), sums, busyGivenPresent)
	if states == nil {
		return cumulative(differences(alone))
	}
	q := float64(k1) / float64(k1+k2)
	pending := binomial(k2, p)
	withPending := arrivalCases(sys.Rate, first, pending, nil, nil)
	both := g.twoPhaseGroups(k1, k2, r, d, states, []func(float64) []aheadCase{withPending, arrivals}, sums, net, &replies, progress.stage("behind another request", 0.2, 0.8))
	inFirst, inSecond := both[0], both[1]
	law := make([]float64, g.n)
	for i := range law {
		law[i] = (1-present)*alone[i] + present*(q*inFirst[i]+(1-q)*inSecond[i])
	}
	return cumulative(differences(law))
}

// instants are the instants within the first phase (as shares of it)
// that stand, equally weighed, for the one request that arrives during it
// (uniformly) with one server per group: the two points of the
// Gauss-Legendre rule on (0, 1), exact for a chance that is a cubic in
// the instant.
var instants = []float64{0.5 - 0.5/math.Sqrt(3), 0.5 + 0.5/math.Sqrt(3)}

// splitExactly is whether twoPhaseGroups sums both phases' splits over
// the groups exactly: two to four groups of duplicates (four as halves of
// halves). Five or more keep the marked form: the halves' sum costs 7
// times it for 2x5.
func splitExactly(r, d int) bool {
	return r > 1 && r <= 4 && d > 1
}

// dupInstants stand for it with duplicates (arrivalStart), where each
// instant costs a pass of the groups' terms and split: the midpoint.
var dupInstants = []float64{0.5}

// arrivalCases is the work that reaches every group while a first phase
// of length window runs: pending (a count law, the same at every group
// from the start) and the first phases of the requests arriving at rate,
// each bringing a group a count of law first. The groups share how many
// arrive: none, one (given instants, at one of them, the same at every
// group: a group or duplicate idle at that instant starts its work then),
// or more (their counts and instants then taken apart at each group).
// Where none arrives the pending work reaches the groups at an instant of
// CDF pendingFrom (in cells from the request's arrival), or, nil, at one
// spread evenly over the first phase.
func arrivalCases(rate float64, first, pending, instants, pendingFrom []float64) func(window float64) []aheadCase {
	return func(window float64) []aheadCase {
		mean := rate * window
		p0, p1 := math.Exp(-mean), mean*math.Exp(-mean)
		cases := []aheadCase{{p0, pending, -1, false, pendingFrom}}
		one := polyConvolve(first, pending)
		if len(instants) == 0 {
			cases = append(cases, aheadCase{p1, one, -1, false, nil})
		} else {
			for j, at := range instants {
				cases = append(cases, aheadCase{p1 / float64(len(instants)), one, at, j > 0, nil})
			}
		}
		if more := 1 - p0 - p1; more > 1e-13 {
			law := compoundPoissonCounts(mean, first, 1e-13)
			law[0] -= p0
			for c, w := range first {
				law[c] -= p1 * w
			}
			for c := range law {
				law[c] = math.Max(0, law[c]) / more
			}
			cases = append(cases, aheadCase{more, polyConvolve(law, pending), -1, false, nil})
		}
		return cases
	}
}

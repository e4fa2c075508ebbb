package model

import "gonum.org/v1/gonum/floats"

// Two phases over two groups of duplicates, the first phase's and the
// second's accesses split over the groups exactly.
//
// With two groups the request's law needs no marked group: T1, the end of
// the first phase, is the later of the groups' ends E_1 and E_2, so
//
//	P(T1 = s, done by t) = E[prod_g 1{E_g <= s} D_g] - E[prod_g 1{E_g <= s-1} D_g]
//
// with D_g the chance group g is done by t when the second phase starts
// at s (in both terms: on T1 = s that is the request's). Given each
// group's counts, n of the first phase's k1 accesses and m of the second's
// k2 (and the work ahead), the groups are independent, so each product is
// a sum over the split of both phases: sum over n, m of
// P(n) P(m) a(n, m) a(k1-n, k2-m), a(n, m) a group's own term. The
// engine's marked form instead takes the other group's first-phase count
// as its own binomial around the mean rest, which made Olio's 2x2, 3x2
// and 4x2 fast at the median at 1% and 8% load.

// twoGroupsTerms sets, for T1 = s, ended[n][c][t] = P(E <= s, D <= t)
// and before[n][c][t] = P(E <= s-1, D <= t) (cells s on, counts c below
// reach) for a group of d duplicates with n first-phase accesses and c
// accesses ahead of and in its second phase, over the duplicates' states
// (weights w). A duplicate in state i (index n*len(w)+state) ends its
// first phase at F (law f[i], CDF Fcdf[i]) and the second at
// max(F, s) + U_c; the group ends each phase when its first duplicate
// does. With a = P(F > s), b = P(max(F, s) + U > t) and
// x = P(F > s, F + U > t) (cc and tail, as twoPhaseGroups keeps them),
// P(E <= s, D <= t) = 1 - a^d - b^d + x^d; for s-1, a and x take F = s in
// as well. A group with no first-phase access ended it (its duplicates
// may still serve older work: F is then that work's end). stop[n] is set
// to the cell from which n's rows no longer change (the grid's end when
// some row changes to it). The counts n whose chance first[n] is under
// 1e-6 are left out, as twoGroupsDone leaves them. With start (not nil)
// one request arrived during the first phase and a duplicate that ended
// it by s started that request's accesses at their instant or its end
// (arrivalStart): P(F <= s, max(F, s) + U > t) is then its owedRow.
func (g grid) twoGroupsTerms(ended, before [][][]float64, stop []int, w, first []float64, f, Fcdf, served, servedCDF, tail [][]float64, cc [][][]float64, Ubar [][]float64, uEnd []int, pri []float64, start *arrivalStart, d, reach, s int) {
	ns := len(w)
	for n := range ended {
		stop[n] = s
		for c := range reach {
			clear(ended[n][c][s:])
			clear(before[n][c][s:])
		}
	}
	for i := range f {
		n, ws := i/ns, w[i%ns]
		if ws <= 0 || pri[i] < 1e-9 || first[n] < 1e-6 {
			continue
		}
		a, aE := 1-Fcdf[i][s], 1-servedCDF[i][s]
		// The duplicates served by s whose replies are not all in by s,
		// as a share of those served by s.
		inGap := 0.0
		if aE < 1 {
			inGap = (a - aE) / (1 - aE)
		}
		fs := f[i][s]
		ad, a0d := ipow(a, d), ipow(a+fs, d)
		if n == 0 {
			ad, a0d = 0, 0
		}
		tl := tail[i]
		J := 0
		if start != nil {
			J = start.serve(served[i], servedCDF[i], s)
		}
		for c := range reach {
			settled := false
			row, ub, e, b0 := cc[i][c], Ubar[c], ended[n][c], before[n][c]
			var owed []float64
			if start != nil {
				owed = start.owedRow(Ubar, uEnd, c, J, g.n-s)
			}
			for t := s; t < g.n; t++ {
				x := row[t] + tl[t]
				u := ub[t-s]
				if u < 1e-13 && x < 1e-13 {
					// Done by t, and by every later t, once ended.
					stop[n] = max(stop[n], t)
					settled = true
					for ; t < g.n; t++ {
						e[t] += ws * (1 - ad)
						b0[t] += ws * (1 - a0d)
					}
					break
				}
				y := (1 - aE) * u // P(E <= s, s + U > t)
				if owed != nil {
					y = owed[t-s]
				}
				bd := ipow(y+x, d)
				x += inGap * y // P(F > s, not done by t)
				if n == 0 {
					e[t] += ws * (1 - bd)
					b0[t] += ws * (1 - bd)
					continue
				}
				// Both are chances: rounding may only take them below 0.
				if v := 1 - ad - bd + ipow(x, d); v > 0 {
					e[t] += ws * v
				}
				if v := 1 - a0d - bd + ipow(x+fs*u, d); v > 0 {
					b0[t] += ws * v
				}
			}
			if !settled {
				stop[n] = g.n
			}
		}
	}
}

// twoGroupsDone is P(T1 = s, done by t) (cells s on) for two groups given
// their terms (twoGroupsTerms, rows settled from stop[n] on) and the law
// of the count of accesses ahead (aheadLaw, each group's its own draw of
// it; reach bounds the count c = ahead + m): each group's terms averaged
// over its work ahead (into h1 and h0, one row per n and m), then summed
// over both phases' splits (first[n], second[m] the binomial chances of
// one group's counts; a split and its mirror weigh alike). weight is
// the case's chance: a count of accesses ahead whose share of the law is
// under 1e-9 is left out, and so are the splits that weigh under 1e-6
// (together about 3e-6 of the law for Olio's 30 and 20 accesses). With
// three groups or more split is their split (manyGroupsDone), scr its
// scratch.
func (g grid) twoGroupsDone(split *groupSplit, scr *splitScratch, h1, h0 [][][]float64, ended, before [][][]float64, stop []int, weight float64, aheadLaw, first, second []float64, reach, s int) []float64 {
	if split != nil {
		return g.manyGroupsDone(split, scr, h1, h0, ended, before, stop, weight, aheadLaw, first, reach, s)
	}
	k1, k2 := len(first)-1, len(second)-1
	end := s
	for n, pn := range first {
		if pn >= 1e-6 {
			end = max(end, stop[n])
		}
	}
	end = min(g.n, end+1) // every row is the same from end-1 on
	for n := range h1 {
		if first[n] < 1e-6 {
			continue
		}
		for m := range h1[n] {
			if second[m] < 1e-6 {
				continue
			}
			e, b := h1[n][m][s:end], h0[n][m][s:end]
			clear(e)
			clear(b)
			for k, w := range aheadLaw[:max(0, min(len(aheadLaw), reach-m))] {
				if w*weight < 1e-9 { // together under 1e-7 of the law
					continue
				}
				floats.AddScaled(e, w, ended[n][k+m][s:end])
				floats.AddScaled(b, w, before[n][k+m][s:end])
			}
		}
	}
	done := make([]float64, g.n)
	splits := (k1 + 1) * (k2 + 1)
	for i := range splits {
		mirror := splits - 1 - i
		if i > mirror {
			break
		}
		n, m := i/(k2+1), i%(k2+1)
		w := first[n] * second[m]
		if first[n] < 1e-6 || second[m] < 1e-6 {
			continue
		}
		if i < mirror {
			w *= 2
		}
		e, b := h1[n][m][s:end], h0[n][m][s:end]
		e2, b2 := h1[k1-n][k2-m][s:end], h0[k1-n][k2-m][s:end]
		dn := done[s:end]
		for t := range dn {
			dn[t] += w * (e[t]*e2[t] - b[t]*b2[t])
		}
	}
	for t := end; t < g.n; t++ {
		done[t] = done[end-1]
	}
	return done
}

// twoGroups is the scratch of the two-group form: the states' weights,
// one group's second-phase count law, and the terms and their averages
// over the work ahead, by first-phase count n, then c or m, then cell.
type twoGroups struct {
	w, second     []float64
	ended, before [][][]float64
	h1, h0        [][][]float64
	stop          []int
	// split: three groups or more (nil for two), with its scratch.
	split *groupSplit
	scr   *splitScratch
	// The terms of one arrival at its instant (arrivalStart), as ended,
	// before and stop, and the CDFs of j service times they need.
	atEnded, atBefore [][][]float64
	atStop            []int
	lcdf              [][]float64
}

// splitScratch is groupSplit.top's scratch, an entry per counts index.
type splitScratch struct {
	lim, coef []float64
	rows      [][]float64
	fold      [][]float64 // by first-phase count n and count c
}

func newTwoGroups(states []weightedLaw, k1, k2, nc, cells, r int, first []float64, sums [][]float64) *twoGroups {
	rows := func(a, b int) [][][]float64 {
		out := make([][][]float64, a)
		for i := range out {
			out[i] = make([][]float64, b)
			for j := range out[i] {
				out[i][j] = make([]float64, cells)
			}
		}
		return out
	}
	tg := &twoGroups{second: binomial(k2, 1/float64(r)), ended: rows(k1+1, nc), before: rows(k1+1, nc), h1: rows(k1+1, k2+1), h0: rows(k1+1, k2+1), stop: make([]int, k1+1),
		atEnded: rows(k1+1, nc), atBefore: rows(k1+1, nc), atStop: make([]int, k1+1)}
	for j := range nc {
		tg.lcdf = append(tg.lcdf, cumulative(sums[j]))
	}
	for _, st := range states {
		tg.w = append(tg.w, st.w)
	}
	if r > 2 {
		tg.split = newGroupSplit(k1, k2, r, first, tg.second)
		size := (k1 + 1) * (k2 + 1)
		tg.scr = &splitScratch{make([]float64, size), make([]float64, size), make([][]float64, size), make([][]float64, k1+1)}
		for n := range tg.scr.fold {
			tg.scr.fold[n] = make([]float64, nc)
		}
	}
	return tg
}

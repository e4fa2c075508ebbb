package model

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"
)

// Two phases over three groups of duplicates, both phases' accesses split
// over the groups exactly.
//
// As with two groups (twoGroupsDone), P(T1 = s, done by t) is
// E[prod_g 1{E_g <= s} D_g] - E[prod_g 1{E_g <= s-1} D_g], each
// expectation over the split of the first phase's k1 and the second's k2
// accesses over the r groups (two multinomials) of the product of the
// groups' own terms. The engine's marked form takes the other groups'
// first-phase counts apart, each its own binomial around the mean rest:
// that made Olio's 2x3 fast by 0.005 at the median at 1% and 8%.
//
// The split is a sum over the groups' (n, m) counts taken together, about
// 10^4 of them for three groups (up to the groups' order) once the splits
// under 1e-9 are left out, for every t: fifteen times the two groups' sum
// for each cell t (four groups: 10^5). But a group's term h(t) settles to
// h(∞) as t grows (its second phase is then done), and with
// δ_g = h_g(∞) - h_g(t),
//
//	prod_g h_g(t) = prod_g h_g(∞) - sum_g δ_g prod_{g' != g} h_g'(∞) + O(δ²),
//
// whose first two terms are a sum over each group's (n, m) alone. So the
// split is summed in full only over the cells where the second order still
// weighs (splitSecondOrder), and from there on as its first order.

// splitSecondOrder is the mean square of a group's δ (over its counts'
// chances) under which the split is taken to first order. The second
// order is at most three times that, and nearly the same in both
// expectations, whose difference is what counts: on Olio's 2x3 at 1% and
// 8% the law moved by 5e-8 at most against 1e-11 here (1e-12 at 1e-9),
// and a prediction takes a sixth less time.
const splitSecondOrder = 1e-5

// splitCut is the chance under which a split of the accesses (both
// phases' counts at every group) is left out.
const splitCut = 1e-9

// groupSplit is the split of k1 then k2 accesses over r groups (top sums
// it). For three groups each term is a group's counts (n, m) as one index
// n*(k2+1)+m, r of them per split (idx, sorted: a split and its
// reorderings are one term), and the chance of the split and its
// reorderings (w). single[i] is the chance of one group's counts i.
type groupSplit struct {
	r, k2  int
	idx    []int
	w      []float64
	used   []int // the counts that take part in some split
	single []float64
	// tree: four groups or more, the split as halves of halves
	// (requestgrouphalves.go) in place of idx and w.
	tree *splitTree
}

func newGroupSplit(k1, k2, r int, first, second []float64) *groupSplit {
	single := make([]float64, (k1+1)*(k2+1))
	for n, pn := range first {
		for m, pm := range second {
			single[n*(k2+1)+m] = pn * pm
		}
	}
	if r > 3 {
		tree := newSplitTree(k1, k2, r, first, second)
		return &groupSplit{r: r, k2: k2, used: tree.used(), single: single, tree: tree}
	}
	counts := func(k int, marginal []float64) (out [][]int, ws []float64) {
		lk, _ := math.Lgamma(float64(k + 1))
		part := make([]int, r)
		var walk func(g, rest int)
		walk = func(g, rest int) {
			if g == r-1 {
				part[g] = rest
				lw := lk - float64(k)*math.Log(float64(r))
				for _, c := range part {
					if marginal[c] < 1e-6 { // as two groups leave them out
						return
					}
					l, _ := math.Lgamma(float64(c + 1))
					lw -= l
				}
				if w := math.Exp(lw); w >= splitCut {
					out, ws = append(out, slices.Clone(part)), append(ws, w)
				}
				return
			}
			for c := 0; c <= rest; c++ {
				part[g] = c
				walk(g+1, rest-c)
			}
		}
		walk(0, k)
		return out, ws
	}
	ns, wn := counts(k1, first)
	ms, wm := counts(k2, second)
	sp := &groupSplit{r: r, k2: k2, single: single}
	at := map[int]int{}
	key := make([]int, r)
	used := map[int]bool{}
	for a, n := range ns {
		for b, m := range ms {
			w := wn[a] * wm[b]
			if w < splitCut {
				continue
			}
			for g := range key {
				key[g] = n[g]*(k2+1) + m[g]
			}
			slices.Sort(key)
			id := 0
			for _, i := range key {
				id = id*len(sp.single) + i
			}
			if j, ok := at[id]; ok {
				sp.w[j] += w
				continue
			}
			at[id] = len(sp.w)
			sp.w = append(sp.w, w)
			sp.idx = append(sp.idx, key...)
			for _, i := range key {
				used[i] = true
			}
		}
	}
	for i := range used {
		sp.used = append(sp.used, i)
	}
	slices.Sort(sp.used)
	return sp
}

// manyGroupsDone is twoGroupsDone for three groups or more: the
// difference of the two expectations, each over the split (sp).
func (g grid) manyGroupsDone(sp *groupSplit, scr *splitScratch, h1, h0, ended, before [][][]float64, stop []int, weight float64, aheadLaw, first []float64, reach, s int) []float64 {
	end := s
	for n, pn := range first {
		if pn >= 1e-6 {
			end = max(end, stop[n])
		}
	}
	end = min(g.n, end+1) // every row is the same from end-1 on
	done, top0 := make([]float64, g.n), make([]float64, g.n)
	sp.top(done, h1, ended, scr, weight, aheadLaw, reach, s, end)
	sp.top(top0, h0, before, scr, weight, aheadLaw, reach, s, end)
	floats.Sub(done[s:end], top0[s:end])
	for t := end; t < g.n; t++ {
		done[t] = done[end-1]
	}
	return done
}

// splitBlock is the number of cells top averages at a time while it
// looks for where the second order stops weighing.
const splitBlock = 16

// top is E[prod_g h_g(t)] over the split (cells s to end, settled from
// end-1 on), into out. A group's term with counts (n, m) is its terms
// (terms[n][c], c accesses ahead of and in its second phase) averaged
// over the count ahead (aheadLaw, the counts whose share of the case's
// weight is under 1e-9 left out, as twoGroupsDone does): that average is
// kept in h[n][m] only over the cells summed in full; after them the
// first order's coefficients are carried onto the terms themselves.
func (sp *groupSplit) top(out []float64, h, terms [][][]float64, scr *splitScratch, weight float64, aheadLaw []float64, reach, s, end int) {
	k2 := sp.k2
	lim, coef, rows := scr.lim, scr.coef, scr.rows
	ahead := func(m int) []float64 { return aheadLaw[:max(0, min(len(aheadLaw), reach-m))] }
	for _, i := range sp.used {
		n, m := i/(k2+1), i%(k2+1)
		rows[i] = h[n][m]
		lim[i], coef[i] = 0, 0
		for k, w := range ahead(m) {
			if w*weight >= 1e-9 {
				lim[i] += w * terms[n][k+m][end-1]
			}
		}
	}
	// The settled product and each group's first-order coefficient.
	settled := sp.settle(lim, coef)
	// The averages, a block at a time, while the second order weighs.
	from := s
average:
	for from < end {
		hi := min(end, from+splitBlock)
		for _, i := range sp.used {
			n, m := i/(k2+1), i%(k2+1)
			row := rows[i][from:hi]
			clear(row)
			for k, w := range ahead(m) {
				if w*weight >= 1e-9 {
					floats.AddScaled(row, w, terms[n][k+m][from:hi])
				}
			}
		}
		for ; from < hi; from++ {
			sq := 0.0
			for _, i := range sp.used {
				d := lim[i] - rows[i][from]
				sq += sp.single[i] * d * d
			}
			if sq < splitSecondOrder {
				break average
			}
		}
	}
	// The split in full over those cells.
	sp.full(out[s:from], rows, s, from)
	// Then to first order, settled - sum_i coef_i (lim_i - h_i(t)), each
	// h_i(t) a sum of terms: their coefficients gathered (fold[n][c]).
	rest := out[from:end]
	c0 := settled
	for _, i := range sp.used {
		c0 -= coef[i] * lim[i]
	}
	for t := range rest {
		rest[t] = c0
	}
	for _, i := range sp.used {
		n, m := i/(k2+1), i%(k2+1)
		for k, w := range ahead(m) {
			if w*weight >= 1e-9 {
				scr.fold[n][k+m] += coef[i] * w
			}
		}
	}
	for n, row := range scr.fold {
		for c, v := range row {
			if v != 0 {
				floats.AddScaled(rest, v, terms[n][c][from:end])
				row[c] = 0
			}
		}
	}
}

// settle is E[prod_g lim_g] over the split, and into coef (by counts
// index) its derivative by each group's term.
func (sp *groupSplit) settle(lim, coef []float64) float64 {
	if sp.tree != nil {
		return sp.tree.settle(lim, coef)
	}
	r := sp.r
	settled := 0.0
	for j, w := range sp.w {
		key := sp.idx[j*r : (j+1)*r]
		p := w
		for _, i := range key {
			p *= lim[i]
		}
		settled += p
		for g, i := range key {
			q := w
			for g2, i2 := range key {
				if g2 != g {
					q *= lim[i2]
				}
			}
			coef[i] += q
		}
	}
	return settled
}

// full sets out (cells s to from) to E[prod_g h_g(t)] over the split, the
// groups' terms rows[i] by counts index.
func (sp *groupSplit) full(out []float64, rows [][]float64, s, from int) {
	if sp.tree != nil {
		sp.tree.full(out, rows, s, from)
		return
	}
	clear(out)
	for j, w := range sp.w {
		a := rows[sp.idx[3*j]][s:from]
		b := rows[sp.idx[3*j+1]][s:from][:len(a)]
		c := rows[sp.idx[3*j+2]][s:from][:len(a)]
		for t := range a {
			out[t] += w * a[t] * b[t] * c[t]
		}
	}
}

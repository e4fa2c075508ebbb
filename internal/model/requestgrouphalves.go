package model

import (
	"maps"
	"slices"
)

// Two phases over four groups of duplicates: the split summed as halves
// of halves. (The tree takes any number of groups, but the engine sends
// it four only: for five, 2x5 at 8%, it cost 7 times the marked form.)
//
// Three groups' split is summed over its splits one by one (10^4 of them
// for Olio's 30 and 20 accesses); four groups have 10^5, summed that way
// more than 150 times main's cost. But the groups' counts split as a
// tree: the first a = j/2 of j groups take Binomial(N, a/j) of the j
// groups' N first-phase accesses (and Binomial(M, a/j) of their M
// second-phase ones), the other j-a the rest, and each part splits the
// same way. With Q_j(N, M) the expectation, over that split, of the
// product of the j groups' terms,
//
//	Q_j(N, M) = sum_{n,m} Bin(N, a/j)(n) Bin(M, a/j)(m) Q_a(n, m) Q_{j-a}(N-n, M-m),
//
// and E[prod_g h_g] = Q_r(k1, k2). Four groups take the two-group sum at
// each (N, M) a pair may hold (about 540 of them for Olio), then one sum
// over the pairs': 2.5x10^4 products per cell, against three groups'
// 10^4. A term whose chance (its counts' at every level above it) is
// under splitCut is left out, as three groups leave out their splits.

// splitTree is the split of k1 then k2 accesses over r groups as a tree
// of levels, one per group count j that occurs (ascending: levels[0]
// holds one group, the last r groups).
type splitTree struct {
	levels []*splitLevel
	// vals and adj are scratch: an entry's value (by level, then position)
	// over the cells summed in full, and its scalars for the first order.
	vals [][][]float64
	at   [][]float64
	adj  [][]float64
}

// splitLevel is the sum for j groups: entries are the counts indices
// (n*(k2+1)+m) at which Q_j is needed; each term adds w Q_a(x) Q_b(y) to
// entry p, x and y positions in levels a and b (indices into levels).
type splitLevel struct {
	j, a, b int
	entries []int
	terms   []splitTerm
}

type splitTerm struct {
	p, x, y int
	w       float64
}

// newSplitTree builds the tree for r groups. A one-group entry whose
// counts' chance (first[n] second[m]) is under 1e-6 is left out with its
// terms, as two and three groups leave them out.
func newSplitTree(k1, k2, r int, first, second []float64) *splitTree {
	width := k2 + 1
	groups := map[int]bool{}
	var add func(j int)
	add = func(j int) {
		if groups[j] {
			return
		}
		groups[j] = true
		if j > 1 {
			add(j / 2)
			add(j - j/2)
		}
	}
	add(r)
	js := slices.Sorted(maps.Keys(groups))
	tree := &splitTree{levels: make([]*splitLevel, len(js))}
	level := map[int]int{} // group count -> index in levels
	for i, j := range js {
		level[j] = i
		tree.levels[i] = &splitLevel{j: j}
	}
	// Positions of the entries at each level, filled top down: a level's
	// parents (more groups) come before it.
	pos := make([]map[int]int, len(js))
	for i := range pos {
		pos[i] = map[int]int{}
	}
	place := func(l, idx int) int {
		p, ok := pos[l][idx]
		if !ok {
			p = len(tree.levels[l].entries)
			pos[l][idx] = p
			tree.levels[l].entries = append(tree.levels[l].entries, idx)
		}
		return p
	}
	place(len(js)-1, k1*width+k2)
	live := func(l, n, m int) bool {
		return tree.levels[l].j > 1 || (first[n] >= 1e-6 && second[m] >= 1e-6)
	}
	for l := len(js) - 1; l > 0; l-- {
		lv := tree.levels[l]
		j := lv.j
		lv.a, lv.b = level[j/2], level[j-j/2]
		share := float64(j/2) / float64(j)
		outer1, outer2 := binomial(k1, float64(j)/float64(r)), binomial(k2, float64(j)/float64(r))
		for p := 0; p < len(lv.entries); p++ {
			N, M := lv.entries[p]/width, lv.entries[p]%width
			chance := outer1[N] * outer2[M]
			b1, b2 := binomial(N, share), binomial(M, share)
			for n := range b1 {
				for m := range b2 {
					w := chance * b1[n] * b2[m]
					x, y := n*width+m, (N-n)*width+M-m
					if w < splitCut || !live(lv.a, n, m) || !live(lv.b, N-n, M-m) {
						continue
					}
					// Halves alike: a term and its mirror are one.
					if lv.a == lv.b {
						if x > y {
							continue
						}
						if x < y {
							w *= 2
						}
					}
					lv.terms = append(lv.terms, splitTerm{p, place(lv.a, x), place(lv.b, y), w / chance})
				}
			}
		}
	}
	tree.vals = make([][][]float64, len(js))
	tree.at = make([][]float64, len(js))
	tree.adj = make([][]float64, len(js))
	for l, lv := range tree.levels {
		tree.at[l] = make([]float64, len(lv.entries))
		tree.adj[l] = make([]float64, len(lv.entries))
		if l > 0 {
			tree.vals[l] = make([][]float64, len(lv.entries))
		}
	}
	return tree
}

// used is the counts indices of one group that take part.
func (tree *splitTree) used() []int {
	return slices.Sorted(slices.Values(tree.levels[0].entries))
}

// settle is E[prod_g lim_g] over the split, and into coef (indexed by
// counts index, added to) its derivative by each group's term: a pass up
// the tree, then one down it.
func (tree *splitTree) settle(lim, coef []float64) float64 {
	at, adj := tree.at, tree.adj
	for p, i := range tree.levels[0].entries {
		at[0][p] = lim[i]
	}
	for l := 1; l < len(tree.levels); l++ {
		lv := tree.levels[l]
		clear(at[l])
		for _, tm := range lv.terms {
			at[l][tm.p] += tm.w * at[lv.a][tm.x] * at[lv.b][tm.y]
		}
	}
	for l := range adj {
		clear(adj[l])
	}
	top := len(tree.levels) - 1
	adj[top][0] = 1
	for l := top; l > 0; l-- {
		lv := tree.levels[l]
		for _, tm := range lv.terms {
			g := adj[l][tm.p] * tm.w
			adj[lv.a][tm.x] += g * at[lv.b][tm.y]
			adj[lv.b][tm.y] += g * at[lv.a][tm.x]
		}
	}
	for p, i := range tree.levels[0].entries {
		coef[i] += adj[0][p]
	}
	return at[top][0]
}

// full sets out (cells s to from) to E[prod_g h_g(t)] over the split, the
// groups' terms rows[i] by counts index.
func (tree *splitTree) full(out []float64, rows [][]float64, s, from int) {
	vals := tree.vals
	leaves := make([][]float64, len(tree.levels[0].entries))
	for p, i := range tree.levels[0].entries {
		leaves[p] = rows[i][s:from]
	}
	vals[0] = leaves
	cells := len(rows[tree.levels[0].entries[0]]) // the grid's
	for l := 1; l < len(tree.levels); l++ {
		lv := tree.levels[l]
		for p := range vals[l] {
			if cap(vals[l][p]) < from-s {
				vals[l][p] = make([]float64, from-s, cells)
			}
			vals[l][p] = vals[l][p][:from-s]
			clear(vals[l][p])
		}
		for _, tm := range lv.terms {
			q, a, b := vals[l][tm.p], vals[lv.a][tm.x], vals[lv.b][tm.y][:len(vals[l][tm.p])]
			a = a[:len(q)]
			for t := range q {
				q[t] += tm.w * a[t] * b[t]
			}
		}
	}
	copy(out, vals[len(tree.levels)-1][0])
}

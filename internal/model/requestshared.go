package model

import (
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mathext"
)

// What duplicates share. The duplicates of a group receive the same
// accesses at the same instants and differ only in their service draws:
// another request that arrived just before a request, or arrives while it
// runs, delays every duplicate alike, and no duplicate masks that delay.
// Given those shared arrivals the duplicates are independent, so the
// request predictor conditions on them: on the age of the last lump of
// work to reach the group before the request (the wait it finds), and on
// the instants of the requests that arrive while the request's first
// phase runs (whose accesses go ahead of its second phase's at every
// duplicate), corrected for the gaps between the arrivals before
// (historyCorrection). Before those, only whether the group is idle is
// taken as shared.

// pastStates is the law of a duplicate's wait at an arrival, split by the
// age of the last lump before it: lumps of law lump (arriving at rate, a
// Poisson stream) land on a workload of law wait (the stationary one, as
// PASTA gives it), and the wait found is that sum less the age, or 0. Each
// state is a weight and the wait's law given that age; their mixture is
// wait's law again. Ages beyond the lumps' reach give a wait of 0.
func (g grid) pastStates(wait, lump []float64, rate float64, ages int) []weightedLaw {
	var out []weightedLaw
	for _, st := range g.agedStates(wait, lump, rate, ages) {
		out = append(out, st.weightedLaw)
	}
	return out
}

// agedLaw is a state of pastStates with the age it stands for, in cells
// (-1 for the last: no lump within reach).
type agedLaw struct {
	weightedLaw
	age int
}

// agedStates is pastStates with each state's age.
func (g grid) agedStates(wait, lump []float64, rate float64, ages int) []agedLaw {
	ahead := convolve(wait, lump) // the work just after the last lump
	reach := lawReach(ahead)
	// Cells per age interval, even: its middle, the age taken, is then a
	// cell. An odd one took ages half a cell short, and as the history's
	// last arrival (48 ages on 512 cells: 11) but not in the state it
	// corrects (on 256: 6), that half cell of 0.2 ms put Olio's 5x1 at 30%
	// load 0.0016 low at the median's bound (historyCorrection), and its
	// 90th percentile's 0.0018 low.
	step := 2 * max(1, (reach+2*ages)/(2*ages))
	var out []agedLaw
	for lo := 0; lo <= reach; lo += step {
		hi := min(lo+step, reach+1)
		w := math.Exp(-rate*float64(lo)*g.h) - math.Exp(-rate*float64(hi)*g.h)
		if w < 1e-15 {
			continue
		}
		age := (lo + hi) / 2
		out = append(out, agedLaw{weightedLaw{w, shifted(ahead, age)}, age})
	}
	idle := make([]float64, g.n)
	idle[0] = 1
	return append(out, agedLaw{weightedLaw{math.Exp(-rate * float64(reach+1) * g.h), idle}, -1})
}

type weightedLaw struct {
	w   float64
	pmf []float64
}

// oneGroupTwoPhases is P(latency <= cell i) of a request of two phases on
// one group of d duplicates, given the law y of a duplicate's end of the
// first phase (its wait and the phase's accesses) and ahead's laws: last,
// the second phase's accesses one after the other, and lump, the work
// each request arriving meanwhile (at rate) puts at every duplicate.
// Every one that arrives before the first phase ends (at T, the first
// duplicate done with it) goes ahead of the second phase everywhere. A duplicate is busy
// from its first phase's start to its end (its own next phase is released
// no later than it finishes the one before), so with m lumps ahead it
// ends at Y + L_m + G: Y its end of the first phase, L_m the m lumps'
// work, G the second phase's. Given the arrival instants u_1 < u_2 < ...,
// exactly m lumps are ahead when every Y_j > u_m and some Y_j <= u_{m+1};
// the duplicates are independent given the instants, and by inclusion and
// exclusion, each term needing one instant's law (u_m is Erlang(m, rate)):
//
//	P(R <= t) = 1 - γ(t)^d + Σ_{m>=0} E[D_m(u_{m+1}, t)^d - D_{m+1}(u_{m+1}, t)^d]
//
// γ(t) = P(Y+G > t), D_m(u,t) = P(Y > u, Y+L_m+G > t). The first term
// (one lump ahead or none) is taken on the grid; the others, which weigh
// as much as a second arrival within the first phase (a few percent at
// 30% load), on a grid four times coarser, until they weigh under 1e-10.
func (g grid) oneGroupTwoPhases(y []float64, ahead *arrivalsAhead, d int) []float64 {
	out := g.oneGroupTwoPhasesPart(y, 1, ahead, d)
	for t, v := range out {
		out[t] = clamp01(v)
	}
	return out
}

// oneGroupTwoPhasesPart is oneGroupTwoPhases for y a part, of the given
// mass, of a duplicate's law of the first phase's end: mass^d less the
// chance that every duplicate's end is in its part and late, unclamped, so
// that parts taken with signs add up to a whole law (sharedHistory).
func (g grid) oneGroupTwoPhasesPart(y []float64, mass float64, ahead *arrivalsAhead, d int) []float64 {
	return g.oneGroupTwoPhasesFirst(y, mass, ahead, d, nil)
}

// oneGroupTwoPhasesFirst is oneGroupTwoPhasesPart with the sum's first
// term, E[D_0(u_1, t)^d - D_1(u_1, t)^d] (the first arrival's), taken
// from first, when not nil, given the d-th power.
func (g grid) oneGroupTwoPhasesFirst(y []float64, mass float64, ahead *arrivalsAhead, d int, first func(pow func(float64) float64) []float64) []float64 {
	pow := func(x float64) float64 {
		if x <= 0 { // math.Max's NaN care costs a tenth of the loop here
			return 0
		}
		if d == 2 {
			return x * x
		}
		return ipow(x, d)
	}
	gamma := cumulative(convolve(y, ahead.last))
	// The sum over u takes the powers at every fourth cell, weighing the four.
	var fine []float64
	if first != nil {
		fine = first(pow)
	} else {
		fine = arrivalTerms(y, ahead.g, ahead.lg, ahead.first, 4, 0, pow)
	}
	coarse := ahead.later(y, pow)
	out := make([]float64, g.n)
	whole := pow(mass)
	for t := range out {
		out[t] = whole - pow(mass-gamma[t]) + fine[t] + atFine(coarse, t)
	}
	return out
}

// coarseCells is how many cells of the grid one cell of arrivalsAhead's
// coarse grid spans; sameCell is the chance that an instant in one of its
// cells comes before an end in the same cell (an end's mass sits at the
// start of a fine cell, an instant anywhere in it: (coarseCells-1)/2 fine
// cells of the coarseCells).
const (
	coarseCells = 4
	sameCell    = float64(coarseCells-1) / (2 * coarseCells)
)

// arrivalsAhead is what oneGroupTwoPhases needs of the lumps (law lump,
// arriving at rate) and of the second phase (law last), shared by every
// law of the first phase's end it is given; the terms of more lumps are
// made as a first phase long enough to meet them asks for them.
//
// After a gap of z cells (arrivalsAheadAfter: the replies' flight between
// the first duplicate's last service and the second phase's sending) the
// lumps that arrive by the first phase's end plus z are ahead, and the
// gap has served z of their work: an instant u stands at u - z (those
// before z at 0), and L_m at (L_m - z)^+.
type arrivalsAhead struct {
	grid
	rate            float64
	gap             int
	last, lump      []float64
	g, lg           []float64 // the CDFs of G and L_1 + G
	first           []float64 // the first arrival falls in cell u
	lumps           []float64 // the law of L_m for the largest m made
	coarse, arrival [][]float64
}

func (g grid) newArrivalsAhead(last, lump []float64, rate float64) *arrivalsAhead {
	return g.arrivalsAheadAfter(last, lump, rate, 0)
}

func (g grid) arrivalsAheadAfter(last, lump []float64, rate float64, gap int) *arrivalsAhead {
	a := &arrivalsAhead{grid: g, rate: rate, gap: gap, last: last, lump: lump, lumps: lump, first: make([]float64, g.n)}
	a.g, a.lg = cumulative(last), cumulative(convolve(shifted(lump, gap), last))
	a.first[0] = 1 - math.Exp(-rate*float64(gap+1)*g.h)
	for u := 1; u < g.n; u++ {
		a.first[u] = exponentialCell(rate, g.h, u+gap)
	}
	a.coarse = [][]float64{coarseCDF(a.lg)}
	return a
}

// level makes the terms of m lumps ahead (m >= 1): coarse[m-1] and
// coarse[m], the coarse CDFs of L_m + G and L_{m+1} + G, and
// arrival[m-1], the chance the (m+1)-th arrival falls in each coarse cell.
func (a *arrivalsAhead) level(m int) {
	for len(a.arrival) < m {
		k := len(a.arrival) + 1 // the level made now
		n := a.n / coarseCells
		arrival := make([]float64, n)
		for u := range arrival {
			lo, hi := float64(u*coarseCells+a.gap)*a.h, float64((u+1)*coarseCells+a.gap)*a.h
			if u == 0 {
				lo = 0
			}
			arrival[u] = poissonAbove(a.rate*hi, k+1) - poissonAbove(a.rate*lo, k+1)
		}
		a.arrival = append(a.arrival, arrival)
		a.lumps = convolve(a.lumps, a.lump)
		a.coarse = append(a.coarse, coarseCDF(cumulative(convolve(shifted(a.lumps, a.gap), a.last))))
	}
}

// later is oneGroupTwoPhases's terms of m >= 1 lumps ahead, on a grid of
// coarseCells times the cells (each of its cells at the fine cell nearest
// its middle), for the first phase's end of law y, until they weigh under
// 1e-10.
func (a *arrivalsAhead) later(y []float64, pow func(float64) float64) []float64 {
	n := a.n / coarseCells
	yc := make([]float64, n)
	for v := range yc {
		for _, p := range y[v*coarseCells : (v+1)*coarseCells] {
			yc[v] += p
		}
	}
	out := make([]float64, n)
	tails := make([]float64, n) // P(Y's coarse cell > u), for the bound below
	for u, tail := n-1, 0.0; u >= 0; u-- {
		tails[u] = tail
		tail += yc[u]
	}
	for m := 1; m < 64; m++ {
		a.level(m)
		weight := 0.0
		for u, w := range a.arrival[m-1] {
			weight += w * pow(tails[u])
		}
		if weight < 1e-10 {
			break
		}
		for t, v := range arrivalTerms(yc, a.coarse[m-1], a.coarse[m], a.arrival[m-1], 1, sameCell, pow) {
			out[t] += v
		}
	}
	return out
}

// atFine is a law on laterArrivals's grid at a cell of the fine grid: its
// cell T stands for the middle of the fine cells it spans.
func atFine(coarse []float64, t int) float64 {
	f := (float64(t) - float64(coarseCells-1)/2) / coarseCells
	if f <= 0 {
		return coarse[0]
	}
	i := int(f)
	if i >= len(coarse)-1 {
		return coarse[len(coarse)-1]
	}
	return coarse[i] + (f-float64(i))*(coarse[i+1]-coarse[i])
}

// coarseCDF is a CDF on the fine grid taken at every coarseCells-th cell
// from the first (its values at lags of whole coarse cells).
func coarseCDF(cdf []float64) []float64 {
	out := make([]float64, len(cdf)/coarseCells)
	for i := range out {
		out[i] = cdf[i*coarseCells]
	}
	return out
}

// arrivalTerms is, at every cell t, the sum over cells u < t of weight[u]
// (D_a(u,t)^d - D_b(u,t)^d), D_x(u,t) = P(Y > u, Y + X > t) with y the
// law of Y and a, b the CDFs of the two X; the powers are taken at every
// stride-th cell, weighing the cells between.
func arrivalTerms(y, a, b, weight []float64, stride int, same float64, pow func(float64) float64) []float64 {
	n := len(y)
	tail := make([]float64, n+1) // tail[u] = P(Y > u)
	for u := n - 2; u >= 0; u-- {
		tail[u] = tail[u+1] + y[u+1]
	}
	// Below low the weights are negligible; from reach up Y > u is (both
	// terms are then below 1e-15).
	low, reach := 0, n-1
	for low < n && weight[low] < 1e-16 {
		low++
	}
	for reach > 0 && tail[reach] < 1e-15 {
		reach--
	}
	out := make([]float64, n)
	for t := range out {
		// From u = t up, both are P(Y > u): the term is 0. Below, walk u
		// down to low keeping both as suffix sums over Y's cells v > u.
		// A block of stride cells takes both at its middle (the mean of
		// its top and bottom cells').
		from := min(t-1, reach)
		da, db := tail[from+1], tail[from+1]
		if from == t-1 {
			da, db = tail[t], tail[t]
		}
		var sum, w, topA, topB float64
		for u := from; u >= low; u-- {
			v := u + 1
			da += y[v] * (1 - a[t-v])
			db += y[v] * (1 - b[t-v])
			if w == 0 {
				topA, topB = da, db
			}
			if w += weight[u]; u%stride == 0 || u == low {
				ea, eb := (da+topA)/2, (db+topB)/2
				if same > 0 {
					ea += same * y[u] * (1 - a[t-u])
					eb += same * y[u] * (1 - b[t-u])
				}
				sum += w * (pow(ea) - pow(eb))
				w = 0
			}
		}
		out[t] = sum
	}
	return out
}

// poissonAbove is P(N >= m) for N Poisson with the given mean: the
// regularized lower incomplete gamma function P(m, mean).
func poissonAbove(mean float64, m int) float64 {
	if m <= 0 {
		return 1
	}
	if mean <= 0 {
		return 0
	}
	return mathext.GammaIncReg(float64(m), mean)
}

// ipow is x^n for n >= 0.
func ipow(x float64, n int) float64 {
	// Two and three duplicates, the engines' inner loops' commonest n:
	// the loop's own products without its branches (the same bits). It
	// takes a quarter off Olio 2x2's prediction; a case for 4 as well
	// took back half of that (the inlined body grows in those loops).
	switch n {
	case 2:
		return x * x
	case 3:
		return x * x * x
	}
	out := 1.0
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			out *= x
		}
		x *= x
	}
	return out
}

// sinceLast is X = Z - τ, Z of law z and τ the age of the last arrival
// (exponential at rate, on the grid's cells), split into its part X >= 0
// (x, the law at X) and its part X < 0 (gap, the law at -X); older is the
// chance of an age past the grid (the server then idle).
func (g grid) sinceLast(z []float64, rate float64) (x, gap []float64, older float64) {
	age := make([]float64, g.n) // age[a]: the last arrival is a cells old
	for a := range age {
		lo := math.Max(0, (float64(a)-0.5)*g.h)
		age[a] = math.Exp(-rate*lo) - math.Exp(-rate*(float64(a)+0.5)*g.h)
	}
	older = math.Exp(-rate * (float64(g.n) - 0.5) * g.h)
	x, gap = differenceLaw(z, age)
	return x, gap, older
}

// differenceLaw is the law of A - B, A and B of laws a and b on the grid:
// pos[v] = P(A - B = v) for v >= 0, neg[v] = P(A - B = -v) for v > 0
// (neg[0] is 0), each over as many cells as a.
func differenceLaw(a, b []float64) (pos, neg []float64) {
	n := len(a)
	wide, rev := make([]float64, 2*n), make([]float64, 2*n)
	copy(wide, a)
	for i, v := range b[:n] {
		rev[n-1-i] = v
	}
	d := convolve(wide, rev) // d[m]: A - B = m - (n-1)
	pos, neg = make([]float64, n), make([]float64, n)
	copy(pos, d[n-1:2*n-1])
	for v := 1; v < n; v++ {
		neg[v] = d[n-1-v]
	}
	return pos, neg
}

// oneGroupShared is the request law on one group of d > 1 duplicates for a
// request of one or two phases arriving alone: wait is the stationary wait
// of whole requests' work (lumps of law whole, at rate), net the reply's
// network delay, sums[c] the law of c service times. The duplicates'
// waits are taken given the age of the last request to arrive, plus what
// the group's longer shared history changes in that (historyCorrection).
// windows, when not nil, is a request of three phases or more whose
// first P-1 phases phases[0] takes as one (groupPhases): the work an
// arrival within them puts ahead of the last phase is then windows's.
func (g grid) oneGroupShared(phases []int, sums [][]float64, wait, net []float64, rate float64, d int, windows *windowLumps) []float64 {
	first, last := sums[phases[0]], sums[phases[len(phases)-1]]
	law := g.oneGroupLaw(lastArrival(g.pastStates(wait, sums[len(sums)-1], rate, lastAges)), phases, first, last, net, rate, d, windows.on(g, sums[1]))
	for i, v := range g.historyCorrection(phases, sums[1], net, rate, d, windows) {
		law[i] = clamp01(law[i] + v)
	}
	return law
}

// lastAges is how many ages of the last request to arrive the
// duplicates' waits are taken at (pastStates).
const lastAges = 48

// oneGroupLaw is the request law on one group of d duplicates, unclamped,
// given the terms of what they find at an arrival (sharedState): first
// and last are the laws of the first and the last phase's work (one
// phase: both the same). windows, when not nil, gives for a state's wait
// the law of the work an arrival within the first phase puts ahead of the
// last (and a key, the same for the same law), and the first arrival's
// terms (windowsOn.firstArrival); otherwise that work is first. Each
// phase's part ends with the network delay net, the last phase's too.
//
// Of two phases (no windows), the first phase's delay Z is the group's:
// the second phase is sent at T1 = T + Z, T the first duplicate's last
// service, when the first reply of every access is in, and a duplicate
// whose own reply came later starts it then, its server free since its
// service ended. (Taking each duplicate's second phase after its own
// reply, the least of Y_j + G_j with Y_j its delay, put Olio's 2x1 at
// 16/s with a network delay four times the work 0.12 below the simulator
// at 2.5 ms.) The requests arriving by T1 are ahead of the second phase,
// and a duplicate serves them from its last service E_j: it ends at
// max(T1, E_j + L) + G, taken as E_j + Z + (L - Z)^+ + G (exact for the
// first duplicate, later for the others when L < Z). Added after the law
// instead, Z left the arrivals in it out and the lumps whole: 2x1-4x1
// were 0.006 pessimistic at p99 at 1% load and 0.03-0.04 optimistic at
// the median at 30%.
func (g grid) oneGroupLaw(states []sharedState, phases []int, first, last, net []float64, rate float64, d int, windows *windowsOn) []float64 {
	if len(phases) != 2 || windows != nil {
		return g.oneGroupLawAfter(states, phases, first, last, net, rate, d, windows, 0)
	}
	// The group's delay Z, by bins of its law: each bin's law is taken
	// after a gap of the bin's mean (arrivalsAheadAfter), then shifted by
	// Z within the bin.
	z := leastOf(net, d)
	out := make([]float64, g.n)
	for _, b := range weighedBins(z, groupGapShare, groupGapBins) {
		if b.w < 1e-15 {
			continue
		}
		within := make([]float64, g.n)
		copy(within[b.lo:b.hi], z[b.lo:b.hi])
		law := g.oneGroupLawAfter(states, phases, first, last, net, rate, d, nil, b.at)
		floats.Add(out, convolve(differences(law), within))
	}
	return cumulative(out)
}

// groupGapShare and groupGapBins bound oneGroupLaw's bins of the group's
// delay: each holds about groupGapShare of its weight, and there are at
// most groupGapBins, each a pass of the law. Olio's 2x1 with a spread
// delay was the same with 2, 3 and 5 bins (0.0011, 0.0057-0.0059 and
// 0.0199-0.0203 off the simulator at 1%, 8% and 30% load); 4x1 at 16/s
// took 9.2, 10.3 and 14.9 s.
const (
	groupGapShare = 0.5
	groupGapBins  = 2
)

// oneGroupLawAfter is oneGroupLaw given the group's delay after its first
// phase, gap cells: of two phases (no windows), the law of the request's
// end less that delay, the arrivals within it ahead of the second phase.
func (g grid) oneGroupLawAfter(states []sharedState, phases []int, first, last, net []float64, rate float64, d int, windows *windowsOn, gap int) []float64 {
	law := make([]float64, g.n)
	aheads, behindPendings := map[int]*arrivalsAhead{}, map[int]*arrivalsAhead{}
	groupNet := len(phases) == 2 && windows == nil
	for _, st := range states {
		y := convolve(st.pmf[:g.n], first)
		if !groupNet {
			y = convolve(y, net)
		}
		key, lumpLaw := 0, first
		if windows != nil && len(phases) > 1 {
			key, lumpLaw = windows.lump(st.pmf[:g.n])
		}
		ahead, behindPending := aheads[key], behindPendings[key]
		var part []float64
		switch {
		case len(phases) == 1:
			part = cumulative(y)
			for i, c := range part {
				part[i] = ipow(st.mass, d) - ipow(math.Max(0, st.mass-c), d)
			}
		case st.pending:
			// The previous request's second phase, then this one's:
			// both behind the arrivals within the first phase.
			if behindPending == nil {
				behindPending = g.arrivalsAheadAfter(convolve(convolve(last, last), net), lumpLaw, rate, gap)
				behindPendings[key] = behindPending
			}
			part = g.oneGroupTwoPhasesFirst(y, st.mass, behindPending, d, windows.firstArrival(st.pmf[:g.n], net, y, behindPending.last, true))
		default:
			if ahead == nil {
				ahead = g.arrivalsAheadAfter(convolve(last, net), lumpLaw, rate, gap)
				aheads[key] = ahead
			}
			part = g.oneGroupTwoPhasesFirst(y, st.mass, ahead, d, windows.firstArrival(st.pmf[:g.n], net, y, ahead.last, false))
		}
		for i, c := range part {
			law[i] += st.w * c
		}
	}
	return law
}

// leastOf is the law of the least of d draws of pmf.
func leastOf(pmf []float64, d int) []float64 {
	cdf := cumulative(pmf)
	for i, v := range cdf {
		cdf[i] = 1 - ipow(math.Max(0, 1-v), d)
	}
	return differences(cdf)
}

// historyCoarse is how many of the predictor's cells one cell of
// historyCorrection's grid spans. Its cost falls with the cells squared
// (oneGroupTwoPhases's sums), and finer grids were no closer: Olio on 5x1
// at 30% load, at the 90th percentile's bound, was +0.0065, +0.0074,
// +0.0061 and +0.0094 off the simulator with 2, 4, 8 and 16 (four levels).
const historyCoarse = 8

// historyCorrection is what taking the duplicates' waits given the
// group's shared history (sharedHistory.states) changes in their law
// taken given the last arrival only (oneGroupShared's): both are taken on
// a grid historyCoarse times coarser (the service law coarsened with its
// mean kept), and their difference is brought back onto g's cells. A law
// on cells that keep its mean (each point takes a share of the mass on
// either side) has at cell i the CDF at i + 1/2 cells, so the coarse
// cell j stands for the fine cell historyCoarse·j + (historyCoarse-1)/2. Read at
// historyCoarse·j, Olio's 5x1 at 30% load was 0.0008 lower at the
// median's bound, and 256 and 512 coarse cells 0.0007 apart there (now
// 0.0002).
func (g grid) historyCorrection(phases []int, svc, net []float64, rate float64, d int, windows *windowLumps) []float64 {
	c := grid{h: g.h * historyCoarse, n: g.n / historyCoarse}
	var w []int
	if windows != nil {
		w = windows.phases
	}
	h := c.newSharedHistory(phases, coarsen(svc, historyCoarse), rate, w)
	first, last, cnet := h.first[:c.n], h.first[:c.n], coarsen(net, historyCoarse)
	if h.second != nil {
		last = h.second[:c.n]
	}
	lump := windows.on(c, coarsen(svc, historyCoarse))
	with := c.oneGroupLaw(h.states(d), phases, first, last, cnet, rate, d, lump)
	// oneGroupShared's own states on c, the wait held on c alone as g
	// holds it: the correction also brings back the work that leaves the
	// grid and returns within it a gap later (sharedHistory's x).
	whole := h.whole[:c.n]
	wait := c.waitingPMF(c.lumpEquilibrium(whole, h.mean), rate*h.mean)
	without := c.oneGroupLaw(lastArrival(c.pastStates(wait, whole, rate, lastAges)), phases, first, last, cnet, rate, d, lump)
	return g.fromCoarse(with, without)
}

// fromCoarse is with - without, two laws on a grid historyCoarse times
// coarser than g, on g's cells (interpolated; the coarse cell j stands
// for the fine cell historyCoarse·j + (historyCoarse-1)/2).
func (g grid) fromCoarse(with, without []float64) []float64 {
	n := len(with)
	out := make([]float64, g.n)
	for i := range out {
		f := min(max(0, (float64(i)-(historyCoarse-1)/2.0)/historyCoarse), float64(n-1))
		j := min(int(f), n-2)
		f -= float64(j)
		out[i] = (1-f)*(with[j]-without[j]) + f*(with[j+1]-without[j+1])
	}
	return out
}

// coarsen is p on a grid c times coarser, each cell's mass split between
// the two cells about it so that the mean stays (taken whole to the
// nearest cell, a service law of 1 ms on cells of 0.1 ms gained half a
// fine cell, and the correction's load 5%).
func coarsen(p []float64, c int) []float64 {
	out := make([]float64, len(p)/c)
	last := len(out) - 1
	for i, v := range p {
		j, f := i/c, float64(i%c)/float64(c)
		if j >= last {
			out[last] += v
			continue
		}
		out[j] += (1 - f) * v
		out[j+1] += f * v
	}
	return out
}

// sharedState is a term of the law of what duplicates find at an arrival:
// weight w (negative for a term taken away) times the d-th power of a
// part of mass of one duplicate's law, pmf, of the work queued ahead of
// the new request's first phase; pending when the previous request's
// second phase is still to be released (it then comes after the new
// first phase and before the new second).
type sharedState struct {
	w, mass float64
	pmf     []float64
	pending bool
}

// lastArrival is pastStates's states as whole laws.
func lastArrival(states []weightedLaw) []sharedState {
	out := make([]sharedState, len(states))
	for i, st := range states {
		out[i] = sharedState{w: st.w, mass: 1, pmf: st.pmf}
	}
	return out
}

// historyLevels is how many arrivals back sharedHistory conditions on.
// With the oldest arrival's idleness shared (sharedHistory.states), Olio
// on 2x1 at 30% load, at the 90th percentile's bound, was +0.0014,
// +0.0010 and +0.0010 off the simulator (4x10^6 requests) with four to
// six (measured with agedStates' odd steps, which held it 0.0019 lower).
const historyLevels = 5

// historyAges is how many gaps sharedHistory weighs at each arrival
// before the last (which takes lastAges). The ages span the history's
// grid (twice the horizon), so 16 were 12.5 ms apart on Olio at 30% load,
// more than the 7 ms spread of a request's work: 2x1 and 5x1 there at
// the 90th percentile's bound were +0.0035 and +0.0040 off the simulator
// with 16, +0.0029 and +0.0035 with 32, +0.0027 and +0.0034 with 64.
const historyAges = 32

// sharedHistory is the law of the work d duplicates find at an arrival,
// given the gaps between the last historyLevels arrivals. The work at
// each duplicate, counting the second phases still to be released, is an
// M/G/1 workload of whole requests (a second phase is released no later
// than the duplicate ends the first, so it never idles with work
// pending): given the gaps, the duplicates' draws are independent, so each
// gap maps the law of one duplicate's work to the next arrival's
// (pastStates); the work at the oldest arrival is the stationary one,
// independent between duplicates once the group is known idle or busy.
// Laws alike (mass, atom at 0, mean and spread within a request's
// standard deviation) are merged, which kept the final states to about a
// thousand with 16 ages (Olio on 256 cells: 525 at 1% load, 1,355 at
// 30%). The laws are on x, a grid twice
// as long as the one they are for: the work that leaves that one comes
// back within x a gap later.
type sharedHistory struct {
	x             grid
	rate          float64
	first, second []float64 // the laws of a request's phases' work (one phase: second nil)
	lead, between []float64 // of its work to the end of its window 1, and from there to its last phase (nil: first and none)
	whole, wait   []float64 // of a request's work, and of a duplicate's at an arrival
	mean          float64   // of whole
	quantum       float64   // cells: the standard deviation of whole
}

// newSharedHistory is the history of requests of the given phases at
// rate on a grid of g's cells, svc the law of a service time on g.
// windows, when not nil, are the phases of a request of three or more
// whose first P-1 phases phases[0] takes as one (groupPhases).
func (g grid) newSharedHistory(phases []int, svc []float64, rate float64, windows []int) *sharedHistory {
	x := grid{h: g.h, n: 2 * g.n}
	power := func(k int) []float64 {
		out := make([]float64, x.n)
		out[0] = 1
		sq := append(append([]float64(nil), svc...), make([]float64, x.n-len(svc))...)
		for ; k > 0; k >>= 1 {
			if k&1 == 1 {
				out = convolve(out, sq)
			}
			if k > 1 {
				sq = convolve(sq, sq)
			}
		}
		return out
	}
	h := &sharedHistory{x: x, rate: rate, first: power(phases[0])}
	h.whole = h.first
	if len(phases) == 2 {
		h.second = power(phases[1])
		h.whole = convolve(h.first, h.second)
	}
	if P := len(windows); P > 2 {
		h.lead, h.between = power(windows[0]), power(phases[0]-windows[0])
	}
	h.mean = lawMean(x, cumulative(h.whole))
	spread := 0.0
	for i, p := range h.whole {
		spread += p * (float64(i)*x.h - h.mean) * (float64(i)*x.h - h.mean)
	}
	h.quantum = math.Max(1, math.Sqrt(spread)/x.h)
	h.wait = x.waitingPMF(x.lumpEquilibrium(h.whole, h.mean), rate*h.mean) // a duplicate's load
	return h
}

// states is the law of the work d duplicates find at an arrival as
// oneGroupLaw's terms (merged for d: mergeShared). At
// the last gap a, the previous request is still in its first phase when
// every duplicate's end of it Y' is later than a: then the new first
// phase waits only for Y' - a and the previous second phase comes after
// it. By inclusion and exclusion over that event (the duplicates
// independent given it), each state gives three terms: the whole work (as
// if released), less its part where every Y' > a, plus that part with the
// second phase pending.
//
// At the oldest arrival the duplicates' work is the stationary one,
// independent between them except for whether it is 0: the group is idle
// or busy alike, which the gap before that arrival decides more than any
// duplicate's draws do (Olio's request of 50 accesses: its work's spread
// is a seventh of its mean). Taken so, four levels give what five gave with
// the oldest work independent, five what six gave.
func (h *sharedHistory) states(d int) []sharedState {
	states := lastArrival(idleOrBusy(h.wait))
	for range historyLevels - 1 {
		var next []sharedState
		for _, s := range states {
			for _, st := range h.x.pastStates(s.pmf, h.whole, h.rate, historyAges) {
				next = append(next, sharedState{w: s.w * st.w, mass: 1, pmf: st.pmf})
			}
		}
		states = mergeShared(next, h.quantum, d)
	}
	var last []sharedState
	for _, s := range states {
		var ends []float64 // Y', the previous request's end of its first phase
		lead := h.first
		if h.lead != nil {
			lead = h.lead
		}
		if h.second != nil {
			ends = convolve(s.pmf, lead)
		}
		for _, st := range h.x.agedStates(s.pmf, h.whole, h.rate, lastAges) {
			last = append(last, sharedState{w: s.w * st.w, mass: 1, pmf: st.pmf})
			if ends == nil || st.age < 0 {
				continue
			}
			part := make([]float64, h.x.n) // Y' - a where Y' > a (half the cell of a)
			mass := 0.0
			for i := st.age; i < h.x.n; i++ {
				v := ends[i]
				if i == st.age {
					v /= 2
				}
				part[i-st.age] = v
				mass += v
			}
			if s.w*st.w*mass < 1e-12 {
				continue
			}
			pending := part
			if h.between != nil {
				pending = convolve(part, h.between)
			}
			last = append(last, sharedState{w: -s.w * st.w, mass: mass, pmf: convolve(pending, h.second)},
				sharedState{w: s.w * st.w, mass: mass, pmf: pending, pending: true})
		}
	}
	return mergeShared(last, h.quantum, d)
}

// mergeShared merges states of one sign and kind whose laws are alike:
// mass and atom at 0 within 0.02, mean and spread within quantum cells.
// A state is a condition the d duplicates share, and the request's law
// takes of it the d-th power of its law's parts: the chance that every
// duplicate's work is past t, (mass - C(t))^d, C the state's CDF. So a
// merged state keeps the sum of its states' weights times those (and
// times mass^d) at every t: its tail is their d-th power mean. The laws'
// mean, which merging took before, keeps only the first power, and its
// d-th power is the smaller (Jensen): the duplicates of the merged states
// were taken as less alike than they are, and the request as faster.
// Olio on 4x1 at 30% load was 0.0038 high at the 90th percentile's
// bound, now 0.0019; for d = 1 both are the mean.
func mergeShared(in []sharedState, quantum float64, d int) []sharedState {
	type key struct {
		neg, pending             bool
		mass, atom, mean, spread int
	}
	at := map[key]int{}
	var out []sharedState
	var powers [][]float64 // of a merged state: Σ w (mass - C(t))^d, then Σ w mass^d
	add := func(p []float64, s sharedState) {
		c := 0.0
		for t, v := range s.pmf {
			c += v
			p[t] += s.w * ipow(math.Max(0, s.mass-c), d)
		}
		p[len(s.pmf)] += s.w * ipow(s.mass, d)
	}
	for _, s := range in {
		var m, m2 float64
		for i, v := range s.pmf {
			m += float64(i) * v
			m2 += float64(i) * float64(i) * v
		}
		m, m2 = m/s.mass, m2/s.mass
		k := key{s.w < 0, s.pending, int(math.Round(s.mass / 0.02)), int(math.Round(s.pmf[0] / s.mass / 0.02)),
			int(math.Round(m / quantum)), int(math.Round(math.Sqrt(math.Max(0, m2-m*m)) / quantum))}
		i, ok := at[k]
		if !ok {
			at[k] = len(out)
			out = append(out, s)
			powers = append(powers, nil)
			continue
		}
		if powers[i] == nil {
			powers[i] = make([]float64, len(s.pmf)+1)
			add(powers[i], out[i])
		}
		add(powers[i], s)
		out[i].w += s.w
	}
	for i, p := range powers {
		if p == nil {
			continue
		}
		o := &out[i]
		root := func(x float64) float64 { return math.Pow(math.Max(0, x/o.w), 1/float64(d)) }
		o.mass = root(p[len(o.pmf)])
		pmf := make([]float64, len(o.pmf))
		above := o.mass
		for t := range pmf {
			tail := math.Min(above, root(p[t]))
			pmf[t], above = above-tail, tail
		}
		o.pmf = pmf
	}
	return out
}

// lawMean is the mean of a law given by its CDF on g.
func lawMean(g grid, cdf []float64) float64 {
	m := 0.0
	for _, c := range cdf {
		m += (1 - c) * g.h
	}
	return m
}

// idleOrBusy splits a wait's law into its idle state (no wait) and its
// busy one, weighted by their chances.
func idleOrBusy(wait []float64) []weightedLaw {
	idle := make([]float64, len(wait))
	idle[0] = 1
	busy := append([]float64(nil), wait...)
	busy[0] = 0
	pBusy := 1 - wait[0]
	if pBusy < 1e-12 {
		return []weightedLaw{{1, idle}}
	}
	for i := range busy {
		busy[i] /= pBusy
	}
	return []weightedLaw{{wait[0], idle}, {pBusy, busy}}
}

// compoundPoissonCounts is the law of the total count of Poisson(mean)
// lumps, each a count of law lump, up to the count beyond which less than
// tail is left.
func compoundPoissonCounts(mean float64, lump []float64, tail float64) []float64 {
	out := []float64{}
	power := []float64{1}
	for k, pk := range poissonLaw(mean, tail) {
		if k > 0 {
			power = polyConvolve(power, lump)
		}
		for len(out) < len(power) {
			out = append(out, 0)
		}
		for i, v := range power {
			out[i] += pk * v
		}
	}
	return out
}

// polyConvolve is the law of the sum of two independent counts.
func polyConvolve(a, b []float64) []float64 {
	out := make([]float64, len(a)+len(b)-1)
	for i, x := range a {
		for j, y := range b {
			out[i+j] += x * y
		}
	}
	return out
}

package model

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"
)

// lastRequestShare is about the most weight one of oneServerGroups's bins
// of the last request's age (or of its second phase's lag) takes: 0.02 and
// 0.01 gave Olio on 1x2 and 1x4 at 30% the same answers within 2e-4, 0.05
// up to 8e-4 off them. Each bin costs a pass of twoPhaseGroups, and the
// weight grows with the load, so there are at most lastRequestBins of each
// (Olio at 30% takes 2-7): a planner's bisection tries loads far above.
const (
	lastRequestShare = 0.02
	lastRequestBins  = 8
)

// oneServerGroups is the request law of two phases (k1 then k2 accesses)
// on r groups of one server, requests arriving alone at sys.Rate, given on
// g (net the reply's network delay).
//
// The service law keeps its mean on the grid (g.pmf): rounded to the
// nearest point every draw lost f(0)h²/24, and a request's
// path holds 40-50 of them. Olio on 1x2 at 1% load, where requests seldom
// meet and the law is exact but for the grid, came out 0.0005-0.0009 high
// from p10 to p90 against 4e6 simulated requests (within 0.0003 with the
// mean kept), and at 8% on 0.2 ms cells 0.0018-0.0031 high (within
// 0.0009).
//
// The groups share the request that arrived last before this one: its
// accesses reached every group at one instant, so how much of it is left
// is alike at every group. Taking each group's older work as independent
// of the others' (what twoPhaseGroups did with a chance of some request
// present) put Olio at 30% 0.002-0.005 off: too slow at the median, too
// fast at p99 with two groups. So the law is conditioned on that request's
// age a (exponential), as serverPhases does for one server. At its
// arrival each group held the work queued then, W (taken independent
// between groups), and it queued its n first-phase accesses: it ends its
// first phase at a group at Z = W + S(n). W is the stationary workload of
// phases arriving as lumps, each at its start: a request older than the
// last still in its first phase queues its second phase when that ends,
// behind the last one's first-phase accesses. With the work of whole
// requests as W those second phases came ahead of them, the last request
// seemed to stay in its first phase too long, and Olio at 30% came out
// slow from the median to p90 (1x2 -0.0031 to -0.0038; without them
// anywhere, +0.0023 to +0.0053). They are put where they queue: ahead of
// this request's second phase at every group, with the last request's own:
// given the last request's age a, a Poisson count of them, of mean λE[(D -
// a)^+] with D a first phase's end (lawMean of its CDF past a, taken
// apart from the last request's being in its own), all reaching the groups when the last request's
// first phase ends, D - a given D > a (endsAfter). Spread evenly over this
// request's first phase instead, as they were, and with λE[D] of them,
// they landed late and too many: with a reply delay, whose gaps make the
// first phase long beside the servers' work, requests that came while
// the last one was in its first phase were 0.08-0.10 slow at p30-p90 on
// 1x2 at 30% (the predictor 0.019 below the simulator at p70); each
// change alone left 0.05. Then:
//
//   - If some group's Z is past a, it is still in its first phase: each
//     group holds max(0, Z - a), and its second phase comes ahead of this
//     request's at every group. The groups are taken independent given
//     a, so E[ok | some Z > a] = (E[ok] - P(every Z <= a) ok(every group
//     idle, that second phase pending)) / P(some Z > a), with P(every
//     Z <= a) as twoPhaseGroups draws the states, each group's count
//     apart; the case's own chance (by age) is over the multinomial split
//     of its first phase (with independent counts the last request
//     seemed to end its first phase too soon, and Olio 1x2 came out up to
//     0.0006 faster). Removing the multinomial P(every Z <= a) from a law
//     whose states were drawn apart left some of the idle case in.
//   - Otherwise it started its second phase at T1' <= a, at every group
//     alike, and a group holds max(0, S(m) - D), m its second-phase
//     accesses, D = a - T1'. Given this case D is exponential at the
//     arrival rate and independent of T1' (the age is memoryless), so the
//     lag D is conditioned on too.
//
// With a network delay on each reply the first phase ends at a group at
// its last reply, W + M(n) (replyLaws); every group may be idle with the
// last request's replies still in flight, its second phase then pending
// (of the all-idle draws, the share P(all ended | all served) is taken
// out: with the difference P(all served) - P(all ended) instead, the
// multinomial's beside the draws' own zEnded^r, it took out 0.13 of
// 1x4's draws at 30% at an age where none had ended and every group was
// idle in 0.17 of them), and the
// groups' servers are free from their last services (twoPhaseGroups
// with replies).
//
// Each conditioned law is a pass of twoPhaseGroups with the groups'
// states that law; the ages (and lags) are binned so that each bin takes
// at most lastRequestShare of the weight of the cases that differ from a
// request alone, at the bin's weighted mean. Left out: requests older than
// the last one, beyond the work W they left (independent between groups)
// and their second phases ahead of this request's, and the split of the
// last request's accesses between the groups apart from P(every Z <= a).
func (g grid) oneServerGroups(sys System, k1, k2, r int, rho float64, net []float64, progress Progress) []float64 {
	p := 1 / float64(r)
	rate := sys.Rate
	none := make([]float64, g.n) // the law of no service time
	none[0] = 1
	sums := extendSums([][]float64{none, g.pmf(sys.Service)}, k1+k2+1)
	w := g.waitingPMF(g.lumpEquilibrium(g.phaseStartLump([]int{k1, k2}, p, sums, sys.Service.Mean())), rho)
	first, pending := binomial(k1, p), binomial(k2, p)
	replies := g.newReplyLaws(sums[1], net, max(k1, k2))
	z := convolve(w, g.countsOfSums(first, sums))
	served := make([][]float64, k1+1) // served[n]: W + S(n) by each cell
	ended := make([][]float64, k1+1)  // ended[n]: W + M(n), its last reply too
	for n := range ended {
		served[n] = cumulative(convolve(w, sums[n]))
		ended[n] = cumulative(convolve(w, replies.ends[n]))
	}
	allServed := multinomialProduct(served, r, g.n) // every group's Z by each cell
	allEnded := multinomialProduct(ended, r, g.n)   // and its last reply

	// The cases that differ from a request alone: an age at which the last
	// request is still in its first phase, a lag within its second phase.
	ages := make([]float64, lawReach(z)+1)
	for a := range ages {
		ages[a] = exponentialCell(rate, g.h, a) * (1 - allEnded[a])
	}
	m := g.countsOfSums(pending, sums)
	lags := make([]float64, lawReach(m)+1)
	left := 1.0 // P(S(m) > the lag's cell)
	for x := range lags {
		left -= m[x]
		lags[x] = exponentialCell(rate, g.h, x) * math.Max(0, left)
	}
	ageBins, lagBins := weighedBins(ages, lastRequestShare, lastRequestBins), weighedBins(lags, lastRequestShare, lastRequestBins)
	passes := float64(1 + len(ageBins) + len(lagBins))
	stage := func(i int) Progress { return progress.stage("", float64(i)/passes, 1/passes) }

	arrivals := arrivalCases(rate, first, []float64{1}, instants, nil)
	// At each age, the last request's second phase and those of the older
	// requests still in their first phase reach the groups when the last
	// request's first phase ends (pendingAt). An age's pass draws each
	// group's state apart, every group idle with chance zEnded^r; of that,
	// the share with every reply in too (alls, by the split of the first
	// phase: P(all ended | all served)) is the last request past its first
	// phase, which the lag bins take: it is taken out with the idle
	// groups' law (the idle pass's results, where it weighs anything).
	zEnded := cumulative(z)
	aheads := []func(float64) []aheadCase{arrivals}
	pendingAt := make([]func(float64) []aheadCase, len(ageBins))
	alls := make([]float64, len(ageBins))
	idleAt := make([]int, len(ageBins)) // the idle pass's result for the age, 0 for none
	for j, b := range ageBins {
		// The older requests still in their first phase: λE[(D - a)^+].
		older := compoundPoissonCounts(rate*lawMean(g, allEnded[b.at:]), pending, 1e-13)
		pendingAt[j] = arrivalCases(rate, first, polyConvolve(pending, older), instants, endsAfter(allEnded, b.at))
		if allServed[b.at] > 0 {
			alls[j] = ipow(zEnded[b.at], r) * allEnded[b.at] / allServed[b.at]
		}
		if alls[j] > 1e-7 {
			idleAt[j] = len(aheads)
			aheads = append(aheads, pendingAt[j])
		}
	}
	idle := []weightedLaw{{1, none}}
	idlePasses := g.twoPhaseGroups(k1, k2, r, 1, idle, aheads, sums, net, &replies, stage(0))
	alone := idlePasses[0]
	law := make([]float64, g.n)
	inSecond := 1.0 // the chance the last request is past its first phase (or older than the grid)
	for j, b := range ageBins {
		inSecond -= b.w
		all := alls[j]
		if allEnded[b.at] > 1-1e-12 || all > 1-1e-12 {
			continue
		}
		state := []weightedLaw{{1, shifted(z, b.at)}}
		got := g.twoPhaseGroups(k1, k2, r, 1, state, pendingAt[j:j+1], sums, net, &replies, stage(1+j))[0]
		if idleAt[j] > 0 {
			floats.AddScaled(got, -all, idlePasses[idleAt[j]])
		}
		floats.AddScaled(law, b.w/(1-all), got)
	}
	for i := range law {
		law[i] += inSecond * alone[i]
	}
	for j, b := range lagBins {
		busy := 0.0 // P(S(m) > the lag)
		for _, v := range m[b.at+1:] {
			busy += v
		}
		if busy < 1e-12 {
			continue
		}
		state := []weightedLaw{{1, shifted(m, b.at)}}
		got := g.twoPhaseGroups(k1, k2, r, 1, state, []func(float64) []aheadCase{arrivals}, sums, net, &replies, stage(1+len(ageBins)+j))[0]
		for i := range law {
			law[i] += inSecond * b.w * (got[i] - alone[i]) / busy
		}
	}
	return cumulative(differences(law))
}

// endsAfter is the CDF of D - a given D > a (a in cells), D of CDF ended:
// when a phase that began a cells ago and has not ended will.
func endsAfter(ended []float64, a int) []float64 {
	out := make([]float64, len(ended))
	rest := 1 - ended[a]
	for x := range out {
		if a+x < len(ended) && rest > 0 {
			out[x] = (ended[a+x] - ended[a]) / rest
		} else {
			out[x] = 1
		}
	}
	return out
}

// exponentialCell is the chance that an exponential time at rate falls in
// cell c of width h.
func exponentialCell(rate, h float64, c int) float64 {
	return math.Exp(-rate*float64(c)*h) - math.Exp(-rate*float64(c+1)*h)
}

// phaseStartLump is the lump of work a phase's start brings a group when
// each access goes to one of 1/p groups: each phase's Binomial(k, p)
// count, the phases alike, as sums of service times; and its mean.
func (g grid) phaseStartLump(phases []int, p float64, sums [][]float64, serviceMean float64) ([]float64, float64) {
	counts := make([]float64, slices.Max(phases)+1)
	for _, k := range phases {
		for c, w := range binomial(k, p) {
			counts[c] += w / float64(len(phases))
		}
	}
	return g.countsOfSums(counts, sums), countMean(counts) * serviceMean
}

// countsOfSums is the law of a count of service times whose count has law
// counts (sums[c] the law of c).
func (g grid) countsOfSums(counts []float64, sums [][]float64) []float64 {
	out := make([]float64, g.n)
	for c, w := range counts {
		for i, v := range sums[c] {
			out[i] += w * v
		}
	}
	return out
}

// shifted is the law of max(0, X - a) for X of law x, a in cells.
func shifted(x []float64, a int) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[max(0, i-a)] += v
	}
	return out
}

// lawReach is the last cell where x holds 1e-13 or more.
func lawReach(x []float64) int {
	i := len(x) - 1
	for i > 0 && x[i] < 1e-13 {
		i--
	}
	return i
}

// weightBin is a run of cells [lo, hi) of weight w, standing at cell at.
type weightBin struct {
	lo, hi, at int
	w          float64
}

// weighedBins splits cells 0..len(w)-1 into the fewest runs of about
// equal weight that share allows, at least one and at most most: each run
// ends at the first cell that takes it to its part of the total, and
// stands at the cell of its weighted mean.
func weighedBins(w []float64, share float64, most int) []weightBin {
	total := 0.0
	for _, v := range w {
		total += v
	}
	per := total / math.Min(float64(most), math.Max(1, math.Ceil(total/share)))
	var out []weightBin
	lo, acc, moment := 0, 0.0, 0.0
	for c, v := range w {
		acc += v
		moment += v * float64(c)
		if acc >= per*(1-1e-9) || c == len(w)-1 {
			at := (lo + c) / 2
			if acc > 0 {
				at = int(math.Round(moment / acc))
			}
			out = append(out, weightBin{lo, c + 1, at, acc})
			lo, acc, moment = c+1, 0, 0
		}
	}
	return out
}

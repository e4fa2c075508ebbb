package model

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// serverGroupsPhasesCells is the grid of serverGroupsPhases, as
// twoPhaseGroups's (512 cells: with one server per group the two-phase
// law had converged there).
const serverGroupsPhasesCells = 512

// serverWindowShare and serverWindowBins bound serverGroupsPhases's bins of a
// window's length: each holds at most serverWindowShare of the weight, and
// there are at most serverWindowBins of them (each costs a step of the next
// window).
const (
	serverWindowShare = 0.1
	serverWindowBins  = 8
)

// serverCounts is the most counts of requests arrived since that
// serverGroupsPhases carries for a bin of a window's length: beyond it
// the counts are merged by weight (fewerCounts). At loads far above the
// error map's, where a planner's bisection goes, tens of counts matter:
// three phases of 10 on 1x2 at 95% on each server took 12 s, 2 s with
// this (niced, load 9). Up to 30% load on one server taking every access
// it does not bite (three 1x2 30% unchanged within 5e-10; with 8 counts
// it moved by 1.8e-4).
const serverCounts = 12

// serverGroupsPhases is the request law of P >= 3 phases (k_1, ...,
// k_P accesses, each to a uniformly random one of r groups of one
// server) for requests arriving alone at sys.Rate, on horizon.
//
// Each server serves accesses in the order they reach it, and phase i+1
// reaches every group at the barrier T_i, when the last group is done
// with phase i. So what is queued ahead of phase i+1 at a group is only
// what reached it within window i, (T_{i-1}, T_i]: what was there before
// was ahead of phase i and is served by then. That work is the lumps
// that reach the group within the window (other requests' phases
// starting: a phase start brings every group a Binomial(k, 1/r) count),
// served from when they arrive or from when the group is done with phase
// i, whichever is later; the group that ended phase i last (at T_i)
// holds all of them. The latency is the sum of the windows. Taking each
// phase's wait apart and stationary (the generic path) made three phases
// of 10 on 1x2 at 30% 0.049 off: too slow to the median, too fast at
// p90-p99, for the windows are tied.
//
// Which lumps come within window i: as on one server (serverPhases), a
// request that arrived since this one, in its window j <= i, has put its
// phases 1, ..., i-j+1 ahead of this one's phases j+1, ..., i+1, so each
// such request has one phase start within window i; and a request
// present at the arrival, in its phase j, has its phases j+1, ..., P
// start within windows 1, ..., P-j, one in each. So the windows are
// taken as a chain whose state is window i's length s (binned by
// weight, each bin at its weighted mean) and the count a of requests
// that arrived before T_i (a Poisson count over each window's length
// added at each step): window i+1 given them is nextWindow's,
// with a lumps and those of the requests present. Window 1 is the work W
// each group finds (stationary, independent between groups given what
// they share, below) and its accesses. Whether any request is present
// is split off: with none, W is nothing and only the requests arriving
// since bring lumps; with some
// (N of them, Poisson, its mean the rate times the mean latency, N >= 1),
// W and the count of the others (N-1) are taken by N's class
// (presentClasses: one present, or more), which every group shares: the
// more present, the more work each group finds and the more lumps reach
// the later windows. The last present request is in each of its phases
// with chance 1/P (its later phases one in each window, from the first)
// and each other present request has a phase start within window i with
// chance (P-i)/P.
//
// Left out: the tie between the groups' W beyond the count present (by
// the count alone, three phases of 10 at 30% are 0.0018 off on 1x2 and
// 0.0013-0.0018 on 1x3-1x8, slow at p50-p90, against 4x10^6 simulated
// requests; tied by the last phase start instead, 1x2 was 0.0031 fast at
// p99, and by both, every 1xr mix up to 0.0020 fast), W and the count within
// the class of two or more, which phase of theirs the other present
// requests are in (with one group, at r = 1, this form is 0.0037 slow at
// p50 and 0.0104 and 0.0086 fast at p90 and p99 at 30%; drawn apart from
// the count, 0.0075 slow at p50 and 0.0120 fast at p99), when within the
// window each lump comes (one lump at one of two instants, more at one
// instant spread over the window: a later phase of a request comes at
// that request's barrier), and a group's end of phase i given more than
// window i's length (its law is mixed over the chain's states).
func serverGroupsPhases(sys System, phases []int, r int, rho, horizon float64) RequestPrediction {
	g := grid{h: horizon / (serverGroupsPhasesCells - 1), n: serverGroupsPhasesCells}
	p := 1 / float64(r)
	kmax := 0
	for _, k := range phases {
		kmax = max(kmax, k)
	}
	none := make([]float64, g.n)
	none[0] = 1
	sums := extendSums([][]float64{none, g.pmf(sys.Service)}, kmax+1)
	w := g.waitingPMF(g.lumpEquilibrium(g.phaseStartLump(phases, p, sums, sys.Service.Mean())), rho)
	net := g.pmf(sys.net())
	c := serverChain{g: g, phases: phases, r: r, rate: sys.Rate, sums: sums, net: net, seconds: map[int]*spectra{}, lumps: map[[4]int]*serverLumps{}}
	// How many requests are present at an arrival: Poisson, its mean the
	// rate times the mean latency (Little), the latency's mean that of
	// the phases' windows each with the stationary wait.
	mean := 0.0
	for _, k := range phases {
		mean += lawMean(g, c.window(w, k))
	}
	present := sys.Rate * mean
	idle := math.Exp(-present)
	// Nobody present; or some, the last to arrive in its phase j (each
	// for a share 1/P of its time): its phases j+1, ..., P start within
	// this one's windows 1, ..., P-j, one in each. Taking them apart
	// (each window's with the chance a present request has a phase left
	// for it) made the latency too narrow: three phases of 10 on one
	// server at 8% load came out up to 0.017 off serverPhases.
	window, ends := c.found(none)
	law := c.law(window, ends, nil, 0)
	P := len(phases)
	if 1-idle < 1e-12 {
		return RequestPrediction{Step: g.h, CDF: cumulative(law)}
	}
	for i := range law {
		law[i] *= idle
	}
	// Some present: by their count (presentClasses), which sets both the
	// work each group finds and the lumps the others bring later windows.
	for _, class := range presentClasses(w, present, presentCountClasses) {
		c.lumps = map[[4]int]*serverLumps{} // they depend on the class's others
		window, ends = c.found(class.found)
		for j := 1; j <= P; j++ {
			withSome := c.law(window, ends, class.others, P-j)
			for i := range law {
				law[i] += (1 - idle) * class.weight / float64(P) * withSome[i]
			}
		}
	}
	return RequestPrediction{Step: g.h, CDF: cumulative(law)}
}

// serverChain is serverGroupsPhases's chain of windows.
type serverChain struct {
	g      grid
	phases []int
	r      int
	rate   float64
	sums   [][]float64
	net    []float64
	// seconds[i]: the laws of m = 1..k_{i+1} accesses and the reply;
	// lumps: the lumps within a window, by the window, the count of
	// requests arrived since and whether others and the last present
	// request bring some (alike in every chain that shares them).
	seconds map[int]*spectra
	lumps   map[[4]int]*serverLumps
}

// window is the CDF of a window of k accesses whose work ahead at each
// group (independent between groups) has law ahead.
func (c *serverChain) window(ahead []float64, k int) []float64 {
	a := make([][]float64, k+1)
	a[0] = onesLike(c.g.n)
	for m := 1; m <= k; m++ {
		a[m] = cumulative(convolve(ahead, convolve(c.sums[m], c.net)))
	}
	return multinomialProduct(a, c.r, c.g.n)
}

// found is window 1's law (pmf) and the groups' ends of it when each
// group finds work of law w, independent between groups.
func (c *serverChain) found(w []float64) ([]float64, groupEnds) {
	window := differences(c.window(w, c.phases[0]))
	return window, c.g.groupEnds(w, binomial(c.phases[0], 1/float64(c.r)), c.sums)
}

// law is the latency's law given window 1's law and the groups' ends of
// it (found's), the law of the count of the requests
// present but the last (others, nil for nobody present), and how many of
// this one's windows the last brings a phase (lastLeft).
func (c *serverChain) law(window []float64, st groupEnds, others []float64, lastLeft int) []float64 {
	g, P, p := c.g, len(c.phases), 1/float64(c.r)
	// elapsed[b][a]: the law of T_i while window i is in bin b and a
	// requests arrived before window i (its mass that case's chance).
	bins := weighedBins(window, serverWindowShare, serverWindowBins)
	elapsed := make([][][]float64, len(bins))
	for b, bin := range bins {
		e := make([]float64, g.n)
		copy(e[bin.lo:bin.hi], window[bin.lo:bin.hi])
		elapsed[b] = [][]float64{e}
	}
	lumpCounts := make([]float64, slices.Max(c.phases)+1)
	for _, k := range c.phases {
		for n, v := range binomial(k, p) {
			lumpCounts[n] += v / float64(P)
		}
	}
	for i := 1; i < P; i++ {
		k := c.phases[i]
		second := c.seconds[i]
		if second == nil {
			second = g.newSpectra(k, func(m int) []float64 { return convolve(c.net, c.sums[m+1]) })
			c.seconds[i] = second
		}
		lastHere := i <= lastLeft
		// The present requests with a phase left to start within window
		// i: a present one is in each of its phases for about a share
		// 1/P of its time.
		left := float64(P-i) / float64(P)
		// from[b][a]: the law of T_i while window i is in bin b and a
		// requests arrived before its end; next[b][a]: window i+1's law
		// given that. Each request that arrived since this one has a
		// phase start within window i, ahead of phase i+1 (one arrived
		// in window j has put its phases 1, ..., i-j there before).
		from := make([][][]float64, len(bins))
		next := make([][][]float64, len(bins))
		var ends groupEnds
		marginal := make([]float64, g.n)
		for b, bin := range bins {
			arrived := poissonLaw(c.rate*float64(bin.at)*g.h, 1e-9)
			for before, e := range elapsed[b] {
				for n, pn := range arrived {
					a := before + n
					for len(from[b]) <= a {
						from[b] = append(from[b], make([]float64, g.n))
					}
					for t, v := range e {
						from[b][a][t] += pn * v
					}
				}
			}
			from[b] = fewerCounts(from[b], serverCounts)
			next[b] = make([][]float64, len(from[b]))
			for a, e := range from[b] {
				weight := 0.0
				for _, v := range e {
					weight += v
				}
				if weight < 1e-12 {
					continue
				}
				key := [4]int{i, a, boolInt(others != nil), boolInt(lastHere)}
				wl := c.lumps[key]
				if wl == nil {
					cases := lumpCases(a, others, left, lastHere, lumpCounts)
					for _, cs := range cases {
						c.sums = extendSums(c.sums, len(cs.law))
					}
					wl = g.newServerLumps(cases, c.sums, second)
					c.lumps[key] = wl
				}
				var ends1 groupEnds
				next[b][a], ends1 = g.nextWindow(st, bin.at, wl, binomial(k, p), c.r, c.sums, second)
				ends.add(ends1, weight)
				for t, v := range next[b][a] {
					marginal[t] += weight * v
				}
			}
		}
		st = ends.scaled()
		// The law of T_{i+1} (by window i+1's bin and the count): each
		// case's T_i plus its window i+1, summed as transforms.
		sp := g.newSpectra(0, nil)
		if i == P-1 {
			law := sp.sum()
			for b := range bins {
				for a, e := range from[b] {
					if next[b][a] != nil {
						law.add(e, next[b][a])
					}
				}
			}
			return law.law()
		}
		newBins := weighedBins(marginal, serverWindowShare, serverWindowBins)
		parts := make([][]*spectralSum, len(newBins))
		for b := range bins {
			for a, e := range from[b] {
				if next[b][a] == nil {
					continue
				}
				ce := sp.transform(e)
				for nb, bin := range newBins {
					for len(parts[nb]) <= a {
						parts[nb] = append(parts[nb], sp.sum())
					}
					part := make([]float64, g.n)
					copy(part[bin.lo:bin.hi], next[b][a][bin.lo:bin.hi])
					parts[nb][a].addTransformed(ce, part)
				}
			}
		}
		newElapsed := make([][][]float64, len(newBins))
		for nb := range newElapsed {
			for _, sum := range parts[nb] {
				newElapsed[nb] = append(newElapsed[nb], sum.law())
			}
		}
		bins, elapsed = newBins, newElapsed
	}
	panic("unreachable: P >= 2")
}

// lumpCases are the cases of the lumps within a window, shared by the
// groups: since of them (from the requests that arrived since this one),
// one for each of the other present requests (of count law others) with
// a phase left, each with chance left, and one for the last present
// request if last. Each lump brings a group a count of law lump; one
// lump alone comes at one of the instants, more are spread.
func lumpCases(since int, others []float64, left float64, last bool, lump []float64) []aheadCase {
	count := make([]float64, since+1) // the law of the number of lumps
	count[since] = 1
	if others != nil {
		kept := make([]float64, len(others))
		for m, v := range others {
			for n, b := range binomial(m, left) {
				kept[n] += v * b
			}
		}
		count = polyConvolve(count, kept)
	}
	if last {
		count = append([]float64{0}, count...)
	}
	p0 := count[0]
	p1 := 0.0
	if len(count) > 1 {
		p1 = count[1]
	}
	cases := []aheadCase{{p0, []float64{1}, -1, false, nil}}
	for j, at := range instants {
		cases = append(cases, aheadCase{p1 / float64(len(instants)), lump, at, j > 0, nil})
	}
	if more := 1 - p0 - p1; more > 1e-13 {
		law := []float64{}
		power := polyConvolve(lump, lump)
		for n := 2; n < len(count); n++ {
			for len(law) < len(power) {
				law = append(law, 0)
			}
			for x, v := range power {
				law[x] += count[n] * v / more
			}
			power = polyConvolve(power, lump)
		}
		cases = append(cases, aheadCase{more, law, -1, false, nil})
	}
	return cases
}

// poissonLaw is the Poisson law of mean mean, up to the count beyond
// which less than tail is left (at most 256 counts).
func poissonLaw(mean, tail float64) []float64 {
	if mean <= 0 {
		return []float64{1}
	}
	law := distuv.Poisson{Lambda: mean}
	var out []float64
	for k := 0.0; k < 256; k++ {
		out = append(out, law.Prob(k))
		if law.Survival(k) < tail {
			break
		}
	}
	return out
}

// groupEnds are the laws, from a window's start, of when a group's server
// is done with the work of the window: end for a group that had accesses
// in the phase (its last one), idle for a group that had none (the work
// ahead of the phase), and none its chance of none; total is what the
// sums weigh while they are being added up.
type groupEnds struct {
	end, idle   []float64
	none, total float64
}

// groupEnds is groupEnds for a window whose work ahead has law ahead and
// whose accesses at a group have law counts.
func (g grid) groupEnds(ahead, counts []float64, sums [][]float64) groupEnds {
	some := make([]float64, len(counts))
	copy(some[1:], counts[1:])
	for c := range some {
		some[c] /= 1 - counts[0]
	}
	return groupEnds{end: convolve(ahead, g.countsOfSums(some, sums)), idle: ahead, none: counts[0], total: 1}
}

// add adds e weighed by w.
func (e *groupEnds) add(o groupEnds, w float64) {
	if e.end == nil {
		e.end, e.idle = make([]float64, len(o.end)), make([]float64, len(o.idle))
	}
	for t := range o.end {
		e.end[t] += w * o.end[t]
		e.idle[t] += w * o.idle[t]
	}
	e.none += w * o.none
	e.total += w
}

// scaled is e with its sums divided by their weight.
func (e groupEnds) scaled() groupEnds {
	for t := range e.end {
		e.end[t] /= e.total
		e.idle[t] /= e.total
	}
	return groupEnds{end: e.end, idle: e.idle, none: e.none / e.total, total: 1}
}

// freeLaw is the CDF of when a group other than the last is done with
// window i (st, from the window's start) given window i ended at s: a
// group with accesses in it ended by s; one without is done with the
// work ahead of it whenever that is.
func (st groupEnds) freeLaw(s, n int) []float64 {
	end, idle := cumulative(st.end), cumulative(st.idle)
	cdf := make([]float64, n)
	for x := range cdf {
		e := 1.0
		if x < s && end[s] > 0 {
			e = end[x] / end[s]
		}
		cdf[x] = st.none*idle[x] + (1-st.none)*e
	}
	return cdf
}

// serverLumps are the cases of the lumps within a window (shared by the
// groups), each with the law of the work it brings a group and, for the
// last group (which starts it at the barrier), when it is done with that
// work and m accesses more, from the barrier (last[case][m], a CDF).
type serverLumps struct {
	cases []aheadCase
	work  [][]float64
	last  [][][]float64
}

// newServerLumps is serverLumps for cases; second holds the laws of m
// accesses and the reply, m = 1..k.
func (g grid) newServerLumps(cases []aheadCase, sums [][]float64, second *spectra) *serverLumps {
	wl := &serverLumps{cases: cases}
	for _, c := range cases {
		work := g.countsOfSums(c.law[:min(len(c.law), len(sums))], sums)
		rows := [][]float64{onesLike(g.n)} // no access: done at the barrier
		second.each(work, func(_ int, pmf []float64) { rows = append(rows, cumulative(pmf)) })
		wl.work, wl.last = append(wl.work, work), append(wl.last, rows)
	}
	return wl
}

// nextWindow is the law of window i+1's length given window i ended at
// s (cells from its start), the groups' ends of window i st, the lumps
// within window i wl, phase i+1's count at a group counts; and the
// groups' ends of window i+1 from its start. The lumps' count is shared
// by the groups, each group's accesses from them its own; the last group
// (the one that ended window i at s) starts them at s, every other at
// the later of their arrival and its own end (freeAt), and each serves
// its phase i+1 accesses after them or from s; the groups are
// independent given the case, the accesses split multinomially.
func (g grid) nextWindow(st groupEnds, s int, wl *serverLumps, counts []float64, r int, sums [][]float64, second *spectra) ([]float64, groupEnds) {
	k := len(counts) - 1
	free := st.freeLaw(s, g.n)
	done := make([]float64, g.n) // P(window i+1 ends by t), t from window i's start
	other, last := make([][]float64, k+1), make([][]float64, k+1)
	for m := range other {
		other[m], last[m] = make([]float64, g.n), make([]float64, g.n)
	}
	for t := s; t < g.n; t++ {
		other[0][t], last[0][t] = 1, 1 // no access in the phase: done at the barrier
	}
	// ahead: when a group is free for phase i+1, from window i+1's start
	// (the last group is one in r), over the cases.
	ahead := make([]float64, g.n)
	weight := 0.0
	for j, c := range wl.cases {
		if c.w < 1e-14 {
			continue
		}
		// z: when the group is done with the lumps (free for phase i+1
		// from the later of that and s).
		z := convolve(g.freeAt(free, s, c), wl.work[j])
		g.startOnArrival(other[1:], z, []float64{1}, sums, second, s)
		for x := 0; x < s; x++ {
			z[s] += z[x]
		}
		for m := 1; m <= k; m++ {
			copy(last[m][s:], wl.last[j][m][:g.n-s])
		}
		for t, v := range multinomialProductMarked(last, other, r, s, g.n) {
			done[t] += c.w * v
		}
		for x := s; x < g.n; x++ {
			ahead[x-s] += c.w * (z[x]*float64(r-1) + wl.work[j][x-s]) / float64(r)
		}
		weight += c.w
	}
	for x := range ahead {
		ahead[x] /= weight
	}
	window := make([]float64, g.n)
	for t := s; t < g.n; t++ {
		window[t-s] = done[t]
	}
	return differences(window), g.groupEnds(ahead, counts, sums)
}

// spectralSum is a sum of convolutions of laws on a grid, kept as its
// transform: one transform a term and one back at the end.
type spectralSum struct {
	sp  *spectra
	acc []complex128
}

func (sp *spectra) sum() *spectralSum {
	return &spectralSum{sp: sp, acc: make([]complex128, sp.size/2+1)}
}

// add adds x*y.
func (s *spectralSum) add(x, y []float64) { s.addTransformed(s.sp.transform(x), y) }

// addTransformed adds x*y, x given by its transform.
func (s *spectralSum) addTransformed(cx []complex128, y []float64) {
	for j, v := range s.sp.transform(y) {
		s.acc[j] += cx[j] * v
	}
}

// law is the sum, truncated to the grid.
func (s *spectralSum) law() []float64 {
	seq := s.sp.ft.Sequence(nil, s.acc)
	out := make([]float64, s.sp.n)
	for t := range out {
		out[t] = math.Max(0, seq[t]/float64(s.sp.size))
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fewerCounts merges the laws byCount[a] (a law of T_i while a requests
// have arrived, its mass that count's chance) into at most most counts
// that weigh 1e-12 or more: runs of counts of about equal weight, each at
// its weighted mean count. The counts are returned as they are when
// there are no more than most.
func fewerCounts(byCount [][]float64, most int) [][]float64 {
	weights := make([]float64, len(byCount))
	kept := 0
	for a, e := range byCount {
		for _, v := range e {
			weights[a] += v
		}
		if weights[a] >= 1e-12 {
			kept++
		}
	}
	if kept <= most {
		return byCount
	}
	out := make([][]float64, len(byCount))
	for _, bin := range weighedBins(weights, 0, most) {
		e := make([]float64, len(byCount[0]))
		for a := bin.lo; a < bin.hi; a++ {
			for t, v := range byCount[a] {
				e[t] += v
			}
		}
		if out[bin.at] == nil {
			out[bin.at] = e
			continue
		}
		for t, v := range e {
			out[bin.at][t] += v
		}
	}
	for a := range out {
		if out[a] == nil {
			out[a] = make([]float64, len(byCount[0]))
		}
	}
	return out
}

package model

import (
	"maps"
	"math"
	"slices"
)

// busyClassLevels is how many of the last lumps to reach a group
// busyClasses follows, busyClassTails where it cuts the busy wait into
// classes (the busy weight's lower half, the next 4/10, the top tenth).
// In a simulation of Olio (phases 30,20) on 4x2 at 30% the chance that an
// arrival finds a group's every duplicate's wait past 15 ms is 0.0097;
// given the shared key of the last 1, 2, 3 lumps (in 1 ms bins) and the
// duplicates drawn apart, 0.0022, 0.0057, 0.0077 (0.0003 with the busy
// wait drawn apart, as before). Against one group's shared lumps alone
// (TestBusyClassesAgainstSharedLumps, 4 duplicates: 0.0210 and 0.0060
// past 10 and 15 ms) six classes of halving weight gave 0.0190 and
// 0.0053, these three 0.0159 and 0.0044, two (cut at the busy weight's
// half) 0.0111 and 0.0006; each class a state of the engines, whose work
// grows with the states, three keep the cost within about 1.5 times.
var busyClassTails = []float64{1.0 / 2, 1.0 / 10}

const (
	busyClassLevels = 3
	// busyClassKeys is how many bins of the key (of two mean service
	// times each) a level keeps, the last holding every key past them.
	busyClassKeys = 32
)

// busyClass is a class of what a group's duplicates share of the work
// they hold: key is that work at mean service times (in cells), w its
// chance, law a duplicate's wait given it.
type busyClass struct {
	key float64
	w   float64
	law []float64
}

// busyClasses splits a duplicate's stationary wait (wait, the M/G/1
// workload of lumps arriving at lumpRate per second, each a count of law
// counts of service times, sums[c] the law of c) into classes of what a
// group's duplicates share, and gives the busy part: the classes' chances
// given the duplicate is busy (summing to 1) and its wait given each
// (not 0). The duplicates receive the same lumps at the same instants and
// differ in their service draws only, so at an arrival each holds
// W = max(0, W' + S(c) - a), a the age of the last lump, c its count and
// W' the wait that lump found (the same identity one lump further back,
// and so on): a and c are the same at every duplicate. Following the last
// busyClassLevels lumps, the oldest's wait drawn apart, the shared key
// u = max(0, u' + c m - a) (m the mean service time) marks what the
// duplicates hold in common; given it they are independent. A busy
// group's duplicates drawn apart from the one busy law had put the tails
// of two and more groups of duplicates fast (at 30% their p99 by up to
// 0.012): much work at one duplicate comes with much at the others (two
// requests' work, reaching every duplicate at once). The mixture over the
// classes is the stationary wait (each level is the identity above).
func (g grid) busyClasses(wait, counts []float64, lumpRate, mean float64, sums [][]float64) []weightedLaw {
	m := mean / g.h
	width := 2 * m
	q := math.Exp(-lumpRate * g.h)
	// The age a in cells, rounded: cell 0 takes ages below h/2, cell j
	// those in ((j-1/2)h, (j+1/2)h].
	age := make([]float64, g.n+1)
	age[0] = 1 - math.Sqrt(q)
	for j := 1; j <= g.n; j++ {
		age[j] = math.Pow(q, float64(j)-0.5) * (1 - q)
	}
	sp := g.newSpectra(len(counts), func(c int) []float64 { return sums[c] })
	classes := []busyClass{{0, 1, wait}}
	for range busyClassLevels {
		bins := map[int]*busyClass{}
		for _, b := range classes {
			cx := sp.transform(b.law)
			for c, pc := range counts {
				if pc < 1e-9 || b.w < 1e-9 {
					continue
				}
				x := sp.times(cx, c)
				top := b.key + float64(c)*m
				// The ages that put the key in bin k (keys in bins of
				// width): those with k width <= top - a < (k+1) width,
				// bin 0 all beyond, the last bin all before.
				last := busyClassKeys - 1
				for k := min(last, int(top/width)); k >= 0; k-- {
					lo := max(0, int(math.Floor(top-float64(k+1)*width))+1)
					hi := int(math.Floor(top-float64(k)*width)) + 1
					if k == last {
						lo = 0
					}
					if k == 0 {
						hi = math.MaxInt
					}
					if lo >= hi {
						continue
					}
					bin := bins[k]
					if bin == nil {
						bin = &busyClass{law: make([]float64, g.n)}
						bins[k] = bin
					}
					g.agedInto(bin.law, x, b.w*pc, lo, hi, age, q)
				}
			}
		}
		keys := slices.Sorted(maps.Keys(bins))
		classes = classes[:0]
		for _, k := range keys {
			bin := bins[k]
			total := 0.0
			for _, v := range bin.law {
				total += v
			}
			key := 0.0
			if k > 0 {
				key = (float64(k) + 0.5) * width
			}
			for i := range bin.law {
				bin.law[i] /= total
			}
			classes = append(classes, busyClass{key, total, bin.law})
		}
	}
	return busyTail(classes, busyClassTails)
}

// agedInto adds to out w times the law of max(0, X - a), X of law x, over
// the ages a in [lo, hi) cells of chance age[a] (from 1 on, q^a times a
// constant): each cell i > 0 sums x[i+a] over the ages, a running sum
// from the grid's end down; cell 0 takes P(X <= a).
func (g grid) agedInto(out, x []float64, w float64, lo, hi int, age []float64, q float64) {
	n := g.n
	cdf := 0.0
	a := 0
	for ; a < min(hi, n); a++ {
		cdf += x[a]
		if a >= lo {
			out[0] += w * age[a] * cdf
		}
	}
	if hi > n && max(lo, n) >= 1 {
		// The ages past the grid leave X idle: their chance is
		// q^(j-1/2) summed from j on.
		out[0] += w * math.Pow(q, float64(max(lo, n))-0.5) * cdf
	}
	// Cells i > 0: T(i) = sum over a in [lo, hi) of age(a) x[i+a].
	from := max(lo, 1)
	if lo == 0 {
		// age 0 apart: it is not of the geometric form.
		for i := 1; i < n; i++ {
			out[i] += w * age[0] * x[i]
		}
	}
	top := min(hi, n)
	if from >= top {
		return
	}
	at := func(j int) float64 {
		if j < n {
			return x[j]
		}
		return 0
	}
	t := 0.0
	first, end := age[from], age[top]
	for i := n - 1; i >= 1; i-- {
		t = q*t + first*at(i+from)
		if top < n {
			t -= end * at(i+top)
		}
		out[i] += w * t
	}
}

// busyTail keeps the busy part of classes (in order of key) in classes
// cut where the busy weight above falls to each of tails (shares of the
// busy weight, decreasing): the tail, where the duplicates' shared work
// decides, keeps the most classes. The weights are given busy; the laws
// are not 0.
func busyTail(classes []busyClass, tails []float64) []weightedLaw {
	busy := 0.0
	for _, c := range classes {
		busy += c.w * (1 - c.law[0])
	}
	var out []weightedLaw
	var cur weightedLaw
	below := 0.0 // the busy weight of the classes kept and cur
	for _, c := range classes {
		b := c.w * (1 - c.law[0])
		if b <= 0 {
			continue
		}
		if cur.pmf == nil {
			cur.pmf = make([]float64, len(c.law))
		}
		for j := 1; j < len(c.law); j++ {
			cur.pmf[j] += c.w * c.law[j]
		}
		cur.w += b
		below += b
		if len(out) < len(tails) && busy-below <= tails[len(out)]*busy {
			out = append(out, cur)
			cur = weightedLaw{}
		}
	}
	if cur.pmf != nil {
		out = append(out, cur)
	}
	for i := range out {
		for j := range out[i].pmf {
			out[i].pmf[j] /= out[i].w
		}
		out[i].w /= busy
	}
	return out
}

// presentStates are a group's states given some request present, for
// phases whose accesses each reach the group with chance p (requests at
// rate, services of mean mean): idle, or busy (with chance busy) in each
// of busyClasses' classes of the stationary wait, which the group's
// duplicates share. Nil when the wait is never busy.
func (g grid) presentStates(stationary []float64, phases []int, p, rate, mean float64, sums [][]float64, busy float64) []weightedLaw {
	if 1-stationary[0] < 1e-12 {
		return nil
	}
	idle := make([]float64, g.n)
	idle[0] = 1
	states := []weightedLaw{{1 - busy, idle}}
	for _, c := range g.busyClasses(stationary, phaseCounts(phases, p), rate*float64(len(phases)), mean, sums) {
		states = append(states, weightedLaw{busy * c.w, c.pmf})
	}
	return states
}

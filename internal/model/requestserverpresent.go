package model

import "math"

// presentCountClasses is how many classes presentClasses makes of the
// count of requests present: one request alone, and two or more (their
// work and count drawn apart within the class). Three classes (1, 2, 3
// or more) gave three phases of 10 on 1x2 and 1x3 at 30% the same
// answers within 1e-4, at about 1.5 times the cost.
const presentCountClasses = 2

// presentClass is a class of the count N of requests present at an
// arrival (given N >= 1) for serverGroupsPhases: its chance, the work a
// group finds in it (independent between groups given the class) and the
// law of N-1, the present requests but the last.
type presentClass struct {
	weight        float64
	found, others []float64
}

// presentClasses splits the work each group finds, given some request
// present, by the count present N, which every group shares. The work a
// server holds is what the requests present have queued there, so much
// work means many present: in a simulation of three phases of 10 at 30%
// (2x10^6 arrivals) an arrival that found one server's work in (0, 4]
// ms found 1.00 requests present on average, past 8 ms 1.78 (two groups:
// 1.04-1.11 and 1.80; the correlation of the work and the count 0.91 on
// one server, 0.73 on two). Drawn apart, a long window 1 came with as
// few later lumps as a short one and the latency came out narrow: three
// phases of 10 on 1x2 at 30% 0.0031 fast at p99, and with one group
// (r = 1) 0.0099 slow at p50 and 0.0113 fast at p99 against simulations
// of 4x10^6 requests.
//
// N is Poisson (mean present, the rate times the mean latency) and a
// group's work w its compound, each present request bringing the group
// a residual R (nothing with some chance: a request at its barrier, or
// with no access at the group), so given N = n a group finds R's n-fold
// sum, independent between groups, and mixed over n it finds w given
// N >= 1, as drawn apart. R is w's compound Poisson law inverted
// (Panjer's recursion, backwards). The counts 1, ..., most-1 are classes
// of their own, the rest one class (their work and count drawn apart
// within it).
func presentClasses(w []float64, present float64, most int) []presentClass {
	n := len(w)
	resid := compoundInverse(w, present)
	pois := poissonLaw(present, 1e-10)
	idle := pois[0]
	var out []presentClass
	power := make([]float64, n) // R's m-fold sum
	power[0] = 1
	var last *presentClass
	for m := 1; m < len(pois); m++ {
		power = convolve(power, resid)
		p := pois[m] / (1 - idle)
		if m < most {
			out = append(out, presentClass{weight: p, found: append([]float64(nil), power...), others: countAt(m - 1)})
			continue
		}
		if last == nil {
			out = append(out, presentClass{found: make([]float64, n)})
			last = &out[len(out)-1]
		}
		last.weight += p
		for i, v := range power {
			last.found[i] += p * v
		}
		for len(last.others) < m {
			last.others = append(last.others, 0)
		}
		last.others[m-1] += p
	}
	if last != nil && last.weight > 0 {
		for i := range last.found {
			last.found[i] /= last.weight
		}
		for i := range last.others {
			last.others[i] /= last.weight
		}
	}
	total := 0.0
	for _, c := range out {
		total += c.weight
	}
	for i := range out {
		out[i].weight /= total
	}
	return out
}

// countAt is the law of the count m.
func countAt(m int) []float64 {
	out := make([]float64, m+1)
	out[m] = 1
	return out
}

// compoundInverse is the law R whose compound Poisson sum, at mean
// count mean, is w (on the grid): R has an atom at 0 that takes what
// mean leaves over the chance w[0] of nothing, and its positive part is
// Panjer's recursion run backwards, w_x = (l/x) sum_y y f_y w_{x-y} with
// l = -ln w[0] (negative terms clamped, the law renormalised).
func compoundInverse(w []float64, mean float64) []float64 {
	n := len(w)
	l := -math.Log(w[0])
	if l > mean { // w idle less often than no request present: no atom
		mean = l
	}
	f := make([]float64, n)
	for x := 1; x < n; x++ {
		acc := float64(x) * w[x] / l
		for y := 1; y < x; y++ {
			acc -= float64(y) * f[y] * w[x-y]
		}
		f[x] = math.Max(0, acc/(float64(x)*w[0]))
	}
	total := 0.0
	for _, v := range f {
		total += v
	}
	out := make([]float64, n)
	if total <= 0 {
		out[0] = 1
		return out
	}
	share := l / mean // R > 0 with this chance
	out[0] = 1 - share
	for x := 1; x < n; x++ {
		out[x] = share * f[x] / total
	}
	return out
}

package model

import "math"

// What a request finds when none is present, with duplicates in several
// groups: duplicates are not cancelled, so when a request ends (each
// group's first duplicate done) the slower duplicates of its groups may
// still be serving its accesses, and a request that arrives before they
// are done finds them busy though no request is present.

// leftover is the state an arrival that finds no request present finds
// at a group: with chance weight some duplicate of the group is still
// busy with the last request's accesses, and then each duplicate's wait
// has law law (an atom at 0 for the idle ones); busy is a duplicate's
// chance of being busy (weight times law's busy share).
type leftover struct {
	weight, busy float64
	law          []float64
}

// finishedLeftover is the leftover (above) of a request of two phases (k1
// then k2 accesses, each to one of r groups of d duplicates) that ran
// alone and left the system empty, found by the next request, which
// arrives at rate after its end. A duplicate starts its second phase at
// the later of its own end of the first phase and T1 (the first phase's
// end: the last group's first duplicate done), so it starts it Δ after
// T1, Δ = (F - max(F', O1))+ (F its end of the first phase, F' the
// earliest of its group's other duplicates', O1 the latest of the other
// groups' earliest ends); it ends that phase at Δ + W (W its m services)
// and the request ends with the latest group's first duplicate, so it is
// still busy X = (Δ + W - max(M', O2))+ after the request's end (M', O2
// as above, for the second phase). The next request arrives E after the
// end (exponential at rate), and finds the duplicate busy for X - E when
// X > E. Given the counts the duplicates' ends are independent; each
// duplicate's Δ is taken apart from the others' (the last group's first
// duplicate has Δ = 0 exactly), the other groups' counts apart from one
// another (their total is fixed), and the request's end is its last
// reply's at the server (the reply's network delay, which would shorten
// the leftover, is left out).
func (g grid) finishedLeftover(k1, k2, r, d int, rate float64, sums [][]float64) leftover {
	sums = extendSums(sums, max(k1, k2)+1)
	ones := make([]float64, g.n)
	ones[0] = 1
	// Δ: the first phase, read at T1 (E = 0).
	start, _, _ := g.lateRest(sums[:k1+1], k1, r, d, 0)
	delta := make([]float64, g.n)
	delta[0] = 1
	for z := 1; z < g.n; z++ {
		delta[z] = start[z-1] - start[z]
		delta[0] -= delta[z]
	}
	delta[0] = math.Max(0, delta[0])
	// X - E: the second phase, each duplicate Δ late.
	second := make([][]float64, k2+1)
	for m := range second {
		second[m] = convolve(delta, sums[m])
	}
	tail, busy, some := g.lateRest(second, k2, r, d, rate)
	if busy < 1e-12 || some < 1e-12 {
		return leftover{law: ones}
	}
	// Each duplicate of a group with some busy is busy with chance
	// busy/some (the engine draws them apart given the state), its wait
	// then the leftover's law.
	share := busy / some
	law := make([]float64, g.n)
	law[0] = 1 - share
	for z := 1; z < g.n; z++ {
		law[z] = share * (tail[z-1] - tail[z]) / busy
	}
	return leftover{weight: some, busy: busy, law: law}
}

// lateRest is, for one phase of k accesses over r groups of d duplicates
// whose ends have law ends[c] (pmf on g) given a group's count c, how
// long a duplicate is still busy after the phase's end (the latest
// group's earliest end) and after a further exponential gap E at rate (0:
// none): tail[z] = P(X - E > z), busy = P(X > E) for one duplicate, and
// some = P(some duplicate of its group has X > E); mixed over the group's
// count (Binomial(k, 1/r)), the other groups' counts taken apart, each
// Binomial of what is left.
func (g grid) lateRest(ends [][]float64, k, r, d int, rate float64) (tail []float64, busy, some float64) {
	n := g.n
	// rho: E's chance of reaching the next cell; a cell's weight is 1-rho.
	rho := math.Exp(-rate * g.h)
	if rate == 0 {
		rho = 0
	}
	// sf[c][x] = P(end > x) at a duplicate holding c accesses;
	// groupEnd[c][x] = P(its group's earliest end <= x).
	sf := make([][]float64, k+1)
	groupEnd := make([][]float64, k+1)
	for c, law := range ends {
		cdf := cumulative(law)
		sf[c] = make([]float64, n)
		groupEnd[c] = make([]float64, n)
		for x, v := range cdf {
			sf[c][x] = math.Max(0, 1-v)
			groupEnd[c][x] = 1 - ipow(sf[c][x], d)
		}
	}
	tail = make([]float64, n)
	prior := binomial(k, 1/float64(r))
	oc := make([]float64, n)  // the other groups' latest earliest end: CDF
	vc := make([]float64, n)  // V = max(M', O): CDF
	q := make([]float64, n+1) // q[u] = sum over y of P(E = y) sf[u+y]
	jy := make([]float64, n+1)
	for c, pc := range prior {
		if pc < 1e-12 {
			continue
		}
		s := sf[c]
		// O: the r-1 other groups share k-c accesses.
		for x := range oc {
			oc[x] = 1
		}
		if r > 1 {
			rest := binomial(k-c, 1/float64(r-1))
			for x := range oc {
				mix := 0.0
				for c2, w := range rest {
					mix += w * groupEnd[c2][x]
				}
				oc[x] = ipow(mix, r-1)
			}
		}
		for x := range vc {
			vc[x] = (1 - ipow(s[x], d-1)) * oc[x]
		}
		v := differences(vc)
		q[n] = 0
		for u := n - 1; u >= 0; u-- {
			q[u] = (1-rho)*s[u] + rho*q[u+1]
		}
		// P(X - E > z) = sum over V's cells of P(V = x) q[x+z].
		for x, pv := range v {
			if pv < 1e-15 {
				continue
			}
			for z := 0; x+z < n; z++ {
				tail[z] += pc * pv * q[x+z]
			}
		}
		// Some duplicate busy: the latest one, W(d) > max(W(1), O) + E,
		// by W(1)'s cell a: P(W(1) = a, W(d) > b) for b >= a.
		fc := func(x int) float64 {
			if x < 0 {
				return 0
			}
			return 1 - s[x]
		}
		for a := 0; a < n; a++ {
			atA := ipow(1-fc(a-1), d) - ipow(1-fc(a), d)
			if atA < 1e-15 {
				continue
			}
			jy[n] = 0
			for b := n - 1; b >= a; b-- {
				within := ipow(fc(b)-fc(a-1), d) - ipow(fc(b)-fc(a), d)
				jy[b] = (1-rho)*math.Max(0, atA-within) + rho*jy[b+1]
			}
			acc := oc[a] * jy[a]
			for b := a + 1; b < n; b++ {
				acc += (oc[b] - oc[b-1]) * jy[b]
			}
			some += pc * acc
		}
	}
	return tail, tail[0], some
}

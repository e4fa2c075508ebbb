package model

import "math"

// What duplicates share. The duplicates of a group receive the same
// accesses at the same instants and differ only in their service draws:
// another request that arrived just before a request, or arrives while it
// runs, delays every duplicate alike, and no duplicate masks that delay.
// Given those shared arrivals the duplicates are independent, so the
// request predictor conditions on them: on the age of the last lump of
// work to reach the group before the request (the wait it finds), and on
// the instant of the first request to arrive while the request's first
// phase runs (whose accesses go ahead of its second phase's at every
// duplicate). Older lumps and later arrivals are still taken as
// independent between duplicates.

// pastStates is the law of a duplicate's wait at an arrival, split by the
// age of the last lump before it: lumps of law lump (arriving at rate, a
// Poisson stream) land on a workload of law wait (the stationary one, as
// PASTA gives it), and the wait found is that sum less the age, or 0. Each
// state is a weight and the wait's law given that age; their mixture is
// wait's law again. Ages beyond the lumps' reach give a wait of 0.
func (g grid) pastStates(wait, lump []float64, rate float64, ages int) []weightedLaw {
	ahead := convolve(wait, lump) // the work just after the last lump
	reach := len(ahead) - 1
	for reach > 0 && ahead[reach] < 1e-13 {
		reach--
	}
	step := max(1, (reach+ages)/ages) // cells per age interval
	var out []weightedLaw
	for lo := 0; lo <= reach; lo += step {
		hi := min(lo+step, reach+1)
		w := math.Exp(-rate*float64(lo)*g.h) - math.Exp(-rate*float64(hi)*g.h)
		if w < 1e-15 {
			continue
		}
		age := (lo + hi) / 2
		law := make([]float64, g.n)
		for i, p := range ahead {
			law[max(0, i-age)] += p
		}
		out = append(out, weightedLaw{w, law})
	}
	idle := make([]float64, g.n)
	idle[0] = 1
	return append(out, weightedLaw{math.Exp(-rate * float64(reach+1) * g.h), idle})
}

type weightedLaw struct {
	w   float64
	pmf []float64
}

// oneGroupTwoPhases is P(latency <= cell i) of a request of two phases on
// one group of d duplicates, given the law y of a duplicate's end of the
// first phase (its wait and the phase's accesses) and last, the law of
// the second phase's accesses one after the other. Requests arriving at
// rate put a lump (law lump) at every duplicate; the first to arrive
// before the first phase ends (at the first duplicate done with it) goes
// ahead of the second phase everywhere. With u its instant:
//
//	P(R <= t | u) = 1 - γ(t)^d + δ(u,t)^d - β(u,t)^d
//
// γ(t) = P(Y+G > t), δ(u,t) = P(Y > u, Y+G > t), β(u,t) = P(Y > u,
// Y+L+G > t), Y the first phase's end, G the second's work, L the lump.
// Later arrivals within the phase are left out.
func (g grid) oneGroupTwoPhases(y, last, lump []float64, rate float64, d int) []float64 {
	G := cumulative(last)
	LG := cumulative(convolve(lump, last))
	gamma := cumulative(convolve(y, last))
	pow := func(x float64) float64 { return ipow(math.Max(0, x), d) }
	// uw[u]: the chance the first arrival falls in cell u; the sum over u
	// takes δ and β at every fourth cell, weighing the four.
	const stride = 4
	uw := make([]float64, g.n)
	for u := range uw {
		uw[u] = math.Exp(-rate*float64(u)*g.h) - math.Exp(-rate*float64(u+1)*g.h)
	}
	tail := make([]float64, g.n+1) // tail[u] = P(Y > u)
	for u := g.n - 2; u >= 0; u-- {
		tail[u] = tail[u+1] + y[u+1]
	}
	out := make([]float64, g.n)
	for t := range out {
		// From u = t up, δ = β = P(Y > u): the term is 0. Below, walk u
		// down to 0 keeping δ(u,t) and β(u,t) as suffix sums over the
		// first phase's ends v > u.
		delta, beta := tail[t], tail[t]
		var sum, w float64
		for u := t - 1; u >= 0; u-- {
			v := u + 1
			delta += y[v] * (1 - G[t-v])
			beta += y[v] * (1 - LG[t-v])
			if w += uw[u]; u%stride == 0 {
				sum += w * (pow(delta) - pow(beta))
				w = 0
			}
		}
		out[t] = clamp01(1 - pow(1-gamma[t]) + sum)
	}
	return out
}

// ipow is x^n for n >= 0.
func ipow(x float64, n int) float64 {
	out := 1.0
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			out *= x
		}
		x *= x
	}
	return out
}

// oneGroupShared is the request law on one group of d > 1 duplicates for a
// request of one or two phases arriving alone: wait is the stationary wait
// of whole requests' work (lumps of law whole, at rate), net the reply's
// network delay, sums[c] the law of c service times.
func (g grid) oneGroupShared(phases []int, sums [][]float64, wait, net []float64, rate float64, d int) []float64 {
	law := make([]float64, g.n)
	for _, st := range g.pastStates(wait, sums[len(sums)-1], rate, 48) {
		y := convolve(convolve(st.pmf, net), sums[phases[0]])
		var cdf []float64
		if len(phases) == 1 {
			cdf = cumulative(y)
			for i, c := range cdf {
				cdf[i] = 1 - ipow(1-c, d)
			}
		} else {
			cdf = g.oneGroupTwoPhases(y, sums[phases[1]], sums[phases[0]], rate, d)
		}
		for i, c := range cdf {
			law[i] += st.w * c
		}
	}
	return law
}

// twoPhaseGroupsCells is the grid of the predictor of two phases over
// several groups of duplicates: its work grows with the cells squared
// times the phases' accesses squared.
const twoPhaseGroupsCells = 512

// twoPhaseGroups is the request law of two phases (k1 then k2 accesses,
// each to a uniformly random one of r groups of d > 1 duplicates) for a
// request arriving alone, given on g: wait is a duplicate's wait (taken as
// the stationary one, independent between duplicates), sums[c] the law of
// c service times.
//
// A group's duplicates are still serving its share of the first phase
// when the slowest group ends that phase at T1 and the second phase
// arrives: its second-phase accesses queue behind them. Given T1 = s,
// a duplicate j of a group that got n first-phase and m second-phase
// accesses ends at max(F_j, s) + U_j (F_j its end of the first phase, U_j
// its wait and m services), and the group is done when its first
// duplicate is; the group's first phase ended by s. So, with a = P(F > s),
// b = P(max(F, s) + U > t) and c = P(F > s, F + U > t), the group is done
// by t with chance (1 - a^d - b^d + c^d) / (1 - a^d). The groups are
// taken as independent given T1, each with its first-phase count weighed
// by the chance it ended by s; the second phase's accesses split over
// the groups exactly (multinomially), and T1's law is exact given the
// waits.
func (g grid) twoPhaseGroups(k1, k2, r, d int, states []weightedLaw, arrived func(window float64) []float64, sums [][]float64) []float64 {
	p := 1 / float64(r)
	n1, n2 := k1+1, k2+1
	prior := binomial(k1, p)
	// A group's first-phase count n and the state st of its duplicates
	// (what they share) are one index, i = n*len(states)+st, weighing
	// prior[n] * states[st].w.
	ns := len(states)
	ni := n1 * ns
	count := func(i int) int { return i / ns }
	pri := make([]float64, ni)
	for i := range pri {
		pri[i] = prior[count(i)] * states[i%ns].w
	}
	f := make([][]float64, ni) // f[i]: F's law, a duplicate's end of its n first-phase accesses
	A := make([][]float64, ni) // A[i][s]: the group's first phase ended by s
	for i := range f {
		n := count(i)
		f[i] = convolve(states[i%ns].pmf, sums[n])
		A[i] = onesLike(g.n)
		if n > 0 {
			cdf := cumulative(f[i])
			for s := range A[i] {
				A[i][s] = 1 - ipow(1-cdf[s], d)
			}
		}
	}
	Fcdf := make([][]float64, ni)
	for i := range f {
		Fcdf[i] = cumulative(f[i])
	}
	// T1's law: a group's chance of having ended by s, over its states.
	An := make([][]float64, n1)
	for n := range An {
		An[n] = make([]float64, g.n)
		for st := range states {
			for s, v := range A[n*ns+st] {
				An[n][s] += states[st].w * v
			}
		}
	}
	t1 := differences(multinomialProduct(An, r, g.n))
	// Ahead of the second phase at a duplicate is what other requests
	// brought it while the first phase ran: taken over T1's mean.
	meanT1 := 0.0
	for s, w := range t1 {
		meanT1 += w * float64(s) * g.h
	}
	ahead := arrived(meanT1)
	Ubar := make([][]float64, n2) // Ubar[m][x]: P(U > x), U the work that arrived and m services
	for m := range Ubar {
		cdf := cumulative(convolve(ahead, sums[m]))
		Ubar[m] = make([]float64, g.n)
		for x, c := range cdf {
			Ubar[m][x] = 1 - c
		}
	}

	// c[n][m][t] = P(F_n > s, F_n + U_m > t), kept for the current s.
	c := make([][][]float64, ni)
	for n := range c {
		c[n] = make([][]float64, n2)
		for m := range c[n] {
			c[n][m] = make([]float64, g.n)
		}
	}
	law := make([]float64, g.n)
	h := make([][]float64, n2) // h[m][t], as multinomialProduct takes it
	for m := range h {
		h[m] = make([]float64, g.n)
	}
	hStar := make([][]float64, n2) // the same for the group whose first phase ended last, at s
	for m := range hStar {
		hStar[m] = make([]float64, g.n)
	}
	weight, weightStar := make([]float64, ni), make([]float64, ni)
	for s := g.n - 1; s >= 0; s-- {
		// c(s) from c(s+1): F in cell s+1 is now past s.
		if s+1 < g.n {
			for i := range c {
				fv := f[i][s+1]
				if fv < 1e-300 || pri[i] < 1e-15 {
					continue
				}
				for m := range c[i] {
					row := c[i][m]
					for t := range s + 1 {
						row[t] += fv // U > t-s-1 < 0 surely
					}
					for t := s + 1; t < g.n; t++ {
						row[t] += fv * Ubar[m][t-s-1]
					}
				}
			}
		}
		if t1[s] < 1e-13 {
			continue
		}
		total, totalStar := 0.0, 0.0
		for i := range weight {
			weight[i] = pri[i] * A[i][s]
			total += weight[i]
			if a := 1 - Fcdf[i][s]; count(i) > 0 {
				// The density of the first duplicate's end at s.
				weightStar[i] = pri[i] * f[i][s] * ipow(a, d-1)
				totalStar += weightStar[i]
			}
		}
		for m := range h {
			clear(h[m][s:])
			clear(hStar[m][s:])
		}
		for i, w := range weight {
			ws := weightStar[i]
			if w < 1e-15 && ws < 1e-15 {
				continue
			}
			w, ws = w/total, ws/totalStar
			a := 1 - Fcdf[i][s]
			ad := ipow(a, d)
			inv := 0.0 // 1/a, for the ratio c/a
			if a > 1e-300 {
				inv = 1 / a
			}
			for m := range h {
				row, hm, hs := c[i][m], h[m], hStar[m]
				for t := s; t < g.n; t++ {
					cc := row[t]
					u := Ubar[m][t-s]
					b := (1-a)*u + cc
					if count(i) == 0 {
						hm[t] += w * (1 - ipow(b, d))
						continue
					}
					if v := (1 - ad - ipow(b, d) + ipow(cc, d)) / (1 - ad); v > 0 {
						hm[t] += w * min(v, 1)
					}
					// The last group: its first duplicate ended the first
					// phase at s and then serves U; each other duplicate
					// (past s) fails with chance c/a.
					hs[t] += ws * (1 - ipow(min(1, cc*inv), d-1)*u)
				}
			}
		}
		if totalStar == 0 {
			continue
		}
		done := multinomialProductMarked(hStar, h, r, s, g.n)
		for t := s; t < g.n; t++ {
			law[t] += t1[s] * done[t]
		}
	}
	return law
}

// twoPhaseGroupsFor sets twoPhaseGroups up for sys on g: the wait of
// lumps of each phase's share of a group, and the network delay.
func (g grid) twoPhaseGroupsFor(sys System, phases []int, r, d int, rho float64) []float64 {
	k1, k2 := phases[0], phases[1]
	svc := g.pmf(sys.Service)
	sums := make([][]float64, max(k1, k2)+1)
	sums[0] = make([]float64, g.n)
	sums[0][0] = 1
	for c := 1; c < len(sums); c++ {
		sums[c] = convolve(sums[c-1], svc)
	}
	// Lumps reach a group at each phase's start: a first phase's
	// Binomial(k1, 1/r) accesses, a second phase's Binomial(k2, 1/r).
	p := 1 / float64(r)
	lump := make([]float64, g.n)
	var mean float64
	for _, k := range phases {
		for c, w := range binomial(k, p) {
			for i, v := range sums[c] {
				lump[i] += w * v / 2
			}
			mean += w * float64(c) * sys.Service.Mean() / 2
		}
	}
	stationary := g.waitingPMF(g.lumpEquilibrium(lump, mean), rho)
	arrived := func(window float64) []float64 {
		return convolve(g.compoundPoisson(2*sys.Rate*window, lump), g.pmf(sys.net()))
	}
	// What the duplicates share: whether they are idle (they all are, or
	// none: they received the same work) or busy.
	net := g.pmf(sys.net())
	states := idleOrBusy(stationary)
	for i := range states {
		states[i].pmf = convolve(states[i].pmf, net)
	}
	return cumulative(differences(g.twoPhaseGroups(k1, k2, r, d, states, arrived, sums)))
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

// addScaled is dst + w*src, dst made when nil.
func addScaled(dst, src []float64, w float64) []float64 {
	if dst == nil {
		dst = make([]float64, len(src))
	}
	for i, v := range src {
		dst[i] += w * v
	}
	return dst
}

// compoundPoisson is the law of the work of Poisson(mean) lumps of law lump.
func (g grid) compoundPoisson(mean float64, lump []float64) []float64 {
	out := make([]float64, g.n)
	power := make([]float64, g.n)
	power[0] = 1
	pk := math.Exp(-mean)
	for k := 0; k < 256; k++ {
		for i, v := range power {
			out[i] += pk * v
		}
		pk *= mean / float64(k+1)
		if pk < 1e-15 && float64(k) > mean {
			break
		}
		power = convolve(power, lump)
	}
	return out
}

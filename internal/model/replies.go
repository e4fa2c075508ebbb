package model

// replyLaws are, for a server that serves a part of n accesses back to
// back, each reply then taking its own network delay, the laws of the
// part's end: from its first service's start, M(n) = max_i (T_i + N_i),
// its slowest reply; and the gap after its last service, Y(n) = M(n) -
// T(n), for where the server's being free from T(n) matters (it serves
// what came behind the part while the replies travel).
type replyLaws struct {
	ends [][]float64 // ends[n]: the pmf of M(n)
	gaps [][]float64 // gaps[n]: the CDF of Y(n)
}

// newReplyLaws are the reply laws on g of parts of 0 to most accesses,
// svc a service time's law and net a reply's delay's.
//
// M(n): with U the time left before t, V_n(U) = F_N(U) and V_i(U) =
// F_N(U) E[V_{i+1}(U - S)] give P(M(n) <= t) = E[V_1(t - S)], exact for
// any service law, all n in one pass (V_1 for n is n-1 steps from F_N).
// Y(n): Y(1) = N and Y(i) = max(Y(i-1) - S_i, N_i); Y(n) is not
// independent of T(n) but for a constant service, which is why a part's
// end is M(n) wherever the gap is not needed apart.
func (g grid) newReplyLaws(svc, net []float64, most int) replyLaws {
	fn := cumulative(net)
	r := replyLaws{ends: make([][]float64, most+1), gaps: make([][]float64, most+1)}
	r.ends[0] = g.pmf(Constant{0})
	r.gaps[0] = onesLike(g.n)
	step := newGapStep(fn, svc)
	v := append([]float64(nil), fn...)
	gap := append([]float64(nil), fn...)
	for n := 1; n <= most; n++ {
		// c = E[V_1(t - S)] for n accesses, M(n)'s CDF, and V_1 for n+1
		// is F_N times it.
		c := convolve(v, svc)
		r.ends[n] = differences(c)
		if n > 1 {
			gap = step.next(gap)
		}
		r.gaps[n] = gap
		v = c
		for u := range v {
			v[u] *= fn[u]
		}
	}
	return r
}

// gapStep takes the law of a part's reply gap one access on: Y_1 = N and
// Y_i = max(Y_{i-1} - S_i, N_i), so P(Y_i <= y) = F_N(y) P(Y_{i-1} <= y +
// S), with Y_{i-1} and S_i apart. fn is F_N on a grid, svc the service's
// pmf on it: shifts its cells with mass, beyond the mass past the grid
// (a service so long Y_{i-1} - S < 0 surely).
type gapStep struct {
	fn     []float64
	shifts []gapShift
	beyond float64
}

type gapShift struct {
	cells int
	mass  float64
}

func newGapStep(fn, svc []float64) gapStep {
	s := gapStep{fn: fn, beyond: 1}
	for j, m := range svc[:min(len(svc), len(fn))] {
		if m > 1e-14 {
			s.shifts = append(s.shifts, gapShift{j, m})
			s.beyond -= m
		}
	}
	s.beyond = max(0, s.beyond)
	return s
}

// next is Y_i's CDF from cur, Y_{i-1}'s.
func (s gapStep) next(cur []float64) []float64 {
	out := make([]float64, len(cur))
	for y := range out {
		below := s.beyond
		for _, sh := range s.shifts {
			if u := y + sh.cells; u < len(cur) {
				below += sh.mass * cur[u]
			} else {
				below += sh.mass
			}
		}
		out[y] = s.fn[y] * min(1, below)
	}
	return out
}

// gapless is whether the replies take no time: every gap is 0.
func (r replyLaws) gapless() bool {
	for _, cdf := range r.gaps {
		if cdf[0] < 1-1e-12 {
			return false
		}
	}
	return true
}

// partReplies are the reply laws of a group of duplicates' parts as the
// predictor takes them: one draw of net (fanOutNet's law of a part's
// last reply) after the part's services, sums[n] the law of n of them;
// a part of no access has no reply to wait for.
func (g grid) partReplies(sums [][]float64, net []float64) replyLaws {
	r := replyLaws{ends: make([][]float64, len(sums)), gaps: make([][]float64, len(sums))}
	gap := cumulative(net)
	r.ends[0], r.gaps[0] = sums[0], onesLike(g.n)
	for n := 1; n < len(sums); n++ {
		r.ends[n], r.gaps[n] = convolve(sums[n], net), gap
	}
	return r
}

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
	type shift struct {
		j    int
		mass float64
	}
	var shifts []shift
	beyond := 1.0 // a service longer than the grid: Y(i-1) - S < 0
	for j, m := range svc[:min(len(svc), g.n)] {
		if m > 1e-14 {
			shifts = append(shifts, shift{j, m})
			beyond -= m
		}
	}
	beyond = max(0, beyond)
	v := append([]float64(nil), fn...)
	gap := append([]float64(nil), fn...)
	for n := 1; n <= most; n++ {
		// c = E[V_1(t - S)] for n accesses, M(n)'s CDF, and V_1 for n+1
		// is F_N times it.
		c := convolve(v, svc)
		r.ends[n] = differences(c)
		if n > 1 {
			next := make([]float64, g.n)
			for u := range v {
				below := beyond
				for _, s := range shifts {
					if y := u + s.j; y < g.n {
						below += s.mass * gap[y]
					} else {
						below += s.mass
					}
				}
				next[u] = fn[u] * min(1, below)
			}
			gap = next
		}
		r.gaps[n] = gap
		v = c
		for u := range v {
			v[u] *= fn[u]
		}
	}
	return r
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

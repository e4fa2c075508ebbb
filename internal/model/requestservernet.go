package model

import (
	"math"

	"gonum.org/v1/gonum/floats"
)

// serverTwoPhasesNet is the request law of two phases (k1 then k2
// accesses) on one server, requests arriving alone at rate, when each
// reply takes a network delay of law net: wait is the stationary work of
// whole requests, sums[c] the law of c service times.
//
// serverPhases adds the delays after the windows, as if the server held
// the request's place through them. It does not: in the gap Y between the
// first phase's last service (at E) and its last reply the server serves
// what came behind that phase, and what arrives in the gap goes ahead of
// the second phase, which is queued only at E + Y. That left the predictor
// 0.0055 pessimistic at p99 at 1% load (the work behind the first phase
// taken whole, where the gap had served half of it) and 0.047 optimistic
// at the median at 30% (arrivals in the gap, and a request found in its
// own gap, left out). Here the second phase starts its service at E + D:
//
//	D = max(Y, A)             with no arrival in the gap,
//	D = max(Y, max(A, u) + L) with arrivals at u in the gap, work L,
//
// A being the work queued behind the first phase by E: the first phases
// of the requests that arrived within the first window, and the second
// phase of the last request found still in its first phase or in that
// phase's gap. Arrivals in a gap are taken at one instant, uniform in it
// (at 30% load two or more come in 0.3% of gaps). Left out, as in
// serverPhases: requests older than the last one still short of their
// last phase, and the last one's second phase queued after E (its own gap
// longer than the first window). The gap Y is taken apart from the
// phase's services (replyLaws) except where nothing is behind the phase
// and nothing arrives in its gap, the commonest case; the second phase
// ends with its slowest reply, M(k2) after D.
func (g grid) serverTwoPhasesNet(wait []float64, sums [][]float64, k1, k2 int, rate float64, net []float64) []float64 {
	// What the request finds, by the last request's place: in its first
	// phase (working, X ahead, or in its gap: X = 0), its second phase
	// then ahead of this one's; or in its second phase (X ahead), or done.
	// sum(c) is the law of c service times; past sums, the counts asked
	// for step by k1 (a window's arrivals' first phases), so each is one
	// convolution from the count k1 below it, not k1 of them.
	more := map[int][]float64{}
	var sum func(c int) []float64
	sum = func(c int) []float64 {
		if c < len(sums) {
			return sums[c]
		}
		if v, ok := more[c]; ok {
			return v
		}
		v := convolve(sum(c-k1), sums[k1])
		more[c] = v
		return v
	}
	replies := g.newReplyLaws(sums[1], net, max(k1, k2))
	net1 := differences(replies.gaps[k1])
	gaps := g.newGapArrivals(net1, rate)
	inFirst, gap, older := g.sinceLast(convolve(wait, sums[k1]), rate)
	inGap, gap := differenceLaw(net1, gap)
	inFirst[0] += floats.Sum(inGap)
	inSecond, done := differenceLaw(sums[k2], gap)
	inSecond[0] += floats.Sum(done) + older
	found := []struct {
		x     []float64
		ahead int // the last request's accesses queued behind this one's first phase
	}{{inFirst, k2}, {inSecond, 0}}

	law := make([]float64, g.n)
	for _, f := range found {
		first := convolve(f.x, sums[k1])
		left := floats.Sum(first)
		for n := 0; n < 256 && left > 1e-13; n++ {
			part := g.arrivalChances(rate, n)
			for c, p := range first {
				part[c] *= p
				left -= part[c]
			}
			quiet, busy := g.secondPhaseStart(sum(n*k1+f.ahead), gaps, func(m int) []float64 { return sum(m * k1) })
			floats.Add(law, convolve(part, busy))
			if n > 0 || f.ahead > 0 {
				floats.Add(law, convolve(part, quiet))
				continue
			}
			// Nothing behind the first phase and no arrival in its gap:
			// the second phase is sent at its last reply, X + M with M
			// the phase's slowest reply, no arrival within it (e^(-λ(X+M))).
			// Drawing the service end and the gap apart (T + Y, as the
			// other terms do) put this, the commonest term, 0.005
			// pessimistic at p90 on an exponential service.
			floats.Add(law, convolve(g.noArrival(f.x, rate), g.noArrival(replies.ends[k1], rate)))
		}
	}
	return cumulative(convolve(law, replies.ends[k2]))
}

// noArrival is p where no request arrives at rate within its length.
func (g grid) noArrival(p []float64, rate float64) []float64 {
	out := g.arrivalChances(rate, 0)
	for c, v := range p {
		out[c] *= v
	}
	return out
}

// gapArrivals are the weights of requests arriving at rate in a reply gap
// of law net (pmf), which do not depend on the work queued: none[t], the
// chance the gap is at most t cells with no arrival in it; and for m >= 1
// arrivals, with w_y = p_y Pois(m; λy)/y the chance of m arrivals in a gap
// of y cells per cell of the arrival's place in it, upTo[m-1][s] = Σ_{y<=s}
// w_y and moment[m-1][s] = Σ_{y<=s} w_y y.
type gapArrivals struct {
	none         []float64
	upTo, moment [][]float64
}

func (g grid) newGapArrivals(net []float64, rate float64) gapArrivals {
	lam := rate * g.h // arrivals per cell
	a := gapArrivals{none: make([]float64, g.n)}
	sum := 0.0
	for t := range a.none {
		sum += net[t] * math.Exp(-lam*float64(t))
		a.none[t] = sum
	}
	for m := 1; ; m++ {
		w := make([]float64, g.n)
		mass := 0.0
		for y := 1; y < g.n; y++ {
			mean := lam * float64(y)
			pm := math.Exp(float64(m)*math.Log(mean) - mean - lgammaInt(m+1))
			w[y] = net[y] * pm / float64(y)
			mass += net[y] * pm
		}
		if mass < 1e-13 {
			return a
		}
		wc, mc := make([]float64, g.n), make([]float64, g.n)
		for s := range wc {
			wc[s], mc[s] = w[s], w[s]*float64(s)
			if s > 0 {
				wc[s] += wc[s-1]
				mc[s] += mc[s-1]
			}
		}
		a.upTo, a.moment = append(a.upTo, wc), append(a.moment, mc)
	}
}

// secondPhaseStart is the law of D (serverTwoPhasesNet) after the first
// phase's last service, quiet where no request arrives in the gap and busy
// where some do: the reply gap Y and the arrivals in it (gaps), the work A
// of law queued behind the phase, m arrivals bringing work of law
// arrived(m). For m arrivals at u, uniform in (0, y), with work L of law
// P_L:
//
//	P(D <= t, Y = y, m) = p_y Pois(m; λy) 1{y <= t} Σ_s P_L(t-s) F_A(s) min(y, s)/y
//
// whose sum over y is three convolutions in s.
func (g grid) secondPhaseStart(queued []float64, gaps gapArrivals, arrived func(m int) []float64) (quiet, busy []float64) {
	FA := cumulative(queued)
	cdf := make([]float64, g.n)
	// No arrival in the gap: D = max(Y, A).
	for t := range cdf {
		cdf[t] = gaps.none[t] * FA[t]
	}
	quiet = differences(cdf)
	cdf = make([]float64, g.n)
	for i, wc := range gaps.upTo {
		mc := gaps.moment[i]
		// Σ_s P_L(t-s) F_A(s) [s Wc(t) - (s Wc(s) - M(s))], the second
		// part >= 0 as convolve keeps it.
		byS, past := make([]float64, g.n), make([]float64, g.n)
		for s := range byS {
			byS[s] = FA[s] * float64(s)
			past[s] = byS[s]*wc[s] - FA[s]*mc[s]
		}
		work := arrived(i + 1)
		a, b := convolve(byS, work), convolve(past, work)
		for t := range cdf {
			cdf[t] += wc[t]*a[t] - b[t]
		}
	}
	return quiet, differences(cdf)
}

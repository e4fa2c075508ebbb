package model

import (
	"fmt"
	"math"
)

// AccurateOptions sets the numerical resolution of the accurate predictor.
type AccurateOptions struct {
	// PointsPerBound is the number of grid cells across the latency bound
	// (default 256); error shrinks with the square of the cell width.
	PointsPerBound int
	// MaxPoints caps the grid (default 4096); the grid spans the bound plus
	// the gaps that still carry weight.
	MaxPoints int
}

func (o AccurateOptions) withDefaults() AccurateOptions {
	if o.PointsPerBound <= 0 {
		o.PointsPerBound = 256
	}
	if o.MaxPoints <= 0 {
		o.MaxPoints = 4096
	}
	return o
}

// groupLaw is the law of X, the probability that one duplicate of a group
// answers within the bound given the group's shared arrivals: X takes value
// x[q] with probability w[q]. Duplicates are independent given the arrivals,
// so the SLA of d duplicates is 1 - E[(1-X)^d].
//
// The arrivals are conditioned on through the gap a to the previous request,
// which every duplicate of the group sees alike: a duplicate's wait is
// max(0, V - a) with V the previous request's time in that server (waiting +
// service), taken from the exact stationary M/G/1 law (Pollaczek-Khinchine)
// and independent across duplicates. For d = 1 this is exact; for d > 1 it
// keeps the correlation carried by the last gap and drops the part carried
// by older gaps, so it errs towards a higher SLA as load grows.
type groupLaw struct {
	w, x []float64
}

func newGroupLaw(sys System, rate float64, opt AccurateOptions) (*groupLaw, error) {
	opt = opt.withDefaults()
	rho := rate * sys.Service.Mean()
	if rho >= 1 {
		return nil, fmt.Errorf("utilization %.3f: %w", rho, ErrUnstable)
	}
	tau := sys.Bound
	J := opt.PointsPerBound
	g := grid{h: tau / float64(J)}
	// Gaps longer than 12/rate carry weight < 1e-5 and see an idle server anyway.
	g.n = min(opt.MaxPoints, int(math.Ceil((tau+12/rate)/g.h))+J+1)
	if g.n < J+2 {
		g.n = J + 2
	}
	fe := g.equilibriumPMF(sys.Service)
	w := g.waitingPMF(fe, rho)
	v := convolve(w, g.pmf(sys.Service))
	phi := successCDF(sys, g, J)

	// x[q]: success given a gap of q cells; cumV[q] = P(V <= q cells).
	n := g.n
	cumV := make([]float64, n)
	acc := 0.0
	for i, p := range v {
		acc += p
		cumV[i] = acc
	}
	law := &groupLaw{w: make([]float64, n+1), x: make([]float64, n+1)}
	prevTail := 1.0
	for q := 0; q < n; q++ {
		s := phi[0] * cumV[q]
		for j := 1; j <= J && q+j < n; j++ {
			s += v[q+j] * phi[j]
		}
		tail := math.Exp(-rate * (float64(q) + 0.5) * g.h)
		law.w[q], law.x[q] = prevTail-tail, s
		prevTail = tail
	}
	// Longer gaps: the previous request is long gone.
	law.w[n], law.x[n] = prevTail, phi[0]*cumV[n-1]
	return law, nil
}

// successCDF returns phi[j] = P(S + N <= tau - j*h) for j = 0..J.
func successCDF(sys System, g grid, J int) []float64 {
	tau := sys.Bound
	phi := make([]float64, J+1)
	if c, ok := sys.net().(Constant); ok {
		for j := range phi {
			phi[j] = sys.Service.CDF(tau - float64(j)*g.h - c.V)
		}
		return phi
	}
	fs := make([]float64, 2*J+2)
	for m := range fs {
		fs[m] = sys.Service.CDF(tau - float64(m)*g.h)
	}
	net := grid{h: g.h, n: J + 1}.pmf(sys.net())
	for j := range phi {
		for k, p := range net {
			if p != 0 && j+k < len(fs) {
				phi[j] += p * fs[j+k]
			}
		}
	}
	return phi
}

// slas returns the SLA for d = 1..maxD.
func (l *groupLaw) slas(maxD int) []float64 {
	miss := make([]float64, maxD)
	for q, w := range l.w {
		if w == 0 {
			continue
		}
		y, pw := 1-l.x[q], 1.0
		for d := range miss {
			pw *= y
			miss[d] += w * pw
		}
	}
	out := make([]float64, maxD)
	for d, m := range miss {
		out[d] = clamp01(1 - m)
	}
	return out
}

func clamp01(x float64) float64 { return math.Min(1, math.Max(0, x)) }

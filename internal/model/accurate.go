package model

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
)

// AccurateOptions sets the numerical resolution of the accurate predictor.
type AccurateOptions struct {
	// PointsPerBound is the number of grid cells across the latency bound
	// (default 256); error shrinks with the square of the cell width.
	PointsPerBound int
	// MaxPoints caps the grid (default 4096); the grid spans the bound plus
	// the gaps that still carry weight.
	MaxPoints int
	// StdErr is the standard error the Monte Carlo correlation term aims
	// for at every duplicate count (default 2e-4, so that 0.001 is 5
	// standard errors).
	StdErr float64
	// MaxRequests caps the simulated requests of one correlation term
	// (default 2^21); at very high load the standard error may stay above
	// StdErr, and the prediction says so.
	MaxRequests int
	// Seed makes the correlation term reproducible (default 1).
	Seed uint64
	// Progress, when set, hears how many of the groups (Predict) or mixes
	// (the planner) are done.
	Progress Progress
	// decide, when > 0, lets the correlation term stop as soon as every
	// wanted SLA is more than 4 standard errors from it: a search for the
	// rate that meets a target needs only the side, not the digits.
	decide float64
}

func (o AccurateOptions) withDefaults() AccurateOptions {
	if o.PointsPerBound <= 0 {
		o.PointsPerBound = 256
	}
	if o.MaxPoints <= 0 {
		o.MaxPoints = 4096
	}
	if o.StdErr <= 0 {
		o.StdErr = 2e-4
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = 1 << 21
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	return o
}

// groupSLA is the accurate predictor for one replica group that receives
// Poisson arrivals at rate: the SLA of d = 1..max(dups) duplicates and the
// standard error of each; the Monte Carlo effort goes to the counts in dups.
//
// Duplicates of a group are independent given the group's arrivals, so the
// share of requests all d of them answer late is E[Y^d], Y the chance that
// one duplicate answers late given the whole arrival history. The first
// stage (gapLaw) conditions on the last gap only and is exact for d = 1.
// What it misses, E[Y^d] - E[E[Y|gap]^d] >= 0, is the correlation older
// gaps carry (a burst loads every duplicate at once); correlationTerm
// estimates it by simulation, with the first stage as control variate.
func groupSLA(sys System, rate float64, dups []int, opt AccurateOptions) (sla, stdErr []float64, err error) {
	opt = opt.withDefaults()
	law, err := newGapLaw(sys, rate, opt)
	if err != nil {
		return nil, nil, err
	}
	maxD := slices.Max(dups)
	// The correlation term may simulate more duplicates than asked for:
	// averaging over more d-subsets lowers its noise.
	miss := law.miss(max(maxD, maxWidth))
	var corr, se []float64
	if corrFits(rate*sys.Service.Mean(), opt) {
		corr, se = correlationTerm(sys, rate, law, miss, dups, opt)
	} else {
		// Too loaded for the correlation term's budget: the gap law alone,
		// which is optimistic, and the most it can be off by. The share
		// all d duplicates miss, E[Y^d], lies between the gap law's
		// E[E[Y|gap]^d] and E[Y], the exact share of one duplicate.
		corr, se = make([]float64, len(miss)), make([]float64, len(miss))
		for d := 2; d <= len(miss); d++ {
			se[d-1] = miss[0] - miss[d-1]
		}
	}
	sla = make([]float64, maxD)
	for d := range sla {
		sla[d] = clamp01(1 - miss[d] - corr[d])
	}
	return sla, se[:maxD], nil
}

// groupSLAs runs groupSLA for each rate, in parallel: each is independent
// and seeded, so the result does not depend on the schedule.
func groupSLAs(sys System, rates []float64, dups []int, opt AccurateOptions) ([][]float64, [][]float64, error) {
	sla := make([][]float64, len(rates))
	se := make([][]float64, len(rates))
	errs := make([]error, len(rates))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	var mu sync.Mutex // Progress hears from one goroutine at a time
	done := 0
	for i, r := range rates {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			sla[i], se[i], errs[i] = groupSLA(sys, r, dups, opt)
			if opt.Progress != nil {
				mu.Lock()
				done++
				opt.Progress(fmt.Sprintf("%d of %d replica counts", done, len(rates)), float64(done)/float64(len(rates)))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return sla, se, firstErr(errs...)
}

// gapLaw is the law of X, the probability that one duplicate of a group
// answers within the bound given the gap to the previous request, which
// every duplicate of the group sees alike: X takes value x[q] with
// probability w[q] (gap q cells of width h; the last entry stands for all
// longer gaps). A duplicate's wait is max(0, V - gap) with V the previous
// request's time in that server (waiting + service), taken from the exact
// stationary M/G/1 law (Pollaczek-Khinchine).
type gapLaw struct {
	w, x []float64
	h    float64
	// phi[j] = P(S + N <= bound - j*h): the chance a request that waits
	// j cells still answers in time.
	phi []float64
}

func newGapLaw(sys System, rate float64, opt AccurateOptions) (*gapLaw, error) {
	opt = opt.withDefaults()
	rho := rate * sys.Service.Mean()
	if rho >= 1 {
		return nil, fmt.Errorf("utilization %.3f: %w", rho, ErrUnstable)
	}
	tau := sys.Bound
	J := opt.PointsPerBound
	g := grid{h: tau / float64(J)}
	// Gaps longer than 12/rate carry weight < 1e-5 and see an idle server
	// anyway. (In floating point: at a tiny rate the count overflows an int.)
	g.n = int(math.Min(float64(opt.MaxPoints), math.Ceil((tau+12/rate)/g.h)+float64(J)+1))
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
	law := &gapLaw{w: make([]float64, n+1), x: make([]float64, n+1), h: g.h, phi: phi}
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

// cell is the index of x and w that a gap of a seconds falls in.
func (l *gapLaw) cell(a float64) int {
	last := len(l.x) - 1
	if f := a/l.h + 0.5; f < float64(last) {
		return int(f)
	}
	return last // also a gap too long for an int of cells
}

// lateGivenWait is the chance a request that waits w seconds answers late,
// interpolated on the grid.
func (l *gapLaw) lateGivenWait(w float64) float64 {
	f := w / l.h
	if !(f < float64(len(l.phi)-1)) {
		return 1
	}
	j := int(f)
	frac := f - float64(j)
	return 1 - (l.phi[j] + frac*(l.phi[j+1]-l.phi[j]))
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

// miss returns E[(1-X)^d] for d = 1..maxD: the share of requests that all
// d duplicates answer late when only the last gap is shared.
func (l *gapLaw) miss(maxD int) []float64 {
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
	return miss
}

func clamp01(x float64) float64 { return math.Min(1, math.Max(0, x)) }

// CorrelationLimit is the highest utilization at which the correlation
// term runs within o.MaxRequests (0.961 by default); above it the accurate
// SLA of two or more duplicates is the gap law alone (Prediction.GapLawOnly).
func (o AccurateOptions) CorrelationLimit() float64 { return corrLimit(o.withDefaults()) }

package model

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// correlationStream keeps the correlation term's random numbers apart from
// Simulate's, so that checking the predictor against Simulate with the same
// seed compares two independent runs.
const correlationStream = 0x2545f4914f6cdd1d

// beyondWidth is how far the gap law may understate the miss share of d
// duplicates beyond the simulated width m: at most miss(m), because the
// true miss share falls with d and the gap law's never exceeds it.
const beyondWidth = 1e-5

// minRequests is the fewest requests a correlation term simulates, so that
// events that make every duplicate late at once are seen down to a rate of
// about 6e-5.
const minRequests = 1 << 14

// maxWidth is the widest group the correlation term simulates unless more
// duplicates are asked for.
const maxWidth = 32

// maxCorrWidth is the widest group it ever simulates: a request costs
// about width^2/2 steps (the symmetric polynomials), so 64 duplicates cost
// 4 times 32. Beyond the width the gap law is used, with its bound.
const maxCorrWidth = 64

// minBatches is the fewest batches behind a standard error.
const minBatches = 32

// batchLength is how many requests a batch must hold at utilization rho
// to be long against the time the queue remembers a burst.
func batchLength(rho float64) float64 {
	return math.Max(256, 100/((1-rho)*(1-rho)))
}

// corrFits says whether the correlation term can run at utilization rho:
// minBatches batches of batchLength(rho) within opt.MaxRequests. That holds
// up to a utilization of 0.961 with the default 2^21 requests; beyond it
// (0.98 would take 4 times the budget, 0.999 a thousand times) the term is
// not run and groupSLA says how far off the gap law alone can be.
func corrFits(rho float64, opt AccurateOptions) bool {
	return minBatches*batchLength(rho) <= float64(opt.MaxRequests)
}

// corrLimit is the highest utilization corrFits accepts (0 if none).
func corrLimit(opt AccurateOptions) float64 {
	if float64(opt.MaxRequests) < minBatches*256 {
		return 0
	}
	return 1 - math.Sqrt(100*minBatches/float64(opt.MaxRequests))
}

// correlationTerm estimates, for d = 1..len(gapMiss), how much the share of
// requests all d duplicates answer late exceeds the gap law's gapMiss[d-1],
// with its standard error; it aims its effort at the counts in dups (and
// gapMiss must reach max(dups)). d = 1 needs none (the gap law is exact).
//
// It simulates one group of m duplicates fed the same Poisson arrivals and
// answers every d <= m at once by averaging over the d-subsets, as Simulate
// does, with three variance reductions:
//   - each request's own service and network delay are integrated out: given
//     the waits of the m duplicates, the chance that all d of a subset answer
//     late is a product, and e_d (the elementary symmetric polynomial of the
//     m chances) sums it over subsets. Only the shared history is sampled.
//   - the gap law is a control variate: with Y the m duplicates' mean chance
//     of answering late and ybar(q) = E[Y | gap q], the linear term
//     ybar^d + d ybar^(d-1) (Y - ybar) has mean gapMiss[d-1]; what is left
//     is the correlation, about C(d,2) ybar^(d-2) (Y - ybar)^2.
//   - a shadow queue with constant service E[S] driven by the same gaps
//     (M/D/1) measures how bursty the recent arrivals were; P(w = 0) and
//     E[exp(-s w)] of its wait are known from Pollaczek-Khinchine, and
//     regressing on them halves the remaining standard error at 60% load.
//
// Why not the conditional law of the wait given the gaps on a grid (exact
// given the path)? At high load nearly all the noise is in the arrival
// history, not in the service draws, so a grid step (an FFT convolution,
// 15-40 us) buys little over simulating 32 duplicates (about 1 us).
//
// The width m starts where the gap law's miss share falls below 1e-7, even
// when fewer duplicates are asked for: it grows with load, and a wider group
// answers small d with less noise (at 60% load 16 duplicates reach a given
// standard error for d = 2 in half the time 2 do). While a wanted count lies
// beyond m, m doubles (up to len(gapMiss) and maxCorrWidth) as long as the
// simulated miss share at m is above beyondWidth. It stops once the
// standard errors of the wanted counts are below opt.StdErr (or their side
// of opt.decide is clear), or at opt.MaxRequests. The caller has checked
// that the utilization is within corrFits.
func correlationTerm(sys System, rate float64, law *gapLaw, gapMiss []float64, dups []int, opt AccurateOptions) (corr, stdErr []float64) {
	maxD := len(gapMiss)
	corr, stdErr = make([]float64, maxD), make([]float64, maxD)
	if slices.Max(dups) < 2 {
		return corr, stdErr
	}
	widest := min(maxD, maxCorrWidth)
	m := widest
	for d := 2; d <= widest; d++ {
		if gapMiss[d-1] < 1e-7 {
			m = d
			break
		}
	}
	for {
		c := newCorrRun(sys, rate, law, m, opt)
		if c.run(gapMiss, dups, m < widest) {
			m = min(widest, 2*m)
			continue
		}
		th, se := c.estimate()
		se = c.withFloor(se)
		copy(corr[1:m], th[2:])
		copy(stdErr[1:m], se[2:])
		// Beyond the width the gap law is off by at most the miss share at m.
		for d := m + 1; d <= maxD; d++ {
			stdErr[d-1] = math.Hypot(se[m], gapMiss[m-1]+th[m])
		}
		return corr, stdErr
	}
}

// shadowS are the rates s (times E[S]) of the shadow queue's controls exp(-s w).
var shadowS = []float64{3, 1, 1.0 / 3, 0.1}

type corrRun struct {
	sys       System
	law       *gapLaw
	rate      float64
	m         int
	opt       AccurateOptions
	r         *rand.Rand
	invChoose []float64 // 1/C(m,d)
	mu        []float64 // known means of the shadow controls
	batch     int
	byY       [][]float64 // per batch: sum of residuals, index d
	byX       [][]float64 // per batch: sum of controls
	sxx       []float64   // sum of x_i x_j, p x p
	sxy       [][]float64 // sum of x_i * residual_d
}

func newCorrRun(sys System, rate float64, law *gapLaw, m int, opt AccurateOptions) *corrRun {
	rho := rate * sys.Service.Mean()
	c := &corrRun{sys: sys, law: law, rate: rate, m: m, opt: opt,
		r: rand.New(rand.NewPCG(opt.Seed, correlationStream))}
	c.invChoose = make([]float64, m+1)
	for d := range c.invChoose {
		c.invChoose[d] = math.Exp(-lchoose(m, d))
	}
	// P(w = 0) = 1 - rho; E[exp(-s w)] = (1-rho) x / (x - rho (1 - e^-x)), x = s E[S].
	c.mu = []float64{1 - rho}
	for _, x := range shadowS {
		c.mu = append(c.mu, (1-rho)*x/(x-rho*(1-math.Exp(-x))))
	}
	p := len(c.mu)
	c.sxx = make([]float64, p*p)
	c.sxy = make([][]float64, p)
	for i := range c.sxy {
		c.sxy[i] = make([]float64, m+1)
	}
	// Batches must be long against the time the queue remembers a burst
	// (the caller has checked that corrFits).
	c.batch = int(batchLength(rho))
	return c
}

// run simulates until the wanted counts' standard errors meet the target;
// it returns true early when a wanted count lies beyond a width m that is
// too narrow and the width may still grow.
func (c *corrRun) run(gapMiss []float64, dups []int, mayWiden bool) (widen bool) {
	// At least minBatches batches for the standard error, and minRequests.
	minBatches := max(minBatches, (minRequests+c.batch-1)/c.batch)
	m, p := c.m, len(c.mu)
	mean := c.sys.Service.Mean()
	// work[j] is the work duplicate j had left when the previous request
	// arrived, that request's own service included: the Lindley recursion
	// needs only the gaps, never an absolute time, whose rounding would
	// swallow the service times after long gaps at a tiny rate.
	work := make([]float64, m)
	e := make([]float64, m+1)
	x := make([]float64, p)
	u := 0.0 // the shadow queue's time in system of the previous request
	maxBatches := max(minBatches, c.opt.MaxRequests/c.batch)
	warm := 8 * c.batch
	nextCheck := 8
	beyond := mayWiden && slices.Max(dups) > m
	for b := -1; len(c.byY) < maxBatches; b++ {
		n := c.batch
		if b < 0 {
			n = warm
		}
		sumY, sumX := make([]float64, m+1), make([]float64, p)
		for i := 0; i < n; i++ {
			a := c.r.ExpFloat64() / c.rate
			// e[d] sums, over d-subsets of the m duplicates, the chance
			// that all of them answer late given their waits.
			clear(e)
			e[0] = 1
			sumLate := 0.0
			for j, left := range work {
				wait := math.Max(0, left-a)
				late := c.law.lateGivenWait(wait)
				sumLate += late
				for d := min(j+1, m); d >= 1; d-- {
					e[d] += late * e[d-1]
				}
				work[j] = wait + c.sys.Service.Sample(c.r)
			}
			w := math.Max(0, u-a)
			u = w + mean
			if b < 0 {
				continue
			}
			x[0] = 0
			if w == 0 {
				x[0] = 1
			}
			for s, sv := range shadowS {
				x[s+1] = math.Exp(-sv * w / mean)
			}
			ybar := 1 - c.law.x[c.law.cell(a)]
			dy := sumLate/float64(m) - ybar
			pw := ybar // ybar^(d-1)
			for d := 2; d <= m; d++ {
				res := e[d]*c.invChoose[d] - pw*ybar - float64(d)*pw*dy
				pw *= ybar
				sumY[d] += res
				for s, xs := range x {
					c.sxy[s][d] += xs * res
				}
			}
			for s, xs := range x {
				sumX[s] += xs
				for s2 := range x {
					c.sxx[s*p+s2] += xs * x[s2]
				}
			}
		}
		if b < 0 {
			continue
		}
		c.byY, c.byX = append(c.byY, sumY), append(c.byX, sumX)
		if nb := len(c.byY); nb >= nextCheck {
			nextCheck = nb + max(1, nb/4)
			th, se := c.estimate()
			missM := gapMiss[m-1] + th[m]
			if beyond && missM-3*se[m] > beyondWidth {
				return true // clearly too narrow: no need to finish
			}
			if nb >= minBatches && c.done(gapMiss, dups, th, c.withFloor(se)) {
				return beyond && missM+3*se[m] > beyondWidth
			}
		}
	}
	return false
}

// withFloor adds 1/N, N the requests simulated, to each standard error: an
// event that makes every duplicate late at once but is rarer than that has
// likely not been seen at all, and the batch means cannot know it exists.
func (c *corrRun) withFloor(se []float64) []float64 {
	floor := 1 / float64(len(c.byY)*c.batch)
	out := make([]float64, len(se))
	for d, s := range se {
		out[d] = math.Hypot(s, floor)
	}
	return out
}

// done says whether the wanted counts within the width are known well enough.
func (c *corrRun) done(gapMiss []float64, dups []int, th, se []float64) bool {
	for _, d := range dups {
		if d < 2 || d > c.m {
			continue
		}
		if c.opt.decide > 0 && math.Abs(1-gapMiss[d-1]-th[d]-c.opt.decide) > 4*se[d] {
			continue
		}
		if se[d] > c.opt.StdErr {
			return false
		}
	}
	return true
}

// estimate returns the control-variate estimate of the correlation term
// and its batch-means standard error, indexed by d (0 and 1 unused).
func (c *corrRun) estimate() (th, se []float64) {
	m, p, nb := c.m, len(c.mu), len(c.byY)
	nTot := float64(nb * c.batch)
	mx := make([]float64, p)
	my := make([]float64, m+1)
	for b := range c.byY {
		for s := range mx {
			mx[s] += c.byX[b][s] / nTot
		}
		for d := range my {
			my[d] += c.byY[b][d] / nTot
		}
	}
	// Solve for beta on standardized controls with a tiny ridge: the
	// controls are smooth functions of one wait and nearly collinear, and
	// one that never varied (an idle shadow queue) gets beta = 0.
	sd := make([]float64, p)
	for i := range sd {
		sd[i] = math.Sqrt(math.Max(0, c.sxx[i*p+i]/nTot-mx[i]*mx[i]))
	}
	cov := mat.NewSymDense(p, nil)
	for i := 0; i < p; i++ {
		for j := i; j < p; j++ {
			v := 0.0
			if sd[i] > 1e-9 && sd[j] > 1e-9 {
				v = (c.sxx[i*p+j]/nTot - mx[i]*mx[j]) / (sd[i] * sd[j])
			}
			if i == j {
				v += 1e-9
			}
			cov.SetSym(i, j, v)
		}
	}
	beta := mat.NewDense(p, m+1, nil)
	var chol mat.Cholesky
	if chol.Factorize(cov) {
		rhs := mat.NewDense(p, m+1, nil)
		for i := 0; i < p; i++ {
			if sd[i] <= 1e-9 {
				continue
			}
			for d := 2; d <= m; d++ {
				rhs.Set(i, d, (c.sxy[i][d]/nTot-mx[i]*my[d])/sd[i])
			}
		}
		if err := chol.SolveTo(beta, rhs); err != nil {
			beta.Zero()
		}
		for i := 0; i < p; i++ {
			for d := 2; d <= m; d++ {
				if sd[i] > 1e-9 {
					beta.Set(i, d, beta.At(i, d)/sd[i])
				} else {
					beta.Set(i, d, 0)
				}
			}
		}
	}
	th, se = make([]float64, m+1), make([]float64, m+1)
	bsz := float64(c.batch)
	for d := 2; d <= m; d++ {
		var s1, s2 float64
		for b := range c.byY {
			v := c.byY[b][d] / bsz
			for s := 0; s < p; s++ {
				v -= beta.At(s, d) * (c.byX[b][s]/bsz - c.mu[s])
			}
			s1 += v
			s2 += v * v
		}
		mean := s1 / float64(nb)
		th[d] = mean
		se[d] = math.Sqrt(math.Max(0, s2/float64(nb)-mean*mean) / float64(nb-1))
	}
	return th, se
}

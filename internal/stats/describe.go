// Package stats is gait's pure statistics: per-configuration latency
// statistics and the predictability criteria of "Middleware, Fault-Tolerance
// and the Magical 1%" (seeds/004: C1, C2, C3, the haircut, p99 confidence
// bounds and the 25x headline), checked against numpy/scipy on the fixtures
// in testdata/. It does no I/O. docs/statistics.md states every definition.
package stats

import (
	"math"
	"sort"
)

// Thresholds of the paper's criteria ("Middleware, Fault-Tolerance and the
// Magical 1%", seeds/004, §2 and Appendix A.1).
const (
	// C1Factor: a configuration is unpredictable by C1 when its maximum
	// latency exceeds C1Factor times its mean.
	C1Factor = 10
	// OutlierSigmas: C2's 3σ test counts samples above mean + 3σ.
	OutlierSigmas = 3
	// HeadlineFactor: the paper's summary (§7) finds the upper 99% confidence
	// bound of p99 within 25 times the mean in every configuration.
	HeadlineFactor = 25
)

// Description holds the per-configuration statistics of gait analyze.
// Latencies are in the caller's unit (gait uses seconds). No field is ever
// NaN or infinite for finite, non-negative input: ratios over a zero mean
// are reported as 0.
type Description struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	// Std is the sample standard deviation, ddof = 1 (divides by n-1, as
	// numpy.std(x, ddof=1), R's sd and the within-group variance of ANOVA).
	// It is 0 for a single sample.
	Std  float64 `json:"std"`
	Min  float64 `json:"min"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"` // the 99.9th percentile
	Max  float64 `json:"max"`
	// C1 is criterion C1: Max > 10 × Mean.
	C1          bool     `json:"c1"`
	MaxOverMean float64  `json:"max_over_mean"`
	Outliers    Outliers `json:"outliers"`
	Haircut     Haircut  `json:"haircut"`
	P99OverMean float64  `json:"p99_over_mean"`
	// P99CI95 and P99CI99 are distribution-free confidence intervals for the
	// 99th percentile at 95% and 99% (see QuantileCI).
	P99CI95 Interval `json:"p99_ci95"`
	P99CI99 Interval `json:"p99_ci99"`
}

// Outliers is criterion C2, the 3σ test: samples strictly greater than
// Threshold = Mean + 3 × Std.
type Outliers struct {
	Threshold float64 `json:"threshold"`
	Count     int     `json:"count"`
	Share     float64 `json:"share"` // Count / n
	// LargestOverMean is the largest outlier (the maximum) divided by the
	// mean, and LargestZ its distance from the mean in standard deviations
	// (the paper's "z-score", Fig. 4); both are 0 when there is no outlier.
	LargestOverMean float64 `json:"largest_over_mean"`
	LargestZ        float64 `json:"largest_z"`
}

// Haircut is the paper's "haircut" (§4.1, Fig. 2b): the distribution after
// removing the top 1% of samples. Exactly Removed = ⌊n/100⌋ samples are
// removed, the largest ones (ties broken arbitrarily, which does not change
// the result), so never more than 1% and nothing below n = 100. Mean and Max
// are those of the remaining n - Removed samples.
type Haircut struct {
	Removed int     `json:"removed"`
	Mean    float64 `json:"mean"`
	Max     float64 `json:"max"`
}

// Describe sorts xs (non-negative latencies) in place with SortLatencies and
// returns its statistics: the sort (which allocates one scratch copy of xs)
// and two linear passes. Quantiles follow Quantile (numpy's linear
// definition).
//
// Describe of an empty slice returns a zero Description (Count 0) whose
// intervals have OK false and Reason "no samples".
func Describe(xs []float64) Description {
	n := len(xs)
	if n == 0 {
		none := Interval{Reason: "no samples"}
		c95, c99 := none, none
		c95.Confidence, c99.Confidence = 0.95, 0.99
		return Description{P99CI95: c95, P99CI99: c99}
	}
	SortLatencies(xs)
	d := Description{Count: n, Min: xs[0], Max: xs[n-1]}
	d.Haircut.Removed = n / 100
	kept := n - d.Haircut.Removed
	d.Mean, d.Haircut.Mean = meanAndPrefixMean(xs, kept)
	d.Haircut.Max = xs[kept-1]
	if n > 1 {
		d.Std = math.Sqrt(sumSquaredDeviations(xs, d.Mean) / float64(n-1))
	}
	d.P50 = Quantile(xs, 0.50)
	d.P90 = Quantile(xs, 0.90)
	d.P99 = Quantile(xs, 0.99)
	d.P999 = Quantile(xs, 0.999)
	d.MaxOverMean = ratio(d.Max, d.Mean)
	d.C1 = d.Max > C1Factor*d.Mean
	d.P99OverMean = ratio(d.P99, d.Mean)
	d.Outliers = outliers(xs, d.Mean, d.Std)
	d.P99CI95 = QuantileCI(xs, 0.99, 0.95)
	d.P99CI99 = QuantileCI(xs, 0.99, 0.99)
	return d
}

// outliers applies the 3σ test to sorted xs.
func outliers(sorted []float64, mean, std float64) Outliers {
	o := Outliers{Threshold: mean + OutlierSigmas*std}
	n := len(sorted)
	first := sort.Search(n, func(i int) bool { return sorted[i] > o.Threshold })
	o.Count = n - first
	o.Share = float64(o.Count) / float64(n)
	if o.Count > 0 {
		largest := sorted[n-1]
		o.LargestOverMean = ratio(largest, mean)
		o.LargestZ = ratio(largest-mean, std)
	}
	return o
}

// meanAndPrefixMean returns the mean of sorted and the mean of its first kept
// elements in one pass. Summing offsets from the minimum makes the mean of
// equal values exact (so their Std is exactly 0) and loses less precision
// when the spread is small against the magnitude.
func meanAndPrefixMean(sorted []float64, kept int) (mean, prefixMean float64) {
	base := sorted[0]
	head := blockSum(sorted[:kept], base)
	tail := blockSum(sorted[kept:], base)
	mean = base + (head+tail)/float64(len(sorted))
	prefixMean = base + head/float64(kept)
	return mean, prefixMean
}

// sumBlock bounds the length of each running sum: blockwise summation keeps
// the rounding error near (sumBlock + n/sumBlock)·ε instead of n·ε, close to
// numpy's pairwise summation, at the speed of a plain loop.
const sumBlock = 1024

// blockSum returns Σ (x - base) over xs.
func blockSum(xs []float64, base float64) float64 {
	var total float64
	for len(xs) > 0 {
		m := min(len(xs), sumBlock)
		var s0, s1, s2, s3 float64
		i := 0
		for ; i+4 <= m; i += 4 {
			s0 += xs[i] - base
			s1 += xs[i+1] - base
			s2 += xs[i+2] - base
			s3 += xs[i+3] - base
		}
		for ; i < m; i++ {
			s0 += xs[i] - base
		}
		total += (s0 + s1) + (s2 + s3)
		xs = xs[m:]
	}
	return total
}

// sumSquaredDeviations returns Σ (x - mean)², blockwise like blockSum.
func sumSquaredDeviations(xs []float64, mean float64) float64 {
	var total float64
	for len(xs) > 0 {
		m := min(len(xs), sumBlock)
		var s0, s1, s2, s3 float64
		i := 0
		for ; i+4 <= m; i += 4 {
			d0, d1, d2, d3 := xs[i]-mean, xs[i+1]-mean, xs[i+2]-mean, xs[i+3]-mean
			s0 += d0 * d0
			s1 += d1 * d1
			s2 += d2 * d2
			s3 += d3 * d3
		}
		for ; i < m; i++ {
			d := xs[i] - mean
			s0 += d * d
		}
		total += (s0 + s1) + (s2 + s3)
		xs = xs[m:]
	}
	return total
}

// ratio returns a/b, or 0 when b is 0 (a mean of 0 means every latency is 0).
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

package stats

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// Quantile returns the q-quantile of sorted (ascending) by linear
// interpolation between order statistics: Hyndman and Fan's type 7, the
// default of numpy.quantile (method="linear"), R and Excel's PERCENTILE.INC.
// With h = (n-1)q, it is sorted[⌊h⌋] + (h-⌊h⌋)(sorted[⌊h⌋+1]-sorted[⌊h⌋]).
//
// q is clamped to [0, 1]. Quantile of an empty slice is NaN: there is no
// value to report, and callers (Describe) check for that case first.
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	q = min(max(q, 0), 1)
	h := float64(n-1) * q
	lo := int(h)
	if lo >= n-1 {
		return sorted[n-1]
	}
	t := h - float64(lo)
	a, b := sorted[lo], sorted[lo+1]
	// numpy's lerp: interpolating from the nearer end keeps the result
	// monotone in q and bit-identical to numpy for the common cases.
	if t >= 0.5 {
		return b - (b-a)*(1-t)
	}
	return a + (b-a)*t
}

// CountWithin returns how many values of sorted (ascending) are at most
// bound: the requests that met a latency bound, whose share is the SLA
// the Zoolander model predicts ("99.9% within 10 ms"). A request exactly at
// the bound meets it. NaN as the bound counts nothing.
func CountWithin(sorted []float64, bound float64) int {
	return sort.Search(len(sorted), func(i int) bool { return !(sorted[i] <= bound) })
}

// Interval is a distribution-free confidence interval for a quantile: the
// order statistics sorted[LowerRank-1] and sorted[UpperRank-1] (ranks are
// 1-based) cover the true quantile with probability Coverage >= Confidence,
// whatever the latency distribution (assuming independent samples from a
// continuous distribution).
type Interval struct {
	Confidence float64 `json:"confidence"` // requested, e.g. 0.99
	Lower      float64 `json:"lower"`
	Upper      float64 `json:"upper"`
	LowerRank  int     `json:"lower_rank"`
	UpperRank  int     `json:"upper_rank"`
	// Coverage is the exact binomial probability that the interval covers
	// the quantile; it is at least Confidence because ranks are integers.
	Coverage float64 `json:"coverage"`
	// OK is false when there are too few samples for the interval; Reason
	// then says why and how many samples would be needed, and the
	// numeric fields are zero.
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
}

// QuantileCI returns the distribution-free (order-statistic) confidence
// interval for the q-quantile of sorted at the given confidence level.
//
// Let B ~ Binomial(n, q) count the samples at or below the true quantile and
// F its CDF, α = 1-confidence. The ranks are
//
//	LowerRank = min{ k : F(k) > α/2 }     so P(X(LowerRank) > quantile) = F(LowerRank-1) <= α/2
//	UpperRank = min{ k : F(k) >= 1-α/2 } + 1  so P(X(UpperRank) < quantile) = 1-F(UpperRank-1) <= α/2
//
// i.e. each tail is allowed at most α/2, and Coverage = F(UpperRank-1) -
// F(LowerRank-1) >= 1-α. The interval is unavailable (OK false) when
// LowerRank < 1 or UpperRank > n: for p99 at 99% that needs n >= 528, at
// 95% n >= 368. testdata/gen_fixtures.py computes the same ranks with
// scipy.stats.binom.
func QuantileCI(sorted []float64, q, confidence float64) Interval {
	iv := Interval{Confidence: confidence}
	n := len(sorted)
	switch {
	case !(q > 0 && q < 1):
		iv.Reason = fmt.Sprintf("quantile %g must lie strictly between 0 and 1", q)
		return iv
	case !(confidence > 0 && confidence < 1):
		iv.Reason = fmt.Sprintf("confidence %g must lie strictly between 0 and 1", confidence)
		return iv
	case n == 0:
		iv.Reason = "no samples"
		return iv
	}
	tail := (1 - confidence) / 2
	b := distuv.Binomial{N: float64(n), P: q}
	lower := firstRank(b, n, func(f float64) bool { return f > tail })
	upper := firstRank(b, n, func(f float64) bool { return f >= 1-tail }) + 1
	if lower < 1 || upper > n {
		iv.Reason = fmt.Sprintf("%d samples are too few for a %g%% interval on the %s: it needs at least %d",
			n, 100*confidence, quantileName(q), minSamplesCI(q, tail))
		return iv
	}
	iv.LowerRank, iv.UpperRank = lower, upper
	iv.Lower, iv.Upper = sorted[lower-1], sorted[upper-1]
	iv.Coverage = b.CDF(float64(upper-1)) - b.CDF(float64(lower-1))
	iv.OK = true
	return iv
}

// firstRank returns the smallest k in [0, n] for which ok(F(k)) holds, where
// ok is monotone in k because F is a CDF.
func firstRank(b distuv.Binomial, n int, ok func(float64) bool) int {
	return sort.Search(n+1, func(k int) bool { return ok(b.CDF(float64(k))) })
}

// minSamplesCI is the smallest n for which both ranks of QuantileCI exist:
// q^n <= tail (so UpperRank <= n) and (1-q)^n <= tail (so LowerRank >= 1).
func minSamplesCI(q, tail float64) int {
	need := func(p float64) int {
		n := max(1, int(math.Ceil(math.Log(tail)/math.Log(p))))
		for math.Pow(p, float64(n)) > tail {
			n++
		}
		for n > 1 && math.Pow(p, float64(n-1)) <= tail {
			n--
		}
		return n
	}
	return max(need(q), need(1-q))
}

// quantileName writes 0.99 as "p99" and 0.999 as "p99.9".
func quantileName(q float64) string {
	return "p" + fmt.Sprint(math.Round(q*100*1e6)/1e6)
}

package model

import (
	"fmt"
	"math"
	"sort"
)

// Independence is the thesis's check (§4.3.3, Figure 5) that two duplicates
// fed the same request stream are slow on different requests: the model
// multiplies their miss probabilities, which holds only if they are.
type Independence struct {
	Requests int `json:"requests"`
	// Quantile defines "slow": above this quantile of each duplicate's own latencies.
	Quantile float64 `json:"quantile"`
	// BothSlow is the observed share of requests slow on both; Expected is
	// (1-Quantile)^2, what independence predicts.
	BothSlow float64 `json:"both_slow"`
	Expected float64 `json:"expected"`
	// Lift is BothSlow/Expected: 1 when independent, up to 1/(1-Quantile)
	// when every slow request is slow on both.
	Lift float64 `json:"lift"`
	// Z is the binomial z-score of BothSlow against Expected.
	Z float64 `json:"z"`
	// Spearman is the rank correlation of the two latency series.
	Spearman float64 `json:"spearman"`
	// Holds is false when slow requests coincide more than chance (lift > 1.5 with z > 3).
	Holds bool `json:"independent"`
	// Ranks are each request's percentile in each duplicate, for the Figure 5 scatter.
	RanksA []float64 `json:"-"`
	RanksB []float64 `json:"-"`
}

// CheckIndependence compares the latencies two duplicates gave to the same
// requests (a[i] and b[i] answer request i). quantile is typically 0.9.
func CheckIndependence(a, b []float64, quantile float64) (Independence, error) {
	if len(a) != len(b) {
		return Independence{}, fmt.Errorf("the two duplicates answered %d and %d requests: need the same request stream", len(a), len(b))
	}
	if len(a) < 100 {
		return Independence{}, fmt.Errorf("%d requests: need at least 100 to judge independence", len(a))
	}
	if !(quantile > 0 && quantile < 1) {
		return Independence{}, inputError("quantile", quantile, "must be between 0 and 1")
	}
	for i := range a {
		if !(a[i] >= 0) || !(b[i] >= 0) || math.IsInf(a[i], 0) || math.IsInf(b[i], 0) {
			return Independence{}, fmt.Errorf("request %d: latencies %v and %v must be finite and >= 0", i+1, a[i], b[i])
		}
	}
	ra, rb := ranks(a), ranks(b)
	n := float64(len(a))
	both := 0
	for i := range ra {
		if ra[i] > quantile && rb[i] > quantile {
			both++
		}
	}
	res := Independence{Requests: len(a), Quantile: quantile, RanksA: ra, RanksB: rb}
	// The share above the quantile is what ranks give, not exactly 1-quantile when there are ties.
	pa, pb := shareAbove(ra, quantile), shareAbove(rb, quantile)
	res.Expected = pa * pb
	// Below a few requests that chance alone makes slow on both, no count
	// of coincidences could tell dependence from chance: say so rather
	// than call the duplicates independent.
	if chance := res.Expected * n; chance < minCoincidences {
		why := fmt.Sprintf("chance alone puts %.3g of %d requests slow on both (%.3g%% of A's and %.3g%% of B's are slow); want at least %d: a lower quantile or more requests",
			chance, len(a), 100*pa, 100*pb, minCoincidences)
		if pa == 0 || pb == 0 {
			dup := "A"
			if pa != 0 {
				dup = "B"
			}
			return Independence{}, fmt.Errorf("no request of duplicate %s is above its p%.6g: too many of its latencies tie to tell slow from fast", dup, 100*quantile)
		}
		return Independence{}, inputError("quantile", quantile, "%s", why)
	}
	res.BothSlow = float64(both) / n
	if res.Expected > 0 {
		res.Lift = res.BothSlow / res.Expected
		res.Z = (res.BothSlow - res.Expected) / math.Sqrt(res.Expected*(1-res.Expected)/n)
	}
	res.Spearman = pearson(ra, rb)
	res.Holds = !(res.Lift > 1.5 && res.Z > 3)
	return res, nil
}

// minCoincidences is the fewest requests independence must expect slow on
// both duplicates for the check to mean anything.
const minCoincidences = 5

func shareAbove(r []float64, q float64) float64 {
	c := 0
	for _, v := range r {
		if v > q {
			c++
		}
	}
	return float64(c) / float64(len(r))
}

// ranks maps each value to its mid-rank percentile in (0, 1].
func ranks(x []float64) []float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return x[idx[i]] < x[idx[j]] })
	r := make([]float64, len(x))
	n := float64(len(x))
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && x[idx[j]] == x[idx[i]] {
			j++
		}
		mid := (float64(i+j) + 1) / 2 // 1-based mid-rank of the tie block
		for k := i; k < j; k++ {
			r[idx[k]] = mid / n
		}
		i = j
	}
	return r
}

func pearson(a, b []float64) float64 {
	n := float64(len(a))
	var ma, mb float64
	for i := range a {
		ma += a[i]
		mb += b[i]
	}
	ma, mb = ma/n, mb/n
	var sab, saa, sbb float64
	for i := range a {
		da, db := a[i]-ma, b[i]-mb
		sab += da * db
		saa += da * da
		sbb += db * db
	}
	if saa == 0 || sbb == 0 {
		return 0
	}
	return sab / math.Sqrt(saa*sbb)
}

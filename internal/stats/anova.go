package stats

import (
	"fmt"

	"gonum.org/v1/gonum/mathext"
)

// Moments summarises one group of observations exactly enough for a one-way
// ANOVA: its size, mean and sum of squared deviations from that mean (M2).
// Moments of disjoint groups combine exactly with Merge, so an ANOVA over
// millions of requests needs O(1) memory per group.
type Moments struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	M2   float64 `json:"m2"` // Σ (x - Mean)²
}

// MomentsOf returns the moments of xs (two passes, no sorting needed).
func MomentsOf(xs []float64) Moments {
	if len(xs) == 0 {
		return Moments{}
	}
	base := xs[0]
	mean := base + blockSum(xs, base)/float64(len(xs))
	return Moments{N: len(xs), Mean: mean, M2: sumSquaredDeviations(xs, mean)}
}

// Moments returns the moments of the configuration d describes, recovered
// from its Count, Mean and Std (ddof = 1).
func (d Description) Moments() Moments {
	m := Moments{N: d.Count, Mean: d.Mean}
	if d.Count > 1 {
		m.M2 = d.Std * d.Std * float64(d.Count-1)
	}
	return m
}

// Merge returns the moments of the union of the groups a and b (Chan et al.'s
// pairwise update, numerically stable).
func (a Moments) Merge(b Moments) Moments {
	switch {
	case a.N == 0:
		return b
	case b.N == 0:
		return a
	}
	n := a.N + b.N
	delta := b.Mean - a.Mean
	wb := float64(b.N) / float64(n)
	return Moments{
		N:    n,
		Mean: a.Mean + delta*wb,
		M2:   a.M2 + b.M2 + delta*delta*float64(a.N)*wb,
	}
}

// ANOVA is the result of a one-way analysis of variance (criterion C3): does
// the grouping explain the variance of the values? F is the ratio of the
// between-group to the within-group mean square, P the probability of an F at
// least this large if all groups had the same mean.
//
// OK is false, with Reason, when the test cannot be computed: fewer than two
// non-empty groups, no within-group degrees of freedom (every group has one
// value), or no variation inside the groups. F and P are then 0, never NaN.
type ANOVA struct {
	F         float64 `json:"f"`
	DFBetween int     `json:"df_between"`
	DFWithin  int     `json:"df_within"`
	P         float64 `json:"p"`
	OK        bool    `json:"ok"`
	Reason    string  `json:"reason,omitempty"`
}

// OneWayANOVA tests whether the groups share one mean, like
// scipy.stats.f_oneway. Empty groups are ignored.
func OneWayANOVA(groups [][]float64) ANOVA {
	ms := make([]Moments, len(groups))
	for i, g := range groups {
		ms[i] = MomentsOf(g)
	}
	return OneWayANOVAMoments(ms)
}

// OneWayANOVAMoments is OneWayANOVA over groups given by their moments.
// Groups with N == 0 are ignored.
//
// The p-value is the upper tail of the F(DFBetween, DFWithin) distribution,
// computed as the regularized incomplete beta I_x(DFWithin/2, DFBetween/2)
// with x = DFWithin/(DFWithin + DFBetween·F): gonum's distuv.F.Survival is
// 1 - CDF, which rounds every p below ~1e-16 to 0.
func OneWayANOVAMoments(groups []Moments) ANOVA {
	var all Moments
	k := 0
	for _, g := range groups {
		if g.N > 0 {
			all = all.Merge(g)
			k++
		}
	}
	var a ANOVA
	if k < 2 {
		a.Reason = fmt.Sprintf("needs at least 2 non-empty groups, got %d", k)
		return a
	}
	a.DFBetween, a.DFWithin = k-1, all.N-k
	if a.DFWithin < 1 {
		a.Reason = fmt.Sprintf("no within-group degrees of freedom: %d values in %d groups", all.N, k)
		return a
	}
	var within float64
	for _, g := range groups {
		within += g.M2
	}
	between := betweenSquares(groups, all.Mean)
	if within == 0 {
		if between == 0 {
			a.Reason = "all values are equal"
		} else {
			a.Reason = "no variation within any group, so F is infinite"
		}
		return a
	}
	dfb, dfw := float64(a.DFBetween), float64(a.DFWithin)
	a.F = (between / dfb) / (within / dfw)
	a.P = fSurvival(a.F, dfb, dfw)
	a.OK = true
	return a
}

// betweenSquares is Σ n_g (mean_g - grand)², computed directly rather than as
// total minus within, which would cancel when the groups barely differ.
func betweenSquares(groups []Moments, grand float64) float64 {
	var s float64
	for _, g := range groups {
		d := g.Mean - grand
		s += float64(g.N) * d * d
	}
	return s
}

// fSurvival returns P(X > f) for X ~ F(d1, d2), via the identity
// P(X > f) = I_{d2/(d2+d1·f)}(d2/2, d1/2).
func fSurvival(f, d1, d2 float64) float64 {
	return mathext.RegIncBeta(d2/2, d1/2, d2/(d2+d1*f))
}

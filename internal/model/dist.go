// Package model predicts the SLA of replication strategies (the Zoolander
// model and a more exact one), simulates the same system to check them,
// plans deployments, and computes the Limplock paper's HDFS probabilities.
// All times are in seconds.
package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/units"
	"gonum.org/v1/gonum/stat/distuv"
)

// Distribution is a non-negative latency distribution in seconds.
type Distribution interface {
	Sample(r *rand.Rand) float64
	CDF(x float64) float64
	Mean() float64
	SecondMoment() float64
	// LimitedMean is E[min(S, x)], the integral of 1-CDF from 0 to x: the
	// stationary-excess law the M/G/1 waiting time is built from has CDF
	// LimitedMean(x)/Mean(), exactly, however coarse the grid it is put on.
	LimitedMean(x float64) float64
	String() string
}

// Exponential service times with the given mean.
type Exponential struct{ M float64 }

func (e Exponential) Sample(r *rand.Rand) float64 { return e.M * r.ExpFloat64() }
func (e Exponential) CDF(x float64) float64 {
	return distuv.Exponential{Rate: 1 / e.M}.CDF(x)
}
func (e Exponential) Mean() float64 { return e.M }
func (e Exponential) LimitedMean(x float64) float64 {
	if x <= 0 {
		return 0
	}
	return -e.M * math.Expm1(-x/e.M)
}
func (e Exponential) SecondMoment() float64 { return 2 * e.M * e.M }
func (e Exponential) String() string        { return "exp:" + fmtDur(e.M) }

// LogNormal service times: exp(N(ln Median, Sigma^2)).
type LogNormal struct{ Median, Sigma float64 }

func (l LogNormal) Sample(r *rand.Rand) float64 { return l.Median * math.Exp(l.Sigma*r.NormFloat64()) }
func (l LogNormal) CDF(x float64) float64 {
	if x <= 0 {
		return 0
	}
	return distuv.LogNormal{Mu: math.Log(l.Median), Sigma: l.Sigma}.CDF(x)
}
func (l LogNormal) Mean() float64 { return l.Median * math.Exp(l.Sigma*l.Sigma/2) }
func (l LogNormal) LimitedMean(x float64) float64 {
	if x <= 0 {
		return 0
	}
	// E[S; S <= x] + x P(S > x), with E[S; S <= x] = E[S] Phi((ln x - mu - sigma^2)/sigma).
	z := (math.Log(x) - math.Log(l.Median)) / l.Sigma
	return l.Mean()*stdNormalCDF(z-l.Sigma) + x*stdNormalCDF(-z)
}

func stdNormalCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

func (l LogNormal) SecondMoment() float64 {
	return l.Median * l.Median * math.Exp(2*l.Sigma*l.Sigma)
}
func (l LogNormal) String() string {
	return fmt.Sprintf("lognormal:%s,%g", fmtDur(l.Median), l.Sigma)
}

// Pareto (type I) service times: minimum Xm, tail index Alpha.
type Pareto struct{ Xm, Alpha float64 }

func (p Pareto) Sample(r *rand.Rand) float64 { return p.Xm * math.Exp(r.ExpFloat64()/p.Alpha) }
func (p Pareto) CDF(x float64) float64 {
	if x < p.Xm {
		return 0
	}
	return distuv.Pareto{Xm: p.Xm, Alpha: p.Alpha}.CDF(x)
}
func (p Pareto) Mean() float64 { return p.Alpha * p.Xm / (p.Alpha - 1) }
func (p Pareto) LimitedMean(x float64) float64 {
	if x <= p.Xm {
		return math.Max(0, x)
	}
	// Xm + the integral of (Xm/t)^Alpha from Xm to x; expm1 keeps it exact
	// for Alpha near 1.
	return p.Xm - p.Xm/(p.Alpha-1)*math.Expm1((p.Alpha-1)*math.Log(p.Xm/x))
}
func (p Pareto) SecondMoment() float64 {
	if p.Alpha <= 2 {
		return math.Inf(1)
	}
	return p.Alpha * p.Xm * p.Xm / (p.Alpha - 2)
}
func (p Pareto) String() string { return fmt.Sprintf("pareto:%s,%g", fmtDur(p.Xm), p.Alpha) }

// Constant is a fixed latency.
type Constant struct{ V float64 }

func (c Constant) Sample(*rand.Rand) float64 { return c.V }
func (c Constant) CDF(x float64) float64 {
	if x < c.V {
		return 0
	}
	return 1
}
func (c Constant) Mean() float64 { return c.V }
func (c Constant) LimitedMean(x float64) float64 {
	return math.Max(0, math.Min(c.V, x))
}
func (c Constant) SecondMoment() float64 { return c.V * c.V }
func (c Constant) String() string        { return fmtDur(c.V) }

// Empirical is the distribution of measured samples (seconds).
type Empirical struct {
	sorted     []float64
	prefix     []float64 // prefix[i] = sum of the i smallest samples
	mean, mom2 float64
	name       string
}

// NewEmpirical builds an empirical distribution; name says where the samples came from.
func NewEmpirical(samples []float64, name string) (*Empirical, error) {
	if len(samples) == 0 {
		return nil, fmt.Errorf("%s: no samples", name)
	}
	s := append([]float64(nil), samples...)
	var sum, sum2 float64
	for i, v := range s {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("%s: sample %d is %v, want a finite value >= 0", name, i+1, v)
		}
		sum += v
		sum2 += v * v
	}
	sort.Float64s(s)
	prefix := make([]float64, len(s)+1)
	for i, v := range s {
		prefix[i+1] = prefix[i] + v
	}
	n := float64(len(s))
	return &Empirical{sorted: s, prefix: prefix, mean: sum / n, mom2: sum2 / n, name: name}, nil
}

func (e *Empirical) Sample(r *rand.Rand) float64 { return e.sorted[r.IntN(len(e.sorted))] }
func (e *Empirical) CDF(x float64) float64 {
	i := sort.Search(len(e.sorted), func(i int) bool { return e.sorted[i] > x })
	return float64(i) / float64(len(e.sorted))
}
func (e *Empirical) Mean() float64 { return e.mean }
func (e *Empirical) LimitedMean(x float64) float64 {
	if x <= 0 {
		return 0
	}
	i := sort.Search(len(e.sorted), func(i int) bool { return e.sorted[i] > x })
	return (e.prefix[i] + x*float64(len(e.sorted)-i)) / float64(len(e.sorted))
}
func (e *Empirical) SecondMoment() float64 { return e.mom2 }
func (e *Empirical) String() string {
	return fmt.Sprintf("empirical:%s(n=%d)", e.name, len(e.sorted))
}

// Len is the number of samples.
func (e *Empirical) Len() int { return len(e.sorted) }

// Samples returns the sorted samples (not a copy: do not modify).
func (e *Empirical) Samples() []float64 { return e.sorted }

// ErrNotParametric says a spec is not a parametric form, so the caller may
// try it as a file or run directory.
var ErrNotParametric = errors.New("not a parametric distribution")

// ParseDistribution reads a parametric form:
//
//	exp:MEAN                 exponential with that mean
//	lognormal:MEDIAN,SIGMA   log-normal; SIGMA is the std. dev. of ln(x)
//	pareto:XM,ALPHA          Pareto type I: minimum XM, tail index ALPHA > 1
//	const:D or D             a constant
//
// Durations take their unit (2ms, 500us, 1.5ms; units.ParseDuration): a
// bare number is refused with units.ErrNoUnit. A spec with no known form
// returns an error wrapping ErrNotParametric.
func ParseDistribution(spec string) (Distribution, error) {
	spec = strings.TrimSpace(spec)
	name, args, found := strings.Cut(spec, ":")
	if !found {
		v, err := parseDur(spec)
		if errors.Is(err, units.ErrNoUnit) {
			return nil, err // a number, not a path: say it lacks a unit
		}
		if err != nil {
			return nil, fmt.Errorf("%q: %w", spec, ErrNotParametric)
		}
		return Constant{v}, nil
	}
	parts := strings.Split(args, ",")
	want := map[string]int{"exp": 1, "lognormal": 2, "pareto": 2, "const": 1}
	n, ok := want[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("distribution %q: unknown form %q (want exp, lognormal, pareto or const): %w", spec, name, ErrNotParametric)
	}
	if len(parts) != n {
		return nil, fmt.Errorf("distribution %q: %s takes %d parameter(s), got %d", spec, name, n, len(parts))
	}
	first, err := parseDur(parts[0])
	if err != nil {
		return nil, fmt.Errorf("distribution %q: %w", spec, err)
	}
	switch strings.ToLower(name) {
	case "exp":
		if first <= 0 {
			return nil, fmt.Errorf("distribution %q: mean must be > 0", spec)
		}
		return Exponential{first}, nil
	case "const":
		return Constant{first}, nil
	}
	second, err := strconv.ParseFloat(strings.TrimSpace(parts[1]), 64)
	if err != nil || math.IsNaN(second) || math.IsInf(second, 0) {
		return nil, fmt.Errorf("distribution %q: bad shape parameter %q", spec, parts[1])
	}
	if strings.ToLower(name) == "lognormal" {
		if first <= 0 || second <= 0 {
			return nil, fmt.Errorf("distribution %q: median and sigma must be > 0 (sigma 0 is the constant const:MEDIAN)", spec)
		}
		l := LogNormal{first, second}
		if math.IsInf(l.Mean(), 0) {
			return nil, fmt.Errorf("distribution %q: the mean, median x exp(sigma^2/2), overflows; sigma must be below %.4g for this median", spec, math.Sqrt(2*(math.Log(math.MaxFloat64)-math.Log(first))))
		}
		return l, nil
	}
	if first <= 0 || second <= 1 {
		return nil, fmt.Errorf("distribution %q: pareto needs XM > 0 and ALPHA > 1 (finite mean)", spec)
	}
	return Pareto{first, second}, nil
}

// parseDur reads a duration with its unit (units.ParseDuration) into
// seconds; negative is an error.
func parseDur(s string) (float64, error) {
	v, err := units.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if v < 0 {
		return 0, fmt.Errorf("duration %q must not be negative", s)
	}
	return v, nil
}

// ParseDuration reads a duration like 10ms into seconds.
func ParseDuration(s string) (float64, error) { return parseDur(s) }

// fmtDur writes seconds as a Go duration (10ms), or in seconds where a
// duration cannot hold them (below 1ns, above 292 years).
func fmtDur(sec float64) string {
	ns := math.Round(sec * 1e9)
	if sec != 0 && (ns == 0 || math.Abs(ns) >= math.MaxInt64 || math.IsNaN(ns)) {
		return strconv.FormatFloat(sec, 'g', -1, 64) + "s"
	}
	return time.Duration(ns).String()
}

// FormatDuration writes seconds as gait's model does in its messages and
// titles: a Go duration such as 10ms.
func FormatDuration(sec float64) string { return fmtDur(sec) }

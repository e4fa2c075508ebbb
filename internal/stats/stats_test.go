package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// checkFinite fails if any float64 reachable in v is NaN or infinite, or v
// does not encode as JSON (which has neither).
func checkFinite(t *testing.T, what string, v any) {
	t.Helper()
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Float64:
			if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
				t.Errorf("%s%s = %v", what, path, f)
			}
		case reflect.Struct:
			for i := range v.NumField() {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(path+"[]", v.Index(i))
			}
		}
	}
	walk("", reflect.ValueOf(v))
	if _, err := json.Marshal(v); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

func TestDescribeEmpty(t *testing.T) {
	for _, xs := range [][]float64{nil, {}} {
		d := Describe(xs)
		checkFinite(t, "Describe(empty)", d)
		if d.Count != 0 || d.Mean != 0 || d.Max != 0 || d.C1 || d.Outliers.Count != 0 {
			t.Errorf("Describe(empty) = %+v, want zero statistics", d)
		}
		for _, iv := range []Interval{d.P99CI95, d.P99CI99} {
			if iv.OK || iv.Reason != "no samples" || iv.Confidence == 0 {
				t.Errorf("empty interval = %+v, want not OK with reason and confidence", iv)
			}
		}
	}
	if q := Quantile(nil, 0.5); !math.IsNaN(q) {
		t.Errorf("Quantile(nil) = %v, want NaN", q)
	}
}

func TestDescribeOneSample(t *testing.T) {
	d := Describe([]float64{0.004})
	checkFinite(t, "Describe(one)", d)
	for name, v := range map[string]float64{"Mean": d.Mean, "Min": d.Min, "P50": d.P50, "P99": d.P99, "P999": d.P999, "Max": d.Max, "Haircut.Mean": d.Haircut.Mean, "Haircut.Max": d.Haircut.Max} {
		if v != 0.004 {
			t.Errorf("%s = %v, want 0.004", name, v)
		}
	}
	if d.Count != 1 || d.Std != 0 || d.C1 || d.Outliers.Count != 0 || d.Haircut.Removed != 0 || d.MaxOverMean != 1 {
		t.Errorf("Describe(one) = %+v", d)
	}
	if d.P99CI99.OK || !strings.Contains(d.P99CI99.Reason, "at least 528") {
		t.Errorf("P99CI99 = %+v, want not OK needing 528 samples", d.P99CI99)
	}
}

func TestDescribeAllEqual(t *testing.T) {
	// 0.1 is not exactly representable, so a naive mean drifts from it
	// and a naive Std would be a tiny positive number.
	xs := slices.Repeat([]float64{0.1}, 100_000)
	d := Describe(xs)
	checkFinite(t, "Describe(equal)", d)
	if d.Mean != 0.1 || d.Std != 0 || d.P99 != 0.1 || d.Outliers.Count != 0 || d.Outliers.Threshold != 0.1 {
		t.Errorf("Describe(equal) = %+v, want mean 0.1, std 0, no outliers", d)
	}
	if d.Haircut.Removed != 1000 || d.Haircut.Mean != 0.1 || !d.P99CI99.OK || d.P99CI99.Upper != 0.1 {
		t.Errorf("Describe(equal) haircut %+v, ci %+v", d.Haircut, d.P99CI99)
	}
}

func TestDescribeAllZero(t *testing.T) {
	d := Describe(make([]float64, 1000))
	checkFinite(t, "Describe(zeros)", d)
	if d.C1 || d.MaxOverMean != 0 || d.P99OverMean != 0 || d.Outliers.Count != 0 {
		t.Errorf("Describe(zeros) = %+v", d)
	}
}

func TestDescribeCriteria(t *testing.T) {
	// 999 requests of 1 ms and one of 1 s: mean 1.999 ms, the slow one is
	// 500x the mean (C1) and the only 3σ outlier (C2).
	xs := slices.Repeat([]float64{0.001}, 999)
	xs = append(xs, 1)
	d := Describe(xs)
	if !d.C1 || d.Outliers.Count != 1 || d.Outliers.Share != 0.001 {
		t.Errorf("C1 = %v, outliers = %+v; want C1 and one outlier", d.C1, d.Outliers)
	}
	if !near(d.Outliers.LargestOverMean, 1/0.001999, 1e-12) {
		t.Errorf("LargestOverMean = %v, want %v", d.Outliers.LargestOverMean, 1/0.001999)
	}
	// The haircut removes ⌊1000/100⌋ = 10 samples, the slow one among them.
	if d.Haircut.Removed != 10 || d.Haircut.Max != 0.001 || !near(d.Haircut.Mean, 0.001, 1e-12) {
		t.Errorf("Haircut = %+v, want 10 removed, max and mean 1 ms", d.Haircut)
	}
}

func TestQuantileDefinition(t *testing.T) {
	xs := []float64{1, 2, 4, 8}
	// Type 7: h = 3q; numpy.quantile([1,2,4,8], q) gives these.
	for q, want := range map[float64]float64{0: 1, 0.25: 1.75, 0.5: 3, 0.9: 6.8, 1: 8, -1: 1, 2: 8} {
		if got := Quantile(xs, q); !near(got, want, 1e-15) {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, want)
		}
	}
}

func TestQuantileCIRejectsBadArguments(t *testing.T) {
	xs := make([]float64, 1000)
	for _, c := range []struct{ q, conf float64 }{{0, 0.9}, {1, 0.9}, {0.5, 0}, {0.5, 1}, {math.NaN(), 0.9}} {
		iv := QuantileCI(xs, c.q, c.conf)
		if iv.OK || iv.Reason == "" {
			t.Errorf("QuantileCI(q=%v, %v) = %+v, want not OK with a reason", c.q, c.conf, iv)
		}
	}
}

func TestQuantileCIMinimumSamples(t *testing.T) {
	// The smallest n with a 99% interval for p99 is 528 (0.99^528 <= 0.005
	// < 0.99^527); gen_fixtures.py finds the same by direct search.
	for _, c := range []struct {
		n  int
		ok bool
	}{{527, false}, {528, true}} {
		xs := make([]float64, c.n)
		for i := range xs {
			xs[i] = float64(i)
		}
		iv := QuantileCI(xs, 0.99, 0.99)
		if iv.OK != c.ok {
			t.Errorf("n=%d: OK = %v (%s), want %v", c.n, iv.OK, iv.Reason, c.ok)
		}
		if iv.OK && (iv.UpperRank != c.n || iv.Coverage < 0.99) {
			t.Errorf("n=%d: %+v, want the maximum as upper bound and coverage >= 0.99", c.n, iv)
		}
	}
}

func TestQuantileCILargeN(t *testing.T) {
	// Ranks for n = 1e7 without materialising the samples' distribution:
	// the interval must bracket rank n·q and cover at least the confidence.
	n := 10_000_000
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = float64(i + 1)
	}
	iv := QuantileCI(xs, 0.99, 0.99)
	if !iv.OK || iv.LowerRank >= 9_900_000 || iv.UpperRank <= 9_900_000 || iv.Coverage < 0.99 || iv.Coverage > 0.995 {
		t.Errorf("QuantileCI(1e7) = %+v", iv)
	}
	if iv.Lower != float64(iv.LowerRank) || iv.Upper != float64(iv.UpperRank) {
		t.Errorf("bounds %v, %v do not match ranks %d, %d", iv.Lower, iv.Upper, iv.LowerRank, iv.UpperRank)
	}
}

func TestSortLatencies(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gens := map[string]func() float64{
		"lognormal": func() float64 { return math.Exp(rng.NormFloat64()*2 - 7) },
		"few":       func() float64 { return float64(rng.IntN(4)) * 1e-3 },
		"wide":      func() float64 { return math.Ldexp(rng.Float64(), rng.IntN(2000)-1000) },
		// few significant bits: the plain LSD path
		"narrow": func() float64 { return 1 + float64(rng.IntN(1<<20))/(1<<52) },
		// one far outlier puts nearly everything in one large MSD bucket
		"one-outlier": func() float64 {
			if rng.IntN(100_000) == 0 {
				return 1e3
			}
			return 1e-3 * (1 + 1e-9*rng.Float64())
		},
		"special": func() float64 {
			return []float64{0, math.Copysign(0, -1), math.Inf(1), math.SmallestNonzeroFloat64, math.MaxFloat64, 1}[rng.IntN(6)]
		},
	}
	for name, gen := range gens {
		for _, n := range []int{0, 1, 2, smallSort - 1, smallSort, smallSort + 1, 100_000, 300_000} {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = gen()
			}
			want := slices.Clone(xs)
			slices.Sort(want)
			SortLatencies(xs)
			if !slices.Equal(xs, want) {
				t.Errorf("%s n=%d: SortLatencies differs from slices.Sort", name, n)
			}
			for i, x := range xs {
				if x == 0 && math.Signbit(x) && n >= smallSort {
					t.Errorf("%s n=%d: -0 kept at %d", name, n, i)
					break
				}
			}
		}
	}
}

func TestMomentsMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	xs := make([]float64, 1000)
	for i := range xs {
		xs[i] = 5 + rng.ExpFloat64()
	}
	all := MomentsOf(xs)
	merged := MomentsOf(xs[:123]).Merge(MomentsOf(nil)).Merge(MomentsOf(xs[123:]))
	if merged.N != all.N || !near(merged.Mean, all.Mean, 1e-14) || !near(merged.M2, all.M2, 1e-12) {
		t.Errorf("merged %+v, direct %+v", merged, all)
	}
	d := Describe(slices.Clone(xs)).Moments()
	if d.N != all.N || !near(d.Mean, all.Mean, 1e-14) || !near(d.M2, all.M2, 1e-12) {
		t.Errorf("Description.Moments %+v, direct %+v", d, all)
	}
}

func TestOneWayANOVANotComputable(t *testing.T) {
	cases := []struct {
		name   string
		groups [][]float64
		reason string
	}{
		{"no groups", nil, "at least 2 non-empty groups, got 0"},
		{"one group", [][]float64{{1, 2, 3}}, "got 1"},
		{"empty groups ignored", [][]float64{{1, 2}, {}}, "got 1"},
		{"one value per group", [][]float64{{1}, {2}, {3}}, "no within-group degrees of freedom"},
		{"all equal", [][]float64{{2, 2}, {2, 2, 2}}, "all values are equal"},
		{"no within variation", [][]float64{{1, 1}, {2, 2}}, "F is infinite"},
	}
	for _, c := range cases {
		a := OneWayANOVA(c.groups)
		checkFinite(t, c.name, a)
		if a.OK || !strings.Contains(a.Reason, c.reason) || a.F != 0 || a.P != 0 {
			t.Errorf("%s: %+v, want not OK with reason containing %q", c.name, a, c.reason)
		}
	}
}

func TestOneWayANOVAModerateP(t *testing.T) {
	// Where 1 - CDF is accurate, the survival identity must agree with it.
	// (Tiny p-values are checked against scipy in TestOneWayANOVAMatchesScipy.)
	b := OneWayANOVA([][]float64{{1, 2, 3, 4}, {2, 3, 4, 5}, {1, 3, 5, 7}})
	want := 1 - distuv.F{D1: float64(b.DFBetween), D2: float64(b.DFWithin)}.CDF(b.F)
	if !b.OK || !near(b.P, want, 1e-12) {
		t.Errorf("p = %v, distuv.F gives %v", b.P, want)
	}
	if same := OneWayANOVA([][]float64{{1, 3}, {3, 1}}); !same.OK || same.F != 0 || same.P != 1 {
		t.Errorf("equal means: %+v, want F 0 and p 1", same)
	}
}

func TestCompareEdgeCases(t *testing.T) {
	desc := func(xs ...float64) Description { return Describe(xs) }
	t.Run("none", func(t *testing.T) {
		c := Compare(nil)
		checkFinite(t, "Compare(nil)", c)
		if len(c.Factors) != 0 || c.Headline.Holds || c.Headline.Verdict != "no configuration has samples" {
			t.Errorf("Compare(nil) = %+v", c)
		}
	})
	t.Run("single configuration", func(t *testing.T) {
		c := Compare([]Config{{Factors: map[string]string{"clients": "4"}, Desc: desc(1, 2, 3)}})
		checkFinite(t, "Compare(single)", c)
		if len(c.Factors) != 0 || !slices.Equal(c.SingleLevel, []string{"clients"}) {
			t.Errorf("factors %+v, single-level %v; want clients untestable", c.Factors, c.SingleLevel)
		}
		h := c.Headline
		if h.WorstP99Config != "clients=4" || h.Checked != 0 || h.Holds || !strings.Contains(h.Verdict, "no configuration has enough samples") {
			t.Errorf("headline %+v", h)
		}
	})
	t.Run("empty configuration ignored", func(t *testing.T) {
		c := Compare([]Config{
			{Name: "a", Factors: map[string]string{"x": "1"}, Desc: desc(1, 2)},
			{Name: "b", Factors: map[string]string{"x": "2"}},
		})
		if len(c.Factors) != 0 || len(c.Headline.Unchecked) != 1 {
			t.Errorf("Compare = %+v, want the empty configuration ignored", c)
		}
	})
	t.Run("all equal", func(t *testing.T) {
		c := Compare([]Config{
			{Factors: map[string]string{"x": "1"}, Desc: desc(2, 2, 2)},
			{Factors: map[string]string{"x": "2"}, Desc: desc(2, 2)},
		})
		checkFinite(t, "Compare(equal)", c)
		f := c.Factors[0]
		if f.Latency.OK || !strings.Contains(f.Verdict, "mean not tested (all values are equal)") ||
			!strings.Contains(f.Verdict, "p99 not tested (each level has only one configuration)") {
			t.Errorf("verdict %q, latency %+v", f.Verdict, f.Latency)
		}
	})
}

func TestCompareVerdicts(t *testing.T) {
	c := Compare(gridConfigs(t, "grid.csv"))
	byName := map[string]FactorEffect{}
	for _, f := range c.Factors {
		byName[f.Factor] = f
	}
	// Values from expected.json: clients moves the mean (p=5.3e-12) but
	// not the per-configuration p99 (p=0.45) or max (p=0.45).
	want := "clients influences the mean (p=5.3e-12 < 0.01); does not influence the p99 (p=0.45); does not influence the max (p=0.45)"
	if got := byName["clients"].Verdict; got != want {
		t.Errorf("clients verdict\n got %q\nwant %q", got, want)
	}
	h := c.Headline
	if h.Holds || !strings.Contains(h.Verdict, "exceeds 25 x the mean in 1 of 6 checked configurations: clients=16 payload=4096") {
		t.Errorf("headline verdict %q", h.Verdict)
	}
	checkFinite(t, "Compare(grid)", c)
}

func TestFactorLevelsOrder(t *testing.T) {
	mk := func(v string) Config { return Config{Factors: map[string]string{"f": v}} }
	if got := factorLevels([]Config{mk("16"), mk("4"), mk("128")}, "f"); !slices.Equal(got, []string{"4", "16", "128"}) {
		t.Errorf("numeric levels = %v", got)
	}
	if got := factorLevels([]Config{mk("b"), mk("10"), mk("a")}, "f"); !slices.Equal(got, []string{"10", "a", "b"}) {
		t.Errorf("mixed levels = %v", got)
	}
}

func TestFactorLevelsOrderQuantitiesWithUnits(t *testing.T) {
	var configs []Config
	for _, v := range []string{"16KiB", "64B", "1KiB"} {
		configs = append(configs, Config{Factors: map[string]string{"size": v}})
	}
	got := factorLevels(configs, "size")
	want := []string{"64B", "1KiB", "16KiB"}
	if !slices.Equal(got, want) {
		t.Errorf("levels %v, want %v", got, want)
	}
	configs = append(configs, Config{Factors: map[string]string{"size": "large"}})
	if got := factorLevels(configs, "size"); got[0] != "16KiB" {
		t.Errorf("mixed levels should fall back to text order, got %v", got)
	}
}

func TestCountWithin(t *testing.T) {
	sorted := []float64{0.001, 0.002, 0.002, 0.003, 0.010}
	for _, c := range []struct {
		bound float64
		want  int
	}{{0, 0}, {0.0009, 0}, {0.001, 1}, {0.002, 3}, {0.0025, 3}, {0.010, 5}, {1, 5}, {math.NaN(), 0}, {math.Inf(1), 5}} {
		if got := CountWithin(sorted, c.bound); got != c.want {
			t.Errorf("CountWithin(%v) = %d, want %d", c.bound, got, c.want)
		}
	}
	if got := CountWithin(nil, 1); got != 0 {
		t.Errorf("CountWithin(nil) = %d, want 0", got)
	}
}

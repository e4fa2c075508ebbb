package stats

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The fixtures in testdata/ and their expected values come from
// testdata/gen_fixtures.py (numpy/scipy); see that script for definitions.

const (
	exactTol = 1e-9 // relative, for quantities computed by the same formula
	pTol     = 1e-6 // relative, for p-values and binomial probabilities
)

type expectedCI struct {
	Q          float64 `json:"q"`
	Confidence float64 `json:"confidence"`
	OK         bool    `json:"ok"`
	LowerRank  int     `json:"lower_rank"`
	UpperRank  int     `json:"upper_rank"`
	Lower      float64 `json:"lower"`
	Upper      float64 `json:"upper"`
	Coverage   float64 `json:"coverage"`
	MinN       int     `json:"min_n"`
}

type expectedANOVA struct {
	F         float64 `json:"f"`
	P         float64 `json:"p"`
	DFBetween int     `json:"df_between"`
	DFWithin  int     `json:"df_within"`
}

type expectedDataset struct {
	N           int          `json:"n"`
	Mean        float64      `json:"mean"`
	Std         float64      `json:"std"`
	Min         float64      `json:"min"`
	Max         float64      `json:"max"`
	Quantiles   [][2]float64 `json:"quantiles"`
	C1          bool         `json:"c1"`
	MaxOverMean float64      `json:"max_over_mean"`
	P99OverMean float64      `json:"p99_over_mean"`
	Outliers    struct {
		Threshold       float64 `json:"threshold"`
		Count           int     `json:"count"`
		Share           float64 `json:"share"`
		LargestOverMean float64 `json:"largest_over_mean"`
		LargestZ        float64 `json:"largest_z"`
	} `json:"outliers"`
	Haircut struct {
		Removed int     `json:"removed"`
		Mean    float64 `json:"mean"`
		Max     float64 `json:"max"`
	} `json:"haircut"`
	CI []expectedCI `json:"ci"`
}

type expectedFile struct {
	Datasets map[string]expectedDataset `json:"datasets"`
	Groups   struct {
		File  string        `json:"file"`
		ANOVA expectedANOVA `json:"anova"`
	} `json:"groups"`
	Separated struct {
		Groups [][]float64   `json:"groups"`
		ANOVA  expectedANOVA `json:"anova"`
	} `json:"separated"`
	Grid struct {
		File    string `json:"file"`
		Factors map[string]struct {
			Levels  []string      `json:"levels"`
			Latency expectedANOVA `json:"latency"`
			P99     expectedANOVA `json:"p99"`
			Max     expectedANOVA `json:"max"`
		} `json:"factors"`
		Headline struct {
			WorstP99Config   string              `json:"worst_p99_config"`
			WorstP99OverMean float64             `json:"worst_p99_over_mean"`
			UpperOverMean    map[string]*float64 `json:"upper_over_mean"`
			Exceeding        []string            `json:"exceeding"`
		} `json:"headline"`
	} `json:"grid"`
}

func loadExpected(t *testing.T) expectedFile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e expectedFile
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatalf("parse expected.json: %v", err)
	}
	return e
}

// readFixture returns the rows of a testdata CSV as maps from column to cell.
func readFixture(t *testing.T, name string) []map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	header := records[0]
	rows := make([]map[string]string, 0, len(records)-1)
	for _, rec := range records[1:] {
		row := make(map[string]string, len(header))
		for i, h := range header {
			row[h] = rec[i]
		}
		rows = append(rows, row)
	}
	return rows
}

func parseLatency(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("fixture latency %q: %v", s, err)
	}
	return v
}

func readLatencies(t *testing.T, name string) []float64 {
	t.Helper()
	var xs []float64
	for _, r := range readFixture(t, name) {
		xs = append(xs, parseLatency(t, r["latency_s"]))
	}
	return xs
}

// near reports whether got is within rel of want (relative), treating values
// that are both tiny in absolute terms as equal.
func near(got, want, rel float64) bool {
	if got == want {
		return true
	}
	return math.Abs(got-want) <= rel*math.Max(math.Abs(want), math.Abs(got))
}

func checkNear(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if !near(got, want, rel) {
		t.Errorf("%s = %.17g, want %.17g (rel %.2g)", what, got, want, math.Abs(got-want)/math.Abs(want))
	}
}

func checkANOVA(t *testing.T, what string, got ANOVA, want expectedANOVA) {
	t.Helper()
	if !got.OK {
		t.Errorf("%s: not OK: %s", what, got.Reason)
		return
	}
	if got.DFBetween != want.DFBetween || got.DFWithin != want.DFWithin {
		t.Errorf("%s: df = (%d, %d), want (%d, %d)", what, got.DFBetween, got.DFWithin, want.DFBetween, want.DFWithin)
	}
	checkNear(t, what+" F", got.F, want.F, exactTol)
	checkNear(t, what+" p", got.P, want.P, pTol)
}

func TestDescribeMatchesNumpy(t *testing.T) {
	exp := loadExpected(t)
	if len(exp.Datasets) == 0 {
		t.Fatal("expected.json has no datasets")
	}
	for name, want := range exp.Datasets {
		t.Run(strings.TrimSuffix(name, ".csv"), func(t *testing.T) {
			xs := readLatencies(t, name)
			d := Describe(xs)
			if d.Count != want.N {
				t.Fatalf("Count = %d, want %d", d.Count, want.N)
			}
			checkNear(t, "Mean", d.Mean, want.Mean, exactTol)
			checkNear(t, "Std", d.Std, want.Std, exactTol)
			checkNear(t, "Min", d.Min, want.Min, 0)
			checkNear(t, "Max", d.Max, want.Max, 0)
			for _, qv := range want.Quantiles {
				checkNear(t, fmt.Sprintf("Quantile(%g)", qv[0]), Quantile(xs, qv[0]), qv[1], exactTol)
			}
			checkNear(t, "P50", d.P50, quantileOf(want, 0.5), exactTol)
			checkNear(t, "P90", d.P90, quantileOf(want, 0.9), exactTol)
			checkNear(t, "P99", d.P99, quantileOf(want, 0.99), exactTol)
			checkNear(t, "P999", d.P999, quantileOf(want, 0.999), exactTol)
			if d.C1 != want.C1 {
				t.Errorf("C1 = %v, want %v", d.C1, want.C1)
			}
			checkNear(t, "MaxOverMean", d.MaxOverMean, want.MaxOverMean, exactTol)
			checkNear(t, "P99OverMean", d.P99OverMean, want.P99OverMean, exactTol)

			o := d.Outliers
			if o.Count != want.Outliers.Count {
				t.Errorf("Outliers.Count = %d, want %d", o.Count, want.Outliers.Count)
			}
			checkNear(t, "Outliers.Threshold", o.Threshold, want.Outliers.Threshold, exactTol)
			checkNear(t, "Outliers.Share", o.Share, want.Outliers.Share, exactTol)
			checkNear(t, "Outliers.LargestOverMean", o.LargestOverMean, want.Outliers.LargestOverMean, exactTol)
			checkNear(t, "Outliers.LargestZ", o.LargestZ, want.Outliers.LargestZ, exactTol)

			h := d.Haircut
			if h.Removed != want.Haircut.Removed {
				t.Errorf("Haircut.Removed = %d, want %d", h.Removed, want.Haircut.Removed)
			}
			checkNear(t, "Haircut.Mean", h.Mean, want.Haircut.Mean, exactTol)
			checkNear(t, "Haircut.Max", h.Max, want.Haircut.Max, 0)

			for _, c := range want.CI {
				checkCI(t, xs, c)
			}
			checkSameCI(t, "P99CI95", d.P99CI95, QuantileCI(xs, 0.99, 0.95))
			checkSameCI(t, "P99CI99", d.P99CI99, QuantileCI(xs, 0.99, 0.99))
		})
	}
}

func quantileOf(e expectedDataset, q float64) float64 {
	for _, qv := range e.Quantiles {
		if qv[0] == q {
			return qv[1]
		}
	}
	panic(fmt.Sprintf("expected.json lacks quantile %g", q))
}

func checkCI(t *testing.T, sorted []float64, want expectedCI) {
	t.Helper()
	what := fmt.Sprintf("QuantileCI(q=%g, %g)", want.Q, want.Confidence)
	got := QuantileCI(sorted, want.Q, want.Confidence)
	if got.OK != want.OK {
		t.Errorf("%s: OK = %v (%s), want %v", what, got.OK, got.Reason, want.OK)
		return
	}
	if !got.OK {
		if needs := fmt.Sprintf("at least %d", want.MinN); !strings.Contains(got.Reason, needs) {
			t.Errorf("%s: Reason %q does not say %q", what, got.Reason, needs)
		}
		return
	}
	if got.LowerRank != want.LowerRank || got.UpperRank != want.UpperRank {
		t.Errorf("%s: ranks = [%d, %d], want [%d, %d]", what, got.LowerRank, got.UpperRank, want.LowerRank, want.UpperRank)
	}
	checkNear(t, what+" Lower", got.Lower, want.Lower, 0)
	checkNear(t, what+" Upper", got.Upper, want.Upper, 0)
	checkNear(t, what+" Coverage", got.Coverage, want.Coverage, pTol)
	if got.Coverage < want.Confidence {
		t.Errorf("%s: Coverage %g below the confidence", what, got.Coverage)
	}
}

func checkSameCI(t *testing.T, what string, got, want Interval) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %+v, want %+v", what, got, want)
	}
}

func TestOneWayANOVAMatchesScipy(t *testing.T) {
	exp := loadExpected(t)
	byLevel := map[string][]float64{}
	for _, r := range readFixture(t, exp.Groups.File) {
		byLevel[r["level"]] = append(byLevel[r["level"]], parseLatency(t, r["latency_s"]))
	}
	var groups [][]float64
	for _, l := range slices.Sorted(maps.Keys(byLevel)) {
		groups = append(groups, byLevel[l])
	}
	checkANOVA(t, "OneWayANOVA", OneWayANOVA(groups), exp.Groups.ANOVA)
	checkANOVA(t, "OneWayANOVA(separated)", OneWayANOVA(exp.Separated.Groups), exp.Separated.ANOVA)
}

// gridConfigs groups the grid fixture into configurations by (clients,
// payload), the way gait analyze groups CSV rows.
func gridConfigs(t *testing.T, file string) []Config {
	t.Helper()
	samples := map[[2]string][]float64{}
	for _, r := range readFixture(t, file) {
		k := [2]string{r["clients"], r["payload"]}
		samples[k] = append(samples[k], parseLatency(t, r["latency_s"]))
	}
	var configs []Config
	for k, xs := range samples {
		configs = append(configs, Config{
			Factors: map[string]string{"clients": k[0], "payload": k[1]},
			Desc:    Describe(xs),
		})
	}
	return configs
}

func TestCompareMatchesScipy(t *testing.T) {
	exp := loadExpected(t)
	cmp := Compare(gridConfigs(t, exp.Grid.File))
	if len(cmp.Factors) != len(exp.Grid.Factors) {
		t.Fatalf("got %d factors, want %d", len(cmp.Factors), len(exp.Grid.Factors))
	}
	for _, f := range cmp.Factors {
		want, ok := exp.Grid.Factors[f.Factor]
		if !ok {
			t.Errorf("unexpected factor %q", f.Factor)
			continue
		}
		if !slices.Equal(f.Levels, want.Levels) {
			t.Errorf("%s levels = %v, want %v", f.Factor, f.Levels, want.Levels)
		}
		checkANOVA(t, f.Factor+" per-request", f.Latency, want.Latency)
		checkANOVA(t, f.Factor+" p99", f.P99, want.P99)
		checkANOVA(t, f.Factor+" max", f.Max, want.Max)
	}

	h, want := cmp.Headline, exp.Grid.Headline
	if h.WorstP99Config != want.WorstP99Config {
		t.Errorf("WorstP99Config = %q, want %q", h.WorstP99Config, want.WorstP99Config)
	}
	checkNear(t, "WorstP99OverMean", h.WorstP99OverMean, want.WorstP99OverMean, exactTol)
	if !slices.Equal(h.Exceeding, want.Exceeding) {
		t.Errorf("Exceeding = %v, want %v", h.Exceeding, want.Exceeding)
	}
	worst := 0.0
	for _, v := range want.UpperOverMean {
		if v == nil {
			t.Fatal("fixture grid should give every configuration a 99% interval")
		}
		worst = max(worst, *v)
	}
	checkNear(t, "WorstUpperOverMean", h.WorstUpperOverMean, worst, exactTol)
	if h.Checked != len(want.UpperOverMean) || h.Holds != (len(want.Exceeding) == 0) {
		t.Errorf("Checked = %d, Holds = %v; want %d, %v", h.Checked, h.Holds, len(want.UpperOverMean), len(want.Exceeding) == 0)
	}
}

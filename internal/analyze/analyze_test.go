package analyze

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gait-dev/gait/internal/latency"
)

// The stats package's fixtures come with values numpy and scipy computed
// (internal/stats/testdata/gen_fixtures.py); here they check the whole path
// from a CSV file to the result.
const fixtures = "../stats/testdata"

func load(t *testing.T, name string) []latency.Configuration {
	t.Helper()
	cs, err := latency.Load(filepath.Join(fixtures, name), latency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

type expectedANOVA struct {
	F         float64 `json:"f"`
	P         float64 `json:"p"`
	DFBetween int     `json:"df_between"`
	DFWithin  int     `json:"df_within"`
}

type expected struct {
	Grid struct {
		Factors map[string]struct {
			Levels  []string      `json:"levels"`
			Latency expectedANOVA `json:"latency"`
			P99     expectedANOVA `json:"p99"`
			Max     expectedANOVA `json:"max"`
		} `json:"factors"`
		Headline struct {
			Exceeding        []string           `json:"exceeding"`
			UpperOverMean    map[string]float64 `json:"upper_over_mean"`
			WorstP99Config   string             `json:"worst_p99_config"`
			WorstP99OverMean float64            `json:"worst_p99_over_mean"`
		} `json:"headline"`
	} `json:"grid"`
	Datasets map[string]struct {
		N    int     `json:"n"`
		Mean float64 `json:"mean"`
		Max  float64 `json:"max"`
		C1   bool    `json:"c1"`
	} `json:"datasets"`
}

func readExpected(t *testing.T) expected {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e expected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

func checkANOVA(t *testing.T, what string, got ANOVA, want expectedANOVA) {
	t.Helper()
	if !got.OK {
		t.Errorf("%s: not computed: %s", what, got.Reason)
		return
	}
	if !near(*got.F, want.F) || !near(*got.P, want.P) || *got.DFBetween != want.DFBetween || *got.DFWithin != want.DFWithin {
		t.Errorf("%s: F(%d, %d) = %v, p = %v; scipy: F(%d, %d) = %v, p = %v", what,
			*got.DFBetween, *got.DFWithin, *got.F, *got.P, want.DFBetween, want.DFWithin, want.F, want.P)
	}
	if *got.Influences != (want.P < 0.01) {
		t.Errorf("%s: influences = %v at p = %v", what, *got.Influences, want.P)
	}
}

func TestGridAgainstScipy(t *testing.T) {
	want := readExpected(t).Grid
	res := Run(load(t, "grid.csv"), Options{})
	if len(res.Configurations) != 6 || len(res.Factors) != 2 {
		t.Fatalf("%d configurations, %d factors", len(res.Configurations), len(res.Factors))
	}
	for _, f := range res.Factors {
		w, ok := want.Factors[f.Factor]
		if !ok {
			t.Fatalf("unexpected factor %q", f.Factor)
		}
		if !slices.Equal(f.Levels, w.Levels) {
			t.Errorf("%s levels %v, want %v", f.Factor, f.Levels, w.Levels)
		}
		checkANOVA(t, f.Factor+" latency", f.Latency, w.Latency)
		checkANOVA(t, f.Factor+" p99", f.P99, w.P99)
		checkANOVA(t, f.Factor+" max", f.Max, w.Max)
	}
	h := res.Headline
	if h.Holds || !slices.Equal(h.Exceeding, want.Headline.Exceeding) || h.Checked != 6 {
		t.Errorf("headline: holds %v, exceeding %v, checked %d; want exceeding %v", h.Holds, h.Exceeding, h.Checked,
			want.Headline.Exceeding)
	}
	if h.WorstP99Configuration != want.Headline.WorstP99Config || !near(h.WorstP99OverMean, want.Headline.WorstP99OverMean) {
		t.Errorf("worst p99/mean %v in %q, want %v in %q", h.WorstP99OverMean, h.WorstP99Configuration,
			want.Headline.WorstP99OverMean, want.Headline.WorstP99Config)
	}
	for _, c := range res.Configurations {
		got := *c.P99CI99.Upper / c.Mean
		if w := want.Headline.UpperOverMean[c.Name]; !near(got, w) {
			t.Errorf("%s: p99 upper bound / mean %v, want %v", c.Name, got, w)
		}
	}
}

func TestDatasetsAgainstNumpy(t *testing.T) {
	want := readExpected(t).Datasets
	for name, w := range want {
		res := Run(load(t, name), Options{})
		c := res.Configurations[0]
		if c.Count != w.N || !near(c.Mean, w.Mean) || c.Max != w.Max || c.C1.Unpredictable != w.C1 {
			t.Errorf("%s: n %d mean %v max %v C1 %v; numpy: %+v", name, c.Count, c.Mean, c.Max, c.C1.Unpredictable, w)
		}
	}
}

// TestJSONNeverNaN checks the documented null-and-reason convention on the
// edge cases: too few samples for an interval, all values equal, zero mean.
func TestJSONNeverNaN(t *testing.T) {
	configs := []latency.Configuration{
		{Name: "one", Factors: map[string]string{"k": "a"}, Latencies: []float64{0.002}},
		{Name: "equal", Factors: map[string]string{"k": "b"}, Latencies: []float64{0.001, 0.001, 0.001}},
		{Name: "zero", Factors: map[string]string{"k": "c"}, Latencies: []float64{0, 0}},
		{Name: "empty", Factors: map[string]string{"k": "d"}},
	}
	res := Run(configs, Options{})
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	cs := doc["configurations"].([]any)
	if len(cs) != 3 {
		t.Fatalf("%d configurations in JSON, want 3 (the empty one skipped)", len(cs))
	}
	one := cs[0].(map[string]any)
	ci := one["p99_ci99"].(map[string]any)
	if ci["ok"] != false || ci["upper"] != nil || !strings.Contains(ci["reason"].(string), "needs at least 528") {
		t.Errorf("interval without enough samples: %v", ci)
	}
	zero := cs[2].(map[string]any)
	if zero["p99_over_mean"] != nil || zero["c1"].(map[string]any)["max_over_mean"] != nil {
		t.Errorf("ratios over a zero mean must be null: %v", zero)
	}
	equal := cs[1].(map[string]any)
	if c2 := equal["c2"].(map[string]any); c2["count"] != 0.0 || c2["largest_over_mean"] != nil {
		t.Errorf("all equal: %v", c2)
	}
	f := doc["factors"].([]any)[0].(map[string]any)
	if lat := f["latency"].(map[string]any); lat["f"] != nil || lat["reason"] == "" {
		t.Errorf("ANOVA that cannot run: %v", lat)
	}
	if doc["single_level_factors"] == nil || doc["headline"].(map[string]any)["exceeding"] == nil {
		t.Errorf("empty lists must be [], not null")
	}
}

func TestTextAndHTML(t *testing.T) {
	res := Run(load(t, "grid.csv"), Options{})
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"configuration ", "clients=16 payload=4096",
		"clients influences the mean: F(2, 3597) = 26.2, p = 5.3e-12",
		"payload does not influence the p99",
		"exceeds 25 x the mean in 1 of 6 checked configurations: clients=16 payload=4096",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	var html bytes.Buffer
	if err := res.WriteHTML(&html, "grid"); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(html.String(), "<svg"); n != 4 {
		t.Errorf("%d figures, want 4", n)
	}
	if !strings.Contains(html.String(), "clients=16 payload=4096") {
		t.Errorf("HTML lacks the configuration table")
	}
}

func TestCCDFKeepsTheTail(t *testing.T) {
	sorted := make([]float64, 100000)
	for i := range sorted {
		sorted[i] = float64(i + 1)
	}
	xs, ys := ccdf(sorted)
	if len(xs) > 600 {
		t.Errorf("%d points, want a few hundred", len(xs))
	}
	if xs[0] != 1 || ys[0] != 1 || xs[len(xs)-1] != 100000 || ys[len(ys)-1] != 1e-5 {
		t.Errorf("ends (%v, %v) .. (%v, %v)", xs[0], ys[0], xs[len(xs)-1], ys[len(ys)-1])
	}
	if !slices.IsSorted(xs) {
		t.Errorf("x not increasing")
	}
	for i := range xs {
		if want := float64(len(sorted)-int(xs[i])+1) / float64(len(sorted)); ys[i] != want {
			t.Fatalf("point %d: (%v, %v), want fraction %v", i, xs[i], ys[i], want)
		}
	}
}

func TestShareWithinBound(t *testing.T) {
	configs := func() []latency.Configuration {
		return []latency.Configuration{
			// Unsorted on purpose: Run sorts before counting.
			{Name: "a", Factors: map[string]string{"k": "a"}, Latencies: []float64{0.003, 0.001, 0.002, 0.0005}},
			{Name: "b", Factors: map[string]string{"k": "b"}, Latencies: []float64{0.004, 0.005}},
		}
	}
	res := Run(configs(), Options{Bound: 0.002})
	want := []struct {
		within int
		share  float64
	}{{3, 0.75}, {0, 0}}
	for i, c := range res.Configurations {
		if c.WithinBound == nil || *c.WithinBound != want[i].within || *c.ShareWithinBound != want[i].share {
			t.Errorf("%s: within %v share %v, want %d and %v", c.Name, c.WithinBound, c.ShareWithinBound, want[i].within, want[i].share)
		}
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "within 2ms") || !strings.Contains(text.String(), "75.000%") {
		t.Errorf("text lacks the bound column:\n%s", text.String())
	}
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Bound          *float64         `json:"bound"`
		Configurations []map[string]any `json:"configurations"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Bound == nil || *doc.Bound != 0.002 || doc.Configurations[0]["share_within_bound"] != 0.75 {
		t.Errorf("JSON bound %v, first configuration %v", doc.Bound, doc.Configurations[0])
	}

	// Without a bound, neither the column nor the fields appear.
	res = Run(configs(), Options{})
	buf.Reset()
	if err := res.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), `"bound"`) || strings.Contains(buf.String(), "within_bound") {
		t.Errorf("JSON without --bound mentions a bound:\n%s", buf.String())
	}
	text.Reset()
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.SplitN(text.String(), "\n", 2)[0], "within") {
		t.Errorf("text without --bound has a bound column:\n%s", text.String())
	}
}

// A configuration that lacks a factor (or has it empty) is at level "(none)"
// in the text, the JSON and the HTML alike, never a blank.
func TestMissingLevelIsNamed(t *testing.T) {
	samples := func(scale float64) []float64 {
		out := make([]float64, 50)
		for i := range out {
			out[i] = scale * float64(1+i%7)
		}
		return out
	}
	configs := []latency.Configuration{
		{Name: "baseline", Factors: map[string]string{"system": "etcd"}, Latencies: samples(1e-3)},
		{Name: "f10", Factors: map[string]string{"system": "etcd", "factor": "10"}, Latencies: samples(2e-3)},
		{Name: "f100", Factors: map[string]string{"system": "etcd", "factor": "100"}, Latencies: samples(3e-3)},
		{Name: "empty op", Factors: map[string]string{"system": "etcd", "op": ""}, Latencies: samples(1e-3)},
		{Name: "get", Factors: map[string]string{"system": "etcd", "op": "get"}, Latencies: samples(1e-3)},
	}
	res := Run(configs, Options{})
	var got [][]string
	for _, f := range res.Factors {
		got = append(got, f.Levels)
	}
	want := [][]string{{"(none)", "10", "100"}, {"(none)", "get"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("levels %q, want %q", got, want)
	}
	var text, js, html bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if err := res.WriteHTML(&html, "levels"); err != nil {
		t.Fatal(err)
	}
	for what, want := range map[string]struct{ doc, s string }{
		"text": {text.String(), "factor (levels (none), 10, 100):"},
		"JSON": {js.String(), `"(none)",`},
		"HTML": {html.String(), "(none), 10, 100"},
	} {
		if !strings.Contains(want.doc, want.s) {
			t.Errorf("%s lacks %q", what, want.s)
		}
	}
	if strings.Contains(text.String(), "levels ,") {
		t.Errorf("text lists a blank level:\n%s", text.String())
	}
}

// TestGeneratorWarning: a configuration whose load generator fell behind
// is flagged before the table, in the headline and in the HTML report.
func TestGeneratorWarning(t *testing.T) {
	cs := []latency.Configuration{
		{Name: "load=open", Factors: map[string]string{"load": "open"}, Latencies: []float64{0.2, 0.3, 0.25},
			Warning: "the load generator fell behind its schedule"},
		{Name: "load=closed", Factors: map[string]string{"load": "closed"}, Latencies: []float64{0.001, 0.002, 0.001}},
	}
	res := Run(cs, Options{})
	var text, html bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text.String(), "WARNING: load=open: the load generator fell behind its schedule.\n") {
		t.Errorf("text does not open with the warning:\n%s", text.String())
	}
	if !strings.Contains(res.Headline.Verdict, "in 1 of 2 configurations the load generator fell behind") {
		t.Errorf("headline %q does not say it", res.Headline.Verdict)
	}
	if err := res.WriteHTML(&html, "t"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "WARNING: load=open: the load generator fell behind") {
		t.Errorf("HTML lacks the warning")
	}
}

// TestLabelsLeadWithWhatDiffers: runs of a scenario share system, fault and
// target; the legend, the table and the headline name each configuration
// by its factor and repetition only, say once what all share, and the JSON
// keeps the full names.
func TestLabelsLeadWithWhatDiffers(t *testing.T) {
	var cs []latency.Configuration
	for _, f := range []string{"1", "10"} {
		for _, rep := range []string{"1", "2"} {
			factors := map[string]string{"factor": f, "slowdown": f + "x", "repetition": rep, "fault": "nic", "system": "zookeeper",
				"target": "leader", "source": "runs/long/path/shared/by/all"}
			lat := make([]float64, 600)
			for i := range lat {
				lat[i] = 0.001 * float64(1+i%7)
			}
			lat[0] = 0.5
			cs = append(cs, latency.Configuration{Name: latencyName(factors), Factors: factors, Latencies: lat})
		}
	}
	res := Run(cs, Options{})
	if got := res.Configurations[1].Label; got != "factor=1 repetition=2" {
		t.Errorf("label %q, want factor=1 repetition=2", got)
	}
	if want := []string{"fault=nic", "source=runs/long/path/shared/by/all", "system=zookeeper", "target=leader"}; !slices.Equal(res.CommonFactors, want) {
		t.Errorf("common %v, want %v", res.CommonFactors, want)
	}
	if strings.Contains(res.Headline.Verdict, "zookeeper") || !strings.Contains(res.Headline.Verdict, "factor=") {
		t.Errorf("headline repeats what all share: %s", res.Headline.Verdict)
	}
	if !strings.Contains(res.Headline.WorstP99Configuration, "system=zookeeper") {
		t.Errorf("JSON headline names %q, want the full name", res.Headline.WorstP99Configuration)
	}
	var text, html bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "All 4 configurations: fault=nic source=runs/long/path/shared/by/all system=zookeeper target=leader.\n") ||
		strings.Count(text.String(), "zookeeper") != 1 {
		t.Errorf("text names what all share other than once:\n%s", text.String())
	}
	if err := res.WriteHTML(&html, "t"); err != nil {
		t.Fatal(err)
	}
	if strings.Count(html.String(), "zookeeper") != 1 {
		t.Errorf("HTML names what all share %d times, want once", strings.Count(html.String(), "zookeeper"))
	}
}

func latencyName(factors map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(factors)) {
		parts = append(parts, k+"="+factors[k])
	}
	return strings.Join(parts, " ")
}

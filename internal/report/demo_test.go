package report

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func lognormalSamples(r *rand.Rand, n int, median, sigma, tailShare, tailScale float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = median * math.Exp(sigma*r.NormFloat64())
		if r.Float64() < tailShare {
			xs[i] *= tailScale * (1 + 4*r.Float64())
		}
	}
	slices.Sort(xs)
	return xs
}

// demoPage exercises every block and chart kind with realistic data.
func demoPage() *Page {
	r := rand.New(rand.NewPCG(1, 2))
	p := NewPage("Report demo (synthetic data)")
	p.Paragraph("Every block and chart kind of package report, drawn from generated data.\nThe CDF has 3 configurations of 1,000,000 requests each.")
	p.Note("Verdict (a Note): the p99 of every configuration stays within 25 × its mean.")
	p.Heading("Summary")
	p.Table([]string{"configuration", "count", "mean", "p99", "max", "C1"}, [][]string{
		{"clients=1", "1000000", "112µs", "310µs", "4.2ms", "yes"},
		{"clients=8", "1000000", "240µs", "1.1ms", "12ms", "yes"},
		{"clients=64 <script>alert(1)</script>", "1000000", "1.9ms", "11.6ms", "83ms", "no"},
	})
	p.Pre("$ gait analyze testdata/traces/redis-loopback.csv --html out/report.html")

	p.Heading("Latency distribution")
	configs := []struct {
		name         string
		median, sig  float64
		share, scale float64
	}{
		{"clients=1", 100e-6, 0.3, 0.002, 20},
		{"clients=8", 200e-6, 0.4, 0.005, 30},
		{"clients=64 <script>alert(1)</script>", 1.5e-3, 0.5, 0.01, 10},
	}
	var cdf LineChart
	cdf.Title = "Latency CCDF"
	cdf.X = Axis{Label: "latency", Log: true, Unit: "s"}
	cdf.Y = Axis{Label: "share of requests above", Log: true, Unit: "%"}
	cdf.Step = true
	for _, c := range configs {
		cdf.Series = append(cdf.Series, CCDF(c.name, lognormalSamples(r, 1_000_000, c.median, c.sig, c.share, c.scale)))
	}
	p.Figure("Share of requests slower than a given latency, per configuration, on log axes.", cdf)

	var sc ScatterChart
	sc.Title = "Outliers beyond mean + 3σ"
	sc.X = Axis{Label: "outliers (share of requests)", Log: true, Unit: "%"}
	sc.Y = Axis{Label: "largest outlier / mean", Log: true}
	for i, name := range []string{"payload=64B", "payload=1KiB", "payload=16KiB"} {
		s := Series{Name: name}
		for range 40 {
			s.X = append(s.X, math.Pow(10, -4+2.5*r.Float64()+0.3*float64(i)))
			s.Y = append(s.Y, math.Pow(10, 0.5+2*r.Float64()))
		}
		sc.Series = append(sc.Series, s)
	}
	p.Figure("Outlier count against outlier size, one dot per configuration.", sc)

	p.Heading("Over time")
	var ts LineChart
	ts.Title = "p99 latency per second"
	ts.X = Axis{Label: "time since start", Unit: "s"}
	ts.Y = Axis{Label: "p99 latency", Unit: "s", Zero: true}
	ts.Step = true
	for f, factor := range []string{"factor 1", "factor 10", "factor 100", "factor 1000"} {
		s := Series{Name: factor, Dashed: f == 0}
		for t := range 120 {
			v := 2e-3 * (1 + 0.2*r.NormFloat64())
			if f > 0 && t >= 30 && t < 90 {
				v *= 1 + float64(f)*1.5
			}
			s.X = append(s.X, float64(t))
			s.Y = append(s.Y, v)
		}
		ts.Series = append(ts.Series, s)
	}
	p.Figure("p99 latency per second; the fault is active from 30 s to 90 s.", ts)

	var tp LineChart
	tp.Title = "Throughput"
	tp.X = Axis{Label: "time since start", Unit: "s"}
	tp.Y = Axis{Label: "throughput", Unit: "ops/s", Zero: true}
	tp.Markers = true
	for f, factor := range []string{"factor 1", "factor 100"} {
		s := Series{Name: factor}
		for t := 0; t < 120; t += 5 {
			v := 42000 * (1 + 0.05*r.NormFloat64())
			if f > 0 && t >= 30 && t < 90 {
				v /= 8
			}
			s.X = append(s.X, float64(t))
			s.Y = append(s.Y, v)
		}
		tp.Series = append(tp.Series, s)
	}
	p.Figure("Throughput every 5 s.", tp)

	p.Heading("Haircut")
	bc := BarChart{
		Title:      "p99 and max per configuration, sorted by mean",
		Y:          Axis{Label: "latency", Log: true, Unit: "s"},
		Categories: []string{"clients=1 payload=64B", "clients=1 payload=1KiB", "clients=8 payload=64B", "clients=8 payload=1KiB", "clients=64 payload=64B", "clients=64 payload=1KiB"},
	}
	mean := []float64{110e-6, 130e-6, 240e-6, 300e-6, 1.9e-3, 2.4e-3}
	s99, smax, shair := Series{Name: "p99"}, Series{Name: "max"}, Series{Name: "max without the top 1%"}
	for _, m := range mean {
		s99.Y = append(s99.Y, m*(3+2*r.Float64()))
		smax.Y = append(smax.Y, m*(20+60*r.Float64()))
		shair.Y = append(shair.Y, m*(3.5+2*r.Float64()))
	}
	bc.Series = []Series{s99, smax, shair}
	p.Figure("The haircut: p99 and max per configuration, and the max once the slowest 1% is removed.", bc)
	p.Figure("A chart without data.", LineChart{Title: "Empty"})
	return p
}

// TestDemoPage renders the demo report; GAIT_REPORT_DEMO=FILE also keeps it
// there, for scripts/screenshot.sh.
func TestDemoPage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "demo.html")
	if path := os.Getenv("GAIT_REPORT_DEMO"); path != "" {
		out = path
	}
	if err := demoPage().WriteFile(out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	// The SVG namespace is the one URL allowed: it names, it is never fetched.
	h := strings.ReplaceAll(html, `xmlns="http://www.w3.org/2000/svg"`, "")
	for _, bad := range []string{"NaN", "Inf", "<script>", "http://", "https://", "ZgotmplZ", "src="} {
		if strings.Contains(h, bad) {
			t.Errorf("report contains %q", bad)
		}
	}
	if len(html) > 300_000 {
		t.Errorf("report is %d bytes for 3 million CDF points, want under 300 kB", len(html))
	}
	if n := strings.Count(html, "<figure"); n != 6 {
		t.Errorf("report has %d figures, want 6", n)
	}
	t.Logf("demo report: %s (%d bytes)", out, len(html))
}

func BenchmarkCDFChartMillionPoints(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	s := CCDF("", lognormalSamples(r, 1_000_000, 1e-4, 0.5, 0.01, 20))
	c := LineChart{X: Axis{Log: true, Unit: "s"}, Y: Axis{Log: true, Unit: "%"}, Series: []Series{s}, Step: true}
	b.ReportAllocs()
	for b.Loop() {
		_ = c.SVG()
	}
}

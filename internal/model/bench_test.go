package model

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkPredictGrid is the 32 x 32 duplicates x replicas grid (both
// predictors) for a log-normal service time; the load is that of one group
// taking all traffic (r = 1), and r groups share it. The correlation term's
// cost grows with load: at 60% it is most of the time.
func BenchmarkPredictGrid(b *testing.B) {
	svc := LogNormal{1e-3, 1}
	for _, load := range []float64{0.15, 0.6} {
		b.Run(fmt.Sprintf("load=%g", load), func(b *testing.B) {
			sys := System{Service: svc, Rate: load / svc.Mean(), Bound: 5e-3, Net: Constant{1e-4}}
			for b.Loop() {
				if _, err := Predict(sys, seq(32), seq(32), AccurateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSimulate reports simulated requests per second for one group of
// 4 duplicates (exponential service, 30% load).
func BenchmarkSimulate(b *testing.B) {
	for _, d := range []int{1, 4, 32} {
		b.Run(map[int]string{1: "d=1", 4: "d=4", 32: "d=32"}[d], func(b *testing.B) {
			sys := System{Service: Exponential{1e-3}, Rate: 300, Bound: 3e-3}
			const n = 1 << 20
			for b.Loop() {
				if _, err := Simulate(sys, 1, d, SimOptions{Requests: n, Seed: 1, Warmup: 1}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
			b.ReportMetric(float64(n*d)*float64(b.N)/b.Elapsed().Seconds(), "server-requests/s")
		})
	}
}

// BenchmarkPredictRequest is the request predictor over a horizon of 120
// ms, exp:1ms: for Inner-Join Olio (30 then 20 parallel accesses) on one
// server at 30% load, on two and three groups of two duplicates at 8%, on
// one group of four duplicates at 8% and 30%, on four groups of one
// server at 8%; for Gridlab-D's batches (8 requests of 4 then 3 accesses)
// on one group of four at 30%; for three phases of 10 on one server and
// on one group of two duplicates at 30%.
func BenchmarkPredictRequest(b *testing.B) {
	for _, c := range []struct {
		name string
		req  Request
		util float64
		cfg  Config
	}{
		{"1x1-30%", olio, 0.3, Config{1, 1}}, {"2x2-8%", olio, 0.08, Config{2, 2}},
		{"4x1-8%", olio, 0.08, Config{4, 1}}, {"4x1-30%", olio, 0.3, Config{4, 1}},
		{"1x4-8%", olio, 0.08, Config{1, 4}}, {"2x3-8%", olio, 0.08, Config{2, 3}},
		{"gridlabd-4x1-30%", gridlabd, 0.3, Config{4, 1}},
		{"three-1x1-30%", threePhases, 0.3, Config{1, 1}}, {"three-2x1-30%", threePhases, 0.3, Config{2, 1}},
		{"three-1x2-30%", threePhases, 0.3, Config{1, 2}}, {"three-2x2-8%", threePhases, 0.08, Config{2, 2}},
		{"gridlabd-1x4-8%", gridlabd, 0.08, Config{1, 4}}, {"2x4-8%", olio, 0.08, Config{2, 4}},
		{"gridlabd-2x2-8%", gridlabd, 0.08, Config{2, 2}},
	} {
		b.Run(c.name, func(b *testing.B) {
			sys := expRequests(c.req, c.util)
			for b.Loop() {
				if _, err := PredictRequest(sys, c.cfg, 0.12, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPredictRequestNet is the request predictor for Olio with a
// network delay on each reply (const:40us service, lognormal:250us,0.4,
// a horizon of 10 ms): on one server at 30% load, on four groups of one
// server, on two groups of two duplicates and on one group of two at 8%.
func BenchmarkPredictRequestNet(b *testing.B) {
	for _, c := range []struct {
		name string
		util float64
		cfg  Config
	}{{"1x1-30%", 0.3, Config{1, 1}}, {"1x4-8%", 0.08, Config{1, 4}}, {"2x2-8%", 0.08, Config{2, 2}}, {"2x1-8%", 0.08, Config{2, 1}}} {
		b.Run(c.name, func(b *testing.B) {
			sys := System{Service: Constant{V: 40e-6}, Net: LogNormal{Median: 250e-6, Sigma: 0.4},
				Request: olio, Rate: c.util / (float64(olio.Accesses()) * 40e-6)}
			for b.Loop() {
				if _, err := PredictRequest(sys, c.cfg, 0.01, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPlanSideBySide is plan's highest rate for requests of one
// phase of 4 accesses over every mix of 4 nodes (about a hundred
// predictions), its mixes searched one at a time (procs=1) and side by
// side on two cores (procs=2): the ratio is what sideBySide gains on
// this machine.
func BenchmarkPlanSideBySide(b *testing.B) {
	sys := System{Service: Exponential{1e-3}, Request: Request{Phases: []int{4}}}
	for _, procs := range []int{1, 2} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			for b.Loop() {
				if _, _, err := MaxRate(sys, Target{0.99, 10e-3}, 4, PredictorAccurate, AccurateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package analyze

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/latency"
	"github.com/gait-dev/gait/internal/rundir"
)

const benchSamples = 10_000_000

// writeBenchRun writes a run directory of benchSamples requests with
// log-normal latencies around 200µs and a sparse heavy tail.
func writeBenchRun(b *testing.B, dir string) {
	b.Helper()
	w, err := rundir.Create(dir, rundir.Config{System: "bench", Factor: 1, Ops: []string{"get"},
		Hosts: []rundir.Host{{Name: "h0"}}, Factors: map[string]string{"clients": "8"}})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range benchSamples {
		lat := 200e3 * math.Exp(0.4*rng.NormFloat64())
		if rng.IntN(1000) == 0 {
			lat *= 50
		}
		w.Add(rundir.Sample{Start: time.Duration(i) * 10 * time.Microsecond, Latency: time.Duration(lat)})
	}
	if err := w.Close(nil); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAnalyzeRunDir1e7 is gait analyze's core end to end over a run
// directory of 10^7 samples: open, read the latencies, describe (sort,
// moments, quantiles, intervals), compare. It reports samples/s, the bytes
// allocated per sample, and the peak heap in use per sample (sampled every
// millisecond), against rundir.SampleBytes, the stored size of a sample.
func BenchmarkAnalyzeRunDir1e7(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "run")
	writeBenchRun(b, dir)
	runtime.GC()

	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}
	}()
	var before, after, ms runtime.MemStats
	runtime.ReadMemStats(&before)
	var peakPerRun uint64
	b.ResetTimer()
	for b.Loop() {
		// Each run starts from a collected heap, as gait analyze does, so
		// the peak is that of one analysis, not of garbage left by the last.
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		peak.Store(ms.HeapInuse)
		b.StartTimer()
		configs, err := latency.Load(dir, latency.Options{})
		if err != nil {
			b.Fatal(err)
		}
		res := Run(configs, Options{})
		if res.Configurations[0].Count != benchSamples {
			b.Fatal("wrong count")
		}
		b.StopTimer()
		runtime.ReadMemStats(&after)
		peakPerRun = max(peakPerRun, max(peak.Load(), after.HeapInuse)-ms.HeapInuse)
		b.StartTimer()
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	close(stop)
	<-done
	n := float64(b.N) * benchSamples
	b.ReportMetric(n/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "alloc-B/sample")
	b.ReportMetric(float64(peakPerRun)/benchSamples, "peak-B/sample")
	b.ReportMetric(rundir.SampleBytes, "stored-B/sample")
}

package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// benchLatencies returns n lognormal latencies around 1 ms with 0.5% slow
// outliers, the shape gait analyzes.
func benchLatencies(n int) []float64 {
	rng := rand.New(rand.NewPCG(7, 11))
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = 1e-3 * math.Exp(0.5*rng.NormFloat64())
		if rng.IntN(200) == 0 {
			xs[i] *= 20 + 280*rng.Float64()
		}
	}
	return xs
}

// runOnCopies times op on a fresh copy of data per iteration (the copy is
// not timed) and reports samples per second.
func runOnCopies(b *testing.B, data []float64, op func([]float64)) {
	work := make([]float64, len(data))
	b.SetBytes(int64(8 * len(data)))
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		copy(work, data)
		b.StartTimer()
		op(work)
	}
	b.ReportMetric(float64(len(data))*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkDescribe1e7(b *testing.B) {
	data := benchLatencies(10_000_000)
	var d Description
	runOnCopies(b, data, func(xs []float64) { d = Describe(xs) })
	if d.Count != len(data) {
		b.Fatalf("Count = %d", d.Count)
	}
}

// BenchmarkSortLatencies compares the radix sort with its peer, slices.Sort
// (pdqsort), on the same data.
func BenchmarkSortLatencies(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000, 10_000_000} {
		data := benchLatencies(n)
		b.Run(fmt.Sprintf("radix/n=%d", n), func(b *testing.B) {
			runOnCopies(b, data, SortLatencies)
		})
		b.Run(fmt.Sprintf("slices.Sort/n=%d", n), func(b *testing.B) {
			runOnCopies(b, data, slices.Sort[[]float64])
		})
	}
}

package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBusyClassesAgainstSharedLumps runs one group of d duplicates that
// receive the same lumps at the same Poisson instants (Olio's phases on
// two groups at 30%: each phase's start brings the group a Binomial(k, 1/2)
// count of exponential services, every duplicate its own draws) and
// measures, at the lumps' instants (Poisson: they see the time average),
// the chance that every duplicate's wait is past x. busyClasses' classes
// must mix to the stationary wait exactly, and with each class's wait
// drawn apart at each duplicate they must give the shared tail within 30%
// of it (they come 4-27% light: the oldest lump's wait is drawn apart,
// and three classes merge keys), where the one busy law drawn apart (the
// old form) is 1.2-85 times too light.
func TestBusyClassesAgainstSharedLumps(t *testing.T) {
	const mean, draws = 1e-3, 1000000
	phases := []int{30, 20}
	rate := 0.3 / (float64(30+20) * mean)
	g := grid{h: 0.15 / 511, n: 512}
	sums := serviceSums(g.pmf(Exponential{mean}), 30)
	counts := phaseCounts(phases, 0.5)
	wait := g.waitingPMF(g.lumpEquilibrium(g.phaseStartLump(phases, 0.5, sums, mean)), 0.15)
	classes := g.busyClasses(wait, counts, 2*rate, mean, sums)
	busy := 1 - wait[0]
	mixed := make([]float64, g.n)
	mixed[0] = wait[0]
	for _, c := range classes {
		for i, v := range c.pmf {
			mixed[i] += busy * c.w * v
		}
	}
	a, b := cumulative(mixed), cumulative(wait)
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-5 {
			t.Fatalf("cell %d: the classes mix to %.6f, the wait is %.6f", i, a[i], b[i])
		}
	}
	for _, d := range []int{2, 4} {
		rng := rand.New(rand.NewPCG(1, 2))
		free := make([]float64, d)
		xs := []float64{5e-3, 10e-3, 15e-3}
		over := make([]float64, len(xs))
		now := 0.0
		for range draws {
			now += rng.ExpFloat64() / (2 * rate)
			low := math.Inf(1)
			for _, f := range free {
				low = math.Min(low, f-now)
			}
			for i, x := range xs {
				if low > x {
					over[i]++
				}
			}
			u, c := rng.Float64(), 0
			for c < len(counts)-1 && u > counts[c] {
				u -= counts[c]
				c++
			}
			for j := range free {
				free[j] = math.Max(free[j], now)
				for range c {
					free[j] += rng.ExpFloat64() * mean
				}
			}
		}
		for i, x := range xs {
			cell := int(math.Round(x / g.h))
			apart := busy * math.Pow((1-b[cell])/busy, float64(d))
			shared := 0.0
			for _, c := range classes {
				shared += busy * c.w * math.Pow(1-cumulative(c.pmf)[cell], float64(d))
			}
			sim := over[i] / draws
			t.Logf("d=%d x=%.0f ms: simulated %.5f, classes %.5f, one busy law %.5f", d, x*1e3, sim, shared, apart)
			if math.Abs(shared-sim) > 0.3*sim {
				t.Errorf("d=%d, every wait past %.0f ms: classes %.5f, simulated %.5f", d, x*1e3, shared, sim)
			}
		}
	}
}

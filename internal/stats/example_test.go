package stats_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gait-dev/gait/internal/stats"
)

// latencies returns n lognormal latencies around median seconds, with every
// slowEvery-th request 100 times slower (0 for none).
func latencies(n int, median float64, slowEvery int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = median * math.Exp(0.3*rng.NormFloat64())
		if slowEvery > 0 && i%slowEvery == 0 {
			xs[i] *= 100
		}
	}
	return xs
}

func ExampleDescribe() {
	d := stats.Describe(latencies(10000, 0.001, 500, 1))
	fmt.Printf("n=%d mean=%.3gs p99=%.3gs max=%.3gs\n", d.Count, d.Mean, d.P99, d.Max)
	fmt.Printf("C1 %v (max/mean %.0f); C2 %d outliers (%.2f%%)\n", d.C1, d.MaxOverMean, d.Outliers.Count, 100*d.Outliers.Share)
	fmt.Printf("haircut: %d removed, max %.3gs\n", d.Haircut.Removed, d.Haircut.Max)
	fmt.Printf("p99 99%% CI [%.3g, %.3g] ranks %d..%d\n", d.P99CI99.Lower, d.P99CI99.Upper, d.P99CI99.LowerRank, d.P99CI99.UpperRank)
	// Output:
	// n=10000 mean=0.00123s p99=0.00204s max=0.147s
	// C1 true (max/mean 119); C2 20 outliers (0.20%)
	// haircut: 100 removed, max 0.00204s
	// p99 99% CI [0.00199, 0.00215] ranks 9873..9926
}

func ExampleCompare() {
	var configs []stats.Config
	for i, clients := range []string{"1", "8"} {
		for j, payload := range []string{"16", "4096"} {
			median := 0.001 * float64(1+7*i) // clients slow every request down
			configs = append(configs, stats.Config{
				Factors: map[string]string{"clients": clients, "payload": payload},
				Desc:    stats.Describe(latencies(2000, median, 400, uint64(10*i+j))),
			})
		}
	}
	cmp := stats.Compare(configs)
	for _, f := range cmp.Factors {
		fmt.Println(f.Verdict)
	}
	fmt.Println(cmp.Headline.Verdict)
	// Output:
	// clients influences the mean (p=6.3e-34 < 0.01); influences the p99 (p=2.9e-05 < 0.01); does not influence the max (p=0.055)
	// payload does not influence the mean (p=0.85); does not influence the p99 (p=0.99); does not influence the max (p=0.76)
	// largest p99/mean is 1.64 (clients=1 payload=16); the upper 99% bound of p99 is within 25 x the mean in all 4 checked configurations (at most 1.86 x, clients=1 payload=4096)
}

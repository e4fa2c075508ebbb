package model

import (
	"fmt"
	"math"
)

// fanOutNet is the network delay the request predictor adds to a
// duplicate's part of a phase: the part's n accesses are served one after
// another, each reply then taking its own network delay, and the part
// ends with the last reply. With T_i the i-th access's service end and N_i
// its delay, the part ends at max_i (T_i + N_i) = T_n + Y_n, where Y_1 = N_1
// and Y_i = max(Y_{i-1} - S_i, N_i). The predictor's parts add one network
// delay after their services, which for n > 1 is the law of one reply
// where the simulator (and a client) waits for the slowest of n: with a
// spread delay (a measured one's, hundreds of µs beside 40-130 µs of
// work), that put the predictor 0.16-0.48 above its own simulator at the
// median of Olio on gait-redis. Y_n is taken independent of T_n (exact
// for a constant service). A constant delay, or parts of one access, are
// left as they are: Y_n is then N.
//
// With d > 1 duplicates an access is answered by its first reply, so
// the group's part ends with the slowest of n accesses' fastest replies:
// Y_n of the least of d delays. The predictor takes the group's end as
// the first of its d duplicates' parts, each drawn apart, so each part
// gets the law Z whose least of d is that: 1 - (1-F_Z)^d = F_Y (exact
// when the duplicates' services and waits are alike, as at low load with
// a constant service). Drawing Y_n of one delay per part instead put
// Olio's 2x2 and 4x2 at 16 requests/s 0.06-0.36 below the simulator.
func fanOutNet(net, service Distribution, n, d int) (Distribution, error) {
	if _, ok := net.(Constant); ok || n <= 1 || !(net.Mean() > 0) {
		return net, nil
	}
	hi := 2 * net.Mean()
	for i := 0; i < 64 && net.CDF(hi) < 1-1e-9; i++ {
		hi *= 2
	}
	const cells = 2048
	h := hi / cells
	F := make([]float64, cells+1)
	for i := range F {
		F[i] = 1 - math.Pow(1-net.CDF(float64(i)*h), float64(d))
	}
	// The service's law in cells, its mean kept (grid.pmf).
	step := newGapStep(F, (grid{h: h, n: cells + 1}).pmf(service))
	cur := F
	for range n - 1 {
		cur = step.next(cur) // n > 1: cur is a new slice, F kept
	}
	for y, v := range cur {
		cur[y] = 1 - math.Pow(1-v, 1/float64(d))
	}
	// Its quantiles, as samples of an empirical law the predictor's grid
	// reads like any measured delay.
	const points = 4000
	samples := make([]float64, points)
	y := 0
	for m := range samples {
		q := (float64(m) + 0.5) / points
		for y < cells && cur[y] < q {
			y++
		}
		x := float64(y) * h
		if y > 0 && cur[y] > cur[y-1] {
			x -= h * (cur[y] - q) / (cur[y] - cur[y-1])
		}
		samples[m] = max(0, x)
	}
	return NewEmpirical(samples, fmt.Sprintf("the last reply of %d accesses on %d duplicates, each after %s", n, d, net))
}

// accessesPerPart is how many of a request's own accesses a group's
// duplicate serves in a phase, on average over its phases (at least 1).
func accessesPerPart(q Request, cfg Config) int {
	ph := q.phases()
	return max(1, int(math.Round(float64(q.Accesses())/float64(len(ph)*cfg.Replicas))))
}

// phasesNet is the law on g of a request's network delays on one server:
// each phase's is the last reply of its k accesses (fanOutNet), and the
// phases follow one another.
func (g grid) phasesNet(net, service Distribution, phases []int) ([]float64, error) {
	law := g.pmf(Constant{0})
	for _, k := range phases {
		y, err := fanOutNet(net, service, k, 1)
		if err != nil {
			return nil, err
		}
		law = convolve(law, g.pmf(y))
	}
	return law, nil
}

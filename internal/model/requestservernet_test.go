package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLastReplyIsTheSlowestReply: a phase of n accesses served back to
// back ends with its slowest reply, max_i (T_i + N_i). On a constant
// service w that is max_i (i·w + N_i), whose CDF is Π_i F_N(t - i·w); on
// an exponential one it is checked against drawing the phase. (The grid
// is four times the predictor's: on its cells, of 2 µs, the law reads
// about half a cell early, 0.002-0.004 here.)
func TestLastReplyIsTheSlowestReply(t *testing.T) {
	net, n := LogNormal{Median: 250e-6, Sigma: 0.4}, 30
	g := grid{h: 4e-3 / 8191, n: 8192}
	w := 40e-6
	law := cumulative(g.newReplyLaws(g.pmf(Constant{V: w}), g.pmf(net), n).ends[n])
	for _, x := range []float64{1.4e-3, 1.6e-3, 1.8e-3, 2.1e-3} {
		want := 1.0
		for i := 1; i <= n; i++ {
			want *= net.CDF(x - float64(i)*w)
		}
		if got := law[int(math.Round(x/g.h))]; math.Abs(got-want) > 0.002 {
			t.Errorf("constant service: P(M <= %s) = %.4f, want %.4f", fmtDur(x), got, want)
		}
	}
	svc := Exponential{M: w}
	replies := g.newReplyLaws(g.pmf(svc), g.pmf(net), n)
	law = cumulative(replies.ends[n])
	r := rand.New(rand.NewPCG(1, 2))
	const draws = 200000
	ends := make([]float64, draws)
	for k := range ends {
		tEnd := 0.0
		for range n {
			tEnd += svc.Sample(r)
			ends[k] = math.Max(ends[k], tEnd+net.Sample(r))
		}
	}
	for _, x := range []float64{1.4e-3, 1.7e-3, 2e-3, 2.4e-3} {
		want := 0.0
		for _, e := range ends {
			if e <= x {
				want++
			}
		}
		want /= draws
		if got := law[int(math.Round(x/g.h))]; math.Abs(got-want) > 0.004 {
			t.Errorf("exponential service: P(M <= %s) = %.4f, drawn %.4f", fmtDur(x), got, want)
		}
	}
}

// TestOneServerWithNetworkMatchesSimulation: Olio's phases on one server
// per group whose replies take a spread delay six times an access's
// work. In each reply gap a server serves what came behind the first
// phase, and what arrives in the gap goes ahead of the second. On one
// server the predictor is within the thesis's 0.002 at 1% and 8% load,
// 0.005 at 30% (a constant service's p90, 0.006 off against 4x10^5
// simulated requests, is the map's worst; an exponential one's is
// 0.002); on two groups within 0.002 at 8% (0.0007 in the map; 0.0043
// while the last request's second phase landed anywhere in this one's
// first phase).
func TestOneServerWithNetworkMatchesSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 200000 requests per load")
	}
	for _, c := range []struct {
		svc       Distribution
		cfg       Config
		util, tol float64
	}{
		{Constant{V: 40e-6}, Config{1, 1}, 0.01, 0.002}, {Constant{V: 40e-6}, Config{1, 1}, 0.08, 0.002},
		{Constant{V: 40e-6}, Config{1, 1}, 0.3, 0.005}, {Exponential{M: 40e-6}, Config{1, 1}, 0.08, 0.002},
		{Constant{V: 40e-6}, Config{1, 2}, 0.08, 0.002},
	} {
		sys := System{Service: c.svc, Net: LogNormal{Median: 250e-6, Sigma: 0.4},
			Request: Request{Phases: []int{30, 20}}, Rate: c.util / (50 * 40e-6)}
		matchesSimulation(t, sys, c.cfg, c.tol, SimOptions{Requests: 200000, Seed: 11})
	}
}

// TestDuplicatesInGroupsWithNetworkMatchesSimulation: Olio on two groups
// of two duplicates whose replies take a spread delay. A duplicate served
// by the first phase's end whose reply is still in flight starts the
// second phase then, not after its reply: taken from its reply, the
// predictor was 0.024 below the simulator at 1.5 ms (3.5% against 5.9%).
func TestDuplicatesInGroupsWithNetworkMatchesSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("predicts two groups of duplicates, the dearest path")
	}
	sys := System{Service: Constant{V: 40e-6}, Net: LogNormal{Median: 250e-6, Sigma: 0.4},
		Request: Request{Phases: []int{30, 20}}, Rate: 16}
	matchesSimulation(t, sys, Config{2, 2}, 0.01, SimOptions{Requests: 96000, Seed: 7})
}

// TestDuplicatesInOneGroupWithNetworkMatchesSimulation: Olio on one group
// of two duplicates whose replies take a spread delay, at 1% load: the
// requests arriving within the group's delay go ahead of the second
// phase, and the delay serves their work. With the delay added after
// the law instead, 2x1 was 0.006 pessimistic at p99.
func TestDuplicatesInOneGroupWithNetworkMatchesSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 200000 requests")
	}
	sys := System{Service: Constant{V: 40e-6}, Net: LogNormal{Median: 250e-6, Sigma: 0.4},
		Request: Request{Phases: []int{30, 20}}, Rate: 0.01 / (50 * 40e-6)}
	matchesSimulation(t, sys, Config{2, 1}, 0.002, SimOptions{Requests: 200000, Seed: 11})
}

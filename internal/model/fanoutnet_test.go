package model

import (
	"math"
	"testing"
)

// TestFanOutNetIsTheLastReply: on a constant service the part's delay is
// max over its accesses of (N_i - (n-i)·w), whose CDF is the product
// Π_m F_N(y + m·w); with d duplicates each part's law has as its least of
// d the Y of the least of d delays.
func TestFanOutNetIsTheLastReply(t *testing.T) {
	net, w, n := Exponential{M: 250e-6}, 40e-6, 8
	y, err := fanOutNet(net, Constant{V: w}, n, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []float64{100e-6, 300e-6, 600e-6, 1e-3} {
		want := 1.0
		for m := range n {
			want *= net.CDF(x + float64(m)*w)
		}
		if got := y.CDF(x); math.Abs(got-want) > 0.002 {
			t.Errorf("P(Y_%d <= %s) = %.4f, want %.4f", n, fmtDur(x), got, want)
		}
	}
	z, err := fanOutNet(net, Constant{V: w}, n, 2)
	if err != nil {
		t.Fatal(err)
	}
	least := Exponential{M: 125e-6} // the least of two exp:250µs
	for _, x := range []float64{100e-6, 300e-6, 600e-6} {
		want := 1.0
		for m := range n {
			want *= least.CDF(x + float64(m)*w)
		}
		if got := 1 - math.Pow(1-z.CDF(x), 2); math.Abs(got-want) > 0.002 {
			t.Errorf("least of two parts' delays <= %s: %.4f, want %.4f", fmtDur(x), got, want)
		}
	}
	if one, _ := fanOutNet(net, Constant{V: w}, 1, 1); one != Distribution(net) {
		t.Errorf("a part of one access: got %v, want the delay itself", one)
	}
}

// TestRequestWithNetworkMatchesSimulation: Olio's phases at Figure 14's
// 16 requests/s with a network delay six times the work and spread
// (gait-redis's single accesses measure about so: 40 µs of hosts' work,
// 250 µs of the rest), on Figure 14's 1x4 and 4x1 (its 2x2:
// TestDuplicatesInGroupsWithNetworkMatchesSimulation; one server, two
// groups and 2x1, more tightly: requestservernet_test.go).
func TestRequestWithNetworkMatchesSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 96000 requests per mix")
	}
	sys := System{Service: Constant{V: 40e-6}, Net: LogNormal{Median: 250e-6, Sigma: 0.4},
		Request: Request{Phases: []int{30, 20}}, Rate: 16}
	for _, cfg := range []Config{{1, 4}, {4, 1}} {
		matchesSimulation(t, sys, cfg, 0.01, SimOptions{Requests: 96000, Seed: 7})
	}
}

package model

import "testing"

// TestGroupChainMatchesSimulation: three phases of 10 on groups of two
// duplicates at 1% load. The batches' back-to-back form (batchGroups, which
// took them before groupChain) was 0.0385, 0.0130 and 0.0125 off on 2x2,
// 2x3 and 2x4 (slow at the median: a group idle before the barrier was
// taken as busy). Under -short only 2x2, with fewer requests.
func TestGroupChainMatchesSimulation(t *testing.T) {
	cases := []struct {
		cfg Config
		tol float64
	}{{Config{2, 2}, 0.003}, {Config{2, 3}, 0.002}, {Config{2, 4}, 0.002}}
	requests := 400000
	if testing.Short() {
		cases, requests = cases[:1], 100000
	}
	for _, c := range cases {
		matchesSimulation(t, expRequests(threePhases, 0.01), c.cfg, c.tol, SimOptions{Requests: requests, Seed: 1})
	}
}

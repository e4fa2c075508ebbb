package model

import "testing"

// TestBatchBarrierMatchesSimulation: batches of eight two-phase requests
// (4 then 3 accesses) on groups of duplicates at 1% load, where the
// request's shape is what matters. batchGroups (which took them before)
// was 0.026 optimistic at the median on 2x2 and 0.033 on 4x2 (each
// request's first phase and the work ahead of its last taken apart, each
// group's share of the batch drawn apart); batchBarrier is within 0.006.
// Under -short only 2x2, with fewer requests.
func TestBatchBarrierMatchesSimulation(t *testing.T) {
	t.Parallel()
	cases := []Config{{2, 2}, {4, 2}}
	requests := 400000
	if testing.Short() {
		cases, requests = cases[:1], 160000
	}
	for _, cfg := range cases {
		matchesSimulation(t, expRequests(gridlabd, 0.01), cfg, 0.007, SimOptions{Requests: requests, Seed: 3})
	}
}

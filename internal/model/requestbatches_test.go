package model

import "testing"

// TestBatchServersAtHighLoad: Gridlab-D's batches on four groups of one
// server at 30% load, against the simulator. The back-to-back form
// (batchGroups) multiplied each group's work behind the request's first
// phase and the phases taken alone as independent, though both grow with
// the same wait: it was 0.040 low at the median bound; taking the last
// phase as starting at max(what the server holds, the first phase's end)
// given that end, it is within 0.01.
func TestBatchServersAtHighLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 2x10^5 requests")
	}
	matchesSimulation(t, expRequests(gridlabd, 0.3), Config{Duplicates: 1, Replicas: 4}, 0.01, SimOptions{Requests: 200000, Seed: 7})
}

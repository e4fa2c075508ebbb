package model

import "testing"

// TestThreeGroupsSplitBothPhases: requests of 3 then 2 accesses over three
// groups of two duplicates, arriving nearly alone (0.1% load), against
// the simulator. The engine's marked form, which takes the other groups'
// first-phase counts apart, was 0.006-0.008 fast at p10-p50 here (the
// split is all that matters for a request alone).
func TestThreeGroupsSplitBothPhases(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("simulates 2 million requests")
	}
	sys := expRequests(Request{Phases: []int{3, 2}}, 0.001)
	matchesSimulation(t, sys, Config{2, 3}, 0.001, SimOptions{Requests: 2000000, Seed: 1})
}

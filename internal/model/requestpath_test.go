package model

import "testing"

// The error maps' shapes reach the paths their docs name
// (docs/requests-model.md); a new path changes this table on purpose.
func TestRequestPathOf(t *testing.T) {
	single := Request{Phases: []int{1}}
	for _, c := range []struct {
		q      Request
		mix    Config
		thesis bool
		want   requestPath
	}{
		{olio, Config{Duplicates: 1, Replicas: 1}, false, pathServerPhases},
		{olio, Config{Duplicates: 4, Replicas: 1}, false, pathOneGroupShared},
		{olio, Config{Duplicates: 1, Replicas: 4}, false, pathTwoPhaseGroups},
		{olio, Config{Duplicates: 2, Replicas: 2}, false, pathTwoPhaseGroups},
		{olio, Config{Duplicates: 2, Replicas: 2}, true, pathPhaseProduct},
		{olio, Config{Duplicates: 4, Replicas: 1}, true, pathOneGroup},
		{threePhases, Config{Duplicates: 4, Replicas: 1}, false, pathGroupPhases},
		{threePhases, Config{Duplicates: 1, Replicas: 4}, false, pathServerGroupsPhases},
		{threePhases, Config{Duplicates: 2, Replicas: 2}, false, pathGroupChain},
		{threePhases, Config{Duplicates: 2, Replicas: 2}, true, pathBatchGroups},
		{gridlabd, Config{Duplicates: 1, Replicas: 1}, false, pathBatchOneServer},
		{gridlabd, Config{Duplicates: 4, Replicas: 1}, false, pathBatchOneGroup},
		{gridlabd, Config{Duplicates: 1, Replicas: 4}, false, pathBatchServers},
		{gridlabd, Config{Duplicates: 2, Replicas: 2}, false, pathBatchBarrier},
		{gridlabd, Config{Duplicates: 2, Replicas: 2}, true, pathBatchGroups},
		{single, Config{Duplicates: 1, Replicas: 4}, false, pathPhaseProduct},
		{single, Config{Duplicates: 4, Replicas: 1}, false, pathOneGroupShared},
	} {
		if got := requestPathOf(c.q, c.mix, c.thesis); got != c.want {
			t.Errorf("%v on %dx%d (thesis %v): path %d, want %d", c.q.Phases, c.mix.Duplicates, c.mix.Replicas, c.thesis, got, c.want)
		}
	}
}

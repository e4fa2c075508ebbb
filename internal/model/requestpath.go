package model

// requestPath names the method predictRequest takes for a request shape
// on a mix. Choosing it in one place keeps the predictor and what weighs
// its cost (mixCost) from drifting apart when a shape gets a path of its
// own.
type requestPath int

const (
	// One group, back to back: the thesis's predictor, single accesses,
	// and batches the paths below do not take.
	pathOneGroup requestPath = iota
	// One group of duplicates, two phases or one, arriving alone
	// (oneGroupShared).
	pathOneGroupShared
	// One group of duplicates, three phases or more, arriving alone
	// (groupPhases).
	pathGroupPhases
	// One server, several phases, arriving alone (serverPhases).
	pathServerPhases
	// One server, two phases in batches (batchOneServer).
	pathBatchOneServer
	// One group of duplicates, two phases in batches (batchOneGroupShared).
	pathBatchOneGroup
	// Several groups of duplicates, three phases or more, arriving alone
	// (groupChain).
	pathGroupChain
	// Several groups of duplicates, two phases in batches (batchBarrier).
	pathBatchBarrier
	// Several groups in batches, or the thesis's several groups of
	// duplicates with three phases or more (batchGroups).
	pathBatchGroups
	// Several groups of one server, two phases in batches (batchServers).
	pathBatchServers
	// Several groups, two phases arriving alone: the second phase's wait
	// is what the first left at each group (twoPhaseGroups). The
	// predictor's dearest path.
	pathTwoPhaseGroups
	// Several groups of one server, three phases or more, arriving alone
	// (serverGroupsPhases).
	pathServerGroupsPhases
	// Several groups, each phase apart (the thesis's, and single
	// accesses).
	pathPhaseProduct
)

// requestPathOf is the path predictRequest takes for q's requests on cfg
// (thesis: the thesis's predictor).
func requestPathOf(q Request, cfg Config, thesis bool) requestPath {
	P, B := len(q.phases()), q.batch()
	d := cfg.Duplicates
	if cfg.Replicas == 1 {
		switch {
		case thesis:
			return pathOneGroup
		case d > 1 && B == 1 && P <= 2:
			return pathOneGroupShared
		case d > 1 && B == 1:
			return pathGroupPhases
		case d == 1 && B == 1 && P > 1:
			return pathServerPhases
		case d == 1 && B > 1 && P == 2:
			return pathBatchOneServer
		case d > 1 && B > 1 && P == 2:
			return pathBatchOneGroup
		}
		return pathOneGroup
	}
	switch {
	case !thesis && B == 1 && d > 1 && P > 2:
		return pathGroupChain
	case !thesis && B > 1 && P == 2 && d == 1:
		return pathBatchServers
	case !thesis && B > 1 && P == 2:
		return pathBatchBarrier
	case B > 1 || (d > 1 && P > 2):
		return pathBatchGroups
	case !thesis && P == 2:
		return pathTwoPhaseGroups
	case !thesis && d == 1 && P > 2:
		return pathServerGroupsPhases
	}
	return pathPhaseProduct
}

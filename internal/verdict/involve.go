package verdict

import "slices"

// Request is one request as a run recorded it, its members named by their
// labels (the same member named alike in every run).
type Request struct {
	Op   string
	Node string // the member it was sent to
	// Touched are the members its client reported the request involved
	// beyond Node (an HDFS write's pipeline of DataNodes, the DataNode a
	// read came from); nil when the client did not say.
	Touched []string
	Latency float64 // seconds
}

// Key is a group of requests: their operation, the member they were sent
// to, and whether they involve the limping component.
type Key struct {
	Op, Node string
	Involved bool
}

// Tally adds reqs to sums per group (each Latency's Mean holding the total
// until the caller divides it by N). A request involves the limping
// component when limps says so of the member it was sent to or of one it
// touched, or when passes says its operation passes through a limping
// member that orders operations (a write through a slow leader). Where
// some requests of an operation reported what they touched, that is what
// tells involved from not: every HDFS request is sent to the NameNode,
// and only its pipeline says whether it met the limping DataNode (its
// group is named "NODE, through the MEMBER"). A request cut at its
// timeout is placed by what its client says it was waiting on when cut
// (an HDFS create stuck in a pipeline through the limping DataNode is
// involved), its latency the timeout, a bound below its real one. A
// request of such an operation that reported nothing (it failed before
// its client could say) cannot be placed, and is counted in unplaced
// rather than guessed.
func Tally(sums map[Key]Latency, reqs []Request, limps func(member string) bool, passes func(op string) bool) (unplaced int) {
	reports := map[string]bool{}
	for _, r := range reqs {
		reports[r.Op] = reports[r.Op] || r.Touched != nil
	}
	for _, r := range reqs {
		if reports[r.Op] && r.Touched == nil {
			unplaced++
			continue
		}
		k := Key{Op: r.Op, Node: r.Node, Involved: limps(r.Node) || passes(r.Op)}
		if i := slices.IndexFunc(r.Touched, limps); i >= 0 && !k.Involved {
			// Named so that its sentence says how it met the limpware.
			k.Node, k.Involved = r.Node+", through the "+r.Touched[i], true
		}
		l := sums[k]
		l.N++
		l.Mean += r.Latency
		sums[k] = l
	}
	return unplaced
}

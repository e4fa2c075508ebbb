package replica

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// write is one proposed write, from proposal until every replica expected
// to apply it has replied (or it is dropped after the write timeout). Its
// fields are guarded by Agent.mu.
type write struct {
	id uint64
	// entry is the write's own log entry, encoded when it is first
	// proposed alone and re-sent as it is; a write the gate sends in a
	// group entry (gate.go) never needs it.
	entry    []byte
	data     []byte // the adapter's data
	floor    uint64 // the proposer's floor when the write was made (entry.floor)
	leader   string // raft address of the leader it was last proposed to
	via      string // that leader when it is another agent; "" when it is this one
	sentAt   time.Time
	orphaned error // why the last proposal failed; the write waits for a leader to re-send to
	start    time.Time
	expected map[string]bool // replica IDs that should reply
	first    chan result     // the first reply or a failure; room for one
	// all is closed once every expected replica replied (allDone); made
	// only for a write something waits on so (--write-all, WAITALL), under
	// Agent.mu: allWait.
	all      chan struct{}
	allDone  bool
	answered bool
	index    uint64
	replies  []replyOf // one per replica that replied, in the order they did
	// replied backs replies for up to three replicas, so that a write to
	// a 3-voter deployment needs no allocation of its own for them.
	replied  [3]replyOf
	agreed   bool // a majority of expected replicas agree on agreedOn
	agreedOn uint64
	volatile bool // the client gets this replica's reply, not the first
	waited   bool // a WAITALL waits for every replica to reply
	gated    bool // proposed through the gate, which has not heard it answered
}

// retryPause is how long a write whose proposal failed waits before it is
// proposed to the same leader again; a new leader gets it at once.
const retryPause = 200 * time.Millisecond

// startEntry proposes an entry of the adapter's data, its proposer,
// sequence number and floor filled in, and returns the write, whose first
// channel gets the first replica's reply (its own, when volatile).
func (a *Agent) startEntry(data []byte, volatile bool) (*write, error) {
	leader := a.leaderAddr()
	if leader == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 4*a.cfg.HeartbeatTimeout+time.Second)
		defer cancel()
		var err error
		if leader, err = a.waitLeader(ctx); err != nil {
			return nil, err
		}
	}
	w := &write{start: time.Now(), expected: a.health.expectedReplicas(), first: make(chan result, 1)}
	w.replies = w.replied[:0]
	a.mu.Lock()
	a.seq++
	w.id = a.seq
	a.writes[w.id] = w
	w.floor, w.data, w.volatile = a.lowestUnanswered(), data, volatile
	if leader == a.raftAddr {
		// Held by the gate meanwhile: proposed here, as far as re-proposing goes.
		w.gated, w.leader, w.sentAt = true, leader, time.Now()
	}
	a.mu.Unlock()
	if w.gated {
		a.gate.add(w)
	} else {
		a.propose(w, leader)
	}
	return w, nil
}

// proposer names this agent run in the entries it proposes.
func (a *Agent) proposer() string { return a.raftAddr + "#" + a.incarnation }

// ungate tells whether the gate waits to hear that w is answered, and
// clears that. Called with a.mu held; the caller tells the gate after.
func (w *write) ungate() bool {
	was := w.gated
	w.gated = false
	return was
}

// lowestUnanswered is the lowest id of a write still waiting for its first
// reply: ids below it will never be proposed again. Writes are mostly
// answered in the order they were proposed, so a cursor that only moves
// forward finds it in amortized constant time. Called with a.mu held.
func (a *Agent) lowestUnanswered() uint64 {
	for a.floor < a.seq {
		if w := a.writes[a.floor]; w != nil && !w.answered {
			break
		}
		a.floor++ // answered, dropped, or the id of a request, not a write
	}
	return a.floor
}

// proposeGroup proposes writes the gate sends together to this agent's
// raft: as one group entry when the adapter lets writes share a log index
// (Grouping), else one entry each. A failed group entry orphans each of
// its writes, which are proposed again one entry each.
func (a *Agent) proposeGroup(ws []*write) {
	if len(ws) == 1 || !a.grouping {
		for _, w := range ws {
			a.propose(w, a.raftAddr)
		}
		return
	}
	e := entry{proposer: a.proposer(), group: make([]member, len(ws))}
	now := time.Now()
	a.mu.Lock()
	e.floor = a.lowestUnanswered() // at most every member's id: none is answered
	for i, w := range ws {
		e.group[i] = member{seq: w.id, data: w.data}
		w.leader, w.via, w.sentAt, w.orphaned = a.raftAddr, "", now, nil
	}
	a.mu.Unlock()
	f := a.raft.Apply(e.encode(), a.cfg.WriteTimeout)
	a.watchApply(f, func(err error) {
		for _, w := range ws {
			a.orphan(w, err)
		}
	})
}

// propose hands w's entry to leader: to raft here, or to the leader's agent,
// which appends it in arrival order and answers only a failure. A failure
// orphans the write until it can be proposed again; replicas apply only its
// first copy in the log (sessions), so a re-sent write never applies twice.
func (a *Agent) propose(w *write, leader string) {
	via := leader
	if leader == a.raftAddr {
		via = ""
	}
	a.mu.Lock()
	w.leader, w.via, w.sentAt, w.orphaned = leader, via, time.Now(), nil
	if w.entry == nil {
		w.entry = entry{proposer: a.proposer(), seq: w.id, floor: w.floor, data: w.data}.encode()
	}
	e := w.entry
	a.mu.Unlock()
	if via == "" {
		f := a.raft.Apply(e, a.cfg.WriteTimeout)
		a.watchApply(f, func(err error) { a.orphan(w, err) })
		return
	}
	msg := appendFrame(nil, []byte("PROPOSE"), strconv.AppendUint(nil, w.id, 10), e)
	a.peer(leader).send(peerMsg{data: msg, id: w.id})
}

// orphan notes that w's last proposal failed; the next health tick, or a
// new leader, re-sends it (not this goroutine: it may be the one that
// waits on proposals).
func (a *Agent) orphan(w *write, err error) {
	a.mu.Lock()
	if !w.answered {
		w.orphaned = err
	}
	ungate := w.ungate()
	a.mu.Unlock()
	if ungate {
		a.gate.answered()
	}
}

// reproposeOrphans re-sends every unanswered write whose leader is no
// longer the leader, at once, and every write whose proposal failed, once
// retryPause passed. A write is never re-sent to a leader that was deposed
// meanwhile, so revoked work does not go back to the replica that lost it.
func (a *Agent) reproposeOrphans() {
	leader := a.leaderAddr()
	if leader == "" {
		return
	}
	now := time.Now()
	var again []*write
	a.mu.Lock()
	for _, w := range a.writes {
		moved := w.leader != leader
		if !w.answered && (moved || (w.orphaned != nil && now.Sub(w.sentAt) > retryPause)) {
			again = append(again, w)
		}
	}
	a.mu.Unlock()
	slices.SortFunc(again, func(x, y *write) int { return cmp.Compare(x.id, y.id) })
	for _, w := range again {
		a.m.reproposals.Inc()
		a.propose(w, leader)
	}
}

// awaitWrite waits for the first reply to a proposed write, or with
// --write-all for every replica's. The first reply needs no timer of its
// own (one per write was two allocations and a timer-heap update):
// sweepWrites answers a write still unanswered after the write timeout
// with the error.
func (a *Agent) awaitWrite(w *write) (result, error) {
	var r result
	select {
	case r = <-w.first:
	case <-a.done:
		return r, errors.New("agent stopped")
	}
	if r.err != nil || !a.cfg.WriteAll {
		return r, r.err
	}
	t := time.NewTimer(time.Until(w.start.Add(a.cfg.WriteTimeout)))
	defer t.Stop()
	select {
	case <-a.allWait(w):
		return r, nil
	case <-t.C:
		got, want := a.replied(w)
		return r, fmt.Errorf("write applied by %d of %d replicas within %v", got, want, a.cfg.WriteTimeout)
	case <-a.done:
		return r, errors.New("agent stopped")
	}
}

// waitAll waits until every replica expected to apply w has replied, and
// tells how many have.
func (a *Agent) waitAll(w *write, timeout time.Duration) int {
	a.mu.Lock()
	w.waited = true
	a.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-a.allWait(w):
	case <-t.C:
	case <-a.done:
	}
	got, _ := a.replied(w)
	return got
}

// allWait is w's channel closed once every expected replica replied,
// made on the first call.
func (a *Agent) allWait(w *write) <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if w.all == nil {
		w.all = make(chan struct{})
		if w.allDone {
			close(w.all)
		}
	}
	return w.all
}

// closeAll notes that every expected replica replied. Called with
// Agent.mu held.
func (w *write) closeAll() {
	w.allDone = true
	if w.all != nil {
		close(w.all)
	}
}

func (a *Agent) replied(w *write) (got, want int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(w.replies), len(w.expected)
}

// onReply takes one replica's reply to a write this agent proposed: the
// first answers the client; every reply's digest is compared, and replicas
// outvoted by a majority are quarantined. local is this replica's own
// application of the write (nil for another's reply): when it answers
// first, its times split the write into stages.
func (a *Agent) onReply(seq uint64, incarnation string, index, digest uint64, from, fromInc string, raw []byte, local *applied) {
	if incarnation != a.incarnation || a.health.isQuarantined(from, fromInc) {
		return // a reply to an earlier run of this agent, or from a divergent replica
	}
	now := time.Now()
	a.mu.Lock()
	w := a.writes[seq]
	if w == nil {
		a.mu.Unlock()
		return
	}
	if w.repliedBy(from) {
		a.mu.Unlock()
		return
	}
	w.expected[from] = true // a member that joined since the proposal
	w.replies = append(w.replies, replyOf{id: from, inc: fromInc, digest: digest})
	a.health.observeReply(from, now.Sub(w.start))
	a.m.replies.WithLabelValues(from).Observe(now.Sub(w.start).Seconds())
	ungate := false
	if !w.answered && (!w.volatile || local != nil) {
		ungate = w.ungate()
		w.answered, w.index = true, index
		w.first <- result{raw: raw, index: index, at: now}
		a.m.commit.Observe(now.Sub(w.start).Seconds())
		if local != nil {
			a.m.stage("commit", local.committed.Sub(w.start))
			if w.via == "" && !local.appended.IsZero() {
				// The leader's loop stamped the entry on this same clock.
				a.m.stage("propose", local.appended.Sub(w.start))
				a.m.stage("raft_commit", local.committed.Sub(local.appended))
			}
			a.m.stage("apply_queue", local.sent.Sub(local.committed))
			a.m.stage("server", now.Sub(local.sent))
		} else {
			a.m.stage("remote_reply", now.Sub(w.start))
		}
	}
	outvoted := w.vote()
	if w.complete() {
		delete(a.writes, seq)
		w.closeAll()
	}
	a.mu.Unlock()
	if ungate {
		a.gate.answered()
	}
	for _, r := range outvoted {
		a.health.quarantine(r.id, r.inc, fmt.Sprintf("its reply to log index %d differs from the majority's", index))
	}
}

// replyOf is one replica's reply to a write: who, which run of it, and
// the digest after the write. A write has a few (one per replica), so a
// slice serves where two maps per write were four allocations.
type replyOf struct {
	id, inc string
	digest  uint64
}

// repliedBy tells whether the replica with this ID has replied.
func (w *write) repliedBy(id string) bool {
	for _, r := range w.replies {
		if r.id == id {
			return true
		}
	}
	return false
}

// vote finds the digest a majority of expected replicas agree on and
// returns the replicas whose digest differs from it.
func (w *write) vote() []replyOf {
	for i := 0; !w.agreed && i < len(w.replies); i++ {
		n := 0
		for _, r := range w.replies {
			if r.digest == w.replies[i].digest {
				n++
			}
		}
		if n > len(w.expected)/2 {
			w.agreed, w.agreedOn = true, w.replies[i].digest
		}
	}
	if !w.agreed {
		return nil
	}
	var out []replyOf
	for i, r := range w.replies {
		if r.digest != w.agreedOn {
			out = append(out, r)
			w.replies[i].digest = w.agreedOn // report each replica once
		}
	}
	return out
}

func (w *write) complete() bool {
	for id := range w.expected {
		if !w.repliedBy(id) {
			return false
		}
	}
	return true
}

// sweepWrites drops writes older than the write timeout. It stops waiting
// for replicas quarantined since a write was proposed, and for replicas that
// report having applied a write whose reply never came (dropped on a full
// queue, or covered by a snapshot the replica restored). It returns, per
// replica, the age of its oldest missing reply to an answered write.
//
// An answered write stops waiting for a replica marked limping too, unless
// the deployment writes to all (--write-all) or a WAITALL waits on it: the
// limping replica's replies come late or never, and keeping every write for
// it made this sweep, which holds a.mu, a sixth of the agents' CPU within
// 4 s of a 10x leader link's handover (perf), and throughput fell with it.
func (a *Agent) sweepWrites(now time.Time) (missing map[string]time.Duration) {
	replicas := map[string]Replica{}
	for _, r := range a.Replicas() {
		replicas[r.ID] = r
	}
	ungated := 0
	defer func() {
		for ; ungated > 0; ungated-- {
			a.gate.answered()
		}
	}()
	a.mu.Lock()
	defer a.mu.Unlock()
	missing = map[string]time.Duration{}
	for id, w := range a.writes {
		for r := range w.expected {
			if w.repliedBy(r) {
				continue
			}
			st := replicas[r]
			if st.Quarantined || (w.answered && (st.Applied >= w.index || (st.Limping && !a.cfg.WriteAll && !w.waited))) {
				delete(w.expected, r)
			}
		}
		if w.answered && w.complete() {
			delete(a.writes, id)
			w.closeAll()
			continue
		}
		age := now.Sub(w.start)
		if w.answered {
			for r := range w.expected {
				if !w.repliedBy(r) && age > missing[r] {
					missing[r] = age
				}
			}
		}
		if age > a.cfg.WriteTimeout {
			delete(a.writes, id)
			if w.ungate() {
				ungated++
			}
			if !w.answered {
				w.answered = true
				err := fmt.Errorf("no replica applied the write within %v; it may still be applied", a.cfg.WriteTimeout)
				if w.orphaned != nil {
					err = fmt.Errorf("%w; last proposal: %w", err, w.orphaned)
				}
				w.first <- result{err: err}
			}
		}
	}
	return missing
}

// appliedFuture is a proposal whose failure someone must hear of.
type appliedFuture struct {
	f    raft.ApplyFuture
	fail func(error)
}

// watchApply hands a proposal's future to the one goroutine that waits on
// them all, in log order (the order they complete in), rather than start a
// goroutine per write.
func (a *Agent) watchApply(f raft.ApplyFuture, fail func(error)) {
	select {
	case a.futures <- appliedFuture{f, fail}:
	case <-a.done:
	}
}

func (a *Agent) watchFutures() {
	for {
		select {
		case af := <-a.futures:
			if err := af.f.Error(); err != nil {
				af.fail(err)
			}
		case <-a.done:
			return
		}
	}
}

package replica

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// write is one proposed write, from proposal until every replica expected
// to apply it has replied (or it is dropped after the write timeout). Its
// fields are guarded by Agent.mu.
type write struct {
	id       uint64
	via      string // leader address the proposal went through; "" on the leader
	start    time.Time
	expected map[string]bool // replica IDs that should reply
	first    chan result     // the first reply or a failure; room for one
	all      chan struct{}   // closed once every expected replica replied
	answered bool
	index    uint64
	digests  map[string]uint64 // replica ID -> digest of its reply
	incs     map[string]string // replica ID -> incarnation that replied
	agreed   bool              // a majority of expected replicas agree on agreedOn
	agreedOn uint64
}

// startWrite proposes commands (their RESP encoding, making n replies) and
// returns the write, whose first channel gets the first replica's reply.
func (a *Agent) startWrite(payload []byte, n int) (*write, error) {
	leader := a.leaderAddr()
	if leader == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 4*a.cfg.HeartbeatTimeout+time.Second)
		defer cancel()
		var err error
		if leader, err = a.waitLeader(ctx); err != nil {
			return nil, err
		}
	}
	via := leader
	if leader == a.raftAddr {
		via = ""
	}
	w := &write{via: via, start: time.Now(), expected: a.health.expectedReplicas(),
		first: make(chan result, 1), all: make(chan struct{}), digests: map[string]uint64{}, incs: map[string]string{}}
	a.mu.Lock()
	a.seq++
	w.id = a.seq
	a.writes[w.id] = w
	a.mu.Unlock()
	e := entry{proposer: a.raftAddr + "#" + a.incarnation, seq: w.id, replies: n, payload: payload}
	if via == "" {
		f := a.raft.Apply(e.encode(), a.cfg.WriteTimeout)
		a.watchApply(f, func(err error) { a.failWrite(w, err) })
	} else {
		msg := appendCommand(nil, []byte("PROPOSE"), strconv.AppendUint(nil, w.id, 10), e.encode())
		a.peer(leader).send(peerMsg{data: msg, id: w.id})
	}
	return w, nil
}

// awaitWrite waits for the first reply to a proposed write, or with
// --write-all for every replica's.
func (a *Agent) awaitWrite(w *write) (result, error) {
	t := time.NewTimer(a.cfg.WriteTimeout)
	defer t.Stop()
	var r result
	select {
	case r = <-w.first:
	case <-t.C:
		return r, fmt.Errorf("no replica applied the write within %v; it may still be applied", a.cfg.WriteTimeout)
	case <-a.done:
		return r, errors.New("agent stopped")
	}
	if r.err != nil || !a.cfg.WriteAll {
		return r, r.err
	}
	select {
	case <-w.all:
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
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w.all:
	case <-t.C:
	case <-a.done:
	}
	got, _ := a.replied(w)
	return got
}

func (a *Agent) replied(w *write) (got, want int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(w.digests), len(w.expected)
}

func (a *Agent) failWrite(w *write, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !w.answered {
		w.answered = true
		delete(a.writes, w.id)
		w.first <- result{err: err}
	}
}

// onReply takes one replica's reply to a write this agent proposed: the
// first answers the client; every reply's digest is compared, and replicas
// outvoted by a majority are quarantined.
func (a *Agent) onReply(seq uint64, incarnation string, index, digest uint64, from, fromInc string, raw []byte) {
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
	if _, dup := w.digests[from]; dup {
		a.mu.Unlock()
		return
	}
	w.expected[from] = true // a member that joined since the proposal
	w.digests[from], w.incs[from] = digest, fromInc
	a.health.observeReply(from, now.Sub(w.start))
	if !w.answered {
		w.answered, w.index = true, index
		w.first <- result{raw: raw, index: index}
		a.m.commit.Observe(now.Sub(w.start).Seconds())
	}
	var outvoted [][2]string
	for _, id := range w.vote() {
		outvoted = append(outvoted, [2]string{id, w.incs[id]})
	}
	if w.complete() {
		delete(a.writes, seq)
		close(w.all)
	}
	a.mu.Unlock()
	for _, r := range outvoted {
		a.health.quarantine(r[0], r[1], fmt.Sprintf("its reply to log index %d differs from the majority's", index))
	}
}

// vote finds the digest a majority of expected replicas agree on and
// returns the replicas whose digest differs from it.
func (w *write) vote() []string {
	if !w.agreed {
		counts := map[uint64]int{}
		for _, d := range w.digests {
			counts[d]++
		}
		for d, n := range counts {
			if n > len(w.expected)/2 {
				w.agreed, w.agreedOn = true, d
			}
		}
	}
	if !w.agreed {
		return nil
	}
	var out []string
	for id, d := range w.digests {
		if d != w.agreedOn {
			out = append(out, id)
			w.digests[id] = w.agreedOn // report each replica once
		}
	}
	return out
}

func (w *write) complete() bool {
	for id := range w.expected {
		if _, ok := w.digests[id]; !ok {
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
func (a *Agent) sweepWrites(now time.Time) (missing map[string]time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	missing = map[string]time.Duration{}
	for id, w := range a.writes {
		for r := range w.expected {
			if _, ok := w.digests[r]; ok {
				continue
			}
			inc, applied := a.health.progress(r)
			if a.health.isQuarantined(r, inc) || (w.answered && applied >= w.index) {
				delete(w.expected, r)
			}
		}
		if w.answered && w.complete() {
			delete(a.writes, id)
			close(w.all)
			continue
		}
		age := now.Sub(w.start)
		if w.answered {
			for r := range w.expected {
				if _, ok := w.digests[r]; !ok && age > missing[r] {
					missing[r] = age
				}
			}
		}
		if age > a.cfg.WriteTimeout {
			delete(a.writes, id)
			if !w.answered {
				w.answered = true
				w.first <- result{err: fmt.Errorf("no replica applied the write within %v", a.cfg.WriteTimeout)}
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

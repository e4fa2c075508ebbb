package replica

import (
	"sync"
	"time"
)

// gate holds the leader's own proposals while a group of them is in raft,
// so that the writes of clients waiting on that group join the next one.
//
// Clients in a closed loop (redis-benchmark's, each waiting for its reply)
// split, proposed as they arrive, into cohorts that alternate: one commits
// while the next is appended, 3.5 to 4 entries per append at c = 8. Every
// group costs the same whatever its size: an append, an AppendEntries and
// its answer per follower, an apply batch and a redis round trip per
// replica, a REPLY per follower (docs/replica.md, round 7). The gate sends a
// group once the last one is answered and as many writes are held as that
// group had plus those that arrived meanwhile (the same clients, back), or
// once holdMax has passed since the first was held: at c = 1 a write goes at
// once, at c = 8 the cohorts merge. It changes when a write is proposed,
// never what an acknowledgement means.
type gate struct {
	propose func([]*write) // sends a group (Agent.proposeGroup)
	mu      sync.Mutex
	held    []*write
	open    int // writes of sent groups not yet answered
	expect  int // once open is 0, send when this many are held
	last    int // size of the last group sent
	timer   *time.Timer
	taken   uint64 // groups that left the gate (under mu)

	// Groups are proposed in the order they left the gate: a group is
	// sent from the goroutine of the write that completed it or from the
	// timer's, each after releasing mu, and a later group overtook an
	// earlier one whose goroutine was descheduled in between: one
	// connection's pipelined batches then entered the log out of order
	// (a GET of the next batch ran before the SET of the one before it; 2
	// to 6 of 100,000 pipelined SET/GET pairs at load average 15 to 100).
	omu      sync.Mutex
	ocond    *sync.Cond
	proposed uint64 // groups handed to propose
}

// holdMax bounds how long a write waits in the gate: a client that does
// not come back (it closed, or it reads now) costs the others this much,
// or up to a millisecond on an otherwise idle agent, whose poller sleeps
// in whole milliseconds.
const holdMax = 500 * time.Microsecond

func newGate(propose func([]*write)) *gate {
	g := &gate{propose: propose}
	g.ocond = sync.NewCond(&g.omu)
	g.timer = time.AfterFunc(time.Hour, g.expire)
	g.timer.Stop()
	return g
}

// add proposes w, a write to this agent's own raft, or holds it.
func (g *gate) add(w *write) {
	g.mu.Lock()
	g.held = append(g.held, w)
	if g.open > 0 || len(g.held) < g.expect {
		if len(g.held) == 1 {
			g.timer.Reset(holdMax)
		}
		g.mu.Unlock()
		return
	}
	g.send() // unlocks
}

// answered notes that one write the gate sent has its first reply, or
// failed: with the last of its group, the clients it answered come back.
func (g *gate) answered() {
	g.mu.Lock()
	if g.open == 0 {
		g.mu.Unlock()
		return
	}
	g.open--
	if g.open > 0 {
		g.mu.Unlock()
		return
	}
	// The group's clients are back once as many more writes are held as it
	// had (last is at least 1, so this never holds already: add or the
	// timer sends).
	g.expect = len(g.held) + g.last
	g.mu.Unlock()
}

func (g *gate) expire() {
	g.mu.Lock()
	if len(g.held) == 0 {
		g.mu.Unlock()
		return
	}
	g.send()
}

// send proposes every held write as one group, after the groups that
// left the gate before it. Called with g.mu held; it unlocks it before
// proposing, so that raft's channel never waits under it.
func (g *gate) send() {
	group := g.held
	g.held = nil
	g.timer.Stop()
	g.open += len(group)
	g.last = len(group)
	turn := g.taken
	g.taken++
	g.mu.Unlock()
	g.omu.Lock()
	for g.proposed != turn {
		g.ocond.Wait()
	}
	g.omu.Unlock()
	g.propose(group)
	g.omu.Lock()
	g.proposed++
	g.ocond.Broadcast()
	g.omu.Unlock()
}

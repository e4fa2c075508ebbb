package redis

import (
	"strings"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/resp"
)

// fastRead starts a read on the local redis-server at once, with no
// goroutine of its own and no wait, when nothing is to be waited for: the
// connection has no write in flight, one replica answers a read (Fanout 1)
// and this one is the first to ask, and it has already applied the index
// the read mode asks for (under the lease that takes no message). Reads
// under a lease with no write in flight, most reads, then cost one round
// trip to the local redis. The slot's fill waits for the answer; one that
// fails, or takes longer than hedgeAfter, is served again the full way
// (other replicas, hedging). false: serve the read the full way.
func (a *agent) fastRead(st *clientState, payload []byte, pinned bool) (slot, bool) {
	if !closed(st.lastWriteDone) {
		return slot{}, false
	}
	start, ok := a.host.ReadsHere(st.lastIndex.Load())
	if !ok {
		return slot{}, false
	}
	md := st.mode()
	p, n, after := md.frame(payload, 1)
	call := a.reads.start(p, n, n-1-after)
	done := make(chan struct{})
	st.lastRead = done // closed once fill, fallback included, ran
	return slot{done: done, direct: true, fill: func() []byte {
		if answered(call.done, start.Add(a.host.HedgeAfter())) && call.err == nil {
			a.host.ObserveRead(start)
			return call.raw
		}
		raw, err := a.redisRead(st, md, payload, pinned)
		if err != nil {
			return resp.Error("ERR gait replica: " + strings.TrimSpace(err.Error()))
		}
		return raw
	}}, true
}

// hedgeTimers are the timers answered waits with, kept for the next
// read: every fast read waits on one, and a new timer (its channel and
// runtime timer) per read was 1.2 % of the leader's CPU at GET c=8. A
// stopped timer delivers nothing stale once reset (Go 1.23 and later).
var hedgeTimers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// answered tells whether done closes by deadline; one closed already wins
// even when the deadline has passed, and reads no clock.
func answered(done chan struct{}, deadline time.Time) bool {
	if closed(done) {
		return true
	}
	t := hedgeTimers.Get().(*time.Timer)
	t.Reset(time.Until(deadline))
	defer func() { t.Stop(); hedgeTimers.Put(t) }()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// closed tells whether ch is nil or closed.
func closed(ch chan struct{}) bool {
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

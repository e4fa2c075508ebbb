package raft

import (
	"sync"
	"time"
)

// gait: a leader's AppendEntries counts as contact as of when the leader
// sent it, not when it arrived. A leader whose link limps keeps a queue of
// seconds behind it (the testbed's link at 1 Mbit/s, a NIC's 1000 frames):
// it loses its quorum and steps down within a heartbeat timeout, yet its
// heartbeats and appends go on arriving for seconds, each one refreshing a
// follower's contact, and a follower that knows a leader refuses every
// other candidate's (pre-)vote. In Limplock Z3 on gait-zookeeper at 100x a
// healthy follower refused the other's pre-votes "since we have a leader"
// for 1.5 to 2.5 s after the leader stood down, and writes stopped for 1
// to 3 s (docs/results/gait-zookeeper-limplock.md).
//
// Each request carries the leader's stamp (GaitSent: nanoseconds on its
// monotonic clock, 0 for none). A follower keeps, per leader and term, the
// least difference between its own clock at arrival and the stamp: the
// clocks' offset plus the fastest delivery. How far a request's difference
// lies above that least is how long it waited on the way more than the
// fastest did: its age. The least is raised by gaitDrift per second since
// it was last met, so that clocks ticking at slightly different rates do
// not age every message in time.
//
// A request older than the heartbeat timeout is stale: it is applied to the
// log and answered as ever (a leader with a slow link and one healthy
// follower still commits through it), and names its leader (an agent
// behind a limping link still knows where to send its clients' writes),
// but it refreshes the contact only to its send time and does not turn a
// candidate back into a follower (raft lets a candidate take entries from
// the leader of its own term). And a follower refuses a (pre-)vote "since
// we have a leader" only while it heard from that leader within the
// heartbeat timeout (heardLately). So the followers of a limping leader
// elect one of themselves a heartbeat timeout after it last sent.
//
// The contact only moves forward: a promise a follower made from its last
// contact (gait's read lease asks how long it will refuse other
// candidates) is never cut short by a staler message after it, and a vote
// is granted only once the contact is a heartbeat timeout old, when every
// such promise has run out.

// gaitDrift is how fast the least arrival difference is let rise, in
// seconds per second: well above the rate difference of two monotonic
// clocks (NTP slews them by at most 500 ppm), well below a queue that
// grows behind a limping link.
const gaitDrift = 1e-3

// gaitEpoch is the origin of this process's stamps.
var gaitEpoch = time.Now()

// gaitStamp is the stamp a leader puts on a request it sends now.
func gaitStamp() int64 { return int64(time.Since(gaitEpoch)) + 1 }

// gaitFreshness is a follower's least arrival difference for the leader and
// term it last heard from.
type gaitFreshness struct {
	mu     sync.Mutex
	leader ServerAddress
	term   uint64
	least  time.Duration // arrival on this clock minus the stamp, at its least
	at     time.Time     // when least was last met
}

// age estimates how long ago leader sent a request of term stamped sent,
// arrived now.
func (f *gaitFreshness) age(leader ServerAddress, term uint64, sent int64, now time.Time) time.Duration {
	if sent == 0 {
		return 0
	}
	diff := now.Sub(gaitEpoch) - time.Duration(sent)
	f.mu.Lock()
	defer f.mu.Unlock()
	if leader != f.leader || term != f.term {
		f.leader, f.term, f.least, f.at = leader, term, diff, now
		return 0
	}
	least := f.least + time.Duration(gaitDrift*float64(now.Sub(f.at)))
	if diff <= least {
		f.least, f.at = diff, now
		return 0
	}
	return diff - least
}

// contactAt moves the last contact forward to t (never back).
func (r *Raft) contactAt(t time.Time) {
	r.lastContactLock.Lock()
	if t.After(r.lastContact) {
		r.lastContact = t
	}
	r.lastContactLock.Unlock()
}

// heardLately tells whether this server leads, or heard from its leader
// within the heartbeat timeout (by the stamp of the last request it took):
// only then does it refuse other candidates' votes for that leader's sake.
// Stock raft forgets the leader at the follower loop's next check after
// the timeout; a stale request names it again, so the age is asked here.
func (r *Raft) heardLately() bool {
	return r.getState() == Leader || time.Since(r.LastContact()) < r.config().HeartbeatTimeout
}

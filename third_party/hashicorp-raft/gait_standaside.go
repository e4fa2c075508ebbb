package raft

import "time"

// StandAsideFactor bounds how long a server standing aside waits for
// another to lead: after this many heartbeat timeouts without a leader it
// campaigns all the same, so a cluster whose every voter limps still
// elects one.
const StandAsideFactor = 10

// StandAside (gait: added) keeps this server, while on, from starting an
// election when its heartbeat timeout runs out: it still forgets its
// leader and grants votes (and pre-votes) as ever, so a healthy voter
// wins the election in its place. gait's agents turn it on while their
// limp tracker marks their own replica limping: a leader whose link
// limps loses its lease and, its log the longest (its appends reached no
// one), wins the next election again. Lengthening its timeouts instead
// (ReloadConfig) also lengthened how long it kept a leader known, and so
// how long it refused other candidates' pre-votes: with the old leader's
// heartbeats trickling through a 1000x link, no one was elected for 10 s.
func (r *Raft) StandAside(on bool) { r.standAside.Store(on) }

// standingAside tells the follower loop to skip an election: standing
// aside, and a leader heard from within StandAsideFactor heartbeat
// timeouts.
func (r *Raft) standingAside(lastContact time.Time, hbTimeout time.Duration) bool {
	return r.standAside.Load() && time.Since(lastContact) < StandAsideFactor*hbTimeout
}

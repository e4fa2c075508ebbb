package raft

import "time"

// StandAsideFactor bounds how long a server standing aside waits for
// another to lead: after this many heartbeat timeouts without a leader it
// campaigns all the same, so a cluster whose every voter limps still
// elects one.
const StandAsideFactor = 10

// StandAside (gait: added) keeps this server, while on, from starting an
// election when its heartbeat timeout runs out, and a candidate that hears
// from a leader (however late) gives up at its election timeout (a
// follower whose own link limps found its leader's heartbeats stale and
// stood for election before its tracker marked it, then campaigned
// through the whole 10-s step): it still forgets its
// leader and grants votes (and pre-votes) as ever, so a healthy voter
// wins the election in its place. gait's agents turn it on while their
// limp tracker marks their own replica limping: a leader whose link
// limps loses its lease and, its log the longest (its appends reached no
// one), wins the next election again. Lengthening its timeouts instead
// (ReloadConfig) also lengthened how long it kept a leader known, and so
// how long it refused other candidates' pre-votes: with the old leader's
// heartbeats trickling through a 1000x link, no one was elected for 10 s.
func (r *Raft) StandAside(on bool) { r.standAside.Store(on) }

// QuorumLostFactor is how many heartbeat timeouts a leader that stepped
// down for want of a quorum stands aside all the same (gait: added). Its
// link is the likeliest to limp, and its log the longest (its last appends
// reached no one), so it would win an election its healthy followers
// begin; it does not know it limps until its tracker marks it, 1.1 s after
// stepping down in Limplock Z3 at 100x, where it had stood for election
// 0.2 s before (docs/results/gait-zookeeper-limplock.md). A leader that
// was only cut off briefly campaigns a second or so later than it would
// have.
const QuorumLostFactor = 3

// standingAside tells the follower loop to skip an election: standing
// aside, and a leader heard from within StandAsideFactor heartbeat
// timeouts; or stepped down for want of a quorum within QuorumLostFactor.
func (r *Raft) standingAside(lastContact time.Time, hbTimeout time.Duration) bool {
	if lost := r.quorumLostAt.Load(); lost != 0 && time.Duration(gaitStamp()-lost) < QuorumLostFactor*hbTimeout {
		return true
	}
	return r.standAside.Load() && time.Since(lastContact) < StandAsideFactor*hbTimeout
}

package replica

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// The leader's read lease (Raft dissertation §6.4): a linearizable read on
// the leader takes the leader's last log index with no round of messages
// while a majority of voters have promised, recently, to elect no one else.
//
// The promise comes from raft itself. A hashicorp/raft follower refuses
// every vote while it knows a leader (unless the leader itself asked for a
// leadership transfer), and it forgets its leader only once
// HeartbeatTimeout has passed since it last heard from it (since the
// leader sent the last message it took, by that message's stamp, never
// later than when it arrived: third_party/hashicorp-raft's
// gait_freshness.go). So a follower that knows this agent as leader and
// last heard from it age ago elects no one else for another
// HeartbeatTimeout - age on its own clock. The leader
// asks each voter for that (LEASE, answered LEASEOK leader remaining-ns)
// every leaseRenew and holds, per voter, the promise sent-time + remaining
// x (1 - leaseDrift), sent-time being when it asked, on its own clock.
//
// Assumed: clocks tick at rates that differ by less than leaseDrift; the
// agents of a deployment run hashicorp/raft as configured here. Guarded
// against: a leadership transfer (the target's election ignores promises;
// no lease from before a transfer ends + leaseHold), a configuration change
// (hashicorp/raft changes one server at a time, so a majority of the old
// configuration and one of the new share a voter: promises of the old
// still bind until the voters are asked again under the new), a
// restarted voter (its promises died with it: an agent with raft state
// waits HeartbeatTimeout before its raft starts, see startRaft). Why not
// raft.VerifyLeader's round instead: it may count an answer to a heartbeat
// sent before the round began, so it bounds nothing in time.

// leaseDrift bounds the difference of clock rates between agents.
const leaseDrift = 0.1

// lease is the leader's read lease. Its fields are guarded by mu.
type lease struct {
	mu       sync.Mutex
	voters   []string // the other voters' raft addresses, when last asked
	promises map[string]promise
	blocked  time.Time // no promise asked before this counts
}

// promise is one voter's: it elects no one else until until; asked at sent.
type promise struct{ sent, until time.Time }

func newLease() *lease { return &lease{promises: map[string]promise{}} }

// covers tells whether promises asked no later than start, by a majority of
// voters (this one counting), last past now: no other leader can have been
// elected between start and now.
func (l *lease) covers(start, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 1
	for _, v := range l.voters {
		if p, ok := l.promises[v]; ok && !p.sent.After(start) && p.until.After(now) && !p.sent.Before(l.blocked) {
			n++
		}
	}
	return l.voters != nil && n > (len(l.voters)+1)/2
}

// revoke drops every promise, and refuses those asked before until.
func (l *lease) revoke(until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.promises, l.voters = map[string]promise{}, nil
	if until.After(l.blocked) {
		l.blocked = until
	}
}

// leaseRenew is how often the leader asks for promises, as a fraction of
// HeartbeatTimeout: a promise lasts most of one.
const leaseRenew = 5

// renewLease asks every other voter for its promise, when this agent leads.
func (a *Agent) renewLease() {
	if !a.IsLeader() {
		return
	}
	cf := a.raft.GetConfiguration()
	if cf.Error() != nil {
		return
	}
	var voters []string
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage == raft.Voter && string(s.Address) != a.raftAddr {
			voters = append(voters, string(s.Address))
		}
	}
	l := a.lease
	l.mu.Lock()
	if !slices.Equal(l.voters, voters) {
		l.voters, l.promises = voters, map[string]promise{}
	}
	l.mu.Unlock()
	if len(voters) == 0 {
		l.mu.Lock()
		l.voters = []string{} // a single voter: itself is the majority
		l.mu.Unlock()
		return
	}
	deadline := time.Now().Add(a.cfg.HeartbeatTimeout)
	for _, v := range voters {
		sent := time.Now()
		id := a.registerFunc(v, deadline, func(r result) {
			if r.err != nil || r.leader != a.raftAddr || r.remaining <= 0 {
				return
			}
			until := sent.Add(time.Duration(float64(r.remaining) * (1 - leaseDrift)))
			l.mu.Lock()
			if p := l.promises[v]; until.After(p.until) {
				l.promises[v] = promise{sent: sent, until: until}
			}
			l.mu.Unlock()
		})
		a.peer(v).send(peerMsg{data: appendFrame(nil, []byte("LEASE"), strconv.AppendUint(nil, id, 10)), id: id})
	}
}

// runLease renews the lease until the agent closes.
func (a *Agent) runLease() {
	t := time.NewTicker(a.cfg.HeartbeatTimeout / leaseRenew)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			a.renewLease()
		case <-a.done:
			return
		}
	}
}

// leasePromise is a follower's answer to LEASE: the leader its raft knows
// and how much longer it will refuse to vote for anyone else. It reads the
// last contact before the leader, so a contact from a newer leader is never
// paired with the old one's name.
func (a *Agent) leasePromise() (leader string, remaining time.Duration) {
	age := time.Since(a.raft.LastContact())
	addr, _ := a.raft.LeaderWithID()
	if a.raft.State() != raft.Follower {
		return "", 0
	}
	return string(addr), a.cfg.HeartbeatTimeout - age
}

// leaseHold is how long after a leadership transfer (or its failure) no
// promise counts: the target may still win the election the transfer began.
func (a *Agent) leaseHold() time.Duration { return 2 * a.cfg.HeartbeatTimeout }

// transferLeadership hands leadership to the replica id at addr; the lease
// ends first, since the target's election ignores the voters' promises.
func (a *Agent) transferLeadership(id, addr string) {
	a.lease.revoke(time.Now().Add(24 * time.Hour))
	err := a.raft.LeadershipTransferToServer(raft.ServerID(id), raft.ServerAddress(addr)).Error()
	if err != nil {
		a.logger.Printf("leadership transfer to %s: %v", id, err)
	}
	a.lease.mu.Lock()
	a.lease.blocked = time.Now().Add(a.leaseHold())
	a.lease.mu.Unlock()
}

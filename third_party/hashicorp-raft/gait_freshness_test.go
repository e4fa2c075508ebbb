package raft

import (
	"testing"
	"time"
)

// TestGaitStaleContact (gait): a leader is cut off, and its followers go on
// receiving its heartbeats as a limping link's queue delivers them: late,
// stamped when it last sent. They elect one of themselves within a second
// (inmem heartbeat timeout 50 ms). Without the stamps' ages every late
// heartbeat refreshes their contact and names the old leader, each refuses
// the other's pre-vote, and no one is elected while the queue drains.
func TestGaitStaleContact(t *testing.T) {
	c := MakeCluster(3, t, inmemConfig(t))
	defer c.Close()
	old := c.Leader()
	fs := c.Followers()
	term, sent := old.getCurrentTerm(), gaitStamp()
	c.Disconnect(old.localAddr)
	defer deliverLate(old, term, sent, fs...)()
	deadline := time.Now().Add(time.Second)
	for fs[0].State() != Leader && fs[1].State() != Leader {
		if time.Now().After(deadline) {
			l0, _ := fs[0].LeaderWithID()
			l1, _ := fs[1].LeaderWithID()
			t.Fatalf("no follower elected within 1 s of the leader's cut; they know %q and %q as leader", l0, l1)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestGaitStaleNamesLeader (gait): a follower cut off from everyone but a
// late queue of its leader's heartbeats still knows who leads (its agent
// forwards its clients' writes there), while its contact stays as old as
// the heartbeats' stamp.
func TestGaitStaleNamesLeader(t *testing.T) {
	c := MakeCluster(3, t, inmemConfig(t))
	defer c.Close()
	leader := c.Leader()
	f := c.Followers()[0]
	term, sent := leader.getCurrentTerm(), gaitStamp()
	c.Disconnect(f.localAddr)
	defer deliverLate(leader, term, sent, f)()
	time.Sleep(5 * c.conf.HeartbeatTimeout)
	known := 0
	for i := 0; i < 50; i++ {
		if addr, _ := f.LeaderWithID(); addr == leader.localAddr {
			known++
		}
		time.Sleep(2 * time.Millisecond)
	}
	if known == 0 {
		t.Fatal("the cut-off follower never named its leader from the late heartbeats")
	}
	if age := time.Since(f.LastContact()); age < 4*c.conf.HeartbeatTimeout {
		t.Fatalf("late heartbeats refreshed the contact: %v old", age)
	}
}

// deliverLate sends each of fs, every 5 ms, a heartbeat in leader's name for
// term stamped sent: what a limping link's queue delivers after the leader
// was cut off. It returns the function that stops it.
func deliverLate(leader *Raft, term uint64, sent int64, fs ...*Raft) func() {
	_, queue := NewInmemTransport(leader.localAddr)
	for _, f := range fs {
		queue.Connect(f.localAddr, f.trans)
	}
	stop := make(chan struct{})
	go func() {
		req := AppendEntriesRequest{RPCHeader: RPCHeader{ProtocolVersion: ProtocolVersionMax, ID: []byte(leader.localID),
			Addr: []byte(leader.localAddr)}, Term: term, Leader: []byte(leader.localAddr), GaitSent: sent}
		for {
			for _, f := range fs {
				var resp AppendEntriesResponse
				_ = queue.AppendEntries(f.localID, f.localAddr, &req, &resp)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() { close(stop) }
}

// TestGaitFreshnessAge (gait): a request's age is how much later than the
// fastest of its leader's term it arrived; the fastest is let rise by
// gaitDrift a second, and a new leader or term starts afresh.
func TestGaitFreshnessAge(t *testing.T) {
	var f gaitFreshness
	at := func(ms int) time.Time { return gaitEpoch.Add(time.Duration(ms) * time.Millisecond) }
	stamp := func(ms int) int64 { return int64(time.Duration(ms)*time.Millisecond) + 1 }
	cases := []struct {
		leader       ServerAddress
		term         uint64
		sent, arrive int // ms on the leader's and this clock
		want         time.Duration
	}{
		{"a", 1, 0, 10, 0},                              // the first sets the least (10 ms)
		{"a", 1, 100, 112, 2 * time.Millisecond},        // 2 ms slower than the least
		{"a", 1, 200, 209, 0},                           // faster: the new least (9 ms)
		{"a", 1, 300, 1309, time.Second},                // a queue of a second
		{"a", 1, 10200, 10219, 0},                       // 10 s later the least has risen by 10 ms
		{"b", 1, 0, 5000, 0},                            // another leader: afresh
		{"b", 2, 0, 7000, 0},                            // another term: afresh
		{"b", 2, 0, 7000 + 500, 500 * time.Millisecond}, // (the least's rise rounds off)
	}
	for i, c := range cases {
		got := f.age(c.leader, c.term, stamp(c.sent), at(c.arrive))
		if d := got - c.want; d < -2*time.Millisecond || d > 2*time.Millisecond {
			t.Errorf("case %d: age %v, want %v", i, got, c.want)
		}
	}
	if got := f.age("b", 2, 0, at(9000)); got != 0 {
		t.Errorf("an unstamped request: age %v, want 0", got)
	}
}

// TestGaitQuorumLostStandsAside (gait): a leader cut off from its
// followers steps down and does not campaign for QuorumLostFactor
// heartbeat timeouts; without the change it stands for election again one
// to two heartbeat timeouts after stepping down.
func TestGaitQuorumLostStandsAside(t *testing.T) {
	c := MakeCluster(3, t, inmemConfig(t))
	defer c.Close()
	old := c.Leader()
	c.Disconnect(old.localAddr)
	deadline := time.Now().Add(time.Second)
	for old.quorumLostAt.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the cut-off leader did not step down for want of a quorum within 1 s (it is %v)", old.State())
		}
		time.Sleep(time.Millisecond)
	}
	stepped := time.Now()
	for time.Since(stepped) < QuorumLostFactor*c.conf.HeartbeatTimeout-30*time.Millisecond {
		if s := old.State(); s == Candidate || s == Leader {
			t.Fatalf("the leader stood for election %v after stepping down", time.Since(stepped))
		}
		time.Sleep(time.Millisecond)
	}
}

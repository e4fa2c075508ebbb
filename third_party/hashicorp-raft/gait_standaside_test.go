package raft

import (
	"testing"
	"time"
)

// TestGaitStandAside (gait): with its leader cut off, a follower standing
// aside never becomes a candidate, yet grants its vote, so the other
// follower (whose heartbeat timeout is three times longer) is elected.
// Without StandAside the first follower's timeout runs out first and it
// campaigns within 100 ms.
func TestGaitStandAside(t *testing.T) {
	c := MakeCluster(3, t, inmemConfig(t))
	defer c.Close()
	old := c.Leader()
	fs := c.Followers()
	aside, other := fs[0], fs[1]
	rc := other.ReloadableConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = 150*time.Millisecond, 150*time.Millisecond
	if err := other.ReloadConfig(rc); err != nil {
		t.Fatal(err)
	}
	aside.StandAside(true)
	c.Disconnect(old.localAddr)
	deadline := time.Now().Add(3 * time.Second)
	for other.State() != Leader {
		if s := aside.State(); s != Follower {
			t.Fatalf("the follower standing aside became %v", s)
		}
		if time.Now().After(deadline) {
			t.Fatal("the other follower was not elected within 3 s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestGaitStandAsideStillElects (gait): when every follower stands aside,
// one campaigns all the same after StandAsideFactor heartbeat timeouts.
func TestGaitStandAsideStillElects(t *testing.T) {
	c := MakeCluster(3, t, inmemConfig(t))
	defer c.Close()
	old := c.Leader()
	fs := c.Followers()
	for _, f := range fs {
		f.StandAside(true)
	}
	c.Disconnect(old.localAddr)
	deadline := time.Now().Add(5 * time.Second)
	for fs[0].State() != Leader && fs[1].State() != Leader {
		if time.Now().After(deadline) {
			t.Fatal("no follower was elected within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestGaitStandAsideCandidateGivesUp (gait): a follower whose leader's
// heartbeats arrive late (its own link limps) stands for election; told to
// stand aside, it gives up at its election timeout and follows again.
// Without the change it campaigns on: the late heartbeats do not turn it
// back (gait_freshness.go).
func TestGaitStandAsideCandidateGivesUp(t *testing.T) {
	conf := inmemConfig(t)
	conf.HeartbeatTimeout, conf.ElectionTimeout = 100*time.Millisecond, 100*time.Millisecond
	c := MakeCluster(3, t, conf)
	defer c.Close()
	leader := c.Leader()
	f := c.Followers()[0]
	term, sent := leader.getCurrentTerm(), gaitStamp()
	cut := time.Now()
	c.Disconnect(f.localAddr)
	defer deliverLate(leader, term, sent, f)()
	for f.State() != Candidate {
		if time.Since(cut) > time.Second {
			t.Fatal("the follower behind late heartbeats did not stand for election within 1 s")
		}
		time.Sleep(time.Millisecond)
	}
	f.StandAside(true)
	asked := time.Now()
	for f.State() == Candidate {
		if time.Since(cut) > StandAsideFactor*conf.HeartbeatTimeout-50*time.Millisecond {
			t.Fatalf("the candidate told to stand aside %v ago still campaigns", time.Since(asked))
		}
		time.Sleep(time.Millisecond)
	}
}

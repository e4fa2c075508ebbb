package raft

import (
	"testing"
	"time"
)

// TestGaitReplicationBackoffCapped (gait): a follower cut off for 3 s
// while the leader writes has the leader's log soon after it is back.
// The leader's retries to it back off from 10 ms, doubling; uncapped, the
// try after the one 2.56 s in came 5.12 s in, 2 s after the follower was
// back. Timeouts are 200 ms, so a busy machine keeps its leader.
func TestGaitReplicationBackoffCapped(t *testing.T) {
	conf := inmemConfig(t)
	conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	c := MakeCluster(3, t, conf)
	defer c.Close()
	leader, f := c.Leader(), c.Followers()[0]
	c.Disconnect(f.localAddr)
	for stop := time.Now().Add(3 * time.Second); time.Now().Before(stop); time.Sleep(5 * time.Millisecond) {
		if err := leader.Apply([]byte("x"), time.Second).Error(); err == ErrNotLeader || err == ErrLeadershipLost {
			leader = c.Leader() // a busy machine's leader change
		}
	}
	c.FullyConnect()
	back := time.Now()
	for f.LastIndex() < leader.LastIndex() {
		if time.Since(back) > time.Second {
			t.Fatalf("the follower holds index %d of %d a second after it is back", f.LastIndex(), leader.LastIndex())
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("caught up in %v", time.Since(back).Round(time.Millisecond))
}

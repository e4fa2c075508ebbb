package raft

import (
	"testing"
	"time"
)

// TestGaitReplicationBackoffCapped (gait): a follower cut off for 2 s
// while the leader writes has the leader's log within a few heartbeat
// timeouts of being back. The leader's retries to it back off from 10 ms,
// doubling; uncapped, the next retry was 0.6 to 2.6 s away by then.
func TestGaitReplicationBackoffCapped(t *testing.T) {
	c := MakeCluster(3, t, inmemConfig(t))
	defer c.Close()
	leader := c.Leader()
	f := c.Followers()[0]
	c.Disconnect(f.localAddr)
	for stop := time.Now().Add(2 * time.Second); time.Now().Before(stop); time.Sleep(5 * time.Millisecond) {
		if err := leader.Apply([]byte("x"), time.Second).Error(); err != nil {
			t.Fatal(err)
		}
	}
	c.FullyConnect()
	back, want := time.Now(), leader.LastIndex()
	for f.LastIndex() < want {
		if time.Since(back) > 500*time.Millisecond {
			t.Fatalf("the follower holds index %d of %d 500 ms after it is back", f.LastIndex(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("caught up in %v", time.Since(back).Round(time.Millisecond))
}

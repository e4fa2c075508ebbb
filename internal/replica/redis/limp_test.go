package redis

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/replica"
	redisserver "github.com/gait-dev/gait/internal/systems/redis"
)

// pause stops a replica's redis-server (SIGSTOP) until the returned
// function or the test's end continues it: a limping replica.
func pause(t *testing.T, n *node) (resume func()) {
	t.Helper()
	pid := n.redis.PID()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume = func() {
		if !resumed {
			resumed = true
			syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume) // before the cluster's cleanup closes the server
	return resume
}

// eventually polls cond for up to 20 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func replicaView(a *replica.Agent, id string) replica.Replica {
	for _, r := range a.Replicas() {
		if r.ID == id {
			return r
		}
	}
	return replica.Replica{}
}

// background keeps writing through c until the returned stop is called.
func background(t *testing.T, addr string) (stop func() int) {
	c := client(t, addr)
	done := make(chan struct{})
	count := make(chan int, 1)
	go func() {
		n := 0
		for i := 0; ; i++ {
			select {
			case <-done:
				count <- n
				return
			default:
			}
			if c.Set(context.Background(), fmt.Sprintf("bg%d", i%50), i, 0).Err() == nil {
				n++
			}
		}
	}()
	return func() int { close(done); return <-count }
}

// TestFanoutSessionWaitAll: reads go to several replicas and the first
// fitting answer wins, so a stopped local redis-server does not hold a read
// up; session reads see the connection's writes; WAITALL and --write-all
// wait for every replica.
func TestFanoutSessionWaitAll(t *testing.T) {
	cl := startCluster(t, 3, 1, func(c *replica.Config) {
		c.Read, c.Fanout, c.WriteTimeout = replica.Session, 2, 20*time.Second
		c.WriteAll = c.ID == "r3"
	})
	ctx := context.Background()
	dup := cl.nodes[3]
	c := client(t, dup.agent.ClientAddr())
	for i := range 20 {
		k := fmt.Sprintf("s%d", i)
		if err := c.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if v, err := c.Get(ctx, k).Int(); err != nil || v != i {
			t.Fatalf("session read of %s on the writing connection: %d, %v", k, v, err)
		}
	}
	if n, err := c.Do(ctx, "WAITALL").Int(); err != nil || n != 4 {
		t.Errorf("WAITALL: %d, %v; want 4 replicas", n, err)
	}

	resume := pause(t, dup)
	if err := c.Set(ctx, "during", "pause", 0).Err(); err != nil {
		t.Fatalf("write through the agent whose redis is stopped: %v", err)
	}
	if v, err := c.Get(ctx, "during").Result(); err != nil || v != "pause" {
		t.Errorf("read with fan-out 2 while the local redis is stopped: %q, %v", v, err)
	}
	if n, err := c.Do(ctx, "WAITALL", "300").Int(); err != nil || n != 3 {
		t.Errorf("WAITALL 300 with one redis stopped: %d, %v; want 3", n, err)
	}
	// r3 answers writes only once every replica applied them.
	w := client(t, cl.nodes[2].agent.ClientAddr())
	answered := make(chan error, 1)
	go func() { answered <- w.Set(ctx, "all", "replicas", 0).Err() }()
	select {
	case err := <-answered:
		t.Fatalf("a --write-all write answered (%v) while one replica cannot apply it", err)
	case <-time.After(500 * time.Millisecond):
	}
	resume()
	if err := <-answered; err != nil {
		t.Fatalf("--write-all write after the replica resumed: %v", err)
	}
	if v := direct(t, dup).Get(ctx, "all").Val(); v != "replicas" {
		t.Errorf("--write-all answered before the duplicate applied the write (it has %q)", v)
	}
	if n, err := c.Do(ctx, "WAITALL", "x").Result(); err == nil {
		t.Errorf("WAITALL x: %v, want an error", n)
	}
	cl.sameData()
}

// TestQuarantine corrupts one replica's redis-server behind its agent's
// back: its next reply's digest differs from the majority's, and it is
// quarantined everywhere, answers no reads, and the metrics say so.
func TestQuarantine(t *testing.T) {
	cl := startCluster(t, 3, 1, func(c *replica.Config) {
		if c.ID == "r1" {
			c.Metrics = "127.0.0.1:0"
		}
	})
	ctx := context.Background()
	c := client(t, cl.nodes[0].agent.ClientAddr())
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cl.converge()
	bad := cl.nodes[3]
	if err := direct(t, bad).Set(ctx, "k", "corrupted", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Append(ctx, "k", "x").Result(); err != nil || n != 2 {
		t.Fatalf("APPEND: %d, %v; want 2", n, err)
	}
	for _, n := range cl.nodes {
		eventually(t, n.cfg.ID+" sees the corrupted replica quarantined", func() bool {
			return replicaView(n.agent, "r4").Quarantined
		})
		for _, r := range n.agent.Replicas() {
			if r.ID != "r4" && r.Quarantined {
				t.Errorf("%s quarantined the healthy replica %s", n.cfg.ID, r.ID)
			}
		}
	}
	if !bad.agent.Quarantined() {
		t.Error("the corrupted replica does not know it is quarantined")
	}
	// Reads through the quarantined replica's agent come from healthy ones.
	viaBad := client(t, bad.agent.ClientAddr())
	if v, err := viaBad.Get(ctx, "k").Result(); err != nil || v != "vx" {
		t.Errorf("read through the quarantined replica's agent: %q, %v; want \"vx\"", v, err)
	}
	if err := viaBad.Incr(ctx, "after").Err(); err != nil {
		t.Errorf("write through the quarantined replica's agent: %v", err)
	}
	body := scrape(t, cl.nodes[0].agent)
	for _, want := range []string{"gait_replica_quarantines_total 1", `gait_replica_quarantined{replica="r4"} 1`,
		`gait_replica_quarantined{replica="r2"} 0`, "gait_replica_commit_seconds_count", `gait_replica_apply_lag_seconds{replica="r3"}`,
		"gait_replica_leader_changes_total ", "gait_replica_log_append_seconds_bucket", "gait_replica_leader 1",
		`gait_replica_reply_seconds_count{replica="r1"}`, `gait_replica_reply_seconds_count{replica="r3"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func scrape(t *testing.T, a *replica.Agent) string {
	t.Helper()
	resp, err := http.Get("http://" + a.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLimping stops a follower's redis-server, then the leader's: the
// limping replica is marked by its peers, reads through its agent do not
// wait for it (even when its peers were hedged away from just before), it
// is unmarked and caught up once it resumes, and a limping
// leader hands leadership to a healthy voter.
func TestLimping(t *testing.T) {
	cl := startCluster(t, 3, 0, func(c *replica.Config) {
		c.LimpFloor, c.StatusInterval, c.WriteTimeout = 200*time.Millisecond, 20*time.Millisecond, 20*time.Second
	})
	ctx := context.Background()
	leader := cl.waitLeader()
	var follower *node
	for _, n := range cl.nodes {
		if n != leader {
			follower = n
			break
		}
	}
	stop := background(t, leader.agent.ClientAddr())
	resume := pause(t, follower)
	eventually(t, "the leader marks the stopped follower as limping", func() bool {
		return replicaView(leader.agent, follower.cfg.ID).Limping
	})
	viaLimping := client(t, follower.agent.ClientAddr())
	if err := viaLimping.Set(ctx, "lin", "ok", 0).Err(); err != nil {
		t.Fatalf("write through the limping replica's agent: %v", err)
	}
	// On a loaded machine (load average 14) the limping replica's agent
	// hedged its reads (the connection's HELLO) away from both healthy
	// peers, which reads then avoid for a second: they must answer this
	// one all the same (limp.TestReadTargets holds the choice).
	if v, err := viaLimping.Get(ctx, "lin").Result(); err != nil || v != "ok" {
		t.Errorf("linearizable read through the limping replica's agent: %q, %v", v, err)
	}
	resume()
	eventually(t, "the follower recovers", func() bool {
		r := replicaView(leader.agent, follower.cfg.ID)
		return !r.Limping && follower.agent.Applied() >= leader.agent.Applied()
	})
	if n := stop(); n == 0 {
		t.Fatal("no background write succeeded")
	}

	// Now the leader's redis stops: it limps and hands leadership on.
	writer := client(t, follower.agent.ClientAddr())
	stop = background(t, follower.agent.ClientAddr())
	resume = pause(t, leader)
	eventually(t, "the limping leader hands leadership on", func() bool {
		l := cl.waitLeader()
		return l != leader
	})
	if err := writer.Set(ctx, "after", "transfer", 0).Err(); err != nil {
		t.Fatalf("write after the transfer: %v", err)
	}
	aside := func() bool { _, v := metric(t, leader.agent, "standing_aside", ""); return v == 1 }
	eventually(t, "the limping former leader stands aside from elections", aside)
	resume()
	eventually(t, "the recovered former leader no longer stands aside", func() bool { return !aside() })
	stop()
	cl.sameData()
	if _, n := metric(t, leader.agent, "leadership_transfers_total", ""); n < 1 {
		t.Error("the leader did not count its leadership transfer")
	}
}

// TestRedisReattach kills the leader's redis-server (SIGKILL): the leader
// cannot apply, marks itself limping and hands leadership over while the
// others serve; a new redis-server on the same port is re-attached and
// rebuilt from the snapshot and the log, and every replica holds the same
// data again.
func TestRedisReattach(t *testing.T) {
	cl := startCluster(t, 3, 0, nil)
	ctx := context.Background()
	leader := cl.waitLeader()
	for i := range 30 {
		if err := client(t, leader.agent.ClientAddr()).Incr(ctx, "n").Err(); err != nil {
			t.Fatalf("INCR %d: %v", i, err)
		}
	}
	if err := leader.agent.Snapshot(); err != nil {
		t.Fatal(err)
	}
	port := leader.redis.Addr[strings.LastIndex(leader.redis.Addr, ":")+1:]
	if err := syscall.Kill(leader.redis.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	other := cl.nodes[1]
	if other == leader {
		other = cl.nodes[0]
	}
	c := client(t, other.agent.ClientAddr())
	for i := range 30 { // the first one finds the leader's redis gone
		if err := c.Incr(ctx, "n").Err(); err != nil {
			t.Fatalf("INCR %d after the leader's redis died: %v", i, err)
		}
	}
	eventually(t, "leadership handed away from the replica that cannot apply", func() bool {
		return !leader.agent.IsLeader() && cl.waitLeader() != leader
	})
	srv := exec.Command(redisserver.ServerBinary, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir())
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	killed := leader.redis
	t.Cleanup(func() { killed.Close() }) // removes its directory
	leader.redis = nil                   // srv stands in
	eventually(t, "the old leader applying again", func() bool { return leader.agent.Failure() == nil })
	if err := c.Incr(ctx, "n").Err(); err != nil {
		t.Fatal(err)
	}
	cl.converge()
	for _, n := range cl.nodes {
		addr := "127.0.0.1:" + port
		if n.redis != nil {
			addr = n.redis.Addr
		}
		v, err := client(t, addr).Get(ctx, "n").Result()
		if v != "61" {
			t.Errorf("%s: n = %q (%v), want 61", n.cfg.ID, v, err)
		}
	}
}

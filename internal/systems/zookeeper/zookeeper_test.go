package zookeeper

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/procstat"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/systemstest"
)

func startEnsemble(t testing.TB, n int) (*Cluster, []systems.Host) {
	t.Helper()
	d := New()
	if err := d.Check(); err != nil {
		t.Skip(err)
	}
	c, hosts := systemstest.Start(t, d, n, 2*time.Second)
	return c.(*Cluster), hosts
}

// roles returns the leader and the followers, failing unless there is
// exactly one leader and every other member follows.
func roles(t testing.TB, c *Cluster) (leader string, followers []string) {
	t.Helper()
	return systemstest.LeaderAndFollowers(t, c)
}

func do(t *testing.T, cl load.Client, op load.Op) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := cl.Do(ctx, op); err != nil {
		t.Fatalf("%s %s: %v", Ops[op.Kind], op.Key, err)
	}
}

func get(t *testing.T, cl load.Client, key string) (string, bool) {
	t.Helper()
	c := cl.(*client)
	b, _, err := c.conn.Get(path(key))
	if err != nil {
		return "", false
	}
	return string(b), true
}

func TestEnsemble(t *testing.T) {
	c, _ := startEnsemble(t, 3)
	leader, followers := roles(t, c)
	if len(followers) != 2 {
		t.Fatalf("followers %v", followers)
	}
	t.Logf("leader %s, followers %v", leader, followers)

	t.Run("ops", func(t *testing.T) {
		cl, err := c.Client(followers[0])
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		v := []byte(strings.Repeat("x", 1024))
		do(t, cl, load.Op{Kind: opSet, Key: "fresh", Value: v}) // set creates
		if got, ok := get(t, cl, "fresh"); !ok || got != string(v) {
			t.Fatalf("after set of a new znode: %q %v", got, ok)
		}
		do(t, cl, load.Op{Kind: opCreate, Key: "k", Value: []byte("one")})
		do(t, cl, load.Op{Kind: opSet, Key: "k", Value: []byte("two")})
		if got, _ := get(t, cl, "k"); got != "two" {
			t.Fatalf("after set: %q", got)
		}
		do(t, cl, load.Op{Kind: opGet, Key: "k"})
		do(t, cl, load.Op{Kind: opDelete, Key: "k"})
		if _, ok := get(t, cl, "k"); ok {
			t.Fatal("znode still there after delete")
		}
		// another server sees what this one wrote (after a sync)
		other, err := c.Client(leader)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if _, err := other.(*client).conn.Sync(path("fresh")); err != nil {
			t.Fatal(err)
		}
		if got, ok := get(t, other, "fresh"); !ok || got != string(v) {
			t.Fatalf("leader reads %d bytes, %v", len(got), ok)
		}
		if err := cl.Do(context.Background(), load.Op{Kind: 9}); err == nil {
			t.Fatal("unknown op kind accepted")
		}
	})

	t.Run("metrics", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m, err := c.Metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{
			"zk_outstanding_requests{host=" + followers[0] + "}",
			"zk_znode_count{host=" + leader + "}",
			"zk_learners{host=" + leader + "}",
			"zk_synced_followers{host=" + leader + "}",
			"zk_pending_syncs{host=" + leader + "}",
			"zk_cnt_election_time{host=" + leader + "}",
			"zk_updatelatency{host=" + followers[0] + "}",
		} {
			if _, ok := m[k]; !ok {
				t.Errorf("no %s in %d metrics", k, len(m))
			}
		}
		if v := m["zk_synced_followers{host="+leader+"}"]; v != 2 {
			t.Errorf("leader has %v synced followers, want 2", v)
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		t.Logf("%d metrics: %v", len(m), keys)
	})

	t.Run("restart", func(t *testing.T) {
		f := c.byName[followers[1]]
		if err := f.Current().Stop(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		rs, _ := c.Roles(ctx)
		cancel()
		if rs[followers[1]] != "down" {
			t.Fatalf("stopped follower is %q: %v", rs[followers[1]], rs)
		}
		t0 := time.Now()
		if err := c.Restart(context.Background(), followers[1]); err != nil {
			t.Fatal(err)
		}
		t.Logf("follower back in %v", time.Since(t0).Round(time.Millisecond))
		l, fs := roles(t, c)
		if l != leader || len(fs) != 2 {
			t.Fatalf("after restart: leader %s followers %v", l, fs)
		}
		cl, err := c.Client(followers[1])
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if got, ok := get(t, cl, "fresh"); !ok || len(got) != 1024 {
			t.Fatalf("restarted follower reads %d bytes, %v", len(got), ok)
		}
	})
}

// TestFiveServers starts the largest ensemble the suite uses and checks
// that it fits this machine: one leader and four followers, writes through
// a follower reach the leader's per-follower queue of every follower (the
// paper's Z4/Z5 backlog), and each server's resident memory stays within
// maxRSS, the heap's 128 MB plus the JVM's own (code, metaspace, threads).
func TestFiveServers(t *testing.T) {
	const maxRSS = 320 << 20
	c, _ := startEnsemble(t, 5)
	leader, followers := roles(t, c)
	if len(followers) != 4 {
		t.Fatalf("followers %v, want 4", followers)
	}
	cl, err := c.Client(followers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	v := []byte(strings.Repeat("x", 1024))
	for i := range 200 {
		do(t, cl, load.Op{Kind: opSet, Key: "k" + strconv.Itoa(i%20), Value: v})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := c.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range followers {
		k := "zk_learner_handler_qp_size{host=" + leader + ",follower=" + f + "}"
		if _, ok := m[k]; !ok {
			t.Errorf("no %s", k)
		}
	}
	if v := m["zk_synced_followers{host="+leader+"}"]; v != 4 {
		t.Errorf("leader has %v synced followers, want 4", v)
	}
	var total int64
	for _, mb := range c.members {
		r, err := procstat.Read(mb.Current().Pid())
		if err != nil {
			t.Fatal(err)
		}
		total += r.RSS
		t.Logf("%s: RSS %d MiB", mb.host.Name(), r.RSS>>20)
		if r.RSS > maxRSS {
			t.Errorf("%s: RSS %d MiB, want at most %d MiB", mb.host.Name(), r.RSS>>20, maxRSS>>20)
		}
	}
	t.Logf("5 servers: RSS %d MiB together", total>>20)
}

package redis

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/limp"
	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/loopback"
	"github.com/gait-dev/gait/internal/systems/systemstest"
	"github.com/gait-dev/gait/internal/testbed"
)

func TestParseReplication(t *testing.T) {
	info := "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n" +
		"slave0:ip=198.18.0.3,port=6379,state=online,offset=1500,lag=0\r\n" +
		"slave1:ip=198.18.0.4,port=6379,state=send_bulk,offset=0,lag=1\r\n" +
		"master_repl_offset:2000\r\nrepl_backlog_histlen:2000\r\n"
	r, err := parseReplication(parseInfo(info))
	if err != nil {
		t.Fatal(err)
	}
	want := []ReplicaLink{{IP: "198.18.0.3", Port: 6379, State: "online", Offset: 1500}, {IP: "198.18.0.4", Port: 6379, State: "send_bulk"}}
	if r.Role != "primary" || r.Offset != 2000 || !slices.Equal(r.Replicas, want) {
		t.Errorf("got %+v", r)
	}
	if r, err := parseReplication(parseInfo("role:slave\nmaster_host:198.18.0.2\n")); err != nil || r.Role != "replica" {
		t.Errorf("replica: %+v, %v", r, err)
	}
	for _, bad := range []string{"role:sentinel\n", "role:master\nmaster_repl_offset:x\n", "role:master\nslave0:ip=,port=1\n",
		"role:master\nslave0:ip=1.2.3.4,offset=many\n"} {
		if _, err := parseReplication(parseInfo(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	list := "id=5 addr=198.18.0.3:41234 laddr=198.18.0.2:6379 fd=9 name= omem=20504 cmd=replconf\n" +
		"id=6 addr=198.18.0.4:41236 laddr=198.18.0.2:6379 fd=10 name= omem=0 cmd=replconf\n"
	bufs, err := outputBuffers(list)
	if err != nil || bufs["198.18.0.3"] != 20504 || bufs["198.18.0.4"] != 0 || len(bufs) != 2 {
		t.Errorf("buffers %v, %v", bufs, err)
	}
	if _, err := outputBuffers("id=5 addr=nowhere omem=1\n"); err == nil {
		t.Error("bad addr: no error")
	}
}

func TestSettings(t *testing.T) {
	check := func(name, v string, nodes int) error {
		st, _ := systems.System{Settings: Settings}.Setting(name)
		return st.Check(v, nodes)
	}
	for _, ok := range [][2]string{{"appendfsync", "always"}, {"appendfsync", "no"}, {"sentinel", "true"}, {"sentinel", "false"}, {"down_after", "500ms"}} {
		if err := check(ok[0], ok[1], 3); err != nil {
			t.Errorf("%s: %s: %v", ok[0], ok[1], err)
		}
	}
	for _, bad := range [][2]string{{"appendfsync", "sometimes"}, {"sentinel", "1"}, {"down_after", "0s"}, {"down_after", "soon"}} {
		if err := check(bad[0], bad[1], 3); err == nil {
			t.Errorf("%s: %s: no error", bad[0], bad[1])
		}
	}
	if err := check("sentinel", "true", 2); err == nil {
		t.Error("Sentinel on two nodes: no error")
	}
	d := NewDriver()
	if err := d.Configure(map[string]string{"appendfsync": "everysec", "sentinel": "true", "down_after": "2s"}); err != nil ||
		d.AppendFsync != "everysec" || !d.Sentinel || d.DownAfter != 2*time.Second {
		t.Errorf("configured %+v, %v", d, err)
	}
}

// A server that cannot start says why, from its own log.
func TestStartFailureQuotesTheLog(t *testing.T) {
	if _, err := os.Stat(ServerBinary); err != nil {
		t.Skipf("%s not installed", ServerBinary)
	}
	lb, err := loopback.Hosts(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	d := NewDriver()
	d.AppendFsync = "sometimes" // what Settings would refuse
	_, err = d.Start(context.Background(), []systems.Host{lb[0]})
	if err == nil || !strings.Contains(err.Error(), "last lines of") || !strings.Contains(err.Error(), "appendfsync") {
		t.Errorf("got %v, want the server's complaint about appendfsync", err)
	}
}

// onTestbed starts d on n testbed hosts (systemstest.OnTestbed), all
// removed when t ends, skipping t without Debian's redis-server.
func onTestbed(t *testing.T, d *Driver, n int) (*Cluster, *testbed.Testbed) {
	t.Helper()
	if _, err := os.Stat(d.Binary); err != nil {
		t.Skipf("%s not installed (make deps installs it)", d.Binary)
	}
	c, tb := systemstest.OnTestbed(t, d, n)
	return c.(*Cluster), tb
}

func client(t *testing.T, c *Cluster, host string) *Client {
	t.Helper()
	lc, err := c.Client(host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Close() })
	return lc.(*Client)
}

// direct connects to the server on host itself, whatever the Sentinels say.
func direct(t *testing.T, c *Cluster, host string) *Client {
	t.Helper()
	cl, err := Dial(context.Background(), c.addr(c.byName[host]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func roles(t *testing.T, c *Cluster) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	rs, err := c.Roles(ctx)
	if err != nil {
		t.Logf("roles: %v", err)
	}
	return rs
}

func TestReplicas(t *testing.T) {
	c, tb := onTestbed(t, NewDriver(), 3)
	ctx := context.Background()
	if rs := roles(t, c); rs["h0"] != "primary" || rs["h1"] != "replica" || rs["h2"] != "replica" {
		t.Fatalf("roles %v", rs)
	}
	primary, replica := client(t, c, "h0"), client(t, c, "h1")

	// A write on the primary reaches both replicas, which WAIT confirms.
	if err := primary.Do(ctx, load.Op{Kind: OpSet, Key: "k", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	if n, err := primary.WaitReplicas(ctx, 2, time.Second); err != nil || n != 2 {
		t.Fatalf("WAIT 2: %d, %v", n, err)
	}
	// A write that waited for every replica involves them all, so a slow
	// one is on its path; one that did not wait, or waited for fewer, none.
	if got := primary.Involved(); !slices.Equal(got, []string{"h1", "h2"}) {
		t.Errorf("a write with WAIT 2 involved %v, want [h1 h2]", got)
	}
	if _, err := primary.WaitReplicas(ctx, 1, time.Second); err != nil || primary.Involved() != nil {
		t.Errorf("a write with WAIT 1 involved %v (%v), want nil", primary.Involved(), err)
	}
	if err := primary.Do(ctx, load.Op{Kind: OpGet, Key: "k"}); err != nil || primary.Involved() != nil {
		t.Errorf("a get involved %v (%v), want nil", primary.Involved(), err)
	}
	if v, err := replica.rdb.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Errorf("replica reads %q, %v", v, err)
	}
	if err := replica.Do(ctx, load.Op{Kind: OpSet, Key: "k", Value: []byte("w")}); err == nil || !strings.Contains(err.Error(), "READONLY") {
		t.Errorf("a write on a replica: %v, want READONLY", err)
	}
	m, err := c.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"redis_repl_lag_bytes{host=h1}", "redis_repl_lag_bytes{host=h2}", "redis_replica_omem_bytes{host=h1}",
		"redis_repl_backlog_histlen{host=h0}", "redis_sync_full{host=h0}", "redis_primary{host=h0}", "redis_primary{host=h1}"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no %s in %v", k, m)
		}
	}
	if m["redis_sync_full{host=h0}"] != 2 || m["redis_primary{host=h0}"] != 1 || m["redis_primary{host=h1}"] != 0 {
		t.Errorf("two full syncs, h0 primary: %v", m)
	}

	// A replica whose link limps falls behind: its lag grows, the other's
	// does not, and WAIT for both times out with one.
	if err := (limp.NIC{}).Apply(tb.Host("h1"), 1000); err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 16<<10)
	for i := range 64 { // 1 MiB; the limping link carries about 12 KB/s
		if err := primary.Do(ctx, load.Op{Kind: OpSet, Key: fmt.Sprint("big:", i), Value: value}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := primary.WaitReplicas(ctx, 1, 2*time.Second); err != nil || n < 1 {
		t.Errorf("WAIT 1 with one healthy replica: %d, %v", n, err)
	}
	t0 := time.Now()
	n, err := primary.WaitReplicas(ctx, 2, 200*time.Millisecond)
	if err != nil || n != 1 || time.Since(t0) < 200*time.Millisecond {
		t.Errorf("WAIT 2 with one limping replica: %d after %v, %v; want 1 after the timeout", n, time.Since(t0), err)
	}
	// The primary reports the lag; the limping replica's own INFO may not
	// come through its queue in time, as in gait run's bounded scrapes.
	mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	m, _ = c.Metrics(mctx)
	cancel()
	slow, fast := m["redis_repl_lag_bytes{host=h1}"], m["redis_repl_lag_bytes{host=h2}"]
	t.Logf("lag with h1's NIC at 1000x: h1 %.0f bytes (output buffer %.0f), h2 %.0f", slow, m["redis_replica_omem_bytes{host=h1}"], fast)
	if slow < 256<<10 || fast > 64<<10 {
		t.Errorf("lag h1 %.0f, h2 %.0f: want the limping replica's far behind", slow, fast)
	}
	if err := (limp.NIC{}).Clear(tb.Host("h1")); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	systemstest.Eventually(t, 20*time.Second, "h1 catches up once its NIC is fixed", func() bool {
		n, err := primary.WaitReplicas(ctx, 2, 100*time.Millisecond)
		return err == nil && n == 2
	})
	t.Logf("h1 caught up %v after its NIC was fixed", time.Since(t0).Round(time.Millisecond))

	pids := []int{c.members[0].proc.Pid(), c.members[1].proc.Pid()}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("redis-server %d still running after Stop", pid)
		}
	}
}

func TestSentinelFailover(t *testing.T) {
	d := NewDriver()
	d.Sentinel, d.DownAfter = true, 500*time.Millisecond
	c, tb := onTestbed(t, d, 3)
	ctx := context.Background()
	if err := client(t, c, "h0").Do(ctx, load.Op{Kind: OpSet, Key: "k", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	if n, err := client(t, c, "h0").WaitReplicas(ctx, 2, time.Second); err != nil || n != 2 {
		t.Fatalf("WAIT 2: %d, %v", n, err)
	}
	follower := client(t, c, "h0")                  // asks the Sentinels for the primary
	if err := tb.Host("h0").KillAll(); err != nil { // the primary and its Sentinel
		t.Fatal(err)
	}
	t0 := time.Now()
	var promoted string
	// Two Sentinels that vote for themselves at once wait two failover
	// timeouts before the next election: a real run of Sentinel, allowed once.
	systemstest.Eventually(t, 2*d.failoverTimeout()+10*time.Second, "a replica promoted", func() bool {
		rs := roles(t, c)
		for _, h := range []string{"h1", "h2"} {
			if rs[h] == "primary" {
				promoted = h
			}
		}
		return rs["h0"] == "down" && promoted != ""
	})
	t.Logf("%s promoted %v after the primary's crash", promoted, time.Since(t0).Round(time.Millisecond))
	if v, err := direct(t, c, promoted).rdb.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Errorf("the new primary has k = %q, %v", v, err)
	}
	systemstest.Eventually(t, 5*time.Second, "a client of the primary writes to the new one", func() bool {
		return follower.Do(ctx, load.Op{Kind: OpSet, Key: "after", Value: []byte("failover")}) == nil
	})
	if v, err := direct(t, c, promoted).rdb.Get(ctx, "after").Result(); err != nil || v != "failover" {
		t.Errorf("the new primary has after = %q, %v", v, err)
	}
	systemstest.Eventually(t, 10*time.Second, "the Sentinels count the failover", func() bool {
		m, _ := c.Metrics(ctx)
		return m["redis_sentinel_failovers{host=h1}"] == 1 && m["redis_sentinel_failovers{host=h2}"] == 1
	})
	// The old primary comes back, empty, and Sentinel makes it a replica.
	if err := c.Restart(ctx, "h0"); err != nil {
		t.Fatal(err)
	}
	systemstest.Eventually(t, 30*time.Second, "the old primary rejoins as a replica", func() bool {
		return roles(t, c)["h0"] == "replica"
	})
}

// appendfsync turns the append-only file on with that policy.
func TestAppendOnly(t *testing.T) {
	if _, err := os.Stat(ServerBinary); err != nil {
		t.Skipf("%s not installed", ServerBinary)
	}
	lb, err := loopback.Hosts(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	d := NewDriver()
	if err := d.Configure(map[string]string{"appendfsync": "always"}); err != nil {
		t.Fatal(err)
	}
	cl, err := d.Start(context.Background(), []systems.Host{lb[0]})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Stop()
	c := direct(t, cl.(*Cluster), lb[0].Name())
	ctx := context.Background()
	if err := c.Do(ctx, load.Op{Kind: OpSet, Key: "k", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	got, err := c.rdb.ConfigGet(ctx, "append*").Result()
	if err != nil || got["appendonly"] != "yes" || got["appendfsync"] != "always" {
		t.Errorf("config %v, %v", got, err)
	}
	if st, err := os.Stat(ServerDir(lb[0]) + "/appendonlydir"); err != nil || !st.IsDir() {
		t.Errorf("no append-only directory: %v", err)
	}
}

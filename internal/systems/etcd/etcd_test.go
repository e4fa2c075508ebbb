package etcd

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/loopback"
	"github.com/gait-dev/gait/internal/systems/systemstest"
)

func startCluster(t testing.TB, n int) (*Cluster, []systems.Host) {
	t.Helper()
	d := New()
	if _, err := os.Stat(d.Binary); err != nil {
		t.Skipf("no etcd server: %v", err)
	}
	c, hosts := systemstest.Start(t, d, n, 0)
	return c.(*Cluster), hosts
}

// roles returns the leader and the followers, failing unless there is
// exactly one leader and every other member follows.
func roles(t testing.TB, c *Cluster) (leader string, followers []string) {
	t.Helper()
	return systemstest.LeaderAndFollowers(t, c)
}

func do(t *testing.T, c *Cluster, host string, op load.Op) {
	t.Helper()
	cl, err := c.Client(host)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := cl.Do(ctx, op); err != nil {
		t.Fatalf("%s on %s: %v", Ops[op.Kind], host, err)
	}
}

// value reads key through the member on host, serializably, so it shows what
// that member itself has applied.
func value(t *testing.T, c *Cluster, host, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, cli := c.byName[host].current()
	resp, err := cli.Get(ctx, key, clientv3.WithSerializable())
	if err != nil {
		t.Fatalf("read %s on %s: %v", key, host, err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

func TestCluster(t *testing.T) {
	c, hosts := startCluster(t, 3)
	leader, followers := roles(t, c)
	if len(followers) != 2 {
		t.Fatalf("followers %v, want 2", followers)
	}
	t.Logf("leader %s, followers %v", leader, followers)

	// Write through a follower, read back through every member.
	do(t, c, followers[0], load.Op{Kind: opPut, Key: "key:1", Value: []byte("one")})
	do(t, c, leader, load.Op{Kind: opGet, Key: "key:1"})
	do(t, c, followers[1], load.Op{Kind: opRange, Key: "key:"})
	for _, h := range hosts {
		systemstest.Eventually(t, 5*time.Second, "key:1 on "+h.Name(), func() bool { return value(t, c, h.Name(), "key:1") == "one" })
	}
	if cl, err := c.Client(leader); err != nil {
		t.Fatal(err)
	} else if err := cl.Do(context.Background(), load.Op{Kind: 9, Key: "k"}); err == nil {
		t.Error("unknown operation kind gave no error")
	} else {
		cl.Close()
	}
	if _, err := c.Client("nosuchhost"); err == nil {
		t.Error("client for an unknown host gave no error")
	}
	checkLease(t, c, followers[0])

	checkMetrics(t, c, hosts)
	crashAndRestart(t, c, followers[1])

	pids := make([]int, len(c.members))
	for i, m := range c.members {
		proc, _ := m.current()
		pids[i] = proc.Pid()
	}
	t0 := time.Now()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %v", time.Since(t0).Round(time.Millisecond))
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("etcd pid %d still running after Stop", pid)
		}
	}
	if left := etcdProcessesUnder(t, filepath.Dir(hosts[0].DataDir())); len(left) > 0 {
		t.Errorf("etcd processes left after Stop: %v", left)
	}
}

// checkMetrics scrapes until every named metric has shown up for every host
// (the peer round-trip time is probed every few seconds).
func checkMetrics(t *testing.T, c *Cluster, hosts []systems.Host) {
	t.Helper()
	seen := map[string]float64{}
	missing := func() []string {
		var miss []string
		for _, h := range hosts {
			for _, name := range slices.Concat(Gauges, Counters, Histograms) {
				if _, ok := seen[name+"{host="+h.Name()+"}"]; !ok {
					miss = append(miss, name+"{host="+h.Name()+"}")
				}
			}
		}
		return miss
	}
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; len(missing()) > 0; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("metrics never seen: %v", missing())
		}
		// Writes between scrapes give the disk histograms new observations.
		do(t, c, hosts[i%len(hosts)].Name(), load.Op{Kind: opPut, Key: "key:2", Value: []byte("x")})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		m, err := c.Metrics(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range m {
			seen[k] = v
		}
		time.Sleep(300 * time.Millisecond)
	}
	leaders := 0.0
	for _, h := range hosts {
		if v := seen["etcd_server_has_leader{host="+h.Name()+"}"]; v != 1 {
			t.Errorf("%s has_leader = %g", h.Name(), v)
		}
		leaders += seen["etcd_server_is_leader{host="+h.Name()+"}"]
		for _, name := range Histograms {
			if v := seen[name+"{host="+h.Name()+"}"]; v <= 0 || v > 10 {
				t.Errorf("%s{host=%s} = %g s, not a plausible latency", name, h.Name(), v)
			}
		}
	}
	if leaders != 1 {
		t.Errorf("is_leader adds up to %g over the members, want 1", leaders)
	}
	t.Logf("metrics of %s: %v", hosts[0].Name(), hostMetrics(seen, hosts[0].Name()))
}

func hostMetrics(m map[string]float64, host string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if strings.HasSuffix(k, "{host="+host+"}") {
			out[strings.TrimSuffix(k, "{host="+host+"}")] = v
		}
	}
	return out
}

// crashAndRestart kills the member on host with SIGKILL, writes while it is
// down, restarts it and checks it caught up.
func crashAndRestart(t *testing.T, c *Cluster, host string) {
	t.Helper()
	m := c.byName[host]
	if err := c.Restart(context.Background(), host); err == nil {
		t.Error("restart of a running member gave no error")
	}
	proc, _ := m.current()
	if err := syscall.Kill(proc.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	systemstest.Eventually(t, 5*time.Second, host+" to exit", proc.Exited)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	rs, _ := c.Roles(ctx)
	cancel()
	if rs[host] != "down" {
		t.Errorf("killed member %s has role %q, want down", host, rs[host])
	}
	var other string
	for h := range c.byName {
		if h != host {
			other = h
		}
	}
	do(t, c, other, load.Op{Kind: opPut, Key: "key:3", Value: []byte("while down")})

	t0 := time.Now()
	if err := c.Restart(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s rejoined in %v", host, time.Since(t0).Round(time.Millisecond))
	systemstest.Eventually(t, 5*time.Second, host+" to catch up", func() bool { return value(t, c, host, "key:3") == "while down" })
	roles(t, c) // one leader, every other member following, the restarted one included
}

func TestStartFailureShowsLog(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "etcd")
	script := "#!/bin/sh\necho 'etcdmain: listen tcp: address already in use' >&2\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d := New()
	d.Binary = fake
	h := loopback.New("h1", "127.0.0.1", filepath.Join(dir, "h1"))
	_, err := d.Start(context.Background(), []systems.Host{h})
	if err == nil {
		t.Fatal("a member that exits at once gave no error")
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), "h1") {
		t.Errorf("error lacks the host or the log tail: %v", err)
	}
}

func TestStartRejectsBadHosts(t *testing.T) {
	d := New()
	if _, err := d.Start(context.Background(), nil); err == nil {
		t.Error("no hosts gave no error")
	}
	dir := t.TempDir()
	twins := []systems.Host{loopback.New("a", "127.0.0.1", dir), loopback.New("a", "127.0.0.2", dir)}
	if _, err := d.Start(context.Background(), twins); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("two hosts of one name: %v", err)
	}
}

// etcdProcessesUnder lists the pids of etcd servers whose command line names
// a path under dir.
func etcdProcessesUnder(t *testing.T, dir string) []string {
	t.Helper()
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, p := range cmdlines {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process ended meanwhile
		}
		args := strings.Split(string(b), "\x00")
		if filepath.Base(args[0]) == "etcd" && strings.Contains(string(b), dir) {
			pids = append(pids, filepath.Base(filepath.Dir(p)))
		}
	}
	return pids
}

// checkLease keeps a lease alive through a follower, revokes it behind the
// client's back, and expects the next renewal to fail as a revoked lease and
// the one after to grant a new lease.
func checkLease(t *testing.T, c *Cluster, host string) {
	t.Helper()
	cl, err := c.Client(host)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	lease := load.Op{Kind: opLease}
	for range 2 { // grant, then renew
		if err := cl.Do(context.Background(), lease); err != nil {
			t.Fatalf("lease on %s: %v", host, err)
		}
	}
	ec := cl.(*client)
	if _, err := ec.cli.Revoke(context.Background(), ec.lease); err != nil {
		t.Fatal(err)
	}
	if err := cl.Do(context.Background(), lease); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("renewing a revoked lease: %v, want an error saying it was revoked", err)
	}
	if err := cl.Do(context.Background(), lease); err != nil || ec.lease == clientv3.NoLease {
		t.Errorf("lease after a revoked one: %v, lease %x", err, ec.lease)
	}
}

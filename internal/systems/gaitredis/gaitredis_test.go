package gaitredis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/gaitbin"
	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/loopback"
	"github.com/gait-dev/gait/internal/systems/redis"
	"github.com/gait-dev/gait/internal/systems/systemstest"
	"github.com/gait-dev/gait/internal/testbed"
	goredis "github.com/redis/go-redis/v9"
)

// gaitBin is a gait built once for the tests: the agents run as their own
// processes, as they do on testbed hosts.
var gaitBin string

func TestMain(m *testing.M) {
	bin, cleanup, err := gaitbin.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gaitBin = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

func startDeployment(t *testing.T, n, voters int) (*Cluster, []systems.Host) {
	t.Helper()
	if _, err := os.Stat(redis.ServerBinary); err != nil {
		t.Skipf("%s not installed (make deps installs it)", redis.ServerBinary)
	}
	lb, err := loopback.Hosts(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	hosts := make([]systems.Host, n)
	for i, h := range lb {
		hosts[i] = h
	}
	d := New()
	d.Gait, d.Voters = gaitBin, voters
	t0 := time.Now()
	c, err := d.Start(context.Background(), hosts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d replicas (%d voters) ready in %v", n, voters, time.Since(t0).Round(time.Millisecond))
	t.Cleanup(func() { c.Stop() })
	return c.(*Cluster), hosts
}

func roles(t *testing.T, c *Cluster) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rs, err := c.Roles(ctx)
	if err != nil {
		t.Fatalf("roles %v: %v", rs, err)
	}
	return rs
}

func direct(t *testing.T, addr string) *goredis.Client {
	t.Helper()
	rdb := goredis.NewClient(redis.Options(addr))
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// stored reads key straight from the redis-server behind host's agent.
func stored(t *testing.T, c *Cluster, host, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	v, err := direct(t, c.ServerAddr(host)).Get(ctx, key).Result()
	if err != nil && err != goredis.Nil {
		t.Fatalf("read %s from redis on %s: %v", key, host, err)
	}
	return v
}

func set(t *testing.T, c *Cluster, host, key, value string) {
	t.Helper()
	cl, err := c.Client(host)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.Do(ctx, load.Op{Kind: redis.OpSet, Key: key, Value: []byte(value)}); err != nil {
		t.Fatalf("set %s through %s: %v", key, host, err)
	}
}

func TestDeployment(t *testing.T) {
	c, hosts := startDeployment(t, 4, 3)
	rs := roles(t, c)
	t.Logf("roles %v", rs)
	leaders := 0
	for i, h := range hosts {
		r := rs[h.Name()]
		switch {
		case r == "leader" && i < 3:
			leaders++
		case r == "follower" && i < 3, r == "duplicate" && i == 3:
		default:
			t.Errorf("host %s (index %d) has role %q", h.Name(), i, r)
		}
	}
	if leaders != 1 {
		t.Fatalf("%d leaders: %v", leaders, rs)
	}

	// A write through the duplicate reaches every replica's redis-server.
	set(t, c, hosts[3].Name(), "key:1", "one")
	for _, h := range hosts {
		systemstest.Eventually(t, 5*time.Second, "key:1 on "+h.Name(), func() bool { return stored(t, c, h.Name(), "key:1") == "one" })
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got, err := direct(t, c.AgentAddr(h.Name())).Get(ctx, "key:1").Result()
		cancel()
		if err != nil || got != "one" {
			t.Errorf("get key:1 through %s: %q, %v", h.Name(), got, err)
		}
	}
	if _, err := c.Client("nosuchhost"); err == nil {
		t.Error("client for an unknown host gave no error")
	}

	checkMetrics(t, c, hosts)
	crashAndRestart(t, c, hosts, rs)

	pids := c.pids()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("pid %d still running after Stop", pid)
		}
	}
}

func (c *Cluster) pids() []int {
	var out []int
	for _, m := range c.members {
		r, a := m.procs()
		out = append(out, r.Pid(), a.Pid())
	}
	return out
}

func checkMetrics(t *testing.T, c *Cluster, hosts []systems.Host) {
	t.Helper()
	seen := map[string]float64{}
	deadline := time.Now().Add(10 * time.Second)
	for {
		set(t, c, hosts[0].Name(), "key:2", "x")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		m, err := c.Metrics(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range m {
			seen[k] = v
		}
		if _, ok := seen["gait_replica_commit_seconds{host="+hosts[0].Name()+"}"]; ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no commit latency from %s in %v", hosts[0].Name(), seen)
		}
		time.Sleep(200 * time.Millisecond)
	}
	leaders := 0.0
	for _, h := range hosts {
		for _, name := range []string{mLeader, "gait_replica_applied_index", "gait_replica_leader_changes_total"} {
			if _, ok := seen[name+"{host="+h.Name()+"}"]; !ok {
				t.Errorf("no %s for %s", name, h.Name())
			}
		}
		leaders += seen[mLeader+"{host="+h.Name()+"}"]
		if v := seen["gait_replica_applied_index{host="+h.Name()+"}"]; v < 2 {
			t.Errorf("%s applied index %g after two writes", h.Name(), v)
		}
	}
	if leaders != 1 {
		t.Errorf("leader gauges add up to %g, want 1", leaders)
	}
	if v := seen["gait_replica_commit_seconds{host="+hosts[0].Name()+"}"]; v <= 0 || v > 10 {
		t.Errorf("commit latency %g s is not plausible", v)
	}
}

// crashAndRestart kills a follower's redis-server and agent with SIGKILL,
// writes while they are down, restarts them and checks the follower's
// redis-server was refilled; then does the same to its redis-server alone.
func crashAndRestart(t *testing.T, c *Cluster, hosts []systems.Host, rs map[string]string) {
	t.Helper()
	var host string
	for _, h := range hosts {
		if rs[h.Name()] == "follower" {
			host = h.Name()
		}
	}
	if err := c.Restart(context.Background(), host); err == nil {
		t.Error("restart of a running member gave no error")
	}
	r, a := c.byName[host].procs()
	for _, p := range []systems.Process{a, r} {
		if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		systemstest.Eventually(t, 5*time.Second, host+" to exit", p.Exited)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	after, _ := c.Roles(ctx)
	cancel()
	if after[host] != "down" {
		t.Errorf("killed member %s has role %q, want down", host, after[host])
	}
	var other string
	for _, h := range hosts {
		if h.Name() != host {
			other = h.Name()
		}
	}
	set(t, c, other, "key:3", "while down")
	t0 := time.Now()
	if err := c.Restart(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s back in %v", host, time.Since(t0).Round(time.Millisecond))
	for _, k := range []string{"key:1", "key:3"} {
		systemstest.Eventually(t, 5*time.Second, k+" on restarted "+host, func() bool { return stored(t, c, host, k) != "" })
	}
	rs2 := roles(t, c)
	if rs2[host] != "follower" {
		t.Errorf("restarted %s has role %q", host, rs2[host])
	}
	// Its redis-server alone, behind the running agent: the agent
	// re-attaches the new one and refills it.
	_, agent := c.byName[host].procs()
	if err := c.KillServer(host); err != nil {
		t.Fatal(err)
	}
	set(t, c, other, "key:4", "while redis was down")
	if err := c.Restart(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"key:1", "key:3", "key:4"} {
		systemstest.Eventually(t, 10*time.Second, k+" on "+host+"'s new redis-server", func() bool { return stored(t, c, host, k) != "" })
	}
	if _, a := c.byName[host].procs(); a != agent || a.Exited() {
		t.Errorf("the agent on %s was restarted with its redis-server; want it kept, re-attaching", host)
	}
}

func TestStartRejectsBadInput(t *testing.T) {
	d := New()
	d.Gait = gaitBin
	if _, err := d.Start(context.Background(), nil); err == nil {
		t.Error("no hosts gave no error")
	}
	dir := t.TempDir()
	twins := []systems.Host{loopback.New("a", "127.0.0.1", dir), loopback.New("a", "127.0.0.2", dir)}
	if _, err := d.Start(context.Background(), twins); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("two hosts of one name: %v", err)
	}
	d.Voters = 3
	two := []systems.Host{loopback.New("a", "127.0.0.1", dir), loopback.New("b", "127.0.0.2", dir)}
	if _, err := d.Start(context.Background(), two); err == nil || !strings.Contains(err.Error(), "3 voters on 2 hosts") {
		t.Errorf("more voters than hosts: %v", err)
	}
	d.Voters, d.Gait = 0, filepath.Join(dir, "no-gait")
	if _, err := d.Start(context.Background(), two); err == nil || !strings.Contains(err.Error(), "no-gait") {
		t.Errorf("missing gait program: %v", err)
	}
}

// TestBadSettings checks that a deployment with a setting out of range
// fails before anything starts, naming the setting and its range.
func TestBadSettings(t *testing.T) {
	lb, err := loopback.Hosts(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	hosts := make([]systems.Host, len(lb))
	for i, h := range lb {
		hosts[i] = h
	}
	for _, c := range []struct {
		set  func(*Driver)
		want string
	}{
		{func(d *Driver) { d.Fanout = 0 }, "fanout 0: want 1 to 3"},
		{func(d *Driver) { d.Fanout = 4 }, "fanout 4: want 1 to 3"},
		{func(d *Driver) { d.Read = "eventual" }, `read mode "eventual"`},
	} {
		d := New()
		d.Gait = gaitBin
		c.set(d)
		if _, err := d.Start(context.Background(), hosts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Start: %v, want an error containing %q", err, c.want)
		}
	}
	for _, h := range lb {
		if es, _ := os.ReadDir(h.DataDir()); len(es) > 0 {
			t.Errorf("host %s holds %d files after bad settings, want none", h.Name(), len(es))
		}
	}
	for _, c := range []struct {
		opts TestbedOptions
		want string
	}{
		{TestbedOptions{Voters: 3, Duplicates: -1}, "duplicates -1: want 0 to 197"},
		{TestbedOptions{Voters: 0}, "voters 0: want 1 to 200"},
		{TestbedOptions{Voters: 150, Duplicates: 51}, "duplicates 51: want 0 to 50"},
	} {
		c.opts.StateDir = t.TempDir()
		if _, err := New().StartOnTestbed(context.Background(), c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("StartOnTestbed(%+v): %v, want an error containing %q", c.opts, err, c.want)
		}
		if es, _ := os.ReadDir(c.opts.StateDir); len(es) > 0 {
			t.Errorf("StartOnTestbed(%+v) left %d files in its state directory", c.opts, len(es))
		}
	}
}

// TestMaxReplicasFitATestbed: gait replica cluster's bound on replicas is
// one testbed host each.
func TestMaxReplicasFitATestbed(t *testing.T) {
	if MaxReplicas > testbed.MaxHosts {
		t.Errorf("MaxReplicas %d exceeds testbed.MaxHosts %d", MaxReplicas, testbed.MaxHosts)
	}
}

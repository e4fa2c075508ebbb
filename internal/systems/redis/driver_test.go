package redis

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/loopback"
)

func TestDriver(t *testing.T) {
	if _, err := os.Stat(ServerBinary); err != nil {
		t.Skipf("%s not installed", ServerBinary)
	}
	lb, err := loopback.Hosts(t.TempDir(), 2)
	if err != nil {
		t.Fatal(err)
	}
	hosts := []systems.Host{lb[0], lb[1]}
	cl, err := NewDriver().Start(context.Background(), hosts)
	if err != nil {
		t.Fatal(err)
	}
	c := cl.(*Servers)
	defer c.Stop()
	ctx := context.Background()
	rs, err := c.Roles(ctx)
	if err != nil || rs["h1"] != "primary" || rs["h2"] != "primary" {
		t.Fatalf("roles %v, %v", rs, err)
	}

	// Servers are independent: a write on h1 is not on h2.
	do := func(host string, op load.Op) {
		t.Helper()
		lc, err := c.Client(host)
		if err != nil {
			t.Fatal(err)
		}
		defer lc.Close()
		if err := lc.Do(ctx, op); err != nil {
			t.Fatal(err)
		}
	}
	do("h1", load.Op{Kind: OpSet, Key: "k", Value: []byte("v")})
	if n := exists(t, c, "h1", "k"); n != 1 {
		t.Errorf("h1 has k %d times", n)
	}
	if n := exists(t, c, "h2", "k"); n != 0 {
		t.Errorf("h2 has k %d times: servers should not replicate", n)
	}

	m, err := c.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m["redis_total_commands_processed{host=h1}"] < 1 || m["redis_connected_clients{host=h2}"] < 1 {
		t.Errorf("metrics %v", m)
	}

	if err := c.Restart(ctx, "h2"); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Errorf("restart of a running server: %v", err)
	}
	p := c.procs["h1"]
	syscall.Kill(p.Pid(), syscall.SIGKILL)
	for deadline := time.Now().Add(5 * time.Second); !p.Exited(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("killed server still running")
		}
	}
	if rs, _ := c.Roles(ctx); rs["h1"] != "down" {
		t.Errorf("killed server has role %q", rs["h1"])
	}
	if err := c.Restart(ctx, "h1"); err != nil {
		t.Fatal(err)
	}
	if n := exists(t, c, "h1", "k"); n != 0 {
		t.Errorf("restarted server without persistence still has k")
	}
	if _, err := c.Client("h9"); err == nil {
		t.Error("client for an unknown host gave no error")
	}
	pids := []int{c.procs["h1"].Pid(), c.procs["h2"].Pid()}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("redis-server %d still running after Stop", pid)
		}
	}
}

func exists(t *testing.T, c *Servers, host, key string) int64 {
	t.Helper()
	addr, _ := c.addr(host)
	cl, err := Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	n, err := cl.rdb.Exists(context.Background(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

package gaitzookeeper

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gait-dev/gait/internal/gaitbin"
	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/gaitredis"
	"github.com/gait-dev/gait/internal/systems/loopback"
	zksys "github.com/gait-dev/gait/internal/systems/zookeeper"
)

// The driver on three loopback hosts, each agent its own process in front
// of its own ZooKeeper, as on testbed hosts: roles, a set through a
// follower on every server, one server killed behind its agent and
// rebuilt.
func TestDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three ZooKeeper servers and agents")
	}
	if err := zksys.New().Check(); err != nil {
		t.Skip(err)
	}
	bin, cleanup, err := gaitbin.Build()
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	lb, err := loopback.Hosts(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	hosts := make([]systems.Host, len(lb))
	for i, h := range lb {
		hosts[i] = h
	}
	d := New()
	d.Gait = bin
	if d.Name() != "gait-zookeeper" {
		t.Fatalf("driver named %q", d.Name())
	}
	t0 := time.Now()
	sc, err := d.Start(context.Background(), hosts)
	if err != nil {
		t.Fatal(err)
	}
	c := sc.(*gaitredis.Cluster)
	defer c.Stop()
	t.Logf("ready in %v", time.Since(t0).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	roles, err := c.Roles(ctx)
	if err != nil {
		t.Fatalf("roles %v: %v", roles, err)
	}
	var follower string
	for _, h := range hosts {
		if roles[h.Name()] == "follower" {
			follower = h.Name()
		}
	}
	if follower == "" {
		t.Fatalf("no follower: %v", roles)
	}

	write := func(key, value string) {
		t.Helper()
		cl, err := c.Client(follower)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.Do(ctx, load.Op{Kind: uint8(slices.Index(zksys.Ops, "set")), Key: key, Value: []byte(value)}); err != nil {
			t.Fatalf("set %s through %s: %v", key, follower, err)
		}
	}
	write("k1", "one")
	for _, h := range hosts {
		waitStored(t, c.ServerAddr(h.Name()), zksys.Root+"/k1", "one")
	}

	// A ZooKeeper server killed behind its agent comes back (restarted as
	// a new process: loopback hosts cannot restart one in place) and is
	// refilled by its agent, which kept running.
	victim := hosts[2].Name()
	if err := c.KillServer(victim); err != nil {
		t.Fatal(err)
	}
	write("k2", "while the server was down")
	if err := c.RestartServer(ctx, victim); err != nil {
		t.Fatal(err)
	}
	waitStored(t, c.ServerAddr(victim), zksys.Root+"/k1", "one")
	waitStored(t, c.ServerAddr(victim), zksys.Root+"/k2", "while the server was down")
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
}

// waitStored waits until the ZooKeeper server at addr, read directly behind
// its agent, holds path with value.
func waitStored(t *testing.T, addr, path, value string) {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var got string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		b, _, err := conn.Get(path)
		if got = fmt.Sprintf("%q, %v", b, err); err == nil && string(b) == value {
			return
		}
	}
	t.Fatalf("%s on %s: %s, want %q", path, addr, got, value)
}

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
	"github.com/gait-dev/gait/internal/systems/gaitredis"
	"github.com/gait-dev/gait/internal/systems/systemstest"
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
	d := New()
	d.Gait = bin
	if d.Name() != "gait-zookeeper" {
		t.Fatalf("driver named %q", d.Name())
	}
	sc, hosts := systemstest.Start(t, d, 3, 0)
	c := sc.(*gaitredis.Cluster)
	_, followers := systemstest.LeaderAndFollowers(t, c)
	follower := followers[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

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

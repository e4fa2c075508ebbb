package gaitzookeeper

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/replica"
	"github.com/gait-dev/gait/internal/systems/gaitredis"
	zksys "github.com/gait-dev/gait/internal/systems/zookeeper"
	"github.com/go-zookeeper/zk"
)

// A loopback deployment (gait replica cluster --loopback --server
// zookeeper): a node created through one agent is read through the other,
// and closing removes the deployment's directory and servers.
func TestLocalDeployment(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two ZooKeeper servers")
	}
	if err := zksys.New().Check(); err != nil {
		t.Skip(err)
	}
	srv, err := LocalServer(1)
	if err != nil {
		t.Fatal(err)
	}
	l, err := gaitredis.StartLocalWith(context.Background(), gaitredis.LocalOptions{
		Voters: 1, Duplicates: 1, Base: replica.Config{Read: replica.Linearizable}, TempDir: t.TempDir(), Server: srv})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	conn := func(a *replica.Agent) *zk.Conn {
		c, _, err := zk.Connect([]string{a.ClientAddr()}, 5*time.Second, zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	w, r := conn(l.Agents[0]), conn(l.Agents[1])
	defer w.Close()
	defer r.Close()
	if _, err := w.Create("/greeting", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if d, st, err := r.Get("/greeting"); err != nil || string(d) != "hello" || st.Czxid == 0 {
		t.Fatalf("through the duplicate: %q %+v %v", d, st, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(l.Dir); !os.IsNotExist(err) {
		t.Fatalf("%s left after Close: %v", l.Dir, err)
	}
}

func TestCheckGroupSize(t *testing.T) {
	for n, ok := range map[int]bool{0: false, 1: true, 2: false, 3: true, 5: false} {
		if err := CheckGroupSize(n); (err == nil) != ok {
			t.Errorf("group size %d: %v", n, err)
		}
	}
}

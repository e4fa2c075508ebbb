package zookeeper

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/replica"
	"github.com/go-zookeeper/zk"
)

// orderedLog stands in for gait replica's core in this package's unit
// tests: it orders writes under a lock and applies each to every agent's
// backend at once, checking that they reply alike. The real core (raft,
// first reply wins) drives the adapter in the cluster tests.
type orderedLog struct {
	t        *testing.T
	mu       sync.Mutex
	index    uint64
	backends []replica.Backend
}

type localClient struct {
	log   *orderedLog
	agent int
}

type done struct {
	reply []byte
	index uint64
	err   error
}

func (d done) Wait() ([]byte, uint64, error) { return d.reply, d.index, d.err }

func (c localClient) Write(cmd replica.Command) replica.Pending {
	l := c.log
	l.mu.Lock()
	defer l.mu.Unlock()
	l.index++
	e := replica.Committed{Index: l.index, Time: time.Now(), Data: cmd.Data}
	var first []byte
	for i, b := range l.backends {
		res, err := b.Apply([]replica.Committed{e})
		if err != nil {
			return done{err: err}
		}
		if i == 0 {
			first = res[0].Reply
		} else if !bytes.Equal(res[0].Reply, first) {
			l.t.Errorf("entry %d: replica %d replied %x, replica 0 %x", e.Index, i, res[0].Reply, first)
		}
	}
	return done{reply: first, index: e.Index}
}

func (c localClient) Read(ctx context.Context, cmd replica.Command) ([]byte, error) {
	return c.log.backends[c.agent].Read(ctx, cmd.Data)
}

func (c localClient) WaitAll(ctx context.Context) (int, error) { return len(c.log.backends), nil }

// startAgents serves the adapter on one listener per ZooKeeper server.
func startAgents(t *testing.T, servers []string) []string {
	l := &orderedLog{t: t}
	var addrs []string
	for i, s := range servers {
		a := &Adapter{}
		b, err := a.Open(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Reset(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		l.backends = append(l.backends, b)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go a.ServeConn(c, localClient{l, i})
			}
		}()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs
}

func connect(t *testing.T, addr string) (*zk.Conn, <-chan zk.Event) {
	c, ev, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(10 * time.Second)
	for c.State() != zk.StateHasSession {
		select {
		case <-deadline:
			t.Fatalf("no session through %s", addr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return c, ev
}

// goClientChecks runs go-zookeeper/zk clients through the first and the
// last agent.
func goClientChecks(t *testing.T, agents []string) {
	c1, _ := connect(t, agents[0])
	c2, _ := connect(t, agents[len(agents)-1])
	acl := zk.WorldACL(zk.PermAll)

	if _, err := c1.Create("/q", []byte("queue"), 0, acl); err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range 4 {
		c := []*zk.Conn{c1, c2}[i%2]
		p, err := c.Create("/q/item-", []byte(fmt.Sprint(i)), zk.FlagSequence, acl)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, p)
	}
	if fmt.Sprint(names) != "[/q/item-0000000000 /q/item-0000000001 /q/item-0000000002 /q/item-0000000003]" {
		t.Fatalf("sequential names: %v", names)
	}
	kids, st, err := c2.Children("/q")
	sort.Strings(kids)
	if err != nil || len(kids) != 4 || st.NumChildren != 4 || st.Cversion != 4 {
		t.Fatalf("children: %v %+v %v", kids, st, err)
	}

	// CAS with versions, through the other agent.
	_, st, _ = c1.Get("/q")
	if _, err := c2.Set("/q", []byte("v1"), st.Version); err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Set("/q", []byte("v2"), st.Version); err != zk.ErrBadVersion {
		t.Fatalf("stale CAS: %v", err)
	}

	// A watch set through agent 1 fires once for a write through agent 2.
	_, _, w, err := c1.GetW("/q")
	if err != nil {
		t.Fatal(err)
	}
	c2.Set("/q", []byte("v3"), -1)
	c2.Set("/q", []byte("v4"), -1)
	select {
	case ev := <-w:
		if ev.Type != zk.EventNodeDataChanged || ev.Path != "/q" {
			t.Fatalf("watch event: %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not fire")
	}
	select {
	case ev, ok := <-w:
		if ok {
			t.Fatalf("the watch fired twice: %+v", ev)
		}
	case <-time.After(300 * time.Millisecond):
	}

	// An ephemeral node of c3 (on agent 2) vanishes when c3 closes; c1 sees
	// it go through its exists watch.
	c3, _ := connect(t, agents[len(agents)-1])
	if _, err := c3.Create("/q/lock", nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	ok, st, ew, err := c1.ExistsW("/q/lock")
	if err != nil || !ok || st.EphemeralOwner != c3.SessionID() {
		t.Fatalf("ephemeral node through the other agent: %v %+v %v (session %#x)", ok, st, err, c3.SessionID())
	}
	c3.Close()
	select {
	case ev := <-ew:
		if ev.Type != zk.EventNodeDeleted {
			t.Fatalf("exists watch: %+v", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the ephemeral node's deletion was not seen")
	}
	for i, c := range []*zk.Conn{c1, c2} {
		if ok, _, err := c.Exists("/q/lock"); ok || err != nil {
			t.Fatalf("client %d: ephemeral node after its session closed: %v %v", i, ok, err)
		}
	}

	// multi and sync.
	ops := []any{&zk.CreateRequest{Path: "/m", Data: []byte("x"), Acl: acl}, &zk.SetDataRequest{Path: "/q", Data: []byte("m"), Version: -1}}
	if _, err := c2.Multi(ops...); err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Sync("/m"); err != nil {
		t.Fatal(err)
	}
	if d, _, err := c1.Get("/q"); err != nil || string(d) != "m" {
		t.Fatalf("after multi and sync: %q %v", d, err)
	}
}

package redis

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/rundir"
)

func startServer(t *testing.T) *Server {
	t.Helper()
	if _, err := os.Stat(ServerBinary); err != nil {
		t.Skipf("%s not installed (make deps installs it)", ServerBinary)
	}
	s, err := StartServer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func TestOps(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	c, err := Dial(ctx, s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	do := func(kind uint8, key, value string) {
		t.Helper()
		if err := c.Do(ctx, load.Op{Kind: kind, Key: key, Value: []byte(value)}); err != nil {
			t.Fatalf("%s %s: %v", Ops[kind], key, err)
		}
	}
	do(OpGet, "k", "") // a miss is a success
	do(OpSet, "k", "hello")
	if got, err := c.rdb.Get(ctx, "k").Result(); err != nil || got != "hello" {
		t.Fatalf("after set: %q, %v", got, err)
	}
	do(OpGet, "k", "")
	do(OpDel, "k", "")
	if n, err := c.rdb.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("after del: exists %d, %v", n, err)
	}
	if err := c.Do(ctx, load.Op{Kind: 9, Key: "k"}); err == nil {
		t.Error("unknown kind: no error")
	}
}

func TestLoad(t *testing.T) {
	s := startServer(t)
	mix, err := load.ParseMix("get:50,set:50", Ops)
	if err != nil {
		t.Fatal(err)
	}
	wl := load.Workload{Mix: mix, Keys: 100, ValueSize: 1024}
	dial := Dialer(s.Addr)
	ctx := context.Background()
	if err := load.Preload(ctx, wl, OpSet, dial, 4); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir() + "/run"
	w, err := rundir.Create(dir, rundir.Config{Name: "redis-test", System: "redis", Factor: 1, Ops: Ops,
		Hosts: []rundir.Host{{Name: "redis", Address: s.Addr}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := load.Run(ctx, load.Config{Workload: wl, Clients: 4, Requests: 2000}, dial, w)
	if err != nil {
		w.Abort()
		t.Fatal(err)
	}
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	if res.Requests != 2000 || res.Errors != 0 || res.Timeouts != 0 {
		t.Fatalf("result %+v (first error %v), want 2000 successes", res, res.FirstError)
	}
	run, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := run.Summary()
	if err != nil || sum.Requests != 2000 || sum.P50 <= 0 {
		t.Fatalf("summary %+v, %v", sum, err)
	}
}

func TestCloseStopsServer(t *testing.T) {
	if _, err := os.Stat(ServerBinary); err != nil {
		t.Skipf("%s not installed", ServerBinary)
	}
	s, err := StartServer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pid, dir := s.PID(), s.dir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("redis-server %d still running after Close", pid)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("data directory %s left behind", dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if c, err := Dial(ctx, s.Addr); err == nil {
		c.Close()
		t.Errorf("%s still answers after Close", s.Addr)
	}
}

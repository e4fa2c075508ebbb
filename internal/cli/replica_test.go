package cli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/systems/redis"
	goredis "github.com/redis/go-redis/v9"
)

func TestReplicaClusterCmd(t *testing.T) {
	if _, err := os.Stat(redis.ServerBinary); err != nil {
		t.Skipf("%s not installed", redis.ServerBinary)
	}
	cmd := newReplicaCmd()
	out, w := io.Pipe()
	cmd.SetOut(w)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"cluster", "--voters", "3", "--duplicates", "1", "--read", "session", "--fanout", "2", "--metrics"})
	done := make(chan error, 1)
	go func() { done <- cmd.Execute(); w.Close() }()
	sc := bufio.NewScanner(out)
	var addrs []string
	for len(addrs) < 4 && sc.Scan() {
		addr, ok := strings.CutPrefix(sc.Text(), "redis ")
		if !ok {
			t.Fatalf("line %q, want \"redis ADDRESS\"", sc.Text())
		}
		addrs = append(addrs, addr)
	}
	if len(addrs) != 4 {
		t.Fatalf("%d agents printed, want 4 (%v)", len(addrs), <-done)
	}
	var metrics []string
	for len(metrics) < 4 && sc.Scan() {
		url, ok := strings.CutPrefix(sc.Text(), "metrics http://")
		if !ok {
			t.Fatalf("line %q, want \"metrics URL\"", sc.Text())
		}
		metrics = append(metrics, url)
	}
	go io.Copy(io.Discard, out) // nothing more is printed, but never block the command
	resp, err := http.Get("http://" + metrics[3])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %s", metrics[3], resp.Status)
	}
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: addrs[3], MaxRetries: -1})
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("cluster still running 30s after SIGTERM")
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Error("an agent still answers after the cluster stopped")
	}
}

func TestReplicaAgentBadRead(t *testing.T) {
	cmd := newReplicaCmd()
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"agent", "--id", "a", "--raft", "127.0.0.1:0", "--redis", "127.0.0.1:1",
		"--listen", "127.0.0.1:0", "--read", "eventual"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), `read mode "eventual"`) {
		t.Errorf("error %v, want a bad read mode", err)
	}
}

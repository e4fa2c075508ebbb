package cli

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/gaitbin"
	"github.com/gait-dev/gait/internal/systems/redis"
	goredis "github.com/redis/go-redis/v9"
)

// TestReplicaClusterCmd runs a deployment on loopback, in the test process.
func TestReplicaClusterCmd(t *testing.T) {
	if _, err := os.Stat(redis.ServerBinary); err != nil {
		t.Skipf("%s not installed", redis.ServerBinary)
	}
	cmd := newReplicaCmd()
	out, w := io.Pipe()
	cmd.SetOut(w)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"cluster", "--loopback", "--voters", "3", "--duplicates", "1", "--read", "session", "--fanout", "2", "--metrics"})
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

// builtGait is a gait built for the tests that run the gait program itself,
// once, when the first of them needs it; TestMain removes it.
var builtGait struct {
	once    sync.Once
	path    string
	err     error
	cleanup func()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtGait.cleanup != nil {
		builtGait.cleanup()
	}
	os.Exit(code)
}

func gaitProgram(t *testing.T) string {
	t.Helper()
	builtGait.once.Do(func() {
		builtGait.path, builtGait.cleanup, builtGait.err = gaitbin.Build()
	})
	if builtGait.err != nil {
		t.Fatal(builtGait.err)
	}
	return builtGait.path
}

// TestReplicaClusterTestbed runs gait replica cluster on testbed hosts as a
// user would: it writes through one agent, reads through another, sends
// SIGINT and checks that the command exits 0 and leaves no host behind.
func TestReplicaClusterTestbed(t *testing.T) {
	needRootCLI(t)
	if _, err := os.Stat(redis.ServerBinary); err != nil {
		t.Skipf("%s not installed", redis.ServerBinary)
	}
	stateDir := t.TempDir()
	cmd := exec.Command(gaitProgram(t), "replica", "cluster", "--voters", "3", "--duplicates", "1", "--state-dir", stateDir)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var waitErr error
	defer func() {
		select {
		case <-done:
		default: // a check failed: SIGINT still removes the hosts
			cmd.Process.Signal(os.Interrupt)
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
			}
		}
	}()
	lines := make(chan []string, 1)
	go func() {
		var ls []string
		sc := bufio.NewScanner(out)
		for len(ls) < 4 && sc.Scan() {
			ls = append(ls, sc.Text())
		}
		lines <- ls
		io.Copy(io.Discard, out)
		waitErr = cmd.Wait()
		close(done)
	}()
	var addrs []string
	select {
	case ls := <-lines:
		for _, l := range ls {
			addr, ok := strings.CutPrefix(l, "redis ")
			if !ok || !strings.HasPrefix(addr, "198.1") || !strings.HasSuffix(addr, ":6380") {
				t.Fatalf("line %q, want \"redis 198.18.X.Y:6380\"; stderr:\n%s", l, stderr.String())
			}
			addrs = append(addrs, addr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no agent addresses after 30s; stderr:\n%s", stderr.String())
	}
	if len(addrs) != 4 {
		t.Fatalf("%d agents printed, want 4; stderr:\n%s", len(addrs), stderr.String())
	}
	t.Logf("%v ready after %v", addrs, time.Since(t0).Round(time.Millisecond))
	m := regexp.MustCompile(`testbed run ([0-9a-f]+) `).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("stderr names no testbed run:\n%s", stderr.String())
	}
	id := m[1]
	if ns := runNamespaces(t, id); len(ns) != 4 {
		t.Errorf("namespaces of run %s: %v, want 4", id, ns)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := goredis.NewClient(&goredis.Options{Addr: addrs[0], MaxRetries: -1})
	defer w.Close()
	r := goredis.NewClient(&goredis.Options{Addr: addrs[3], MaxRetries: -1})
	defer r.Close()
	if err := w.Set(ctx, "greeting", "hello", 0).Err(); err != nil {
		t.Fatalf("SET through %s: %v", addrs[0], err)
	}
	if got, err := r.Get(ctx, "greeting").Result(); err != nil || got != "hello" {
		t.Errorf("GET through %s: %q, %v; want \"hello\"", addrs[3], got, err)
	}

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		if waitErr != nil {
			t.Errorf("gait replica cluster after SIGINT: %v; stderr:\n%s", waitErr, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30s after SIGINT; stderr:\n%s", stderr.String())
	}
	if ns := runNamespaces(t, id); len(ns) > 0 {
		t.Errorf("namespaces of run %s left after it ended: %v", id, ns)
	}
	if !strings.Contains(stderr.String(), "removed run "+id) {
		t.Errorf("no removal reported:\n%s", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(stateDir, id+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file of run %s: %v, want it removed", id, err)
	}
	if err := r.Ping(ctx).Err(); err == nil {
		t.Error("an agent still answers after the cluster stopped")
	}
}

// runNamespaces lists the network namespaces of testbed run id.
func runNamespaces(t *testing.T, id string) []string {
	t.Helper()
	b, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	var out []string
	for _, f := range strings.Fields(string(b)) {
		if strings.HasPrefix(f, "g"+id+"-") {
			out = append(out, f)
		}
	}
	return out
}

// TestReplicaClusterNeedsRoot runs gait replica cluster as an ordinary user
// (nobody), which must fail at once, saying to run as root or pass --loopback.
func TestReplicaClusterNeedsRoot(t *testing.T) {
	needRootCLI(t) // to become nobody
	bin := gaitProgram(t)
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil { // nobody runs it
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "replica", "cluster")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	b, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("as nobody: %v, want exit status 1; output:\n%s", err, b)
	}
	msg := string(b)
	if !strings.Contains(msg, "root") || !strings.Contains(msg, "--loopback") || strings.Count(msg, "\n") != 1 {
		t.Errorf("as nobody: %q, want one line saying to run as root or pass --loopback", msg)
	}
}

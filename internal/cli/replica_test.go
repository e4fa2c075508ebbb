package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/gaitbin"
	"github.com/gait-dev/gait/internal/replica"
	"github.com/gait-dev/gait/internal/systems/gaitredis"
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

// TestReplicaFlags runs gait replica cluster and agent with one bad flag
// each: every one must fail at once, before anything is created, with an
// error naming the flag, its value and what it takes.
func TestReplicaFlags(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	stateDir := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	agent := func(flags ...string) []string {
		base := map[string]string{"--id": "a", "--raft": "127.0.0.1:7000", "--redis": "127.0.0.1:6379", "--listen": "127.0.0.1:0"}
		args := []string{"agent", "--bootstrap"}
		for i := 0; i < len(flags); i += 2 {
			if _, ok := base[flags[i]]; ok {
				base[flags[i]] = flags[i+1]
				continue
			}
			if flags[i+1] == "" { // a boolean flag with its value
				args = append(args, flags[i])
				continue
			}
			args = append(args, flags[i:i+2]...)
		}
		for _, k := range []string{"--id", "--raft", "--redis", "--listen"} {
			args = append(args, k, base[k])
		}
		return args
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"cluster", "--loopback", "--duplicates", "-1"}, "--duplicates -1: want 0 to 197"},
		{[]string{"cluster", "--loopback", "--voters", "0"}, "--voters 0: want 1 to 200"},
		{[]string{"cluster", "--loopback", "--voters", "201"}, "--voters 201: want 1 to 200"},
		{[]string{"cluster", "--loopback", "--voters", "150", "--duplicates", "51"}, "--duplicates 51: want 0 to 50"},
		{[]string{"cluster", "--loopback", "--fanout", "0"}, "--fanout 0: want 1 to 3"},
		{[]string{"cluster", "--loopback", "--fanout", "-2"}, "--fanout -2: want 1 to 3"},
		{[]string{"cluster", "--loopback", "--duplicates", "2", "--fanout", "6"}, "--fanout 6: want 1 to 5"},
		{[]string{"cluster", "--loopback", "--read", "eventual"}, `--read "eventual": want linearizable, session or any`},
		{[]string{"cluster", "--loopback", "--bandwidth", "10Mbit/s"}, "--bandwidth is for testbed hosts"},
		{[]string{"cluster", "--loopback", "--state-dir", stateDir}, "--state-dir is for testbed hosts"},
		{[]string{"cluster", "--fanout", "0", "--state-dir", stateDir}, "--fanout 0: want 1 to 3"},
		{[]string{"cluster", "--duplicates", "-1", "--state-dir", stateDir}, "--duplicates -1: want 0 to 197"},
		{[]string{"cluster", "--bandwidth", "0", "--state-dir", stateDir}, `--bandwidth: "0" is not a link rate`},
		{[]string{"cluster", "--bandwidth", "1bit/s", "--state-dir", stateDir}, `--bandwidth: "1bit/s" is not a link rate between`},
		{[]string{"cluster", "--state-dir", file}, `--state-dir "` + file + `": not a directory`},
		{[]string{"cluster", "--state-dir", ""}, `--state-dir "": want a directory`},
		{agent("--read", "eventual"), `--read "eventual": want linearizable, session or any`},
		{agent("--fanout", "0"), "--fanout 0: want 1 or more"},
		{agent("--fanout", "-2"), "--fanout -2: want 1 or more"},
		{agent("--max-request", "0"), "--max-request 0: want 1024 to 1073741824 bytes"},
		{agent("--max-request", "2147483648"), "--max-request 2147483648: want 1024 to 1073741824 bytes"},
		{agent("--request-memory", "1000"), fmt.Sprintf("--request-memory 1000: want at least --max-request (%d)", replica.DefaultMaxRequest)},
		{agent("--durability", "fast"), `--durability "fast": want disk or replicated`},
		{agent("--procs", "-1"), "--procs -1: want 0 (every CPU) or more"},
		{[]string{"cluster", "--loopback", "--durability", "memory"}, `--durability "memory": want disk or replicated`},
		{agent("--request-timeout", "0s"), "--request-timeout 0s: want a positive duration"},
		{agent("--id", " "), `--id " ": want a name`},
		{agent("--raft", "127.0.0.1:0"), `--raft "127.0.0.1:0": want a port from 1 to 65535`},
		{agent("--raft", ":7000"), `--raft ":7000": want the host other agents reach this one at`},
		{agent("--raft", "0.0.0.0:7000"), `--raft "0.0.0.0:7000": want the host other agents reach this one at`},
		{agent("--redis", "localhost"), `--redis "localhost": want HOST:PORT`},
		{agent("--redis", "127.0.0.1:65536"), `--redis "127.0.0.1:65536": want a port from 1 to 65535`},
		{agent("--listen", "127.0.0.1:-1"), `--listen "127.0.0.1:-1": want a port from 0 to 65535`},
		{agent("--metrics", "9121"), `--metrics "9121": want HOST:PORT`},
		{agent("--join", "127.0.0.1:7001"), "--bootstrap and --join exclude each other"},
		{agent("--nonvoter=true", ""), "--nonvoter and --bootstrap exclude each other"},
		{agent("--data", file), `--data "` + file + `": not a directory`},
		{[]string{"agent", "--id", "a", "--raft", "127.0.0.1:7000", "--redis", "127.0.0.1:6379", "--listen", "127.0.0.1:0"},
			"want --bootstrap (start a deployment) or --join ADDR (join one)"},
	} {
		cmd := newReplicaCmd()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(c.args)
		t0 := time.Now()
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q", c.args, err, c.want)
		}
		if d := time.Since(t0); d > time.Second {
			t.Errorf("%v: failed after %v, want at once", c.args, d)
		}
	}
	if left := entries(t, tmp); len(left) != 1 { // the file
		t.Errorf("%s holds %v after bad flags, want only the test's own file", tmp, left)
	}
	if left := entries(t, stateDir); len(left) > 0 {
		t.Errorf("testbed state %s holds %v after bad flags, want nothing", stateDir, left)
	}
}

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
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

// clusterRun is a gait replica cluster started by startCluster.
type clusterRun struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	addrs  []string // the agents' addresses, as printed
	tmp    string   // its TMPDIR
	procs  []int    // its redis-servers (and on testbed hosts, its agents)
	done   chan struct{}
	err    error // from Wait, once done is closed
}

// startCluster runs the built gait replica cluster with args and a TMPDIR
// of its own, and returns once it printed n agent addresses, with the
// pids of the processes it started: from the loopback deployment's owner
// file, or from the testbed's state file in stateDir.
func startCluster(t *testing.T, n int, stateDir string, args ...string) *clusterRun {
	t.Helper()
	r, lines := launchCluster(t, args...)
	timeout := time.After(90 * time.Second) // the machine may be busy
	for len(r.addrs) < n {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("gait replica cluster %v ended: %v; stderr:\n%s", args, r.err, r.stderr)
			}
			addr, found := strings.CutPrefix(l, "redis ")
			if !found {
				t.Fatalf("line %q, want \"redis ADDRESS\"", l)
			}
			r.addrs = append(r.addrs, addr)
		case <-timeout:
			t.Fatalf("no %d agent addresses after 90s; stderr:\n%s", n, r.stderr)
		}
	}
	go func() {
		for range lines {
		}
	}()
	if m := regexp.MustCompile(`files in (\S+)`).FindStringSubmatch(r.stderr.String()); m != nil {
		r.procs = ownerPids(t, m[1])
	} else if id := runID(t, r.stderr.String()); id != "" {
		r.procs = statePids(t, filepath.Join(stateDir, id+".json"))
	}
	if len(r.procs) < n {
		t.Fatalf("%d processes recorded, want at least %d; stderr:\n%s", len(r.procs), n, r.stderr)
	}
	return r
}

// launchCluster starts the built gait replica cluster with args and a
// TMPDIR of its own, and returns at once with its standard output's lines.
func launchCluster(t *testing.T, args ...string) (*clusterRun, <-chan string) {
	t.Helper()
	if _, err := os.Stat(redis.ServerBinary); err != nil {
		t.Skipf("%s not installed", redis.ServerBinary)
	}
	r := &clusterRun{tmp: t.TempDir(), stderr: &lockedBuffer{}, done: make(chan struct{})}
	r.cmd = exec.Command(gaitProgram(t), append([]string{"replica", "cluster"}, args...)...)
	r.cmd.Env = append(os.Environ(), "TMPDIR="+r.tmp)
	r.cmd.Stderr = r.stderr
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-r.done:
		default: // a check failed: SIGINT still removes everything
			r.cmd.Process.Signal(os.Interrupt)
			select {
			case <-r.done:
			case <-time.After(30 * time.Second):
				r.cmd.Process.Kill()
				<-r.done
			}
		}
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, out)
		r.err = r.cmd.Wait()
		close(r.done)
	}()
	return r, lines
}

// ownerPids reads the redis-servers' pids from a loopback deployment's
// owner file (its first line is gait itself).
func ownerPids(t *testing.T, dir string) []int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "owner"))
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for i, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		pid, _, _ := strings.Cut(l, " ")
		if n, err := strconv.Atoi(pid); err == nil && i > 0 {
			pids = append(pids, n)
		}
	}
	return pids
}

// statePids reads the pids of a testbed run's processes from its state file.
func statePids(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Procs []struct{ Pid int } `json:"procs"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, p := range st.Procs {
		pids = append(pids, p.Pid)
	}
	return pids
}

// runID is the testbed run named on gait replica cluster's standard error.
func runID(t *testing.T, stderr string) string {
	t.Helper()
	if m := regexp.MustCompile(`testbed run ([0-9a-f]+) `).FindStringSubmatch(stderr); m != nil {
		return m[1]
	}
	return ""
}

// wait waits for the run to end and returns its exit status.
func (r *clusterRun) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(limit):
		t.Fatalf("still running after %v; stderr:\n%s", limit, r.stderr)
	}
	var exit *exec.ExitError
	if errors.As(r.err, &exit) {
		return exit.ExitCode()
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	return 0
}

// leftovers lists what the run left: entries of its TMPDIR, processes it
// started that still run (a zombie no longer holds anything), and on
// testbed hosts the run's namespaces and state file.
func (r *clusterRun) leftovers(t *testing.T, stateDir string) []string {
	t.Helper()
	var left []string
	for _, e := range entries(t, r.tmp) {
		left = append(left, filepath.Join(r.tmp, e))
	}
	pids := slices.Clone(r.procs)
	// Also any process whose command line names the run's TMPDIR (its
	// redis-servers' and agents' directories are there), recorded or not.
	ds, _ := os.ReadDir("/proc")
	for _, d := range ds {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || slices.Contains(pids, pid) {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline")); err == nil && bytes.Contains(b, []byte(r.tmp)) {
			pids = append(pids, pid)
		}
	}
	for _, pid := range pids {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if s := string(b); !strings.HasPrefix(strings.TrimSpace(s[strings.LastIndexByte(s, ')')+1:]), "Z") {
				left = append(left, fmt.Sprintf("pid %d (%s)", pid, s[:strings.LastIndexByte(s, ')')+1]))
			}
		}
	}
	if id := runID(t, r.stderr.String()); id != "" {
		for _, ns := range runNamespaces(t, id) {
			left = append(left, "namespace "+ns)
		}
		if _, err := os.Stat(filepath.Join(stateDir, id+".json")); err == nil {
			left = append(left, "state file of run "+id)
		}
	}
	return left
}

// TestReplicaClusterInterruptedTwice interrupts the built gait replica
// cluster twice, on loopback and (as root) on testbed hosts: two SIGINTs
// at once, as GNU timeout sends them, and a second SIGINT while the first
// one's clean stop waits for a redis-server that does not answer (stopped
// with SIGSTOP). Either way nothing may be left behind; the second signal
// must kill at once and end with status 130.
func TestReplicaClusterInterruptedTwice(t *testing.T) {
	for _, where := range []string{"loopback", "testbed"} {
		for _, when := range []string{"at once", "while stopping"} {
			t.Run(where+"/"+when, func(t *testing.T) {
				stateDir := t.TempDir()
				args := []string{"--loopback", "--voters", "3", "--duplicates", "1"}
				if where == "testbed" {
					needRootCLI(t)
					args = []string{"--voters", "3", "--duplicates", "1", "--state-dir", stateDir}
				}
				r := startCluster(t, 4, stateDir, args...)
				var t0 time.Time
				if when == "at once" {
					r.cmd.Process.Signal(os.Interrupt)
					r.cmd.Process.Signal(os.Interrupt)
				} else {
					if err := syscall.Kill(r.procs[0], syscall.SIGSTOP); err != nil {
						t.Fatal(err)
					}
					r.cmd.Process.Signal(os.Interrupt)
					deadline := time.Now().Add(10 * time.Second)
					for !strings.Contains(r.stderr.String(), "interrupt: stopping") && time.Now().Before(deadline) {
						time.Sleep(10 * time.Millisecond)
					}
					t0 = time.Now()
					r.cmd.Process.Signal(os.Interrupt)
				}
				code := r.wait(t, 60*time.Second)
				stderr := r.stderr.String()
				switch {
				case when == "while stopping" && code != 130:
					t.Errorf("exit status %d, want 130; stderr:\n%s", code, stderr)
				case when == "while stopping" && time.Since(t0) > 4*time.Second:
					// The clean stop waits 5s for the stopped redis-server.
					t.Errorf("ended %v after the second signal, want at once", time.Since(t0))
				case code != 0 && code != 130: // at once, the two signals may arrive as one
					t.Errorf("exit status %d, want 0 or 130; stderr:\n%s", code, stderr)
				}
				if !regexp.MustCompile(`(?m)^(stopped|killed); removed `).MatchString(stderr) {
					t.Errorf("no removal reported; stderr:\n%s", stderr)
				}
				if strings.Contains(stderr, "testbed") != (where == "testbed") {
					t.Errorf("stderr speaks of a testbed on %s:\n%s", where, stderr)
				}
				if left := r.leftovers(t, stateDir); len(left) > 0 {
					t.Errorf("left behind: %v; stderr:\n%s", left, stderr)
				}
			})
		}
	}
}

// TestReplicaClusterInterruptedStarting interrupts the built gait replica
// cluster twice while it starts, on loopback and (as root) on testbed
// hosts: whatever it had started, nothing may be left behind.
func TestReplicaClusterInterruptedStarting(t *testing.T) {
	for _, where := range []string{"loopback", "testbed"} {
		t.Run(where, func(t *testing.T) {
			stateDir := t.TempDir()
			args := []string{"--loopback", "--voters", "3", "--duplicates", "2"}
			if where == "testbed" {
				needRootCLI(t)
				args = []string{"--voters", "3", "--duplicates", "2", "--state-dir", stateDir}
			}
			r, lines := launchCluster(t, args...)
			go func() {
				for range lines {
				}
			}()
			deadline := time.Now().Add(30 * time.Second)
			for !strings.Contains(r.stderr.String(), "starting ") && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond) // into the start: some servers run
			r.cmd.Process.Signal(os.Interrupt)
			time.Sleep(50 * time.Millisecond)
			r.cmd.Process.Signal(os.Interrupt)
			code := r.wait(t, 60*time.Second)
			stderr := r.stderr.String()
			if code != 0 && code != 1 && code != 130 {
				t.Errorf("exit status %d, want 1 or 130 (0 if it was ready first); stderr:\n%s", code, stderr)
			}
			if code != 0 && !strings.Contains(stderr, "interrupted while starting; removed ") {
				t.Errorf("no removal reported; stderr:\n%s", stderr)
			}
			if left := r.leftovers(t, stateDir); len(left) > 0 {
				t.Errorf("left behind: %v; stderr:\n%s", left, stderr)
			}
			if left := slices.DeleteFunc(entries(t, stateDir), func(e string) bool { return e == "lock" }); len(left) > 0 {
				t.Errorf("state directory holds %v", left)
			}
			t.Logf("exit status %d; stderr ends %q", code, stderr[max(0, len(stderr)-160):])
		})
	}
}

// TestReplicaClusterKilled kills the built gait replica cluster with
// SIGKILL, on loopback and (as root) on testbed hosts, and checks that
// its processes die with it and the cleanup removes the rest: gait clean
// for a testbed and for loopback alike.
func TestReplicaClusterKilled(t *testing.T) {
	for _, where := range []string{"loopback", "testbed"} {
		t.Run(where, func(t *testing.T) {
			stateDir := t.TempDir()
			args := []string{"--loopback", "--voters", "3"}
			if where == "testbed" {
				needRootCLI(t)
				args = []string{"--voters", "3", "--state-dir", stateDir}
			}
			r := startCluster(t, 3, stateDir, args...)
			r.cmd.Process.Kill()
			if code := r.wait(t, 10*time.Second); code != -1 {
				t.Fatalf("exit status %d, want killed", code)
			}
			if len(r.leftovers(t, stateDir)) == 0 {
				t.Fatal("nothing left after SIGKILL: the test shows nothing")
			}
			want := "removed run" // the testbed's run
			if where != "testbed" {
				want = "removed " + filepath.Join(r.tmp, "gait-replica-cluster-")
			}
			clean := exec.Command(gaitProgram(t), "clean", "--state-dir", stateDir)
			clean.Env = r.cmd.Env // TMPDIR, where a loopback deployment lives
			if b, err := clean.CombinedOutput(); err != nil || !strings.Contains(string(b), want) {
				t.Errorf("gait clean: %v\n%s\nwant %q", err, b, want)
			}
			deadline := time.Now().Add(5 * time.Second) // Pdeathsig takes a moment
			left := r.leftovers(t, stateDir)
			for len(left) > 0 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				left = r.leftovers(t, stateDir)
			}
			if len(left) > 0 {
				t.Errorf("left behind after the cleanup: %v", left)
			}
		})
	}
}

// TestCleanLocalSparesLiveRuns runs a loopback deployment and checks that
// gaitredis.CleanLocal leaves it alone while its gait runs, unless all.
func TestCleanLocalSparesLiveRuns(t *testing.T) {
	r := startCluster(t, 1, "", "--loopback", "--voters", "1")
	if removed, err := gaitredis.CleanLocal(r.tmp, false); err != nil || len(removed) > 0 {
		t.Errorf("CleanLocal of a live run: removed %v, %v; want nothing", removed, err)
	}
	if len(entries(t, r.tmp)) != 1 {
		t.Errorf("%s holds %v, want the live deployment's directory", r.tmp, entries(t, r.tmp))
	}
	r.cmd.Process.Signal(os.Interrupt)
	if code := r.wait(t, 30*time.Second); code != 0 {
		t.Errorf("exit status %d after one SIGINT, want 0", code)
	}
	if left := r.leftovers(t, ""); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

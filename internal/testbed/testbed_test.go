package testbed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/cgroupcpu"
	"github.com/gait-dev/gait/internal/gaitbin"
	"github.com/gait-dev/gait/internal/leftover"
	"github.com/gait-dev/gait/internal/procstat"
)

// When the test binary runs with GAIT_TESTBED_HELPER=up it plays a gait
// that builds a testbed, says so, and waits to be killed.
func TestMain(m *testing.M) {
	switch os.Getenv("GAIT_TESTBED_HELPER") {
	case "graceful", "stuck":
		signalHelper(os.Getenv("GAIT_TESTBED_HELPER") == "graceful")
	}
	if os.Getenv("GAIT_TESTBED_HELPER") == "up" {
		tb, err := Up(Options{Hosts: 2, Disk: true, StateDir: os.Getenv("GAIT_STATE_DIR")})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		if _, err := tb.Hosts[0].Start(ProcSpec{Name: "sleeper", Path: "sleep", Args: []string{"300"}}); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("up", tb.ID)
		select {}
	}
	os.Exit(m.Run())
}

// signalHelper builds a testbed under SignalContext and either closes
// it when the context ends (graceful) or ignores the context (stuck), so
// that only a second signal removes it.
func signalHelper(graceful bool) {
	ctx, stop := SignalContext(context.Background())
	defer stop()
	tb, err := Up(Options{Hosts: 1, Disk: true, StateDir: os.Getenv("GAIT_STATE_DIR")})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	// A process too: its cgroup can only go once it is gone.
	if _, err := tb.Hosts[0].Start(ProcSpec{Name: "sleeper", Path: "sleep", Args: []string{"300"}}); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("up", tb.ID)
	<-ctx.Done()
	if !graceful {
		// Say the first signal was taken, so the test's second one is a
		// second and not one the kernel merges with a first still pending.
		os.WriteFile(filepath.Join(os.Getenv("GAIT_STATE_DIR"), "interrupted"), nil, 0o644)
		select {}
	}
	if err := tb.Close(); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// startHelper runs the test binary as a helper and returns it with the
// run id it printed.
func startHelper(t *testing.T, mode, stateDir string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GAIT_TESTBED_HELPER="+mode, "GAIT_STATE_DIR="+stateDir)
	id, err := gaitbin.StartReady(cmd, "up ")
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	return cmd, id
}

func TestSignals(t *testing.T) {
	needRoot(t)
	for _, c := range []struct {
		mode    string
		signals []syscall.Signal
		code    int
	}{
		{"graceful", []syscall.Signal{syscall.SIGTERM}, 0},
		{"stuck", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, 130},
	} {
		stateDir := t.TempDir()
		cmd, id := startHelper(t, c.mode, stateDir)
		for i, sig := range c.signals {
			marker := filepath.Join(stateDir, "interrupted")
			if i > 0 && !eventually(func() bool { _, err := os.Stat(marker); return err == nil }) {
				t.Errorf("%s: the helper did not take the first signal", c.mode)
			}
			os.Remove(marker) // the test's, not the testbed's: not a leftover
			cmd.Process.Signal(sig)
		}
		exited := make(chan struct{})
		timer := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill(); close(exited) })
		err := cmd.Wait()
		if !timer.Stop() {
			<-exited
			t.Errorf("%s: still running 30 s after its signals; killed", c.mode)
		}
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		}
		if code != c.code {
			t.Errorf("%s: exit %v, want status %d", c.mode, err, c.code)
		}
		if left := leftover.Run(id, stateDir); len(left) > 0 {
			t.Errorf("%s: left %v", c.mode, left)
			Clean(stateDir, true)
		}
	}
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root for network namespaces, tc and FUSE")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("skipped: /dev/fuse is missing")
	}
}

func up(t *testing.T, opts Options) *Testbed {
	t.Helper()
	needRoot(t)
	if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	tb, err := Up(opts)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	t.Cleanup(func() { tb.Close() })
	return tb
}

func TestUpClose(t *testing.T) {
	stateDir := t.TempDir()
	tb := up(t, Options{Hosts: 3, StateDir: stateDir, Disk: true})
	if !testbedRange.Contains(tb.Subnet.Addr()) || tb.Subnet.Bits() != 24 {
		t.Errorf("subnet %s is not a /24 of %s", tb.Subnet, testbedRange)
	}
	for i, h := range tb.Hosts {
		if len(h.Link) > 15 || len(h.Namespace) > 15 {
			t.Errorf("names %q, %q longer than IFNAMSIZ", h.Link, h.Namespace)
		}
		if !tb.Subnet.Contains(h.Addr) {
			t.Errorf("%s address %s outside %s", h.Name, h.Addr, tb.Subnet)
		}
		if h.Bandwidth() != DefaultBandwidth {
			t.Errorf("%s shaped to %d, want %d", h.Name, h.Bandwidth(), DefaultBandwidth)
		}
		if _, err := os.Stat("/run/netns/" + h.Namespace); err != nil {
			t.Errorf("host %d namespace: %v", i, err)
		}
		if h.Disk() == nil {
			t.Errorf("%s has no disk", h.Name)
		}
	}
	s, err := loadState(statePath(stateDir, tb.ID))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Namespaces) != 3 || len(s.Links) != 3 || len(s.Mounts) != 3 || s.Bridge == "" {
		t.Errorf("state records %d namespaces, %d links, %d mounts, bridge %q", len(s.Namespaces), len(s.Links), len(s.Mounts), s.Bridge)
	}
	// Loopback inside a host works, and so does a connection from one
	// host to another and from this machine to a host.
	connect(t, tb.Hosts[0], tb.Hosts[0], "127.0.0.1")
	connect(t, tb.Hosts[0], tb.Hosts[1], tb.Hosts[1].Addr.String())
	connect(t, nil, tb.Hosts[2], tb.Hosts[2].Addr.String())
	if err := tb.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if left := leftover.Run(tb.ID, stateDir); len(left) > 0 {
		t.Errorf("after Close: %v", left)
	}
	if _, err := os.Stat(tb.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary run directory %s still there", tb.Dir)
	}
}

// connect listens on to at addr and dials it from from (nil: this
// machine's namespace), and checks a line goes across.
func connect(t *testing.T, from, to *Host, addr string) {
	t.Helper()
	var ln net.Listener
	if err := to.Do(func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(addr, "0"))
		return err
	}); err != nil {
		t.Fatalf("listen on %s: %v", to.Name, err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			io.Copy(c, c)
			c.Close()
		}
	}()
	var c net.Conn
	dial := func() (err error) {
		c, err = net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		return err
	}
	var err error
	if from == nil {
		err = dial()
	} else {
		err = from.Do(dial)
	}
	if err != nil {
		t.Fatalf("dial %s: %v", ln.Addr(), err)
	}
	defer c.Close()
	fmt.Fprintln(c, "hello")
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "hello\n" {
		t.Errorf("echo via %s: %q, %v", ln.Addr(), line, err)
	}
}

func TestHostsAreIsolated(t *testing.T) {
	tb := up(t, Options{Hosts: 1})
	h := tb.Hosts[0]
	err := h.Do(func() error {
		// 192.0.2.1 (TEST-NET-1) is never contacted: with no route the
		// kernel refuses before a packet leaves.
		c, err := net.DialTimeout("udp", "192.0.2.1:9", time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	if err == nil || !errors.Is(err, syscall.ENETUNREACH) {
		t.Errorf("a host reached beyond its subnet: %v", err)
	}
}

func TestTwoRunsCoexist(t *testing.T) {
	stateDir := t.TempDir()
	a := up(t, Options{Hosts: 1, StateDir: stateDir})
	b := up(t, Options{Hosts: 1, StateDir: stateDir})
	if a.ID == b.ID || a.Subnet == b.Subnet {
		t.Fatalf("runs share id or subnet: %s %s, %s %s", a.ID, a.Subnet, b.ID, b.Subnet)
	}
	connect(t, nil, a.Hosts[0], a.Hosts[0].Addr.String())
	connect(t, nil, b.Hosts[0], b.Hosts[0].Addr.String())
}

func TestProcess(t *testing.T) {
	// On limpfs, to check a process can start with its working
	// directory on the file system gait itself serves.
	tb := up(t, Options{Hosts: 1, Dir: t.TempDir(), Disk: true})
	h := tb.Hosts[0]
	logs := t.TempDir()
	p, err := h.Start(ProcSpec{Name: "where", Path: "sh", Args: []string{"-c", "cat /proc/self/net/dev; pwd; echo oops >&2"}, LogDir: logs})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("process did not exit")
	}
	out, _ := os.ReadFile(filepath.Join(logs, "where.stdout"))
	errOut, _ := os.ReadFile(filepath.Join(logs, "where.stderr"))
	// Inside the host the process sees the host's eth0 and no other
	// interface of this machine, and starts in the data directory.
	if !strings.Contains(string(out), hostIfName+":") || strings.Contains(string(out), "g"+tb.ID+"-br") {
		t.Errorf("process is not in the host's namespace:\n%s", out)
	}
	if !strings.Contains(string(out), h.DataDir) {
		t.Errorf("process did not start in %s:\n%s", h.DataDir, out)
	}
	if string(errOut) != "oops\n" {
		t.Errorf("stderr = %q", errOut)
	}
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if p.Starts() != 2 {
		t.Errorf("starts = %d after a restart", p.Starts())
	}
	if errOut, _ := os.ReadFile(filepath.Join(logs, "where.stderr")); string(errOut) != "oops\noops\n" {
		t.Errorf("restart did not append to the log: %q", errOut)
	}
	if _, err := h.Start(ProcSpec{Name: "x", Path: "no-such-program-gait"}); err == nil {
		t.Error("starting a missing program succeeded")
	}
}

func TestKillAllKillsChildren(t *testing.T) {
	tb := up(t, Options{Hosts: 1})
	h := tb.Hosts[0]
	p, err := h.Start(ProcSpec{Name: "tree", Path: "sh", Args: []string{"-c", "sleep 300 & sleep 300 & wait"}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := h.KillAll(); err != nil {
		t.Fatal(err)
	}
	if p.Running() {
		t.Error("process survived KillAll")
	}
	time.Sleep(100 * time.Millisecond)
	for _, pid := range cgroupPids(h.cgroup) {
		t.Errorf("pid %d left in the host's cgroup", pid)
	}
	// The children, orphaned, may take a moment to be reaped by init.
	out, _ := exec.Command("pgrep", "-g", fmt.Sprint(p.Pid())).Output()
	for _, f := range strings.Fields(string(out)) {
		var pid int
		fmt.Sscan(f, &pid)
		if !eventually(func() bool { return !procstat.Running(pid) }) {
			t.Errorf("child %d survived", pid)
		}
	}
}

// A crashed gait leaves its hosts; Clean finds them by the state file
// and removes them all, processes included.
func TestCleanAfterCrash(t *testing.T) {
	needRoot(t)
	stateDir := t.TempDir()
	cmd, id := startHelper(t, "up", stateDir)
	s, err := loadState(statePath(stateDir, id))
	if err != nil {
		t.Fatal(err)
	}
	if cleaned, err := Clean(stateDir, false); err != nil || len(cleaned) != 0 {
		t.Fatalf("Clean removed a live run: %v %v", cleaned, err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if len(leftover.Run(id, stateDir)) == 0 {
		t.Fatal("a killed run left nothing to clean; the test proves nothing")
	}
	cleaned, err := Clean(stateDir, false)
	if err != nil {
		t.Fatalf("clean: %v", err)
	}
	if len(cleaned) != 1 || cleaned[0] != id {
		t.Errorf("cleaned %v, want [%s]", cleaned, id)
	}
	if left := leftover.Run(id, stateDir); len(left) > 0 {
		t.Errorf("after Clean: %v", left)
	}
	for _, p := range s.Procs {
		if !eventually(func() bool { return !p.alive() }) {
			t.Errorf("process %d survived", p.Pid)
		}
	}
	for _, d := range s.Dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("directory %s survived", d)
		}
	}
}

// A run that keeps its state elsewhere (as tests do, in temporary
// directories) and is killed is still found by a plain `gait clean`,
// through the reference the machine's state directory keeps to it.
func TestCleanFindsRunsElsewhere(t *testing.T) {
	needRoot(t)
	stateDir := t.TempDir()
	cmd, id := startHelper(t, "up", stateDir)
	if _, err := os.Stat(refPath(id)); err != nil {
		t.Fatalf("no reference to the run in %s: %v", DefaultStateDir, err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	cleaned, err := Clean(DefaultStateDir, false)
	if err != nil {
		t.Fatalf("clean: %v", err)
	}
	if !slices.Contains(cleaned, id) {
		t.Errorf("cleaned %v, not the killed run %s", cleaned, id)
	}
	if left := leftover.Run(id, stateDir); len(left) > 0 {
		t.Errorf("after Clean: %v", left)
	}
	if _, err := os.Stat(refPath(id)); err == nil {
		t.Error("the reference outlived its run")
	}
}

// Runs with different state directories still take different subnets
// and ids: they share the machine.
func TestRegisterAcrossStateDirs(t *testing.T) {
	needRoot(t)
	var tbs []*Testbed
	for range 2 {
		tb, err := register(Options{Hosts: 1, StateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		tbs = append(tbs, tb)
		t.Cleanup(func() { untrack(tb); teardown(tb.st) })
	}
	if tbs[0].Subnet == tbs[1].Subnet || tbs[0].ID == tbs[1].ID {
		t.Errorf("two runs share subnet or id: %s %s, %s %s", tbs[0].ID, tbs[0].Subnet, tbs[1].ID, tbs[1].Subnet)
	}
}

// Dropping a testbed without Close (as a panic would) and cleaning all
// runs of the state directory removes it too.
func TestCleanDropped(t *testing.T) {
	needRoot(t)
	stateDir := t.TempDir()
	tb, err := Up(Options{Hosts: 2, StateDir: stateDir, Disk: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Hosts[1].Start(ProcSpec{Name: "sleeper", Path: "sleep", Args: []string{"300"}}); err != nil {
		t.Fatal(err)
	}
	id := tb.ID
	untrack(tb)
	tb = nil
	cleaned, err := Clean(stateDir, true)
	if err != nil || len(cleaned) != 1 {
		t.Fatalf("clean: %v %v", cleaned, err)
	}
	if left := leftover.Run(id, stateDir); len(left) > 0 {
		t.Errorf("after Clean: %v", left)
	}
}

// eventually polls cond for up to 5 s.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func TestBadOptions(t *testing.T) {
	needRoot(t)
	for _, o := range []Options{{Hosts: 0}, {Hosts: MaxHosts + 1}, {Hosts: 1, Bandwidth: 10}, {Hosts: 1, Cgroup: "../x"}, {Hosts: 1, Cgroup: "/x"}} {
		o.StateDir = t.TempDir()
		if tb, err := Up(o); err == nil {
			tb.Close()
			t.Errorf("Up(%+v) succeeded", o)
		}
	}
}

func TestQuotaFor(t *testing.T) {
	for _, c := range []struct {
		cpus          float64
		period, quota time.Duration
	}{
		{1, 100 * time.Millisecond, 100 * time.Millisecond},
		{0.1, 100 * time.Millisecond, 10 * time.Millisecond},
		{0.01, 100 * time.Millisecond, time.Millisecond},
		{0.001, time.Second, time.Millisecond},
		{0.0001, time.Second, time.Millisecond},
	} {
		p, q := quotaFor(c.cpus)
		if p != c.period || q != c.quota {
			t.Errorf("quotaFor(%g) = %s, %s; want %s, %s", c.cpus, p, q, c.period, c.quota)
		}
	}
}

func TestParseBandwidth(t *testing.T) {
	for in, want := range map[string]uint64{"100mbit": 100e6, "1.5Mbit": 1.5e6, "100kbit": 1e5, "1gbit": 1e9, "64000": 64000, " 10mbit ": 10e6,
		"100Mbit/s": 100e6, "1Gbit/s": 1e9, "500kbit/s": 5e5, "8000bit/s": 8000, "2.5 Mbit/s": 2.5e6} {
		if got, err := ParseBandwidth(in); err != nil || got != want {
			t.Errorf("ParseBandwidth(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "fast", "-1mbit", "0", "1bit", "1tbit", "NaNmbit", "infmbit", "100Mbit/h", "/s", "Mbit/s"} {
		if _, err := ParseBandwidth(in); err == nil {
			t.Errorf("ParseBandwidth(%q) succeeded", in)
		}
	}
	for bps, want := range map[uint64]string{100e6: "100Mbit/s", 1.5e6: "1500kbit/s", 1e9: "1Gbit/s", 64001: "64001bit/s"} {
		got := FormatBandwidth(bps)
		back, err := ParseBandwidth(got)
		if got != want || err != nil || back != bps {
			t.Errorf("FormatBandwidth(%d) = %q, read back as %d, %v; want %q", bps, got, back, err, want)
		}
	}
}

func TestStop(t *testing.T) {
	tb := up(t, Options{Hosts: 1})
	h := tb.Hosts[0]
	polite, err := h.Start(ProcSpec{Name: "polite", Path: "sleep", Args: []string{"300"}})
	if err != nil {
		t.Fatal(err)
	}
	// A shell that ignores SIGTERM (its sleep child does not).
	stubborn, err := h.Start(ProcSpec{Name: "stubborn", Path: "sh", Args: []string{"-c", `trap "" TERM; while :; do sleep 1; done`}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := polite.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if !errors.As(polite.Err(), &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("polite ended with %v, want SIGTERM", polite.Err())
	}
	start := time.Now()
	if err := stubborn.Stop(300 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if !errors.As(stubborn.Err(), &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("stubborn ended with %v, want SIGKILL", stubborn.Err())
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("SIGKILL came after %s, before the 300ms grace", d)
	}
}

// TestCPUThrottled: a process spinning in a host's cgroup is never held
// back without a quota, however busy the machine, and is at a tenth of a
// CPU (cpu.stat's throttled time rises); its /proc/PID/cgroup names that
// cgroup, which is how a replica agent finds its own.
func TestCPUThrottled(t *testing.T) {
	tb := up(t, Options{Hosts: 1, Dir: t.TempDir()})
	h := tb.Hosts[0]
	ctl := cgroupcpu.Find()
	if !h.HasCPUCgroup() || ctl == nil {
		t.Skip("no cpu cgroup on this machine")
	}
	p, err := h.Start(ProcSpec{Name: "spin", Path: "sh", Args: []string{"-c", "while :; do :; done"}, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.KillAll() })
	// The process joins the cgroup as its first step (startScript).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		dir, err := ctl.DirOf(strconv.Itoa(p.Pid()))
		if err == nil && dir == h.cgroup {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cgroup of the spinning process: %q, %v; want %q", dir, err, h.cgroup)
		}
	}
	time.Sleep(300 * time.Millisecond) // a few quota periods' worth, had there been a quota
	if d, err := ctl.Throttled(h.cgroup); err != nil || d != 0 {
		t.Errorf("throttled %v, %v without a quota; want 0", d, err)
	}
	if err := h.LimitCPU(0.1); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		d, err := ctl.Throttled(h.cgroup)
		if err != nil {
			t.Fatal(err)
		}
		if d > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a process spinning at a tenth of a CPU was never throttled")
		}
	}
}

// TestCgroupParent: Options.Cgroup puts the hosts' CPU cgroups below a
// cgroup of the caller's choosing (a machine's gait_cgroup), whose quota
// then bounds them too; Close leaves the parent, which runs share.
func TestCgroupParent(t *testing.T) {
	ctl := cgroupcpu.Find()
	if ctl == nil {
		t.Skip("no cpu cgroup on this machine")
	}
	parent := fmt.Sprintf("gait-test-%d/hosts", os.Getpid())
	t.Cleanup(func() {
		syscall.Rmdir(filepath.Join(ctl.Root, parent))
		syscall.Rmdir(filepath.Join(ctl.Root, filepath.Dir(parent)))
	})
	tb := up(t, Options{Hosts: 1, Dir: t.TempDir(), Cgroup: parent})
	h := tb.Hosts[0]
	if want := filepath.Join(ctl.Root, parent, h.Namespace); h.cgroup != want {
		t.Errorf("host's cgroup %s, want %s", h.cgroup, want)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(h.cgroup); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Close, the host's cgroup: %v", err)
	}
}

// A process a user starts in a host with `ip netns exec` (as
// docs/testbed.md shows) gets a mount namespace of its own holding a copy
// of the host's limpfs mount, and so does any process that made one
// elsewhere (unshare -m): neither may hold Close up. Close kills what runs
// in the host and ends the FUSE connection the other copy keeps alive.
func TestCloseWithProcessesStartedByHand(t *testing.T) {
	stateDir := t.TempDir()
	tb := up(t, Options{Hosts: 1, StateDir: stateDir, Disk: true})
	inHost := exec.Command("ip", "netns", "exec", tb.Hosts[0].Namespace, "sleep", "300")
	elsewhere := exec.Command("unshare", "-m", "--propagation", "private", "sleep", "300")
	for _, c := range []*exec.Cmd{inHost, elsewhere} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer c.Process.Kill()
		go c.Wait()
	}
	if !eventually(func() bool {
		out, _ := exec.Command("ip", "netns", "pids", tb.Hosts[0].Namespace).Output()
		return len(out) > 0
	}) {
		t.Fatal("the process started with ip netns exec is not in the host")
	}
	closed := make(chan error, 1)
	go func() { closed <- tb.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("close: %v", err)
		}
	case <-time.After(15 * time.Second):
		inHost.Process.Kill()
		elsewhere.Process.Kill()
		t.Fatalf("Close still waits 15 s on, held by the processes started by hand; killed them")
	}
	if procstat.Running(inHost.Process.Pid) {
		t.Error("the process started in the host with ip netns exec survived Close")
	}
	if left := leftover.Run(tb.ID, stateDir); len(left) > 0 {
		t.Errorf("after Close: %v", left)
	}
}

// A step of Close that takes over a second says what it waits for.
func TestCloseSaysWhatItWaitsFor(t *testing.T) {
	var log strings.Builder
	tb := &Testbed{ID: "0732b", log: &log}
	tb.waiting(func() string { return "the processes of h1: etcd (pid 48113)" }, func() error {
		time.Sleep(1500 * time.Millisecond)
		return nil
	})
	if want := "removing run 0732b: waiting 1s for the processes of h1: etcd (pid 48113)\n"; log.String() != want {
		t.Errorf("said %q, want %q", log.String(), want)
	}
}

func TestSubnetsGrowWithHosts(t *testing.T) {
	for hosts, want := range map[int]int{1: 24, 200: 24, 253: 24, 254: 23, 509: 23, 510: 22, MaxHosts: 22} {
		if got := subnetBits(hosts); got != want {
			t.Errorf("subnetBits(%d) = /%d, want /%d", hosts, got, want)
		}
	}
	// 198.18.0.0/24 and 198.18.2.0/23 taken, 198.18.5.0/24 reserved: a
	// /24 fits in the gap at .1, a /23 only at .6, a /22 only at .8.
	used := map[netip.Prefix]bool{}
	for _, p := range []string{"198.18.0.0/24", "198.18.2.0/23", "198.18.5.7/24"} {
		markSubnets(used, netip.MustParsePrefix(p))
	}
	for bits, want := range map[int]string{24: "198.18.1.0/24", 23: "198.18.6.0/23", 22: "198.18.8.0/22"} {
		got, err := pickSubnet(used, bits)
		if err != nil || got.String() != want {
			t.Errorf("pickSubnet(/%d) = %v, %v; want %s", bits, got, err, want)
		}
	}
	// A /22 marks its four /24s, up to the end of 198.18.0.0/16.
	used = map[netip.Prefix]bool{}
	markSubnets(used, netip.MustParsePrefix("198.18.252.0/22"))
	if len(used) != 4 || !used[netip.MustParsePrefix("198.18.255.0/24")] {
		t.Errorf("markSubnets(198.18.252.0/22) = %v", used)
	}
}

package remote

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/agent"
	"github.com/gait-dev/gait/internal/cgroupcpu"
	"github.com/gait-dev/gait/internal/gaitbin"
	"github.com/gait-dev/gait/internal/inventory"
	"github.com/gait-dev/gait/internal/limp"
	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/suite"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/hdfs"
	"github.com/gait-dev/gait/internal/testbed"
	"github.com/vishvananda/netns"
)

// The end-to-end test's three "machines" are hosts of a local testbed:
// each a network namespace running Debian's sshd, with a gait_root of its
// own. The control node is this process (or, to be killed, a helper
// process: the test binary with GAIT_E2E_CONTROL set).

const sshd = "/usr/sbin/sshd"

// The test's users, named per test process so that two runs at once
// (two worktrees) do not remove each other's: one with passwordless sudo,
// one that sudo asks for a password.
var (
	e2eUser   = fmt.Sprintf("gait-e2e-%d", os.Getpid())
	e2eUserPw = fmt.Sprintf("gait-e2e-pw-%d", os.Getpid())
)

// fleet is the three machines and what reaches them.
type fleet struct {
	dir      string
	tb       *testbed.Testbed
	machines []inventory.Machine
	sshd     []*testbed.Proc // each machine's
	opts     Options
	otherKey string // a key no machine accepts
}

func TestMain(m *testing.M) {
	if spec := os.Getenv("GAIT_E2E_CONTROL"); spec != "" {
		os.Exit(control(spec))
	}
	os.Exit(m.Run())
}

// control is the helper control node: it connects to every machine of the
// fleet, makes a testbed with a process on each, says "ready" with the
// run ids, and waits to be killed; SIGINT makes it close its machines, as
// gait's commands do, and exit.
func control(spec string) int {
	var f struct {
		Machines []inventory.Machine
		Opts     Options
	}
	if err := json.Unmarshal([]byte(spec), &f); err != nil {
		fmt.Println("bad spec:", err)
		return 2
	}
	var ids []string
	var conns []*Machine
	for _, m := range f.Machines {
		c, err := Connect(context.Background(), m, f.Opts)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		conns = append(conns, c)
		tb, err := c.Up(context.Background(), agent.UpArgs{Hosts: 1})
		if err != nil {
			fmt.Println(err)
			return 1
		}
		if _, err := tb.Hosts[0].Start(agent.StartArgs{Name: "sleeper", Path: "sleep", Args: []string{"600"}}); err != nil {
			fmt.Println(err)
			return 1
		}
		ids = append(ids, tb.ID)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT)
	defer stop()
	fmt.Println("ready", strings.Join(ids, " "))
	<-ctx.Done()
	for _, c := range conns {
		c.Close()
	}
	return 0
}

func needTools(t *testing.T) {
	t.Helper()
	if err := testbed.NeedRoot(); err != nil {
		t.Skip(err)
	}
	for _, p := range []string{sshd, "/usr/bin/sudo", "/usr/bin/ssh-keygen", "/usr/sbin/useradd"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s is missing (scripts/install-deps.sh installs openssh-server and sudo)", p)
		}
	}
}

// upFleet starts three sshd "machines" and the users, keys and
// known_hosts that reach them; t.Cleanup removes it all.
func upFleet(t *testing.T) *fleet {
	t.Helper()
	needTools(t)
	dir, err := os.MkdirTemp("", "gait-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	// sshd reads authorized_keys as the user: the directory must be
	// readable by all.
	os.Chmod(dir, 0o755)
	// GAIT_E2E_KEEP keeps the runs' output directories (their reports)
	// for a look after the test.
	if os.Getenv("GAIT_E2E_KEEP") == "" {
		t.Cleanup(func() { os.RemoveAll(dir) })
	} else {
		t.Logf("GAIT_E2E_KEEP: the test's directory %s stays", dir)
	}
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
		}
	}
	for _, u := range []string{e2eUser, e2eUserPw} {
		// "*": no password, yet not locked, so sshd lets a key in.
		run("useradd", "--system", "--no-create-home", "--home-dir", dir, "--shell", "/bin/sh", "--password", "*", u)
		t.Cleanup(func() { exec.Command("userdel", u).Run() })
	}
	sudoers := "/etc/sudoers.d/" + e2eUser
	if err := os.WriteFile(sudoers, []byte(e2eUser+" ALL=(root) NOPASSWD: ALL\n"), 0o440); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(sudoers) })
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // sshd's privilege separation directory
		t.Fatal(err)
	}
	key, other := filepath.Join(dir, "id_ed25519"), filepath.Join(dir, "other_ed25519")
	for _, k := range []string{key, other} {
		run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gait-e2e", "-f", k)
	}
	tb, err := testbed.Up(testbed.Options{Hosts: 3, Dir: filepath.Join(dir, "machines"), StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	f := &fleet{dir: dir, tb: tb, otherKey: other}
	var known strings.Builder
	for i, h := range tb.Hosts {
		name := fmt.Sprintf("m%d", i+1)
		mdir := filepath.Join(dir, name)
		os.MkdirAll(mdir, 0o755)
		hostKey := filepath.Join(mdir, "ssh_host_ed25519_key")
		run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostKey)
		pub, _ := os.ReadFile(key + ".pub")
		os.WriteFile(filepath.Join(mdir, "authorized_keys"), pub, 0o644)
		conf := filepath.Join(mdir, "sshd_config")
		os.WriteFile(conf, []byte(fmt.Sprintf(`ListenAddress %s
Port 22
HostKey %s
AuthorizedKeysFile %s/authorized_keys
PidFile none
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
X11Forwarding no
PrintMotd no
LogLevel VERBOSE
`, h.Addr, hostKey, mdir)), 0o644)
		p, err := h.Start(testbed.ProcSpec{Name: "sshd", Path: sshd, Args: []string{"-D", "-e", "-f", conf}})
		if err != nil {
			t.Fatal(err)
		}
		f.sshd = append(f.sshd, p)
		hpub, _ := os.ReadFile(hostKey + ".pub")
		fields := strings.Fields(string(hpub))
		fmt.Fprintf(&known, "%s %s %s\n", h.Addr, fields[0], fields[1])
		f.machines = append(f.machines, inventory.Machine{Name: name, Addr: h.Addr.String(), User: e2eUser,
			Port: 22, Key: key, Root: filepath.Join(mdir, "root")})
	}
	knownHosts := filepath.Join(dir, "known_hosts")
	os.WriteFile(knownHosts, []byte(known.String()), 0o644)
	bin, cleanup, err := gaitbin.Build()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	f.opts = Options{KnownHosts: []string{knownHosts}, SSHConfig: "none", NoAgent: true, Binary: bin, AgentTimeout: agent.DefaultTimeout}
	// sshd takes a moment to listen.
	deadline := time.Now().Add(10 * time.Second)
	for _, m := range f.machines {
		for {
			c, err := dial(context.Background(), m, f.opts)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sshd on %s: %v", m.Name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return f
}

// scan lists what gait left on machine i: the agent's leftover scan run
// inside the machine's network namespace.
func (f *fleet) scan(t *testing.T, i int, runs []string) []string {
	var left []string
	f.tb.Hosts[i].Do(func() error {
		left = agent.Leftovers(f.machines[i].Root, f.machines[i].Cgroup, 0, runs)
		return nil
	})
	return left
}

func TestManyMachines(t *testing.T) {
	f := upFleet(t)
	ctx := context.Background()

	t.Run("preflight bad machines", func(t *testing.T) {
		// gait preflight as a user runs it, over an inventory of three
		// machines that each fail differently.
		unknown := filepath.Join(f.dir, "known_hosts_without_m1")
		all, _ := os.ReadFile(f.opts.KnownHosts[0])
		os.WriteFile(unknown, []byte(strings.SplitN(string(all), "\n", 2)[1]), 0o644)
		inv := filepath.Join(f.dir, "bad.ini")
		os.WriteFile(inv, []byte(fmt.Sprintf(`[bad]
stranger ansible_host=%s ansible_user=%s ansible_ssh_private_key_file=%s gait_root=%s
wrongkey ansible_host=%s ansible_user=%s ansible_ssh_private_key_file=%s gait_root=%s
pwsudo   ansible_host=%s ansible_user=%s ansible_ssh_private_key_file=%s gait_root=%s
`, f.machines[0].Addr, e2eUser, f.machines[0].Key, f.machines[0].Root,
			f.machines[1].Addr, e2eUser, f.otherKey, f.machines[1].Root,
			f.machines[2].Addr, e2eUserPw, f.machines[2].Key, f.machines[2].Root)), 0o644)
		out, err := exec.Command(f.opts.Binary, "preflight", "--inventory", inv, "--known-hosts", unknown, "--ssh-config", "none").CombinedOutput()
		t.Logf("gait preflight --inventory bad.ini:\n%s", out)
		if err == nil {
			t.Error("preflight passed three bad machines")
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		want := []string{
			"stranger: ssh: SSH to " + f.machines[0].Addr + ":22: its host key is not in",
			"wrongkey: ssh: SSH to " + f.machines[1].Addr + ":22 as " + e2eUser + ": the machine refused every key offered (" + f.otherKey + ")",
			"pwsudo: sudo: sudo asks for a password",
			"gait: preflight: 3 of 3 machines not ready",
		}
		if len(lines) != len(want) {
			t.Fatalf("got %d lines, want one per machine and the verdict", len(lines))
		}
		for i, w := range want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("line %d: %q, want it to start %q", i+1, lines[i], w)
			}
		}
	})

	t.Run("preflight and faults on remote hosts", func(t *testing.T) {
		reports, ready := Preflight(ctx, f.machines, f.opts, agent.CheckArgs{Binaries: []string{"etcd"}})
		defer func() {
			for _, m := range ready {
				m.Close()
			}
		}()
		for _, r := range reports {
			t.Logf("%s: arch %s, clock %+v ±%v, problems %q", r.Machine, r.Arch, r.ClockOffset, r.ClockError, r.Problems)
			if !r.OK() {
				t.Fatalf("%s not ready: %q", r.Machine, r.Problems)
			}
			if r.ClockOffset.Abs() > r.ClockError+5*time.Millisecond {
				t.Errorf("%s: clock offset %v ±%v on one machine's clock", r.Machine, r.ClockOffset, r.ClockError)
			}
		}
		m := ready[0]
		tb, err := m.Up(ctx, agent.UpArgs{Hosts: 2})
		if err != nil {
			t.Fatal(err)
		}
		h0, h1 := tb.Host("h0"), tb.Host("h1")
		// tbf's rate as the agent's machine sees it, from inside h0.
		rate := func() string {
			out, err := m.Run(fmt.Sprintf("sudo -n ip netns exec g%s-h0 tc qdisc show dev eth0", tb.ID), nil)
			if err != nil {
				return err.Error()
			}
			return out
		}
		reach := func() error { return dialBetween(tb, h0, tb, h1) }
		if err := reach(); err != nil {
			t.Fatalf("h0 to h1 before any fault: %v", err)
		}
		faults := []limp.Fault{
			{Injector: limp.NIC{}, Target: limp.On(h0), Factor: 1000},
			{Injector: limp.Partition{}, Target: limp.On(h1), Factor: 1},
		}
		// Events are stamped on the agent's clock, corrected by the
		// measured offset: pretend m's clock runs an hour ahead, and
		// each event must come out an hour before this clock says.
		m.mu.Lock()
		m.offset += time.Hour
		m.mu.Unlock()
		fctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		var events []limp.Event
		var recorded []time.Time
		go func() {
			done <- limp.Run(fctx, faults, func(e limp.Event) {
				events, recorded = append(events, e), append(recorded, time.Now())
			})
		}()
		time.Sleep(500 * time.Millisecond)
		if got := rate(); !strings.Contains(got, "rate 100Kbit") {
			t.Errorf("h0's link at 1000x: tc says %q, want rate 100Kbit", got)
		}
		if err := reach(); err == nil {
			t.Error("h0 reached h1 through a partition")
		}
		// The control connection rides the machine's own interface:
		// neither fault touches it.
		for i := range 5 {
			t0 := time.Now()
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			err := m.Call(cctx, "ping", "", "", nil, nil)
			cancel()
			if err != nil {
				t.Fatalf("control ping %d under faults: %v", i, err)
			}
			if i == 0 {
				t.Logf("control round trip under 1000x NIC and partition: %v", time.Since(t0))
			}
		}
		stop()
		if err := <-done; err != nil {
			t.Fatalf("faults: %v", err)
		}
		for i, e := range events {
			ahead := recorded[i].Add(-time.Hour).Sub(e.Time)
			t.Logf("%s %s on %s, %v before it was recorded (less the hour)", e.Action, e.Kind, e.Host, ahead)
			// Within seconds either way: an uncorrected time is an
			// hour off, and the one clock's own steps (NTP in a VM)
			// may put the agent's stamp a little after the record.
			if ahead.Abs() > 5*time.Second {
				t.Errorf("%s %s at %v, recorded at %v: want the agent's time less the machine's offset (an hour ahead)", e.Action, e.Kind, e.Time, recorded[i])
			}
		}
		if err := healed(reach); err != nil {
			t.Errorf("after the faults cleared: %v", err)
		}
		if got := rate(); !strings.Contains(got, "rate 100Mbit") {
			t.Errorf("h0's link after clear: tc says %q", got)
		}
		// A process's output is read through its host, on its machine,
		// as hdfs's NNThroughputBenchmark reads its stats.
		mh := h1.Member("h1")
		p, err := mh.Start("say", []string{"sh", "-c", "echo out; echo err >&2"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); !p.Exited() && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		if out, log, err := systems.Output(mh, p); err != nil || out != "out\n" || log != "err\n" {
			t.Errorf("output of a process on a remote host: %q, %q, %v; want \"out\\n\", \"err\\n\"", out, log, err)
		}
		if m.Err() != nil {
			t.Errorf("machine lost: %v", m.Err())
		}
		if err := tb.Close(); err != nil {
			t.Error(err)
		}
		m.Close()
		if left := f.scan(t, 0, []string{tb.ID}); len(left) > 0 {
			t.Errorf("after down: %q", left)
			states, _ := filepath.Glob(filepath.Join(f.machines[0].Root, "state", "*"))
			for _, st := range states {
				data, _ := os.ReadFile(st)
				t.Logf("run %s: %s: %s", tb.ID, st, data)
			}
			t.Logf("agent: %s", m.stderr)
		}
	})

	t.Run("a testbed spanning machines", func(t *testing.T) {
		ms := f.connect(t, f.machines)
		sp, err := SpreadHosts(ctx, ms, 3, SpreadOptions{StateDir: filepath.Join(f.dir, "control-state")})
		if err != nil {
			t.Fatal(err)
		}
		tbs := sp.Testbeds
		a, b, c := tbs[0].Hosts[0], tbs[1].Hosts[0], tbs[2].Hosts[0]
		for _, to := range []int{1, 2} {
			if err := healed(func() error { return dialBetween(tbs[0], a, tbs[to], tbs[to].Hosts[0]) }); err != nil {
				t.Fatalf("%s (%s) to %s (%s) over the overlay: %v", a.HostName(), a.Addr, tbs[to].Hosts[0].HostName(), tbs[to].Hosts[0].Addr, err)
			}
		}
		t.Logf("%s %s reaches %s %s and %s %s over VXLAN", a.HostName(), a.Addr, b.HostName(), b.Addr, c.HostName(), c.Addr)
		// A real system across the machines, with GAIT_MANY (it costs make
		// test tens of seconds on a busy machine): an etcd member on each.
		var etcdctl func(int, ...string) (string, error)
		if os.Getenv("GAIT_MANY") != "" {
			etcdctl = startEtcd(t, tbs)
			if out, err := etcdctl(0, "put", "spanning", "yes"); err != nil {
				t.Fatalf("etcdctl put through m1's member: %v: %s", err, out)
			}
		}
		if err := (limp.Partition{}).Apply(a, 1); err != nil {
			t.Fatal(err)
		}
		if err := dialBetween(tbs[0], a, tbs[1], b); err == nil {
			t.Error("a partitioned host reached another machine's host")
		}
		if err := dialBetween(tbs[2], c, tbs[1], b); err != nil {
			t.Errorf("m3 to m2 while m1/h0 is partitioned: %v", err)
		}
		// Two members of three on m2 and m3 still make a quorum, once
		// they have elected a leader if m1's was it.
		if etcdctl != nil {
			out, err := etcdctl(2, "put", "spanning", "without m1")
			for deadline := time.Now().Add(20 * time.Second); err != nil && time.Now().Before(deadline); out, err = etcdctl(2, "put", "spanning", "without m1") {
				time.Sleep(200 * time.Millisecond)
			}
			if err != nil {
				t.Errorf("etcdctl put through m3's member while m1's is partitioned: %v: %s", err, out)
			}
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		if err := ms[0].Call(pctx, "ping", "", "", nil, nil); err != nil {
			t.Errorf("control connection to m1 while its host is partitioned: %v", err)
		}
		cancel()
		if err := (limp.Partition{}).Clear(a); err != nil {
			t.Fatal(err)
		}
		if err := healed(func() error { return dialBetween(tbs[0], a, tbs[1], b) }); err != nil {
			t.Errorf("after the partition healed: %v", err)
		}
		// m1's member catches up with what was written without it.
		if etcdctl != nil {
			var got string
			for deadline := time.Now().Add(20 * time.Second); got != "without m1" && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				out, _ := etcdctl(0, "get", "spanning", "--print-value-only")
				got = strings.TrimSpace(out)
			}
			if got != "without m1" {
				t.Errorf("m1's member after healing reads %q", got)
			} else {
				t.Logf("etcd across m1, m2, m3: a write through m3 while m1's member was partitioned, read back from m1's after healing")
			}
		}
		if err := sp.Close(); err != nil {
			t.Error(err)
		}
		for i, tb := range tbs {
			ms[i].Close()
			if left := f.scan(t, i, []string{tb.ID}); len(left) > 0 {
				t.Errorf("%s after down: %q", f.machines[i].Name, left)
			}
		}
	})

	t.Run("a scenario spanning machines", func(t *testing.T) {
		// gait run --inventory as a user types it: six etcd members, two
		// on each machine, the clients here, the leader's NIC at 1000x.
		// Every put is proposed by the leader: at 1000x it crawls.
		runSpanning(t, f, f.machines, "etcd-spanning", 6, `system: etcd
workload: {op: put, keys: 100, value_size: 1KiB, clients: 4, duration: 4s}
inject:
  - {fault: nic, target: leader, factors: [1000], at: 0s}
`, "follower", 5)
	})

	t.Run("emulated storage spanning machines", func(t *testing.T) {
		if os.Getenv("GAIT_MANY") == "" {
			t.Skip("set GAIT_MANY=1 to run etcd on emulating stores across the three machines, the leader's disk at 1000x (40 s)")
		}
		// Each machine's agent mounts its hosts' emulating stores;
		// the leader's disk fault acts through its agent on its store.
		runSpanning(t, f, f.machines, "etcd-emulated", 3, `system: etcd
storage: emulated
workload: {op: put, keys: 100, value_size: 1KiB, clients: 4, duration: 5s}
inject:
  - {fault: disk, target: leader, factors: [1000], at: 0s}
`, "", 3)
	})

	t.Run("HDFS spanning machines", func(t *testing.T) {
		if os.Getenv("GAIT_MANY") != "hdfs" {
			t.Skip("set GAIT_MANY=hdfs to run HDFS across the three machines: a NameNode and nine DataNodes, three on each machine (ten JVMs: 12 minutes at load average 100)")
		}
		// h0 the NameNode on m1; DataNodes h1..h9 round robin, three a
		// machine. A DataNode's NIC at 100x slows the creates whose
		// pipeline it is in.
		runSpanning(t, f, f.machines, "hdfs-spanning", 10, `system: hdfs
workload: {op: create, keys: 30, value_size: 1MiB, clients: 2, duration: 15s, timeout: 3m}
inject:
  - {fault: nic, target: h1, factors: [100], at: 0s}
`, "datanode", 1.5)
	})

	t.Run("NNThroughputBenchmark on a remote host", func(t *testing.T) {
		if os.Getenv("GAIT_MANY") != "hdfs" {
			t.Skip("set GAIT_MANY=hdfs to run Hadoop's NNThroughputBenchmark against a NameNode on m2, a DataNode on m3 (three JVMs)")
		}
		d := hdfs.New()
		if err := d.Check(); err != nil {
			t.Skip(err)
		}
		ms := f.connect(t, f.machines[1:])
		sp, err := SpreadHosts(ctx, ms, 2, SpreadOptions{StateDir: filepath.Join(f.dir, "control-state")})
		if err != nil {
			t.Fatal(err)
		}
		defer sp.Close()
		d.Conf = maps.Clone(hdfs.NNBenchConf)
		c, err := d.Start(ctx, sp.Members(""))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Stop()
		// The benchmark runs on the NameNode's host, on m2; its stats
		// are in its log there, read through that host.
		bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		r, err := c.(*hdfs.Cluster).NNBench(bctx, "-op", "create", "-threads", "4", "-files", "1000", "-close")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("NNThroughputBenchmark create on m2's NameNode: %d ops in %v, %.0f ops/s, mean %v a thread", r.Ops, r.Elapsed, r.OpsPerSec, r.AvgTime)
		if r.Ops != 1000 {
			t.Errorf("%d operations, want 1000", r.Ops)
		}
	})

	t.Run("three times what one machine holds", func(t *testing.T) {
		if os.Getenv("GAIT_MANY") != "hold" {
			t.Skip("set GAIT_MANY=hold (and GAIT_HOLD_SYSTEM hdfs or etcd, GAIT_HOLD_MEM, GAIT_HOLD_CPU, GAIT_HOLD_HOSTS) to bound each machine's memory and CPU and run GAIT_HOLD_HOSTS hosts on one machine, 3x that on one machine (which must fail), and 3x over the three (HDFS is heavy: JVMs)")
		}
		limit, err := load.ParseSize(cmp.Or(os.Getenv("GAIT_HOLD_MEM"), "1GiB"))
		if err != nil {
			t.Fatalf("GAIT_HOLD_MEM: %v", err)
		}
		n, err := strconv.Atoi(cmp.Or(os.Getenv("GAIT_HOLD_HOSTS"), "6"))
		if err != nil || n < 1 {
			t.Fatalf("GAIT_HOLD_HOSTS %q: want a number of hosts to begin with", os.Getenv("GAIT_HOLD_HOSTS"))
		}
		system := cmp.Or(os.Getenv("GAIT_HOLD_SYSTEM"), "hdfs")
		body, ok := map[string]string{
			// A NameNode (h0) and DataNodes; creates of 1 MiB files
			// with replication 3, so every DataNode may serve.
			"hdfs": `system: hdfs
workload: {op: create, keys: 30, value_size: 1MiB, clients: 2, duration: 10s, timeout: 3m}
`,
			"etcd": `system: etcd
workload: {op: put, keys: 100, value_size: 1KiB, clients: 4, duration: 5s}
`,
		}[system]
		if !ok {
			t.Fatalf("GAIT_HOLD_SYSTEM %q: want hdfs or etcd", system)
		}
		cpus, err := strconv.ParseFloat(cmp.Or(os.Getenv("GAIT_HOLD_CPU"), "0"), 64)
		if err != nil || cpus < 0 {
			t.Fatalf("GAIT_HOLD_CPU %q: want a number of CPUs for each machine (0: no CPU limit)", os.Getenv("GAIT_HOLD_CPU"))
		}
		cgroups := f.limitMachines(t, limit, cpus)
		// The most one machine holds: GAIT_HOLD_HOSTS hosts, then one
		// more at a time, until a run fails; its OOM kills must show
		// that memory is what failed it.
		held := 0
		t.Run("one machine", func(t *testing.T) {
			for k := n; ; k++ {
				if k > 3*n {
					t.Fatalf("one machine held %d hosts: the limit bounds nothing", held)
				}
				before := startUse(cgroups[0])
				out, err := runScenario(t, f, f.machines[:1], fmt.Sprintf("%s-hold-1-%d", system, k), k, body)
				use := readUse(cgroups[0], before)
				how := "ran"
				if err != nil {
					how = "failed: " + err.Error()
				}
				t.Logf("%d hosts on m1 (limits %s, %g CPUs): %s; %s", k, load.FormatSize(limit), cpus, how, use)
				if err == nil && use.oomKills == 0 {
					held = k
					continue
				}
				// Memory fails a run by the OOM killer, or by
				// reclaiming until the agent misses its heartbeats.
				if use.oomKills == 0 && use.failcnt == 0 {
					t.Errorf("%d hosts failed within the memory limit: not for memory\n%s", k, out)
				}
				break
			}
			// A machine lost keeps what its agent made until that agent
			// has taken it down (slowly, on a machine short of memory),
			// or gait clean --inventory does.
			left := f.scan(t, 0, nil)
			for end := time.Now().Add(time.Minute); len(left) > 0 && time.Now().Before(end); left = f.scan(t, 0, nil) {
				time.Sleep(time.Second)
			}
			if len(left) > 0 {
				clean, err := f.gaitOn(f.machines[:1], "clean").CombinedOutput()
				t.Logf("m1 a minute after the search: %q; gait clean --inventory: %v\n%s", left, err, clean)
				if left := f.scan(t, 0, nil); len(left) > 0 {
					t.Errorf("m1 after gait clean --inventory: %q", left)
				}
			}
			if held == 0 {
				t.Fatalf("one machine held not even %d hosts", n)
			}
			t.Logf("one machine holds %d hosts of %s within %s", held, system, load.FormatSize(limit))
		})
		t.Run("three machines, 3x", func(t *testing.T) {
			if held == 0 {
				t.Skip("no count of what one machine holds")
			}
			var before []machineUse
			for _, c := range cgroups {
				before = append(before, startUse(c))
			}
			runSpanning(t, f, f.machines, fmt.Sprintf("%s-hold-3-%d", system, 3*held), 3*held, body, "", 0)
			for i, c := range cgroups {
				use := readUse(c, before[i])
				t.Logf("%s, one of 3 machines holding %d hosts (limits %s, %g CPUs): %s", f.machines[i].Name, 3*held, load.FormatSize(limit), cpus, use)
				if use.oomKills > 0 {
					t.Errorf("%s: %d processes killed for memory", f.machines[i].Name, use.oomKills)
				}
			}
		})
	})

	t.Run("a spanning run interrupted, killed, or losing an agent", func(t *testing.T) {
		if os.Getenv("GAIT_MANY") == "" {
			t.Skip("set GAIT_MANY=1 to end a spanning etcd run by SIGINT, SIGKILL and a killed agent, and scan every machine after (50 s)")
		}
		scen := filepath.Join(f.dir, "etcd-long.yaml")
		os.WriteFile(scen, []byte(`name: etcd-long
system: etcd
nodes: 6
workload: {op: put, keys: 100, value_size: 1KiB, clients: 2, duration: 60s}
`), 0o644)
		ctlState := filepath.Join(f.dir, "control-state")
		localLeft := func() []string {
			m, _ := filepath.Glob(filepath.Join(ctlState, "*.json"))
			return m
		}
		for _, how := range []string{"SIGINT", "SIGKILL", "agent killed"} {
			cmd := f.gait("run", scen, "--out", filepath.Join(f.dir, "long-"+strings.Fields(how)[0]), "--state-dir", ctlState)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(stderr)
			for sc.Scan() && !strings.Contains(sc.Text(), "running closed loop") {
			}
			go io.Copy(io.Discard, stderr)
			var held []string
			for i, m := range f.machines {
				left := f.scan(t, i, nil)
				if len(left) == 0 {
					t.Fatalf("%s: %s holds nothing of a running spanning cluster", how, m.Name)
				}
				held = append(held, fmt.Sprintf("%s %d", m.Name, len(left)))
			}
			t.Logf("%s: while the run runs, the scans see %s things", how, strings.Join(held, ", "))
			begin := time.Now()
			switch how {
			case "SIGINT":
				cmd.Process.Signal(syscall.SIGINT)
			case "SIGKILL":
				cmd.Process.Kill()
			default:
				for _, p := range agentPids(f.machines[1].Root) {
					syscall.Kill(p, syscall.SIGKILL)
				}
			}
			err = cmd.Wait()
			t.Logf("%s: gait run ended after %.1fs: %v", how, time.Since(begin).Seconds(), err)
			if how == "agent killed" {
				// The run fails for its lost machine; what that agent
				// made stays until gait clean --inventory.
				left := f.scan(t, 1, nil)
				if len(left) == 0 {
					t.Errorf("a killed agent left nothing on m2: the check proves nothing")
				}
				t.Logf("agent killed: m2 keeps %d things until gait clean --inventory: %q", len(left), left)
				if out, err := f.gait("clean").CombinedOutput(); err != nil {
					t.Errorf("gait clean --inventory: %v: %s", err, out)
				}
			}
			if how == "SIGKILL" {
				if len(localLeft()) == 0 {
					t.Errorf("SIGKILL left no state here: the bridge's removal by gait clean is not checked")
				}
				if out, err := exec.Command(f.opts.Binary, "clean", "--state-dir", ctlState).CombinedOutput(); err != nil {
					t.Errorf("gait clean: %v: %s", err, out)
				}
			}
			var left []string
			for deadline := time.Now().Add(f.opts.AgentTimeout + 10*time.Second); ; time.Sleep(200 * time.Millisecond) {
				left = localLeft()
				for i, m := range f.machines {
					for _, l := range f.scan(t, i, nil) {
						left = append(left, m.Name+": "+l)
					}
				}
				if len(left) == 0 || time.Now().After(deadline) {
					break
				}
			}
			t.Logf("%s: leftover scans of m1, m2, m3 and this machine's state %.1fs after: %q", how, time.Since(begin).Seconds(), left)
			if len(left) > 0 {
				t.Errorf("%s: left %q", how, left)
			}
		}
	})

	t.Run("killed control leaves nothing", func(t *testing.T) {
		spec, _ := json.Marshal(map[string]any{"Machines": f.machines, "Opts": f.opts})
		for _, how := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL, syscall.SIGSTOP} {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "GAIT_E2E_CONTROL="+string(spec))
			ids, err := gaitbin.StartReady(cmd, "ready")
			if err != nil {
				t.Fatal(err)
			}
			runs := strings.Fields(ids)
			for i := range f.machines {
				if left := f.scan(t, i, runs); len(left) == 0 {
					t.Fatalf("%s: the scan sees nothing of a live run", f.machines[i].Name)
				}
			}
			// SIGINT closes the sessions; SIGKILL closes the control's TCP
			// connections; SIGSTOP keeps them open and silent, so only
			// the heartbeat tells.
			cmd.Process.Signal(how)
			start := time.Now()
			clean := false
			for time.Since(start) < f.opts.AgentTimeout+10*time.Second && !clean {
				time.Sleep(200 * time.Millisecond)
				clean = true
				for i := range f.machines {
					clean = clean && len(f.scan(t, i, runs)) == 0
				}
			}
			cmd.Process.Kill()
			cmd.Wait()
			t.Logf("control %s: every machine clean after %.1fs (agent timeout %s)", how, time.Since(start).Seconds(), f.opts.AgentTimeout)
			for i := range f.machines {
				if left := f.scan(t, i, runs); len(left) > 0 {
					t.Errorf("control %s: %s still has %q", how, f.machines[i].Name, left)
				}
			}
		}
	})

	t.Run("bench over the inventory", func(t *testing.T) {
		switch os.Getenv("GAIT_MANY") {
		case "":
			t.Skip("set GAIT_MANY=1 to run the quick etcd experiments over the three machines, one machine lost on the way, or GAIT_MANY=quick for the whole quick suite over them and on this machine alone (minutes; GAIT_QUICK_ONE=rows.json takes the one-machine rows from a run of its own)")
		case "quick":
			begin := time.Now()
			many, manyJSON := benchOverInventory(t, f, "*", false)
			t.Logf("quick suite over the three machines: %.0fs (load average %s)", time.Since(begin).Seconds(), loadAverage())
			oneJSON := quickOnOneMachine(t, f)
			one := stepsOf(t, oneJSON)
			if fmt.Sprint(one) != fmt.Sprint(many) {
				t.Errorf("rows differ in form:\n three machines %v\n one machine    %v", many, one)
			}
			// Verdicts come from two runs on a busy machine: a row whose
			// verdicts differ is reported, not failed.
			oneV, manyV := verdictsOf(t, oneJSON), verdictsOf(t, manyJSON)
			same := 0
			for _, row := range slices.Sorted(maps.Keys(oneV)) {
				if oneV[row] == manyV[row] {
					same++
				} else {
					t.Logf("verdicts differ: %s: one machine %s, three machines %s", row, oneV[row], manyV[row])
				}
			}
			t.Logf("verdicts: %d of %d rows the same", same, len(oneV))
		default:
			benchOverInventory(t, f, "*etcd*", true)
		}
	})

	t.Run("killed agent, then gait clean --inventory", func(t *testing.T) {
		m, err := Connect(ctx, f.machines[1], f.opts)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := m.Up(ctx, agent.UpArgs{Hosts: 2})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tb.Hosts[0].Start(agent.StartArgs{Name: "sleeper", Path: "sleep", Args: []string{"600"}}); err != nil {
			t.Fatal(err)
		}
		var info agent.Info
		if err := m.Call(ctx, "info", "", "", nil, &info); err != nil {
			t.Fatal(err)
		}
		syscall.Kill(info.Pid, syscall.SIGKILL)
		select {
		case <-m.Lost():
			t.Logf("control saw: %v", m.Err())
		case <-time.After(10 * time.Second):
			t.Fatal("the control did not notice its agent died")
		}
		m.Close()
		if left := f.scan(t, 1, []string{tb.ID}); len(left) == 0 {
			t.Fatal("a killed agent left nothing: the test proves nothing")
		}
		out, err := f.gait("clean").CombinedOutput()
		t.Logf("gait clean --inventory:\n%s", out)
		if err != nil {
			t.Fatal(err)
		}
		if want := "m1: clean\nm2: clean\nm3: clean\n"; string(out) != want {
			t.Errorf("got %q, want %q", out, want)
		}
		if left := f.scan(t, 1, []string{tb.ID}); len(left) > 0 {
			t.Errorf("after gait clean --inventory: %q", left)
		}
	})
}

// The test's machines are bounded by cgroup v1 hierarchies, one each for
// memory, cpu and cpuacct. v1 moves a process in one hierarchy without
// moving it in the others: a host's move into its CPU cgroup leaves it
// in its machine's memory and cpuacct cgroups, and the CPU cgroup itself
// lies below the machine's (gait_cgroup). Under v2 (one hierarchy) the
// hosts' cgroups would have to sit below a machine's that has no
// processes of its own; this test bounds machines only under v1.
const (
	memoryCgroups  = "/sys/fs/cgroup/memory"
	cpuCgroups     = "/sys/fs/cgroup/cpu"
	cpuacctCgroups = "/sys/fs/cgroup/cpuacct"
)

// machineCgroups are one test machine's cgroups in each hierarchy.
type machineCgroups struct{ memory, cpu, cpuacct string }

// limitMachines gives each machine a memory cgroup of limit bytes, a CPU
// cgroup whose quota is cpus CPUs (none when cpus is 0) and a cpuacct
// cgroup that counts its CPU time, and moves its sshd into them: every
// agent it starts and every process an agent starts is bounded by them,
// as by a machine's memory and cores. Each machine's gait_cgroup puts its
// hosts' CPU cgroups below the machine's, so the machine's quota bounds
// them too. That is what makes each of the three a machine of its own
// when they share this one. t.Cleanup moves sshd back and removes the
// cgroups.
func (f *fleet) limitMachines(t *testing.T, limit int64, cpus float64) []machineCgroups {
	t.Helper()
	for _, h := range []string{filepath.Join(memoryCgroups, "memory.limit_in_bytes"), filepath.Join(cpuCgroups, "cpu.cfs_quota_us"), filepath.Join(cpuacctCgroups, "cpuacct.usage")} {
		if _, err := os.Stat(h); err != nil {
			t.Skipf("no cgroup v1 controller file %s, which bounds a test machine", h)
		}
	}
	var out []machineCgroups
	for i, m := range f.machines {
		name := fmt.Sprintf("gait-e2e-%d-%s", os.Getpid(), m.Name)
		cg := machineCgroups{filepath.Join(memoryCgroups, name), filepath.Join(cpuCgroups, name), filepath.Join(cpuacctCgroups, name)}
		// Removed in reverse: sshd back to each root first, then the
		// hosts' parent below the machine's CPU cgroup, then the
		// machine's cgroups.
		sshd := strconv.Itoa(f.sshd[i].Pid())
		for _, root := range []string{memoryCgroups, cpuCgroups, cpuacctCgroups} {
			dir := filepath.Join(root, name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(sshd), 0o644)
				if root == cpuCgroups {
					rmdirBusy(t, filepath.Join(dir, "gait"))
				}
				rmdirBusy(t, dir)
			})
		}
		write := func(dir, file, value string) {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write(cg.memory, "memory.limit_in_bytes", strconv.FormatInt(limit, 10))
		if cpus > 0 {
			write(cg.cpu, "cpu.cfs_period_us", "100000")
			write(cg.cpu, "cpu.cfs_quota_us", strconv.Itoa(int(cpus*100000)))
		}
		for _, dir := range []string{cg.memory, cg.cpu, cg.cpuacct} {
			write(dir, "cgroup.procs", sshd)
		}
		f.machines[i].Cgroup = name + "/gait"
		t.Cleanup(func() { f.machines[i].Cgroup = "" })
		out = append(out, cg)
	}
	return out
}

// rmdirBusy removes an emptied cgroup, waiting while the kernel still
// calls it busy (sessions on their way out); a missing one is gone.
func rmdirBusy(t *testing.T, dir string) {
	deadline := time.Now().Add(10 * time.Second)
	err := syscall.Rmdir(dir)
	for err == syscall.EBUSY && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		err = syscall.Rmdir(dir)
	}
	if err != nil && err != syscall.ENOENT {
		t.Errorf("remove cgroup %s: %v", dir, err)
	}
}

// machineUse is what a machine's cgroups counted over a run: its memory
// peak, how often it hit the memory limit (reclaiming page cache counts
// too), the processes its OOM killer ended, the CPU time its processes
// used and how long its CPU quota held them back.
type machineUse struct {
	peakMiB, failcnt, oomKills int64
	cpu, throttled             time.Duration
}

func (u machineUse) String() string {
	return fmt.Sprintf("peak %d MiB, failcnt %d, OOM kills %d, CPU %.1fs, throttled %.1fs", u.peakMiB, u.failcnt, u.oomKills, u.cpu.Seconds(), u.throttled.Seconds())
}

// startUse begins a run's count: the peak and failcnt afresh, the
// counters that the kernel does not reset as they are so far.
func startUse(cg machineCgroups) machineUse {
	os.WriteFile(filepath.Join(cg.memory, "memory.max_usage_in_bytes"), []byte("0"), 0o644)
	os.WriteFile(filepath.Join(cg.memory, "memory.failcnt"), []byte("0"), 0o644)
	return readUse(cg, machineUse{})
}

// readUse is the count since before.
func readUse(cg machineCgroups, before machineUse) machineUse {
	read := func(file string) int64 {
		data, _ := os.ReadFile(file)
		n, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		return n
	}
	u := machineUse{peakMiB: read(filepath.Join(cg.memory, "memory.max_usage_in_bytes")) >> 20, failcnt: read(filepath.Join(cg.memory, "memory.failcnt"))}
	data, _ := os.ReadFile(filepath.Join(cg.memory, "memory.oom_control"))
	for line := range strings.Lines(string(data)) {
		if k, ok := strings.CutPrefix(strings.TrimSpace(line), "oom_kill "); ok {
			n, _ := strconv.ParseInt(k, 10, 64)
			u.oomKills = n - before.oomKills
		}
	}
	u.cpu = time.Duration(read(filepath.Join(cg.cpuacct, "cpuacct.usage"))) - before.cpu
	if th, err := (&cgroupcpu.Controller{Root: cpuCgroups}).Throttled(cg.cpu); err == nil {
		u.throttled = th - before.throttled
	}
	return u
}

// inNetns runs f on a thread inside the named network namespace.
func inNetns(name string, f func() error) error {
	ns, err := netns.GetFromName(name)
	if err != nil {
		return err
	}
	defer ns.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer orig.Close()
		if err := netns.Set(ns); err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		ferr := f()
		// The thread goes back before it serves anything else; if it
		// cannot, it stays locked and ends with the goroutine. (A thread
		// left in a run's namespace would be killed with the run.)
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		errc <- ferr
	}()
	return <-errc
}

// gait is the gait command with args over the fleet's inventory, as a
// user would type it.
func (f *fleet) gait(args ...string) *exec.Cmd { return f.gaitOn(f.machines, args...) }

// gaitOn is the gait command with args over an inventory of ms.
func (f *fleet) gaitOn(ms []inventory.Machine, args ...string) *exec.Cmd {
	inv := filepath.Join(f.dir, fmt.Sprintf("inventory-%d.yaml", len(ms)))
	var b strings.Builder
	b.WriteString("machines:\n")
	for _, m := range ms {
		fmt.Fprintf(&b, "  - {name: %s, address: %s, user: %s, key: %s, root: %s, cgroup: %s}\n", m.Name, m.Addr, m.User, m.Key, m.Root, cmp.Or(m.Cgroup, testbed.DefaultCgroup))
	}
	os.WriteFile(inv, []byte(b.String()), 0o644)
	args = append(args, "--inventory", inv, "--known-hosts", f.opts.KnownHosts[0], "--ssh-config", "none", "--agent-timeout", f.opts.AgentTimeout.String())
	return exec.Command(f.opts.Binary, args...)
}

// connect connects to each of machines; t.Cleanup closes the connections.
func (f *fleet) connect(t *testing.T, machines []inventory.Machine) []*Machine {
	t.Helper()
	var ms []*Machine
	for _, m := range machines {
		c, err := Connect(context.Background(), m, f.opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		ms = append(ms, c)
	}
	return ms
}

// runSpanning runs a scenario of nodes hosts with gait run --inventory
// over the machines ms: its baseline and, when slower is not 0, one
// factor (the scenario's one fault). Each run must have its hosts on the
// machines' subnets, requests done, its last host's log brought back,
// the faulted run's mean latency slower times the baseline's, members
// with role (unless empty) on every machine, and every machine clean
// after.
func runSpanning(t *testing.T, f *fleet, ms []inventory.Machine, name string, nodes int, body, role string, slower float64) {
	stdout, err := runScenario(t, f, ms, name, nodes, body)
	if err != nil {
		t.Fatalf("gait run --inventory: %v\n%s", err, stdout)
	}
	out := filepath.Join(f.dir, name)
	runs, _ := filepath.Glob(filepath.Join(out, "f*-r1"))
	if want := map[bool]int{true: 1, false: 2}[slower == 0]; len(runs) != want {
		t.Fatalf("runs %v, want %d", runs, want)
	}
	means := make([]float64, len(runs))
	for i, run := range runs {
		var rj struct {
			Hosts []struct{ Name, Address, Role string }
		}
		var sum struct {
			Requests int
			Mean     float64
		}
		for file, v := range map[string]any{"run.json": &rj, "summary.json": &sum} {
			data, err := os.ReadFile(filepath.Join(run, file))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, v); err != nil {
				t.Fatalf("%s/%s: %v", run, file, err)
			}
		}
		subnets, withRole := map[string]bool{}, map[string]bool{}
		for _, h := range rj.Hosts {
			sn := netip.PrefixFrom(netip.MustParseAddr(h.Address), 24).Masked().String()
			subnets[sn] = true
			if h.Role == role {
				withRole[sn] = true
			}
		}
		t.Logf("%s: %d requests, mean %.1f ms; hosts %v", filepath.Base(run), sum.Requests, sum.Mean*1e3, rj.Hosts)
		if len(rj.Hosts) != nodes || len(subnets) != len(ms) || role != "" && len(withRole) != len(ms) {
			t.Errorf("%s: %d hosts on %d subnets, %s on %d; want %d on %d (one a machine), %s on each", run, len(rj.Hosts), len(subnets), role, len(withRole), nodes, len(ms), role)
		}
		if sum.Requests == 0 {
			t.Errorf("%s: no request finished", run)
		}
		means[i] = sum.Mean
		last := fmt.Sprintf("h%d", nodes-1)
		if logs, _ := filepath.Glob(filepath.Join(out, "hosts", filepath.Base(run), last, "log", "*.stderr")); len(logs) == 0 {
			t.Errorf("%s: the logs of %s (on %s) are not back", run, last, ms[(nodes-1)%len(ms)].Name)
		}
	}
	// f1-r1 sorts before f100-r1 and f1000-r1.
	if slower > 0 && means[1] < slower*means[0] {
		t.Errorf("%s: mean %.1f ms against %.1f ms at the baseline; want it %g times slower at least", filepath.Base(runs[1]), means[1]*1e3, means[0]*1e3, slower)
	}
	if _, err := os.Stat(filepath.Join(out, "preflight.json")); err != nil {
		t.Error(err)
	}
	for i, m := range f.machines {
		if left := f.scan(t, i, nil); len(left) > 0 {
			t.Errorf("%s after gait run: %q", m.Name, left)
		}
	}
}

// runScenario writes a scenario of nodes hosts and runs it with gait run
// --inventory over the machines ms, logging what gait printed; it
// returns gait's standard output.
func runScenario(t *testing.T, f *fleet, ms []inventory.Machine, name string, nodes int, body string) (string, error) {
	scen := filepath.Join(f.dir, name+".yaml")
	os.WriteFile(scen, []byte(fmt.Sprintf("name: %s\nnodes: %d\n%s", name, nodes, body)), 0o644)
	begin := time.Now()
	cmd := f.gaitOn(ms, "run", scen, "--out", filepath.Join(f.dir, name), "--format", "json")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("gait run --inventory over %d machines (%.0fs, load average %s):\n%s", len(ms), time.Since(begin).Seconds(), loadAverage(), stderr.String())
	return stdout.String(), err
}

// benchOverInventory runs the quick experiments that match only with gait
// bench --inventory. With kill, the machine that takes the first one has
// its agent killed 8 s into it, so that experiment must run again on
// another machine and be marked so. Each experiment must come back whole:
// its result.json, and its rows, which it returns (experiment: steps).
func benchOverInventory(t *testing.T, f *fleet, only string, kill bool) (steps map[string][]string, rows string) {
	out := filepath.Join(f.dir, "bench")
	cmd := f.gait("bench", "../../scenarios/limpbench", "--quick", "--only", only, "--out", out, "--format", "json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	cmd.Stdout = &stdout
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log []string
	killed := ""
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		log = append(log, line)
		t.Log(line)
		// "     3s m2: etcd-put-leader-nic started"
		if fields := strings.Fields(line); kill && killed == "" && len(fields) == 4 && fields[3] == "started" {
			killed = strings.TrimSuffix(fields[1], ":")
			go func(name string) {
				time.Sleep(8 * time.Second)
				for _, m := range f.machines {
					if m.Name == name {
						for _, p := range agentPids(m.Root) {
							syscall.Kill(p, syscall.SIGKILL)
						}
					}
				}
			}(killed)
		}
	}
	err = cmd.Wait()
	t.Logf("gait bench --inventory: %.0fs, exit %v", time.Since(begin).Seconds(), err)
	if err != nil {
		t.Fatalf("gait bench --inventory: %v\n%s", err, stdout.String())
	}
	steps = stepsOf(t, stdout.String())
	t.Logf("rows: %v", steps)
	for name, labels := range steps {
		if len(labels) != 1 {
			t.Errorf("%s: rows %v, want 1 (the quick suite's largest factor)", name, labels)
		}
		if _, err := os.Stat(filepath.Join(out, name, "result.json")); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	data, err := os.ReadFile(filepath.Join(out, "machines.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("machines.json: %s", data)
	if kill && (!strings.Contains(strings.Join(log, "\n"), "ran again on") || !strings.Contains(string(data), `"lost"`)) {
		t.Errorf("the experiment of the lost machine %s is not marked as run again", killed)
	}
	for i, m := range f.machines {
		if left := f.scan(t, i, nil); len(left) > 0 && m.Name != killed {
			t.Errorf("%s after the suite: %q", m.Name, left)
		}
	}
	return steps, stdout.String()
}

// verdictsOf reads gait bench's JSON rows as experiment/step: the
// verdicts that hold (OL, NL, CL, HB), "none" when none does.
// quickOnOneMachine is the quick suite's JSON rows on this machine
// alone: read from GAIT_QUICK_ONE (the stdout of `gait bench
// scenarios/limpbench --quick --format json` of the same tree, run in a
// hold of its own, since both halves together outlast one), or run here.
func quickOnOneMachine(t *testing.T, f *fleet) string {
	t.Helper()
	if file := os.Getenv("GAIT_QUICK_ONE"); file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("GAIT_QUICK_ONE: %v", err)
		}
		return string(data)
	}
	begin := time.Now()
	cmd := exec.Command(f.opts.Binary, "bench", "../../scenarios/limpbench", "--quick", "--out", filepath.Join(f.dir, "bench-one"), "--format", "json")
	var stdout strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("gait bench on one machine: %v", err)
	}
	t.Logf("quick suite on this machine alone: %.0fs (load average %s)", time.Since(begin).Seconds(), loadAverage())
	return stdout.String()
}

func verdictsOf(t *testing.T, js string) map[string]string {
	var rows []suite.Row
	if err := json.Unmarshal([]byte(js), &rows); err != nil {
		t.Fatalf("rows: %v: %s", err, js)
	}
	out := map[string]string{}
	for _, r := range rows {
		var v []string
		for _, c := range []struct {
			on   bool
			name string
		}{{r.OperationLL, "OL"}, {r.NodeLL, "NL"}, {r.ClusterLL, "CL"}, {r.HiddenBacklog, "HB"}} {
			if c.on {
				v = append(v, c.name)
			}
		}
		out[r.Experiment+"/"+r.Step] = cmp.Or(strings.Join(v, "+"), "none")
	}
	return out
}

// stepsOf reads gait bench's JSON rows as experiment: step labels.
func stepsOf(t *testing.T, js string) map[string][]string {
	var rows []struct{ Experiment, Step string }
	if err := json.Unmarshal([]byte(js), &rows); err != nil {
		t.Fatalf("rows: %v: %s", err, js)
	}
	steps := map[string][]string{}
	for _, r := range rows {
		steps[r.Experiment] = append(steps[r.Experiment], r.Step)
	}
	return steps
}

func loadAverage() string {
	data, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(data))[:3], " ")
}

// agentPids are the agents running from a root's binaries.
func agentPids(root string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || !strings.HasPrefix(exe, root+"/bin/gait-") {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), "agent\x00--stdio") {
			var pid int
			fmt.Sscan(e.Name(), &pid)
			pids = append(pids, pid)
		}
	}
	return pids
}

// dialBetween says whether host from (of testbed tf) reaches host to (of
// testbed tt) by TCP: this test runs on the machines' kernel, so it can
// enter the remote hosts' namespaces.
func dialBetween(tf *Testbed, from *Host, tt *Testbed, to *Host) error {
	var ln net.Listener
	if err := inNetns("g"+tt.ID+"-"+to.Name, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(to.Addr.String(), "0"))
		return err
	}); err != nil {
		return err
	}
	defer ln.Close()
	return inNetns("g"+tf.ID+"-"+from.Name, func() error {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
}

// healed tries reach for up to 5 s: a link brought up again forwards
// after a moment.
func healed(reach func() error) error {
	err := reach()
	for deadline := time.Now().Add(5 * time.Second); err != nil && time.Now().Before(deadline); err = reach() {
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// startEtcd starts an etcd member (Debian's etcd-server) on the first host
// of each testbed, one cluster across the machines, and returns a way to
// run etcdctl against the member of testbed i from inside its host.
func startEtcd(t *testing.T, tbs []*Testbed) func(i int, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("etcd"); err != nil {
		t.Skip("etcd is missing (scripts/install-deps.sh installs etcd-server)")
	}
	url := func(h *Host, port string) string { return "http://" + net.JoinHostPort(h.Addr.String(), port) }
	var cluster []string
	for i, tb := range tbs {
		cluster = append(cluster, fmt.Sprintf("e%d=%s", i, url(tb.Hosts[0], "2380")))
	}
	for i, tb := range tbs {
		h := tb.Hosts[0]
		if _, err := h.Start(agent.StartArgs{Name: "etcd", Path: "etcd", Args: []string{
			fmt.Sprintf("--name=e%d", i), "--data-dir=" + filepath.Join(h.DataDir, "etcd"),
			"--listen-client-urls=" + url(h, "2379"), "--advertise-client-urls=" + url(h, "2379"),
			"--listen-peer-urls=" + url(h, "2380"), "--initial-advertise-peer-urls=" + url(h, "2380"),
			"--initial-cluster=" + strings.Join(cluster, ","), "--initial-cluster-token=" + tbs[0].ID,
			"--initial-cluster-state=new", "--logger=zap", "--log-outputs=stderr",
		}}); err != nil {
			t.Fatal(err)
		}
	}
	etcdctl := func(i int, args ...string) (string, error) {
		h := tbs[i].Hosts[0]
		cmd := exec.Command("ip", append([]string{"netns", "exec", "g" + tbs[i].ID + "-" + h.Name, "etcdctl",
			"--endpoints=" + url(h, "2379"), "--command-timeout=3s"}, args...)...)
		cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	var out string
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		if out, err = etcdctl(0, "endpoint", "health", "--cluster"); err == nil {
			return etcdctl
		}
	}
	for _, tb := range tbs {
		logs, _ := filepath.Glob(filepath.Join(tb.Machine.Root, "tmp", "*", "h0", "log", "etcd.stderr"))
		for _, l := range logs {
			data, _ := os.ReadFile(l)
			if len(data) > 1500 {
				data = data[len(data)-1500:]
			}
			t.Logf("%s: ...%s", l, data)
		}
	}
	t.Fatalf("etcd across the machines not healthy: %v: %s", err, out)
	return nil
}

package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/agent"
	"github.com/gait-dev/gait/internal/gaitbin"
	"github.com/gait-dev/gait/internal/inventory"
	"github.com/gait-dev/gait/internal/limp"
	"github.com/gait-dev/gait/internal/testbed"
	"github.com/vishvananda/netns"
)

// The end-to-end test's three "machines" are hosts of a local testbed:
// each a network namespace running Debian's sshd, with a gait_root of its
// own. The control node is this process (or, to be killed, a helper
// process: the test binary with GAIT_E2E_CONTROL set).

const (
	e2eUser   = "gait-e2e"    // passwordless sudo
	e2eUserPw = "gait-e2e-pw" // sudo asks for a password
	sshd      = "/usr/sbin/sshd"
)

// fleet is the three machines and what reaches them.
type fleet struct {
	dir      string
	tb       *testbed.Testbed
	machines []inventory.Machine
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
// run ids, and waits to be killed.
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
	for _, m := range f.Machines {
		c, err := Connect(context.Background(), m, f.Opts)
		if err != nil {
			fmt.Println(err)
			return 1
		}
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
	fmt.Println("ready", strings.Join(ids, " "))
	select {}
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
	t.Cleanup(func() { os.RemoveAll(dir) })
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
		}
	}
	for _, u := range []string{e2eUser, e2eUserPw} {
		if exec.Command("id", u).Run() != nil {
			// "*": no password, yet not locked, so sshd lets a key in.
			run("useradd", "--system", "--no-create-home", "--shell", "/bin/sh", "--password", "*", u)
			t.Cleanup(func() { exec.Command("userdel", u).Run() })
		}
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
		if _, err := h.Start(testbed.ProcSpec{Name: "sshd", Path: sshd, Args: []string{"-D", "-e", "-f", conf}}); err != nil {
			t.Fatal(err)
		}
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
	f.opts = Options{KnownHosts: []string{knownHosts}, SSHConfig: "none", NoAgent: true, Binary: bin, AgentTimeout: 2 * time.Second}
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
		left = agent.Leftovers(f.machines[i].Root, 0, runs)
		return nil
	})
	return left
}

func TestManyMachines(t *testing.T) {
	f := upFleet(t)
	ctx := context.Background()

	t.Run("preflight bad machines", func(t *testing.T) {
		stranger, wrongKey, pwSudo := f.machines[0], f.machines[1], f.machines[2]
		stranger.Name, wrongKey.Name, pwSudo.Name = "stranger", "wrongkey", "pwsudo"
		wrongKey.Key = f.otherKey
		pwSudo.User = e2eUserPw
		opts := f.opts
		unknown := filepath.Join(f.dir, "known_hosts_without_m1")
		all, _ := os.ReadFile(f.opts.KnownHosts[0])
		os.WriteFile(unknown, []byte(strings.SplitN(string(all), "\n", 2)[1]), 0o644)
		opts.KnownHosts = []string{unknown}
		reports, ready := Preflight(ctx, []inventory.Machine{stranger, wrongKey, pwSudo}, opts, agent.CheckArgs{})
		for _, m := range ready {
			m.Close()
		}
		want := []string{
			"stranger: ssh: SSH to " + stranger.Addr + ":22: its host key is not in",
			"wrongkey: ssh: SSH to " + wrongKey.Addr + ":22 as gait-e2e: the machine refused every key offered (" + f.otherKey + ")",
			"pwsudo: sudo: sudo asks for a password",
		}
		for i, r := range reports {
			t.Logf("preflight says: %s", strings.Join(r.Problems, " / "))
			if len(r.Problems) != 1 || !strings.HasPrefix(r.Problems[0], want[i]) {
				t.Errorf("%s: got %q, want one line starting %q", r.Machine, r.Problems, want[i])
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
		// Whether h0 reaches h1, by TCP: this test runs on the machines'
		// kernel, so it can enter the remote hosts' namespaces.
		reach := func() error {
			var ln net.Listener
			if err := inNetns("g"+tb.ID+"-h1", func() (err error) {
				ln, err = net.Listen("tcp", net.JoinHostPort(h1.Addr.String(), "0"))
				return err
			}); err != nil {
				return err
			}
			defer ln.Close()
			return inNetns("g"+tb.ID+"-h0", func() error {
				c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second)
				if err == nil {
					c.Close()
				}
				return err
			})
		}
		if err := reach(); err != nil {
			t.Fatalf("h0 to h1 before any fault: %v", err)
		}
		faults := []limp.Fault{
			{Injector: limp.NIC{}, Target: limp.On(h0), Factor: 1000},
			{Injector: limp.Partition{}, Target: limp.On(h1), Factor: 1},
		}
		fctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		var events []limp.Event
		go func() { done <- limp.Run(fctx, faults, func(e limp.Event) { events = append(events, e) }) }()
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
		for _, e := range events {
			t.Logf("%s %s on %s", e.Action, e.Kind, e.Host)
		}
		// A link brought up again forwards after a moment.
		healed := reach()
		for deadline := time.Now().Add(5 * time.Second); healed != nil && time.Now().Before(deadline); healed = reach() {
			time.Sleep(100 * time.Millisecond)
		}
		if healed != nil {
			t.Errorf("after the faults cleared: %v", healed)
		}
		if got := rate(); !strings.Contains(got, "rate 100Mbit") {
			t.Errorf("h0's link after clear: tc says %q", got)
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

	t.Run("killed control leaves nothing", func(t *testing.T) {
		spec, _ := json.Marshal(map[string]any{"Machines": f.machines, "Opts": f.opts})
		for _, how := range []syscall.Signal{syscall.SIGKILL, syscall.SIGSTOP} {
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
			// SIGKILL closes the control's TCP connections; SIGSTOP keeps
			// them open and silent, so only the heartbeat tells.
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
		inv := filepath.Join(f.dir, "inventory.yaml")
		var b strings.Builder
		b.WriteString("machines:\n")
		for _, m := range f.machines {
			fmt.Fprintf(&b, "  - {name: %s, address: %s, user: %s, key: %s, root: %s}\n", m.Name, m.Addr, m.User, m.Key, m.Root)
		}
		os.WriteFile(inv, []byte(b.String()), 0o644)
		out, err := exec.Command(f.opts.Binary, "clean", "--inventory", inv, "--known-hosts", f.opts.KnownHosts[0], "--ssh-config", "none").CombinedOutput()
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

// inNetns runs f on a thread inside the named network namespace.
func inNetns(name string, f func() error) error {
	ns, err := netns.GetFromName(name)
	if err != nil {
		return err
	}
	defer ns.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := netns.Set(ns); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}

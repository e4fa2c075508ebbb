package cli

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/leftover"
	"github.com/gait-dev/gait/internal/systems/redis"
)

// How a test ends a long gait command: Ctrl-C, Ctrl-C twice, or SIGKILL
// followed by gait clean.
var endings = []string{"ctrl-c", "ctrl-c twice", "sigkill and clean"}

// leftoverCase is one command to start and end each way.
type leftoverCase struct {
	args  []string // after the gait program; STATE and DIR are replaced
	ready string   // a line containing it says the command is under way
	// inside, if set, runs once the command is ready, with its output so
	// far and the watch's environment: it starts processes of its own.
	inside func(t *testing.T, output string, env string) []*exec.Cmd
	mkdir  []string // directories to make in DIR first
	allow  []string // what may stay in DIR (leftover.Watch.Allow)
	names  []string // names of the command's scratch entries without a run id
}

// checkLeftovers runs c once per ending and checks that nothing is left:
// each ending is a subtest, so a failure names the command and the ending.
func checkLeftovers(t *testing.T, c leftoverCase) {
	for _, end := range endings {
		t.Run(end, func(t *testing.T) {
			dir, state := t.TempDir(), t.TempDir()
			for _, d := range c.mkdir {
				os.MkdirAll(filepath.Join(dir, d), 0o755)
			}
			w := leftover.Take(dir, state)
			// The state directory keeps its lock and the directory of
			// emulate's records, as /run/gait does.
			w.Allow = append(c.allow, "lock", "emulate")
			w.Names = c.names
			out := endCommand(t, c, end, dir, state, w)
			if left := w.Scan(); len(left) > 0 {
				t.Errorf("left behind:\n  %s\noutput:\n%s", strings.Join(left, "\n  "), out)
			}
		})
	}
}

// endCommand starts the command, waits until it is under way, ends it and
// returns what it said.
func endCommand(t *testing.T, c leftoverCase, end, dir, state string, w *leftover.Watch) string {
	t.Helper()
	var args []string
	for _, a := range c.args {
		args = append(args, strings.NewReplacer("STATE", state, "DIR", dir).Replace(a))
	}
	bin := gaitProgram(t)
	// Whatever happens, the test leaves nothing on the machine (after the
	// scan, which t.Cleanup follows).
	t.Cleanup(func() { exec.Command(bin, "clean", "--state-dir", state).Run() })
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), w.Env())
	var output lockedBuffer
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			output.Write([]byte(sc.Text() + "\n"))
			if ready != nil && strings.Contains(sc.Text(), c.ready) {
				close(ready)
				ready = nil
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-ready:
	case err := <-exited:
		t.Fatalf("gait %s ended before it was under way: %v\n%s", strings.Join(args, " "), err, output.String())
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("gait %s not under way after 60 s\n%s", strings.Join(args, " "), output.String())
	}
	w.Note()
	if c.inside != nil {
		for _, p := range c.inside(t, output.String(), w.Env()) {
			t.Cleanup(func() { p.Process.Kill(); p.Wait() }) // after the scan: gait must kill it; this reaps it
		}
	}
	switch end {
	case "ctrl-c":
		cmd.Process.Signal(syscall.SIGINT)
	case "ctrl-c twice":
		cmd.Process.Signal(syscall.SIGINT)
		time.Sleep(100 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGINT)
	case "sigkill and clean":
		cmd.Process.Kill()
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Errorf("gait %s still ran 30 s after %s; killed", strings.Join(args, " "), end)
	}
	if end == "sigkill and clean" {
		clean := exec.Command(bin, "clean", "--state-dir", state)
		clean.Env = cmd.Env
		if b, err := clean.CombinedOutput(); err != nil {
			t.Errorf("gait clean: %v\n%s", err, b)
		} else {
			output.Write(append([]byte("gait clean: "), b...))
		}
	}
	return output.String()
}

// inHosts starts a process in each testbed host the command printed, as
// docs/testbed.md shows: `ip netns exec NAMESPACE ...`.
func inHosts(t *testing.T, output, env string) []*exec.Cmd {
	var ps []*exec.Cmd
	for _, ns := range regexp.MustCompile(`g[0-9a-f]{5}-h[0-9]+`).FindAllString(output, -1) {
		p := exec.Command("ip", "netns", "exec", ns, "sleep", "300")
		p.Env = append(os.Environ(), env)
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
		waitForExec(t, p, "sleep")
	}
	if len(ps) == 0 {
		t.Fatalf("no host named in:\n%s", output)
	}
	return ps
}

// waitForExec waits until p runs name: ip netns exec enters the
// namespace before it execs the command, and a process still entering it
// when gait tears the host down (its namespace file open, not yet in it)
// ends up in the namespace after gait looked, which the test would take
// for gait leaving it behind.
func waitForExec(t *testing.T, p *exec.Cmd, name string) {
	t.Helper()
	comm := fmt.Sprintf("/proc/%d/comm", p.Process.Pid)
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(5 * time.Millisecond) {
		if b, err := os.ReadFile(comm); err == nil && strings.TrimSpace(string(b)) == name {
			return
		}
	}
	t.Fatalf("%s did not start %s within 10 s", strings.Join(p.Args, " "), name)
}

func TestLeftoversTestbedUp(t *testing.T) {
	needRootCLI(t)
	up := []string{"testbed", "up", "--hosts", "2", "--state-dir", "STATE"}
	for _, c := range []struct {
		name string
		c    leftoverCase
	}{
		{"plain", leftoverCase{args: up, ready: "Ctrl-C"}},
		{"disk", leftoverCase{args: append(up, "--disk"), ready: "Ctrl-C"}},
		{"disk, processes in hosts", leftoverCase{args: append(up, "--disk"), ready: "Ctrl-C", inside: inHosts}},
		{"dir that did not exist", leftoverCase{args: append(up, "--dir", "DIR/new/x"), ready: "Ctrl-C"}},
	} {
		t.Run(c.name, func(t *testing.T) { checkLeftovers(t, c.c) })
	}
}

func TestLeftoversEmulateMount(t *testing.T) {
	needRootCLI(t)
	checkLeftovers(t, leftoverCase{
		args:  []string{"emulate", "mount", "DIR/mnt", "--store", "DIR/store", "--state-dir", "STATE"},
		ready: "mounted",
		mkdir: []string{"mnt"},
		// The mount point is the user's, and the store is what the
		// command keeps on purpose.
		allow: []string{"mnt", "store"},
	})
}

// A failed mount leaves no store behind: a mount point that does not
// exist, or one in use.
func TestEmulateMountFailureLeavesNoStore(t *testing.T) {
	needRootCLI(t)
	dir := t.TempDir()
	busy := filepath.Join(dir, "busy")
	os.Mkdir(busy, 0o755)
	if err := syscall.Mount("none", busy, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	defer syscall.Unmount(busy, syscall.MNT_DETACH)
	for _, mnt := range []string{filepath.Join(dir, "missing"), busy} {
		store := filepath.Join(dir, "store")
		b, err := exec.Command(gaitProgram(t), "emulate", "mount", mnt, "--store", store, "--state-dir", t.TempDir()).CombinedOutput()
		if err == nil {
			t.Fatalf("mount on %s worked: %s", mnt, b)
		}
		if _, err := os.Stat(store); err == nil {
			t.Errorf("a failed mount on %s (%s) left its store %s", mnt, strings.TrimSpace(string(b)), store)
			os.RemoveAll(store)
		}
	}
}

// runScenario is a short scenario with limpfs disks and data in memory,
// on one etcd member: what gait run and gait bench leave can be checked
// in a few seconds.
const leftoverScenario = `name: t-leftover
description: leftover test
system: etcd
nodes: 1
data: memory
workload: {op: put, keys: 100, clients: 2, duration: 30s}
inject:
  - {fault: disk, target: h0, factors: [10], at: 0s}
`

func needEtcd(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/etcd"); err != nil {
		t.Skip("skipped: no /usr/bin/etcd (make deps installs etcd-server)")
	}
}

func scenarioFile(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "t-leftover.yaml")
	if err := os.WriteFile(path, []byte(leftoverScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// gait run and gait bench on the same short scenario: what each keeps of an
// interrupted run is its scenario (bench: per experiment, and its suite).
func TestLeftoversRunAndBench(t *testing.T) {
	needRootCLI(t)
	needEtcd(t)
	for verb, allow := range map[string][]string{
		"run":   {"out/scenario.yaml"},
		"bench": {"out/*/scenario.yaml", "out/suite.yaml"},
	} {
		t.Run(verb, func(t *testing.T) {
			checkLeftovers(t, leftoverCase{
				args:  []string{verb, scenarioFile(t), "--out", "DIR/out", "--state-dir", "STATE"},
				ready: " of 30s",
				allow: allow,
				names: []string{"t-leftover"},
			})
		})
	}
}

func TestLeftoversReplicaCluster(t *testing.T) {
	needRootCLI(t)
	if _, err := os.Stat(redis.ServerBinary); err != nil {
		t.Skipf("%s not installed", redis.ServerBinary)
	}
	checkLeftovers(t, leftoverCase{
		args:  []string{"replica", "cluster", "--voters", "1", "--state-dir", "STATE"},
		ready: "redis 198.1",
	})
}

// An interrupted gait run can be reported (--report-from: the runs that
// finished) and resumed (--resume: only the runs left), and the interrupted
// run leaves nothing in the output directory.
func TestRunInterruptedThenReportedAndResumed(t *testing.T) {
	needRootCLI(t)
	needEtcd(t)
	dir := t.TempDir()
	scenario, out := filepath.Join(dir, "s.yaml"), filepath.Join(dir, "out")
	src := strings.NewReplacer("30s", "3s", "t-leftover", "t-resume").Replace(leftoverScenario)
	if err := os.WriteFile(scenario, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := gaitProgram(t)
	run := exec.Command(bin, "run", scenario, "--out", out, "--state-dir", t.TempDir())
	var output lockedBuffer
	run.Stdout, run.Stderr = &output, &output
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt the second run, the 10x one, once its workload is under
	// way. Progress comes once a second with the elapsed time rounded, so
	// on a loaded machine a late tick says 2s where 1s was due.
	underWay := regexp.MustCompile(`\[2/2\] 10x r1: [12]s of 3s`)
	for deadline := time.Now().Add(120 * time.Second); !underWay.MatchString(output.String()); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			run.Process.Kill()
			run.Wait()
			t.Fatalf("the second run did not start:\n%s", output.String())
		}
	}
	run.Process.Signal(syscall.SIGINT)
	if err := run.Wait(); err == nil || !strings.Contains(output.String(), "1 of 2 runs finished") {
		t.Fatalf("interrupted run: %v\n%s", err, output.String())
	}
	// What the interrupted run had done is said, though the run is gone.
	if !regexp.MustCompile(`10x r1 had done [1-9][0-9]* requests, 0 errors, in [0-9]+s of its workload`).MatchString(output.String()) {
		t.Errorf("the interrupted message does not say what the run had done:\n%s", output.String())
	}
	if entries, _ := filepath.Glob(filepath.Join(out, "*")); !slices.Equal(entries, []string{filepath.Join(out, "f1-r1"), filepath.Join(out, "hosts"), filepath.Join(out, "scenario.yaml")}) {
		t.Errorf("after the interruption the output directory holds %v, want the baseline's run and logs and scenario.yaml", entries)
	}
	if logs, _ := filepath.Glob(filepath.Join(out, "hosts", "*")); !slices.Equal(logs, []string{filepath.Join(out, "hosts", "f1-r1")}) {
		t.Errorf("servers' logs %v, want only the finished run's", logs)
	}

	b, err := exec.Command(bin, "run", "--report-from", out).CombinedOutput()
	if err != nil || !strings.Contains(string(b), "holds 1 of the scenario's 2 runs") || !regexp.MustCompile(`(?m)^\s*baseline\s+1\s`).Match(b) {
		t.Errorf("--report-from of the interrupted run: %v\n%s", err, b)
	}

	b, err = exec.Command(bin, "run", scenario, "--out", out, "--resume", "--state-dir", t.TempDir()).CombinedOutput()
	if err != nil || !strings.Contains(string(b), "[1/2] t-resume baseline, repetition 1: finished before, kept") ||
		strings.Count(string(b), "starting 1 hosts") != 1 || !regexp.MustCompile(`(?m)^\s*10x\s+1\s`).Match(b) {
		t.Errorf("--resume: %v\n%s", err, b)
	}
}

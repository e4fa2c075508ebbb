package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/rundir"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root for network namespaces, tc and FUSE")
	}
	if _, err := os.Stat("/usr/bin/etcd"); err != nil {
		t.Skip("skipped: no /usr/bin/etcd (make deps installs etcd-server)")
	}
}

func parseScenario(t *testing.T, src string) *Scenario {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runLogged runs s into a new directory with its own state directory,
// logs the runner's log and returns it; nothing of the testbed may be
// left afterwards.
func runLogged(t *testing.T, s *Scenario) (string, []RunResult, string) {
	t.Helper()
	out, state := filepath.Join(t.TempDir(), "out"), t.TempDir()
	var log bytes.Buffer
	results, err := Run(context.Background(), s, Options{Out: out, StateDir: state, Log: &log})
	t.Logf("runner log:\n%s", log.String())
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(state, "*.json")); len(left) > 0 {
		t.Errorf("testbed state left behind: %v", left)
	}
	return out, results, log.String()
}

// runScenario runs s (runLogged) and saves its summary and report.
func runScenario(t *testing.T, s *Scenario) (string, Summary, []RunResult) {
	t.Helper()
	out, results, _ := runLogged(t, s)
	sum, err := Summarize(s, out, results)
	if err != nil {
		t.Fatal(err)
	}
	if err := sum.Save(); err != nil {
		t.Fatal(err)
	}
	if err := WriteReport(filepath.Join(out, "report.html"), s, sum, results); err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	sum.WriteText(&text)
	t.Logf("summary:\n%s", text.String())
	return out, sum, results
}

// TestLeaderNIC is the bundled leader-nic scenario, short: a leader whose
// link is 100 times slower must cost the writes dearly.
func TestLeaderNIC(t *testing.T) {
	needRoot(t)
	s := parseScenario(t, `name: t-leader-nic
system: etcd
nodes: 3
workload: {op: put, keys: 100, value_size: 1KiB, clients: 8, duration: 3s}
inject:
  - {fault: nic, target: leader, factors: [100], at: 0s}
`)
	out, sum, results := runScenario(t, s)
	if len(sum.Steps) != 2 || len(results) != 2 {
		t.Fatalf("%d steps, %d runs", len(sum.Steps), len(results))
	}
	base, slow := sum.Steps[0], sum.Steps[1]
	if *slow.Factor != 100 || base.Requests == 0 || slow.Requests == 0 {
		t.Fatalf("steps: %+v", sum.Steps)
	}
	// At 1 Mbit/s the leader can replicate a few dozen 1 KiB puts a second
	// where the baseline does thousands: far beyond any noise.
	if !(slow.Throughput < base.Throughput/2 && slow.Slowdown > 2) {
		t.Errorf("100x leader NIC: throughput %.0f/s against %.0f/s, slowdown %.2f", slow.Throughput, base.Throughput, slow.Slowdown)
	}
	r := results[1]
	if len(r.Events) == 0 || r.Events[0].Action != "apply" || r.Events[0].Role != "leader" || r.Events[0].Error != "" {
		t.Fatalf("events: %+v", r.Events)
	}
	if r.Roles[r.Events[0].Host] != "leader" {
		t.Errorf("the fault hit %s, roles at start %v", r.Events[0].Host, r.Roles)
	}
	for _, c := range r.Clients {
		if c == r.Events[0].Host {
			t.Errorf("clients on the faulted leader %s: %v", c, r.Clients)
		}
	}
	run, err := rundir.Open(filepath.Join(out, "f100-r1"))
	if err != nil {
		t.Fatal(err)
	}
	if run.Config.Factor != 100 || run.Config.Fault != "nic" || run.Config.Factors["slowdown"] != "100" {
		t.Errorf("run.json: %+v", run.Config)
	}
	rows, err := run.TimeSeries()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, row := range rows {
		for k := range row.Metrics {
			name, _ := splitMetric(k)
			seen[name] = true
		}
	}
	for _, m := range []string{"etcd_server_proposals_pending", "proc_cpu", "proc_rss_bytes", "gait_fault"} {
		if !seen[m] {
			t.Errorf("time series lacks %s (has %v)", m, seen)
		}
	}
	// A resumed scenario reads a finished run back with its whole time.
	again, err := finishedRun(r.ID, r.Dir)
	if err != nil || again.Wall.Round(time.Millisecond) != r.Wall.Round(time.Millisecond) || r.Wall < r.Ready {
		t.Errorf("run read back: wall %v against %v (ready %v), error %v", again.Wall, r.Wall, r.Ready, err)
	}
	for _, f := range []string{"summary.json", "report.html", "scenario.yaml", "hosts/f100-r1/h0/log/etcd.stderr"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestEmulatedStorage runs etcd on emulating stores and checks that it
// really wrote its data there.
func TestEmulatedStorage(t *testing.T) {
	needRoot(t)
	s := parseScenario(t, `name: t-emulated
system: etcd
nodes: 1
storage: emulated
workload: {op: put, keys: 100, value_size: 1KiB, clients: 2, duration: 2s}
`)
	_, _, log := runLogged(t, s)
	m := regexp.MustCompile(`h0: emulated store: (\d+) files, (\d+) bytes logical, \d+ physical .*; (\d+) bytes written`).FindStringSubmatch(log)
	if m == nil {
		t.Fatal("the runner did not report h0's emulated store")
	}
	files, _ := strconv.Atoi(m[1])
	logical, _ := strconv.Atoi(m[2])
	written, _ := strconv.Atoi(m[3])
	// etcd's write-ahead log alone is a 64 MB preallocated file, and each
	// of the ~thousands of 1 KiB puts went through the mount.
	if files < 2 || logical < 1<<20 || written < 100<<10 {
		t.Errorf("h0's store: %d files, %d bytes logical, %d bytes written: etcd did not write there", files, logical, written)
	}
}

// TestLeaderCrash kills the leader for a second and checks that it was
// restarted and that the cluster kept serving.
func TestLeaderCrash(t *testing.T) {
	needRoot(t)
	s := parseScenario(t, `name: t-leader-crash
system: etcd
nodes: 3
workload: {op: put, keys: 100, clients: 4, duration: 4s}
inject:
  - {fault: crash, target: leader, at: 1s, for: 1s}
`)
	_, sum, results := runScenario(t, s)
	r := results[1]
	if len(r.Events) != 2 || r.Events[0].Action != "apply" || r.Events[1].Action != "clear" ||
		r.Events[0].Error != "" || r.Events[1].Error != "" {
		t.Fatalf("events: %+v", r.Events)
	}
	// The clear is due 2 s after the schedule's start whenever the crash
	// began, and a busy machine can start the crash late (0.87 s apart
	// once at load average 8).
	if d := r.Events[1].T - r.Events[0].T; d < 0.5 || d > 5 {
		t.Errorf("restarted %.2fs after the crash, want about 1s", d)
	}
	if sum.Steps[1].Label != "crash" || sum.Steps[1].Factor != nil || sum.Steps[1].Requests == 0 {
		t.Errorf("crash step: %+v", sum.Steps[1])
	}
}

// TestNeedsRoot runs gait as nobody: it must say it needs root and fail.
func TestNeedsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root to switch to another user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("skipped: no setpriv")
	}
	bin := buildGait(t)
	os.Chmod(filepath.Dir(bin), 0o755)
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "run", "../../scenarios/etcd/leader-nic.yaml",
		"--out", filepath.Join(t.TempDir(), "out"))
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 || !strings.Contains(string(b), "needs root") {
		t.Errorf("as nobody: %v, output %q", err, b)
	}
}

func buildGait(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gait-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "gait")
	if b, err := exec.Command("go", "build", "-o", bin, "github.com/gait-dev/gait/cmd/gait").CombinedOutput(); err != nil {
		t.Fatalf("build gait: %v\n%s", err, b)
	}
	return bin
}

func TestRolesText(t *testing.T) {
	few := map[string]string{"h0": "namenode", "h1": "datanode", "h2": "datanode"}
	if got, want := rolesText(few), "[h0 namenode h1 datanode h2 datanode]"; got != want {
		t.Errorf("3 members: %q, want %q", got, want)
	}
	many := map[string]string{"h0": "namenode"}
	for i := 1; i < 100; i++ {
		many["h"+strconv.Itoa(i)] = "datanode"
	}
	if got, want := rolesText(many), "[99 datanode 1 namenode]"; got != want {
		t.Errorf("100 members: %q, want %q", got, want)
	}
}

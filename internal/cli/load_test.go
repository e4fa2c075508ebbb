package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gait-dev/gait/internal/rundir"
	"github.com/gait-dev/gait/internal/systems/redis"
)

func runGait(args ...string) (stdout, stderr string, err error) {
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

func TestLoadRedis(t *testing.T) {
	if _, err := os.Stat(redis.ServerBinary); err != nil {
		t.Skipf("%s not installed", redis.ServerBinary)
	}
	srv, err := redis.StartServer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	closed := filepath.Join(dir, "closed")
	stdout, stderr, err := runGait("load", "--addr", srv.Addr, "--clients", "2", "--requests", "500",
		"--value-size", "64B", "--out", closed, "--factor", "clients=2", "--factor", "value_size=64B",
		"--pid", "redis="+strconv.Itoa(srv.PID()))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "500 requests") || !strings.Contains(stderr, "closed loop, 2 clients") {
		t.Errorf("stdout %q\nstderr %q", stdout, stderr)
	}
	run, err := rundir.Open(closed)
	if err != nil {
		t.Fatal(err)
	}
	if run.Config.Factors["clients"] != "2" || run.Config.Workload["value_size"] != 64.0 {
		t.Errorf("run.json: factors %v, workload %v", run.Config.Factors, run.Config.Workload)
	}
	if s, err := run.Summary(); err != nil || s.Requests != 500 || s.Errors != 0 {
		t.Errorf("summary %+v, %v", s, err)
	}

	open := filepath.Join(dir, "open")
	stdout, stderr, err = runGait("load", "--addr", srv.Addr, "--rate", "50%", "--poisson", "--calibrate", "200ms",
		"--requests", "300", "--out", open)
	if err != nil || !strings.Contains(stderr, "maximum throughput") {
		t.Fatalf("open loop: %v\n%s", err, stderr)
	}
	// Whether this busy machine kept the schedule or not, the summary says
	// which, with the figure.
	if !strings.Contains(stdout, "p99 of send lateness") {
		t.Errorf("open loop's summary does not tell the generator's lag:\n%s", stdout)
	}
	run, err = rundir.Open(open)
	if err != nil || run.Config.Workload["loop"] != "open" {
		t.Fatalf("open loop run: %v", err)
	}
	if s, err := run.Summary(); err != nil || s.Generator == nil || s.Generator.Sent != 300 || s.Generator.Tolerance != 0.001 {
		t.Errorf("open loop's summary.json: %+v, %v; want its generator's lag for 300 requests", s.Generator, err)
	}
}

func TestLoadBadInput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "run")
	exists := filepath.Join(dir, "exists")
	os.Mkdir(exists, 0o755)
	base := []string{"load", "--addr", "127.0.0.1:1"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"load", "--out", out}, "--addr is required"},
		{base, "--out is required"},
		{append(base, "--out", exists), "already exists"},
		{append(base, "--out", out, "--system", "mysql"), `--system: unknown system "mysql"`},
		{append(base, "--out", out, "--value-size", "1.5KiB"), "--value-size"},
		{append(base, "--out", out, "--rate", "2000"), "--rate"},
		{append(base, "--out", out, "--rate", "150%"), "--rate"},
		{append(base, "--out", out, "--rate", "10/s", "--clients", "3"), "--rate: give clients (closed loop) or rate (open loop), not both"},
		{append(base, "--out", out, "--poisson"), "--poisson: only applies to an open loop (rate)"},
		{append(base, "--out", out, "--mix", "put:1"), "--mix"},
		{append(base, "--out", out, "--keys", "0"), "--keys 0: want a positive value"},
		{append(base, "--out", out, "--timeout", "0s"), "--timeout 0s: want a positive value"},
		{append(base, "--out", out, "--key-dist", "zipf:0.5"), "--key-dist"},
		{append(base, "--out", out, "--factor", "clients"), "--factor"},
		{append(base, "--out", out, "--factor", "a=1", "--factor", "a=2"), "twice"},
		{append(base, "--out", out, "--pid", "redis=x"), "--pid"},
		{append(base, "--out", out, "--duration", "-1s"), "--duration -1s: want a positive value"},
		{append(base, "--out", out, "--max-in-flight", "4"), "--max-in-flight: only applies to an open loop (rate)"},
		{append(base, "--out", out, "--value-size", "513MiB"), "--value-size: 513MiB: want at most 512MiB"},
		{append(base, "--out", out, "--system", "etcd"), "gait load drives a running server of " + strings.Join(dialableSystems(), ", ") + " only"},
		{append(base, "--out", out, "--duration", "10"), "duration"},
		{append(base, "--out", out, "--requests", "10", "--no-preload"), "127.0.0.1:1"}, // nothing listens
	} {
		_, _, err := runGait(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want one mentioning %q", c.args, err, c.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("%v left %s behind", c.args, out)
		}
		if m, _ := filepath.Glob(out + "*"); len(m) > 0 {
			t.Fatalf("%v left %v behind", c.args, m)
		}
	}
}

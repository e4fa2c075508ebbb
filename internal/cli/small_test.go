package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/bench"
	"github.com/gait-dev/gait/internal/rundir"
)

// The small things of issue 31 item 10 a user tripped on, one test each.

// TestLoadInterruptedSaysSo: Ctrl-C in gait load says it was interrupted,
// not "context canceled".
func TestLoadInterruptedSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	root := newRootCmd()
	root.SetArgs([]string{"load", "--addr", "127.0.0.1:1", "--out", filepath.Join(t.TempDir(), "x")})
	root.SetOut(&strings.Builder{})
	root.SetErr(&strings.Builder{})
	err := root.ExecuteContext(ctx)
	if err == nil || !strings.Contains(err.Error(), "interrupted (nothing written)") || strings.Contains(err.Error(), "context canceled") {
		t.Errorf("interrupted load: %v", err)
	}
}

// TestExportWithoutCSVFlag: CSV is export's only format, so it needs no flag.
func TestExportWithoutCSVFlag(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	w, err := rundir.Create(dir, rundir.Config{System: "redis", Ops: []string{"get"}, Hosts: []rundir.Host{{Name: "h0"}}})
	if err != nil {
		t.Fatal(err)
	}
	w.Add(rundir.Sample{Latency: time.Millisecond})
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"export", dir}, {"export", dir, "--csv"}} {
		out, _, err := runGait(args...)
		if err != nil || !strings.HasPrefix(out, "start_s,latency_ns,op,host,outcome\n") {
			t.Errorf("gait %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestSimulateJSONNamesStdErrAsPredict: simulate's JSON says sla_stderr,
// as predict's does.
func TestSimulateJSONNamesStdErrAsPredict(t *testing.T) {
	out, _, err := runGait("model", "simulate", "--service", "exp:1ms", "--bound", "3ms", "--utilization", "0.3",
		"--duplicates", "1", "--replicas", "1", "--requests", "20000", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc []map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc) == 0 || doc[0]["sla_stderr"] == nil {
		t.Fatal(err)
	}
	if strings.Contains(out, `"stderr"`) {
		t.Errorf("simulate JSON:\n%s", out)
	}
}

// TestEmulateStatsAdvice: stats on a directory that is not a store says
// what a store is, not a mount's "give an empty or new directory".
func TestEmulateStatsAdvice(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes"), []byte("x"), 0o644)
	_, _, err := runGait("emulate", "stats", dir)
	if err == nil || !strings.Contains(err.Error(), "give the --store directory of a gait emulate mount") {
		t.Errorf("emulate stats on a plain directory: %v", err)
	}
}

// TestInterruptedRunKeepsItsCounts: the message of an interrupted gait run
// says what the run in progress had done by its last status line (its
// run directory is removed, so nothing else would).
func TestInterruptedRunKeepsItsCounts(t *testing.T) {
	if got := interruptedRun(nil, nil); got != "" {
		t.Errorf("before any status: %q, want nothing", got)
	}
	id := bench.RunID{Step: bench.Step{Index: 1, Factor: 10}, Rep: 1}
	st := &bench.Status{ID: id, Requests: 27, Failed: 3, Elapsed: 42 * time.Second, Done: true}
	if got, want := interruptedRun(st, nil), " (10x r1 had done 27 requests, 3 errors, in 42s of its workload)"; got != want {
		t.Errorf("interruptedRun = %q, want %q", got, want)
	}
	if got := interruptedRun(st, []bench.RunResult{{ID: id}}); got != "" {
		t.Errorf("the last status is of a finished run: %q, want nothing", got)
	}
	if s := st.String(); !strings.Contains(s, "27 requests, 3 errors") {
		t.Errorf("status line %q does not count the errors", s)
	}
}

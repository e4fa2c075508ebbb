package rundir

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func writeRun(t *testing.T, dir string, samples []Sample) {
	t.Helper()
	w, err := Create(dir, Config{Name: "t", System: "redis", Factor: 1, Ops: []string{"get", "set"},
		Hosts: []Host{{Name: "h0"}, {Name: "h1"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		w.Add(s)
	}
	w.AddMetric(0, "queue", 3)
	if err := w.Close(map[string]any{"note": "x"}); err != nil {
		t.Fatal(err)
	}
}

func TestRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	in := []Sample{
		{Start: 0, Latency: 2 * time.Millisecond, Op: 0, Host: 1, Outcome: OK},
		{Start: time.Second, Latency: 4 * time.Millisecond, Op: 1, Host: 0, Outcome: Error},
		{Start: 1500 * time.Millisecond, Latency: 6 * time.Millisecond, Op: 1, Host: 0, Outcome: Timeout},
	}
	writeRun(t, dir, in)
	if _, err := os.Stat(dir + ".partial"); !os.IsNotExist(err) {
		t.Fatalf("temporary directory left behind: %v", err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Samples()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(in) {
		t.Fatalf("got %d samples, want %d", len(got), len(in))
	}
	for i := range in {
		if got[i] != in[i] {
			t.Errorf("sample %d: got %+v, want %+v", i, got[i], in[i])
		}
	}
	lat, err := r.Latencies()
	if err != nil || lat[2] != 0.006 {
		t.Fatalf("Latencies: %v %v", lat, err)
	}
	sum, err := r.Summary()
	if err != nil {
		t.Fatal(err)
	}
	if sum.Requests != 3 || sum.Errors != 1 || sum.Timeouts != 1 || sum.P50 != 0.004 || sum.Max != 0.006 {
		t.Errorf("summary: %+v", sum)
	}
	if sum.Mean < 0.003999 || sum.Mean > 0.004001 {
		t.Errorf("mean %v, want 0.004", sum.Mean)
	}
	ts, err := r.TimeSeries()
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Throughput != 1 || ts[1].Throughput != 2 || ts[0].Metrics["queue"] != 3 {
		t.Errorf("time series: %+v", ts)
	}
	if r.OpName(1) != "set" || r.HostName(1) != "h1" {
		t.Errorf("names: %s %s", r.OpName(1), r.HostName(1))
	}
}

func TestEmptyRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	writeRun(t, dir, nil)
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if lat, err := r.Latencies(); err != nil || len(lat) != 0 {
		t.Fatalf("got %v %v", lat, err)
	}
}

func TestCreateRefusesExisting(t *testing.T) {
	dir := t.TempDir()
	if _, err := Create(dir, Config{}); err == nil {
		t.Fatal("Create over an existing directory succeeded")
	}
}

func TestOpenRejectsDamage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	writeRun(t, dir, []Sample{{Latency: 1}, {Latency: 2}})
	col := filepath.Join(dir, samplesDir, latencyColumn)
	if err := os.Truncate(col, 12); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil {
		t.Fatal("Open accepted a truncated latency column")
	}
	if _, err := Open(t.TempDir()); err == nil {
		t.Fatal("Open accepted a directory without run.json")
	}
}

func BenchmarkLatencies(b *testing.B) {
	const n = 10_000_000
	dir := filepath.Join(b.TempDir(), "run")
	w, err := Create(dir, Config{Ops: []string{"get"}})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		w.Add(Sample{Start: time.Duration(i) * time.Microsecond, Latency: time.Duration(100_000 + i%5000)})
	}
	if err := w.Close(nil); err != nil {
		b.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(n * 8)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Latencies(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

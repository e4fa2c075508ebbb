package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
	r, got := openSamples(t, dir)
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
	cols := "start.i64, latency.i64, op.u8, host.u8, outcome.u8"
	cases := []struct {
		name   string
		damage func(dir string) error
		want   string // the error after "open run directory DIR: "
	}{
		{"latency column is a directory", func(dir string) error {
			// 4096 bytes of directory would pass for 512 samples.
			col := filepath.Join(dir, samplesDir, latencyColumn)
			if err := os.Remove(col); err != nil {
				return err
			}
			return os.Mkdir(col, 0o755)
		}, "samples/latency.i64: a directory, not a file of samples"},
		{"column is a pipe", func(dir string) error {
			col := filepath.Join(dir, samplesDir, opColumn)
			if err := os.Remove(col); err != nil {
				return err
			}
			return syscall.Mkfifo(col, 0o644)
		}, "samples/op.u8: a named pipe, not a file of samples"},
		{"column missing", func(dir string) error {
			return os.Remove(filepath.Join(dir, samplesDir, hostColumn))
		}, "samples/host.u8: missing (a run directory's samples are " + cols + ")"},
		{"samples missing", func(dir string) error {
			return os.RemoveAll(filepath.Join(dir, samplesDir))
		}, "no samples directory (every run directory has one, holding " + cols + ")"},
		{"samples is a file", func(dir string) error {
			if err := os.RemoveAll(filepath.Join(dir, samplesDir)); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, samplesDir), nil, 0o644)
		}, "samples: a file, not a directory"},
		{"truncated mid-value", func(dir string) error {
			return os.Truncate(filepath.Join(dir, samplesDir, latencyColumn), 12)
		}, "samples/latency.i64: 12 bytes, not a whole number of 8-byte values (truncated?)"},
		{"truncated at a value", func(dir string) error {
			return os.Truncate(filepath.Join(dir, samplesDir, startColumn), 8)
		}, "the sample columns disagree on the number of samples " +
			"(start.i64 1, latency.i64 2, op.u8 2, host.u8 2, outcome.u8 2); truncated?"},
		{"run.json is a directory", func(dir string) error {
			if err := os.Remove(filepath.Join(dir, configFile)); err != nil {
				return err
			}
			return os.Mkdir(filepath.Join(dir, configFile), 0o755)
		}, "run.json: a directory, not a file"},
		{"run.json empty", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, configFile), []byte("\n"), 0o644)
		}, "run.json: empty"},
		{"run.json not an object", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, configFile), []byte("null"), 0o644)
		}, "run.json: not a JSON object"},
		{"run.json cut short", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, configFile), []byte(`{"format_version": 1,`), 0o644)
		}, "run.json: not valid JSON: unexpected end of JSON input"},
		{"run.json without version", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, configFile), []byte(`{"name": "x"}`), 0o644)
		}, "run.json has no format_version (not written by gait?)"},
		{"run.json of a later gait", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, configFile), []byte(`{"format_version": 2}`), 0o644)
		}, "format version 2, this gait reads 1"},
		{"run.json too large", func(dir string) error {
			return os.Truncate(filepath.Join(dir, configFile), maxJSONFile+1)
		}, "run.json: 16777217 bytes, more than the 16 MiB it may hold"},
		{"run.json missing", func(dir string) error {
			return os.Remove(filepath.Join(dir, configFile))
		}, "no run.json (not a run directory?)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			writeRun(t, dir, []Sample{{Latency: 1}, {Latency: 2}})
			if err := tc.damage(dir); err != nil {
				t.Fatal(err)
			}
			_, err := Open(dir)
			if want := "open run directory " + dir + ": " + tc.want; err == nil || err.Error() != want {
				t.Fatalf("error %v\nwant  %s", err, want)
			}
		})
	}

	// An unfinished run directory is refused by name, whatever it holds.
	dir := filepath.Join(t.TempDir(), "run")
	writeRun(t, dir, []Sample{{Latency: 1}})
	if err := os.Rename(dir, dir+PartialSuffix); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir + PartialSuffix); err == nil || !strings.Contains(err.Error(), "an unfinished run directory") {
		t.Errorf("partial: %v", err)
	}
	if IsRunDir(dir + PartialSuffix) {
		t.Errorf("IsRunDir accepts a partial run directory")
	}
	if _, err := Open(filepath.Join(dir, "nope")); err == nil || !strings.HasSuffix(err.Error(), ": no such directory") {
		t.Errorf("missing directory: %v", err)
	}
}

func TestDamagedSummaryAndTimeSeries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	writeRun(t, dir, []Sample{{Latency: 1}})
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, summaryFile), []byte("{}"), 0o644)
	if _, err := r.Summary(); err == nil || !strings.HasSuffix(err.Error(), "summary.json has format version 0, this gait reads 1") {
		t.Errorf("summary without version: %v", err)
	}
	os.Remove(filepath.Join(dir, timeseriesFile))
	os.Mkdir(filepath.Join(dir, timeseriesFile), 0o755)
	if _, err := r.TimeSeries(); err == nil || !strings.HasSuffix(err.Error(), "timeseries.csv: a directory, not a file") {
		t.Errorf("time series a directory: %v", err)
	}
	// A column that shrinks after Open is an error, not short data.
	os.Truncate(filepath.Join(dir, samplesDir, latencyColumn), 0)
	if _, err := r.Latencies(); err == nil || !strings.Contains(err.Error(), "shorter than when the run directory was opened") {
		t.Errorf("column shrunk: %v", err)
	}
	os.Truncate(filepath.Join(dir, samplesDir, opColumn), 0)
	if _, err := r.Samples(); err == nil {
		t.Errorf("byte column shrunk: no error")
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

// openSamples opens the run directory dir and reads its samples.
func openSamples(t *testing.T, dir string) (*Run, []Sample) {
	t.Helper()
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Samples()
	if err != nil {
		t.Fatal(err)
	}
	return r, got
}

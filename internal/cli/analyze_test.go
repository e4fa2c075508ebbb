package cli

import (
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// runMain runs Main with args, capturing what it writes to standard output
// and standard error.
func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	outF, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	errF, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outF, errF
	code = Main(args)
	os.Stdout, os.Stderr = oldOut, oldErr
	read := func(f *os.File) string {
		f.Seek(0, io.SeekStart)
		b, _ := io.ReadAll(f)
		f.Close()
		return string(b)
	}
	return code, read(outF), read(errF)
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAnalyzeCSV(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("clients,latency_us\n")
	for i := range 2000 {
		b.WriteString([]string{"1", "8"}[i%2] + "," + []string{"100", "120", "90", "110"}[i%4] + "\n")
	}
	trace := write(t, dir, "trace.csv", b.String())
	html := filepath.Join(dir, "report.html")

	code, out, errs := runMain(t, "analyze", trace, "--html", html)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if !strings.Contains(out, "clients=1") || !strings.Contains(out, "clients influences the mean") {
		t.Errorf("text output:\n%s", out)
	}
	page, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(page), "<svg") {
		t.Errorf("HTML report: %v", err)
	}

	code, out, _ = runMain(t, "analyze", trace, "--format", "json")
	var doc struct {
		Configurations []struct {
			Name  string  `json:"name"`
			Count int     `json:"count"`
			Mean  float64 `json:"mean"`
		} `json:"configurations"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Configurations) != 2 {
		t.Fatalf("JSON output (exit %d):\n%s", code, out)
	}
	// clients=1 has rows 0, 2, 4, ...: 100 and 90 µs alternately.
	if c := doc.Configurations[0]; c.Name != "clients=1" || c.Count != 1000 || math.Abs(c.Mean-95e-6) > 1e-18 {
		t.Errorf("first configuration %+v", c)
	}

	// clients=8 alternates 120 and 110 µs: half of them within 115µs.
	code, out, _ = runMain(t, "analyze", trace, "--bound", "115us")
	if code != 0 || !strings.Contains(out, "within 115µs") || !strings.Contains(out, "50.000%") ||
		!strings.Contains(out, "100.000%") {
		t.Errorf("--bound (exit %d):\n%s", code, out)
	}
}

// TestAnalyzeBadInput checks that each kind of bad input gives exit code 1,
// one line on standard error naming the file, the line and the problem, and
// leaves no report behind.
func TestAnalyzeBadInput(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"missing file", []string{filepath.Join(dir, "nope.csv")}, filepath.Join(dir, "nope.csv") + ": no such file or directory"},
		{"not a number", []string{write(t, dir, "nan.csv", "a,latency_us\nx,1\nx,abc\n")},
			filepath.Join(dir, "nan.csv") + `:3: column latency_us: "abc" is not a number`},
		{"negative", []string{write(t, dir, "neg.csv", "latency_ms\n-1\n")},
			filepath.Join(dir, "neg.csv") + `:2: column latency_ms: negative latency "-1"`},
		{"unknown unit", []string{write(t, dir, "u.csv", "latency\n1\n"), "--unit", "min"},
			`--unit: unknown unit "min" (want ns, us, ms or s)`},
		{"ragged row", []string{write(t, dir, "rag.csv", "a,latency_us\n1,2\n1\n")},
			filepath.Join(dir, "rag.csv") + ":3: 1 fields, the header has 2"},
		{"corrupt histogram log", []string{write(t, dir, "bad.hlog", "#[StartTime: 1]\n0.0,1.0,1.0,HISTnotbase64\n")},
			filepath.Join(dir, "bad.hlog") + ":2: corrupt histogram: "},
		{"empty file", []string{write(t, dir, "empty.csv", "")}, filepath.Join(dir, "empty.csv") + ": file is empty"},
		{"second path bad", []string{write(t, dir, "ok.csv", "latency_us\n1\n"), filepath.Join(dir, "nope2.csv")},
			filepath.Join(dir, "nope2.csv") + ": no such file or directory"},
		{"bad format", []string{write(t, dir, "ok2.csv", "latency_us\n1\n"), "--format", "xml"},
			`analyze: --format "xml": want text or json`},
		{"bound not a duration", []string{write(t, dir, "ok3.csv", "latency_us\n1\n"), "--bound", "2"},
			`--bound: "2": a duration needs a unit, such as 2ms or 2s`},
		{"bound not positive", []string{write(t, dir, "ok4.csv", "latency_us\n1\n"), "--bound", "-1ms"},
			`--bound "-1ms": want a positive duration such as 10ms`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			html := filepath.Join(t.TempDir(), "report.html")
			code, out, errs := runMain(t, append(append([]string{"analyze"}, tc.args...), "--html", html)...)
			if code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			if !strings.HasPrefix(errs, "gait: "+tc.want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("stderr %q, want one line starting %q", errs, "gait: "+tc.want)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
			entries, _ := os.ReadDir(filepath.Dir(html))
			if len(entries) != 0 {
				t.Errorf("left behind: %v", entries)
			}
		})
	}
}

func TestAnalyzeKeepsOldReportOnError(t *testing.T) {
	dir := t.TempDir()
	html := write(t, dir, "report.html", "previous report")
	bad := write(t, dir, "bad.csv", "latency_us\nx\n")
	if code, _, _ := runMain(t, "analyze", bad, "--html", html); code != 1 {
		t.Fatalf("exit %d", code)
	}
	if b, _ := os.ReadFile(html); string(b) != "previous report" {
		t.Errorf("report overwritten: %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("temporary files left: %v", entries)
	}
}

func TestAnalyzeHistogramLog(t *testing.T) {
	var b strings.Builder
	w := hdrhistogram.NewHistogramLogWriter(&b)
	w.OutputLegend()
	for i, tag := range []string{"get", "set", "get"} {
		h := hdrhistogram.New(1, 3_600_000_000, 3)
		for v := range 1000 {
			h.RecordValue(int64(100 + v + 50*i)) // µs
		}
		h.SetTag(tag)
		h.SetEndTimeMs(1000)
		// The default options print Interval_Max as max / 10^6.
		if err := w.OutputIntervalHistogramWithLogOptions(h, hdrhistogram.DefaultHistogramLogOptions()); err != nil {
			t.Fatal(err)
		}
	}
	log := write(t, t.TempDir(), "wrk.hlog", b.String())
	code, out, errs := runMain(t, "analyze", log)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"tag=get", "2000", "tag=set", "1000",
		"Note: tag=get, tag=set: values read as nanoseconds"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runMain(t, "analyze", log, "--unit", "us")
	if code != 0 || strings.Contains(out, "Note:") || !regexp.MustCompile(`tag=get +2000 +649µs`).MatchString(out) {
		t.Errorf("with --unit us (exit %d):\n%s", code, out)
	}
}

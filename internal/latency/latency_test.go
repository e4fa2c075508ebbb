package latency

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/gait-dev/gait/internal/clip"
	"github.com/gait-dev/gait/internal/rundir"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func byName(cs []Configuration) map[string]Configuration {
	m := map[string]Configuration{}
	for _, c := range cs {
		m[c.Name] = c
	}
	return m
}

func TestCSVGroupsRowsByFactors(t *testing.T) {
	path := writeFile(t, "trace.csv", "clients,latency_us,op\n"+
		"8,100,get\n"+
		"8,300,get\n"+
		"16,250,get\n"+
		"8,200.5,set\n"+
		"8,400,get\n")
	cs, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 3 {
		t.Fatalf("got %d configurations, want 3: %+v", len(cs), cs)
	}
	// First appearance order, names in header order.
	names := []string{cs[0].Name, cs[1].Name, cs[2].Name}
	want := []string{"clients=8 op=get", "clients=16 op=get", "clients=8 op=set"}
	if !slices.Equal(names, want) {
		t.Fatalf("names %q, want %q", names, want)
	}
	if got := cs[0].Latencies; !slices.Equal(got, []float64{100 / 1e6, 300 / 1e6, 400 / 1e6}) {
		t.Errorf("latencies of %s: %v", cs[0].Name, got)
	}
	if cs[2].Latencies[0] != 200.5/1e6 {
		t.Errorf("fractional latency: %v", cs[2].Latencies)
	}
	if cs[1].Factors["clients"] != "16" || cs[1].Factors["op"] != "get" || len(cs[1].Factors) != 2 {
		t.Errorf("factors: %v", cs[1].Factors)
	}
	if cs[0].Source != path {
		t.Errorf("source %q", cs[0].Source)
	}
}

func TestCSVUnitsAndColumns(t *testing.T) {
	cases := []struct {
		name, content string
		opt           Options
		want          float64
	}{
		{"ns", "latency_ns\n1500\n", Options{}, 1500 / 1e9},
		{"ms", "latency_ms\n2.5\n", Options{}, 2.5 / 1e3},
		{"s", "latency_s\n0.25\n", Options{}, 0.25},
		{"chosen column with suffix", "rtt_ms,x\n3,a\n", Options{LatencyColumn: "rtt_ms"}, 3 / 1e3},
		{"chosen column and unit", "rtt,x\n3,a\n", Options{LatencyColumn: "rtt", Unit: "us"}, 3 / 1e6},
		{"plain latency with unit", "latency,x\n7,a\n", Options{Unit: "µs"}, 7 / 1e6},
		{"agreeing unit", "latency_us\n7\n", Options{Unit: "us"}, 7 / 1e6},
		{"CRLF, BOM and spaces", "\ufeffa, latency_us\r\n x , 12 \r\n", Options{}, 12 / 1e6},
		{"exponent", "latency_s\n1e-3\n", Options{}, 1e-3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := Load(writeFile(t, "t.csv", tc.content), tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) != 1 || len(cs[0].Latencies) != 1 || cs[0].Latencies[0] != tc.want {
				t.Fatalf("got %+v, want one latency %g", cs, tc.want)
			}
		})
	}
}

func TestCSVQuotedFields(t *testing.T) {
	path := writeFile(t, "q.csv", "op,\"latency_us\",note\n"+
		"get,10,\"a, b\"\n"+
		"\"get\",\"20\",\"a, b\"\n"+
		"get,30,\"say \"\"hi\"\"\"\n")
	cs, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := byName(cs)
	if len(cs) != 2 {
		t.Fatalf("got %d configurations: %+v", len(cs), cs)
	}
	if c := m["op=get note=a, b"]; len(c.Latencies) != 2 {
		t.Errorf("quoted and unquoted spellings not joined: %+v", cs)
	}
	if c := m[`op=get note=say "hi"`]; len(c.Latencies) != 1 || c.Latencies[0] != 30/1e6 {
		t.Errorf("escaped quotes: %+v", cs)
	}
}

func TestCSVWithoutFactorsIsOneConfiguration(t *testing.T) {
	path := writeFile(t, "solo.csv", "latency_ms\n1\n2\n\n3\n")
	cs, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Name != "solo.csv" || len(cs[0].Latencies) != 3 || len(cs[0].Factors) != 0 {
		t.Fatalf("got %+v", cs)
	}
}

func TestCSVLongLine(t *testing.T) {
	long := strings.Repeat("x", 3<<20) // longer than the read buffer
	path := writeFile(t, "long.csv", "tag,latency_us\n"+long+",5\nb,6")
	cs, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Factors["tag"] != long || cs[1].Latencies[0] != 6/1e6 {
		t.Fatalf("got %d configurations", len(cs))
	}
}

func TestCSVLimits(t *testing.T) {
	// A line over MaxCSVLine stops the reader at the limit, with the
	// line's number; a file that is one endless line is no worse.
	long := "clients,latency_us\n1,5\n1," + strings.Repeat("\x00", MaxCSVLine) + "\n1,6\n"
	path := writeFile(t, "long.csv", long)
	_, err := Load(path, Options{})
	if err == nil || err.Error() != path+":3: line too long: over 4 MiB, the longest line gait reads" {
		t.Errorf("line over the limit: %v", err)
	}
	// A long bad field is quoted by its first bytes and its length.
	path = writeFile(t, "field.csv", "clients,latency_us\n1,5\n1,"+strings.Repeat("x", 1<<20)+"\n")
	_, err = Load(path, Options{})
	want := path + `:3: column latency_us: "` + strings.Repeat("x", clip.Max) + `"... (1048576 bytes) is not a number`
	if err == nil || err.Error() != want {
		t.Errorf("long bad field: %.200v", err)
	}
	// So is a long column name, and a long header lists a few names.
	var names []string
	for i := range 30 {
		names = append(names, fmt.Sprintf("c%d", i))
	}
	path = writeFile(t, "wide.csv", strings.Join(names, ",")+","+strings.Repeat("y", 1000)+"\n1\n")
	_, err = Load(path, Options{})
	if err == nil || !strings.Contains(err.Error(), "c11, and 19 more)") || len(err.Error()) > len(path)+300 {
		t.Errorf("wide header: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	cases := []struct {
		name, content string
		opt           Options
		want          string // the error after "<path>"
	}{
		{"empty file", "", Options{}, ": file is empty"},
		{"blank file", "\n\n  \n", Options{}, ": file is empty"},
		{"header only", "a,latency_us\n", Options{}, ": no data rows after the header"},
		{"not a number", "a,latency_us\nx,1\nx,abc\n", Options{}, `:3: column latency_us: "abc" is not a number`},
		{"empty latency", "a,latency_us\nx,\n", Options{}, `:2: column latency_us: "" is not a number`},
		{"negative", "latency_ms\n1\n-2\n", Options{}, `:3: column latency_ms: negative latency "-2"`},
		{"not finite", "latency_ms\nNaN\n", Options{}, `:2: column latency_ms: "NaN" is not a finite number`},
		{"overflow", "latency_ms\n1e999\n", Options{}, `:2: column latency_ms: "1e999" is not a finite number`},
		{"ragged short", "a,b,latency_us\n1,2,3\n1,2\n", Options{}, ":3: 2 fields, the header has 3"},
		{"ragged long", "a,latency_us\n1,2,3\n", Options{}, ":2: 3 fields, the header has 2"},
		{"ragged quoted", "a,latency_us\n\"1\",2,3\n", Options{}, ":2: 3 fields, the header has 2"},
		{"unterminated quote", "a,latency_us\n\"1,2\n", Options{}, ":2: quoted field 1 does not end on this line"},
		{"stray quote", "a,latency_us\nx\"y,2\n", Options{}, ":2: field 1: a quote inside an unquoted field"},
		{"no latency column", "a,b\n1,2\n", Options{}, ":1: no latency column"},
		{"two latency columns", "latency_us,latency_ms\n1,2\n", Options{}, ":1: several latency columns (latency_us, latency_ms)"},
		{"missing chosen column", "a,b\n1,2\n", Options{LatencyColumn: "rtt", Unit: "ms"}, `:1: no column "rtt" (columns: a, b)`},
		{"chosen column without unit", "rtt,b\n1,2\n", Options{LatencyColumn: "rtt"}, ":1: column rtt: its name gives no unit"},
		{"conflicting unit", "latency_us\n1\n", Options{Unit: "ms"}, ":1: column latency_us holds us but --unit says ms"},
		{"duplicate column", "a,a,latency_us\n1,2,3\n", Options{}, `:1: header: column "a" appears twice`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "trace.csv", tc.content)
			_, err := Load(path, tc.opt)
			if err == nil {
				t.Fatalf("no error")
			}
			if !strings.HasPrefix(err.Error(), path+tc.want) {
				t.Fatalf("error %q, want prefix %q", err, path+tc.want)
			}
		})
	}
}

func TestUnknownUnitAndMissingFile(t *testing.T) {
	path := writeFile(t, "t.csv", "latency\n1\n")
	_, err := Load(path, Options{Unit: "min"})
	if err == nil || err.Error() != `--unit: unknown unit "min" (want ns, us, ms or s)` {
		t.Errorf("unknown unit: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "nope.csv")
	_, err = Load(missing, Options{})
	if err == nil || err.Error() != missing+": no such file or directory" {
		t.Errorf("missing file: %v", err)
	}
}

// writeHistogramLog writes an interval log the way HdrHistogram's Go
// HistogramLogWriter does, one interval per histogram.
func writeHistogramLog(t *testing.T, hists ...*hdrhistogram.Histogram) string {
	t.Helper()
	var b strings.Builder
	w := hdrhistogram.NewHistogramLogWriter(&b)
	w.OutputLogFormatVersion()
	w.OutputStartTime(1700000000000)
	w.OutputLegend()
	for _, h := range hists {
		if err := w.OutputIntervalHistogram(h); err != nil {
			t.Fatal(err)
		}
	}
	return writeFile(t, "run.hlog", b.String())
}

func histogram(tag string, start int64, values ...int64) *hdrhistogram.Histogram {
	h := hdrhistogram.New(1, int64(time.Hour), 3)
	for _, v := range values {
		h.RecordValue(v)
	}
	h.SetTag(tag)
	h.SetStartTimeMs(start)
	h.SetEndTimeMs(start + 1000)
	return h
}

func TestHistogramLogMergesIntervalsPerTag(t *testing.T) {
	// Values below 2048 are recorded exactly at 3 significant digits.
	path := writeHistogramLog(t,
		histogram("get", 0, 100, 200, 200),
		histogram("set", 0, 1000),
		histogram("get", 1000, 300))
	cs, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Name != "tag=get" || cs[1].Name != "tag=set" {
		t.Fatalf("got %+v", cs)
	}
	// The Go writer scales Interval_Max by 10^6, so the values are ns.
	if want := []float64{100 / 1e9, 200 / 1e9, 200 / 1e9, 300 / 1e9}; !slices.Equal(cs[0].Latencies, want) {
		t.Errorf("get latencies %v, want %v", cs[0].Latencies, want)
	}
	if !strings.Contains(cs[0].Note, "nanoseconds") {
		t.Errorf("note %q", cs[0].Note)
	}
	// --unit overrides the inference.
	cs, err = Load(path, Options{Unit: "us"})
	if err != nil || cs[1].Latencies[0] != 1000/1e6 || cs[1].Note != "" {
		t.Fatalf("with --unit us: %+v %v", cs, err)
	}
}

func TestHistogramLogBucketMidpoints(t *testing.T) {
	// 123456 lies in a bucket of width 64 at 3 significant digits.
	path := writeHistogramLog(t, histogram("", 0, 123456))
	cs, err := Load(path, Options{Unit: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Name != "run.hlog" {
		t.Fatalf("untagged log: %+v", cs)
	}
	got := cs[0].Latencies[0] * 1e9
	if d := got - 123456; d < -64 || d > 64 {
		t.Errorf("value %v not within its bucket of 123456", got)
	}
}

func TestHistogramLogUnscaledMaxMeansMicroseconds(t *testing.T) {
	h := histogram("", 0, 250)
	enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	// HdrHistogram_c's format: max unscaled, end timestamp in the 2nd field.
	path := writeFile(t, "c.hlog", "#[Histogram log format version 1.3]\n"+
		`"StartTimestamp","EndTimestamp","Interval_Max","Interval_Compressed_Histogram"`+"\n"+
		"0.000,1.000,250.0,"+string(enc)+"\n")
	cs, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if cs[0].Latencies[0] != 250/1e6 || !strings.Contains(cs[0].Note, "microseconds") {
		t.Fatalf("got %v, note %q", cs[0].Latencies, cs[0].Note)
	}
}

func TestCorruptHistogramLog(t *testing.T) {
	cases := []struct{ name, line, want string }{
		{"bad payload", "0.0,1.0,2.0,HISTFAAAAnotbase64!!", ":3: corrupt histogram: "},
		{"truncated payload", "0.0,1.0,2.0,HISTFAAAAEV42pNpmSz", ":3: corrupt histogram: "},
		{"too few fields", "Tag=a,0.0,1.0", ":3: 2 fields, an interval has 4"},
		{"bad number", "0.0,x,2.0,HISTFAAAAEV42pNpmSz", `:3: interval length "x" is not a non-negative number`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "bad.hlog", "#[StartTime: 1.0 (seconds since epoch)]\n"+
				`"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"`+"\n"+tc.line+"\n")
			_, err := Load(path, Options{})
			if err == nil || !strings.HasPrefix(err.Error(), path+tc.want) {
				t.Fatalf("error %v, want prefix %q", err, path+tc.want)
			}
		})
	}
	path := writeFile(t, "nothing.hlog", "#[StartTime: 1.0 (seconds since epoch)]\n")
	if _, err := Load(path, Options{}); err == nil || !strings.HasSuffix(err.Error(), "but it has no interval lines") {
		t.Errorf("log without intervals: %v", err)
	}
	path = writeHistogramLog(t, histogram("a", 0))
	if _, err := Load(path, Options{}); err == nil || err.Error() != path+": the histogram log holds no samples" {
		t.Errorf("log of empty intervals: %v", err)
	}
}

func TestHistogramLogLimits(t *testing.T) {
	head := "#[StartTime: 1.0 (seconds since epoch)]\n" +
		`"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"` + "\n"
	path := writeFile(t, "long.hlog", head+"0.0,1.0,2.0,HISTFAAAA"+strings.Repeat("A", MaxHistogramLine)+"\n")
	_, err := Load(path, Options{})
	if err == nil || err.Error() != path+":3: line too long: over 64 MiB, the longest line gait reads" {
		t.Errorf("line over the limit: %v", err)
	}
	path = writeFile(t, "num.hlog", head+"0.0,"+strings.Repeat("9", 1000)+"x,2.0,HISTFAAAA\n")
	_, err = Load(path, Options{})
	want := path + `:3: interval length "` + strings.Repeat("9", clip.Max) + `"... (1001 bytes) is not a non-negative number`
	if err == nil || err.Error() != want {
		t.Errorf("long bad number: %v", err)
	}

	// Counts whose sum wraps past MaxInt64 must not slip under the sample
	// limit (the total was once added before it was compared).
	few := histogram("", 0, 1000, 1000, 1000)
	many := histogram("", 1000)
	many.RecordValues(1000, math.MaxInt64-2)
	path = writeHistogramLog(t, few, many)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = readHistogramLog(path, bufio.NewReader(f), Options{}, MaxHistogramLine, 10)
	if err == nil || !strings.HasSuffix(err.Error(), ":5: more than 10 samples in the log; gait analyzes samples in memory") {
		t.Errorf("wrapping counts: %v", err)
	}
}

func writeRun(t *testing.T, dir string, cfg rundir.Config, latencies ...time.Duration) {
	t.Helper()
	w, err := rundir.Create(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range latencies {
		w.Add(rundir.Sample{Start: time.Duration(i) * time.Millisecond, Latency: l})
	}
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
}

func TestRunDirectories(t *testing.T) {
	root := t.TempDir()
	writeRun(t, filepath.Join(root, "base"), rundir.Config{System: "etcd", Factor: 1,
		Factors: map[string]string{"clients": "8"}}, time.Millisecond, 3*time.Millisecond)
	writeRun(t, filepath.Join(root, "nic"), rundir.Config{System: "etcd", Fault: "nic", Target: "leader",
		Factor: 100, Repetition: 2, Factors: map[string]string{"clients": "8"}}, 5*time.Millisecond)
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("x"), 0o644)
	// A writer killed before its rename leaves a .partial directory: skipped
	// among runs, refused on its own.
	writeRun(t, filepath.Join(root, "killed"), rundir.Config{System: "etcd", Factor: 7}, time.Millisecond)
	os.Rename(filepath.Join(root, "killed"), filepath.Join(root, "killed"+rundir.PartialSuffix))
	if _, err := Load(filepath.Join(root, "killed"+rundir.PartialSuffix), Options{}); err == nil ||
		!strings.Contains(err.Error(), "an unfinished run directory") {
		t.Errorf("partial run directory: %v", err)
	}

	one, err := Load(filepath.Join(root, "base"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != 1 || one[0].Name != "clients=8 system=etcd" || !slices.Equal(one[0].Latencies, []float64{0.001, 0.003}) {
		t.Fatalf("one run: %+v", one)
	}
	all, err := Load(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[1].Name != "clients=8 factor=100 fault=nic repetition=2 system=etcd target=leader" {
		t.Fatalf("directory of runs: %+v", all)
	}
	// A scenario's baseline injects nothing, yet its factor is 1, not blank.
	scen := t.TempDir()
	writeRun(t, filepath.Join(scen, "f1-r1"), rundir.Config{System: "etcd", Scenario: "s.yaml", Factor: 1,
		Repetition: 1}, time.Millisecond)
	writeRun(t, filepath.Join(scen, "f10-r1"), rundir.Config{System: "etcd", Scenario: "s.yaml", Fault: "nic",
		Target: "leader", Factor: 10, Repetition: 1}, time.Millisecond)
	steps, err := Load(scen, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || steps[0].Factors["factor"] != "1" || steps[1].Factors["factor"] != "10" {
		t.Fatalf("scenario's runs: %+v", steps)
	}
	empty := t.TempDir()
	if _, err := Load(empty, Options{}); err == nil || !strings.Contains(err.Error(), "neither a run directory") {
		t.Errorf("empty directory: %v", err)
	}
}

func TestLoadAllDisambiguatesSources(t *testing.T) {
	a := writeFile(t, "a.csv", "clients,latency_us\n8,1\n")
	b := writeFile(t, "b.csv", "clients,latency_us\n8,2\n16,3\n")
	cs, err := LoadAll([]string{a, b}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 3 || cs[0].Name != "clients=8 source="+a || cs[2].Factors["source"] != b {
		t.Fatalf("got %+v", cs)
	}
	c := writeFile(t, "c.csv", "payload,latency_us\n8,1\n")
	cs, err = LoadAll([]string{a, c}, Options{})
	if err != nil || cs[0].Name != "clients=8" || cs[1].Name != "payload=8" {
		t.Fatalf("distinct names changed: %+v %v", cs, err)
	}
}

// TestRunDirectoryGeneratorBehind: a run whose open-loop generator fell
// behind its schedule says so, so that its tail is not read as the server's.
func TestRunDirectoryGeneratorBehind(t *testing.T) {
	root := t.TempDir()
	for _, kept := range []bool{true, false} {
		dir := filepath.Join(root, fmt.Sprint(kept))
		w, err := rundir.Create(dir, rundir.Config{System: "redis", Factors: map[string]string{"kept": fmt.Sprint(kept)}})
		if err != nil {
			t.Fatal(err)
		}
		w.Add(rundir.Sample{Latency: time.Millisecond})
		g := rundir.Generator{Sent: 1, SendLateP99: 0.0002, Tolerance: 0.001, KeptSchedule: true}
		if !kept {
			g = rundir.Generator{Sent: 100, SendLateP99: 0.25, SendLateMax: 0.3, HeldBack: 40, MaxInFlight: 1024,
				Tolerance: 0.001}
		}
		w.SetGenerator(g)
		if err := w.Close(nil); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := Load(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Factors["kept"] != "false" {
		t.Fatalf("got %+v", cs)
	}
	if w := cs[0].Warning; !strings.Contains(w, "p99 of send lateness 250ms") || !strings.Contains(w, "held back 40 of 100") {
		t.Errorf("behind: warning %q", w)
	}
	if cs[1].Warning != "" {
		t.Errorf("kept its schedule, yet warned %q", cs[1].Warning)
	}
}

// TestExportedCSVIsOneConfigurationPerOp: gait export's CSV read back
// groups by op and the run's factors, not by each request's start, host
// or outcome (which made every request a configuration of its own).
func TestExportedCSVIsOneConfigurationPerOp(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	w, err := rundir.Create(dir, rundir.Config{System: "redis", Ops: []string{"get", "set"},
		Hosts: []rundir.Host{{Name: "h0"}, {Name: "h1"}, {Name: "h2"}}, Factors: map[string]string{"clients": "8"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		var inv rundir.HostSet
		inv.Add(uint8(i % 3))
		w.Add(rundir.Sample{Start: time.Duration(i) * time.Millisecond, Latency: time.Duration(100+i) * time.Microsecond,
			Op: uint8(i % 2), Host: uint8(i % 3), Outcome: rundir.Outcome(i % 3), Involved: inv})
	}
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	run, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var csv bytes.Buffer
	if err := run.WriteCSV(&csv); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(csv.String(), "start_s,latency_ns,op,host,outcome,involved,clients\n") {
		t.Fatalf("export header: %q", strings.SplitN(csv.String(), "\n", 2)[0])
	}
	path := writeFile(t, "export.csv", csv.String())
	cs, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Name != "op=get clients=8" || cs[1].Name != "op=set clients=8" ||
		len(cs[0].Latencies) != 30 || len(cs[1].Latencies) != 30 {
		for _, c := range cs[:min(len(cs), 3)] {
			t.Logf("%s: %d", c.Name, len(c.Latencies))
		}
		t.Fatalf("%d configurations, want op=get and op=set with 30 requests each", len(cs))
	}
	// A CSV of one's own keeps every column but the latency as a factor.
	own := writeFile(t, "own.csv", "host,latency_us\na,1\nb,2\n")
	if cs, err := Load(own, Options{}); err != nil || len(cs) != 2 || cs[0].Factors["host"] != "a" {
		t.Errorf("own CSV: %+v %v", cs, err)
	}
}

// TestRunDirectoriesDeeper: runs/ holding run directories beside a
// scenario's output (runs/SCENARIO/RUN) and a suite's
// (runs/SUITE/EXPERIMENT/RUN) reads them all, and names what it skipped.
func TestRunDirectoriesDeeper(t *testing.T) {
	root := t.TempDir()
	cfg := func(name string) rundir.Config {
		return rundir.Config{System: "etcd", Factors: map[string]string{"run": name}}
	}
	writeRun(t, filepath.Join(root, "a"), cfg("a"), time.Millisecond)
	writeRun(t, filepath.Join(root, "leader-nic", "f1-r1"), cfg("s1"), time.Millisecond)
	writeRun(t, filepath.Join(root, "leader-nic", "f10-r1"), cfg("s10"), time.Millisecond)
	writeRun(t, filepath.Join(root, "bench", "zk-leader", "f1-r1"), cfg("b1"), time.Millisecond)
	writeRun(t, filepath.Join(root, "too", "deep", "down", "f1-r1"), cfg("deep"), time.Millisecond)
	os.MkdirAll(filepath.Join(root, "leader-nic", "hosts", "f1-r1", "h0"), 0o755) // the servers' logs
	os.MkdirAll(filepath.Join(root, "empty", "dir"), 0o755)
	writeRun(t, filepath.Join(root, "leader-nic", "f100-r1"), cfg("killed"), time.Millisecond)
	os.Rename(filepath.Join(root, "leader-nic", "f100-r1"), filepath.Join(root, "leader-nic", "f100-r1"+rundir.PartialSuffix))

	var skipped []string
	cs, err := Load(root, Options{Skipped: func(path, why string) {
		rel, _ := filepath.Rel(root, path)
		skipped = append(skipped, rel+": "+why)
	}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		got = append(got, c.Factors["run"])
	}
	if want := []string{"a", "b1", "s1", "s10"}; !slices.Equal(got, want) {
		t.Errorf("runs read %v, want %v", got, want)
	}
	want := []string{
		"empty: holds no run directory (no run.json)",
		"leader-nic/f100-r1.partial: an unfinished run directory (its writer stopped before the end)",
		"too/deep/down: not a run directory, and gait analyze looks 3 levels down at most",
	}
	if !slices.Equal(skipped, want) {
		t.Errorf("skipped:\n%s\nwant:\n%s", strings.Join(skipped, "\n"), strings.Join(want, "\n"))
	}
}

// TestMarkdownIsNotAHistogramLog: a file opening with "# title" is not
// taken for an HdrHistogram log (whose comments open "#["), so the error
// is about what it lacks as a CSV, not about interval-log fields.
func TestMarkdownIsNotAHistogramLog(t *testing.T) {
	path := writeFile(t, "README.md", "# gait\n\nsome text, with a comma\n")
	_, err := Load(path, Options{})
	if err == nil || strings.Contains(err.Error(), "interval") || !strings.Contains(err.Error(), "no latency column") {
		t.Errorf("README.md: %v, want a CSV error naming the missing latency column", err)
	}
}

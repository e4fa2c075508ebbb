package latency

import (
	"bufio"
	"bytes"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Fuzzing limits: small, so that a few bytes of input reach the long-line
// paths (the reader's buffer is 16 bytes) and no input can ask for much
// memory.
const (
	fuzzLine    = 256
	fuzzSamples = 1 << 16
	fuzzPath    = "fuzz.in"
)

// checkError asserts what every reading error must be: non-empty, one line,
// naming the file, and short whatever the input.
func checkError(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	switch {
	case !strings.HasPrefix(msg, fuzzPath) && !strings.HasPrefix(msg, "read "+fuzzPath):
		t.Fatalf("error does not name the file: %q", msg)
	case strings.ContainsAny(msg, "\n\r"):
		t.Fatalf("error of more than one line: %q", msg)
	case len(msg) > 600:
		t.Fatalf("error of %d bytes: %.200q...", len(msg), msg)
	}
}

// checkConfigurations asserts what every loaded dataset must be: at least
// one configuration, each with samples that are finite and non-negative,
// names unique, and no more samples than limit.
func checkConfigurations(t *testing.T, cs []Configuration, limit int) {
	t.Helper()
	if len(cs) == 0 {
		t.Fatal("no error and no configuration")
	}
	names := map[string]bool{}
	total := 0
	for _, c := range cs {
		if names[c.Name] {
			t.Fatalf("configuration name %q twice", c.Name)
		}
		names[c.Name] = true
		if len(c.Latencies) == 0 {
			t.Fatalf("configuration %q without samples", c.Name)
		}
		for _, v := range c.Latencies {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("configuration %q: latency %v", c.Name, v)
			}
		}
		total += len(c.Latencies)
	}
	if total > limit {
		t.Fatalf("%d samples, more than the limit %d", total, limit)
	}
}

// dataRows counts the rows a CSV file that loaded must have had: its
// non-blank lines after the header.
func dataRows(in []byte) int {
	n, header := 0, false
	for i, line := range bytes.Split(in, []byte{'\n'}) {
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if i == 0 {
			line = bytes.TrimPrefix(line, utf8BOM)
		}
		switch {
		case len(line) == 0:
		case !header:
			header = true
		default:
			n++
		}
	}
	return n
}

// checkGrouping compares the configurations with a plain reading of the
// input: every data row split by splitQuoted, its factor values trimmed, and
// rows grouped by their values in order of first appearance. The reader's
// fast path (unquoted rows split in place, grouped by their raw bytes) must
// agree with it.
func checkGrouping(t *testing.T, in []byte, cs []Configuration) {
	t.Helper()
	var header []string
	latCol, perSec := -1, 0.0
	type group struct {
		values    []string
		latencies []float64
	}
	var groups []*group
	index := map[string]*group{}
	for i, line := range bytes.Split(in, []byte{'\n'}) {
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if i == 0 {
			line = bytes.TrimPrefix(line, utf8BOM)
		}
		if len(line) == 0 {
			continue
		}
		fields, err := splitQuoted(line)
		if err != nil {
			t.Fatalf("line %d loaded, but splitQuoted refuses it: %v", i+1, err)
		}
		if header == nil {
			for _, f := range fields {
				header = append(header, strings.TrimSpace(string(f)))
			}
			var err error
			if latCol, perSec, err = latencyColumn(header, Options{}); err != nil {
				t.Fatalf("loaded, but the header is refused: %v", err)
			}
			continue
		}
		var values []string
		var key strings.Builder
		for j, f := range fields {
			if j != latCol {
				v := strings.TrimSpace(string(f))
				values = append(values, v)
				key.WriteString(strconv.Itoa(len(v)) + ":" + v)
			}
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(string(fields[latCol])), 64)
		if err != nil {
			t.Fatalf("line %d loaded, but its latency does not parse: %v", i+1, err)
		}
		g := index[key.String()]
		if g == nil {
			g = &group{values: values}
			index[key.String()] = g
			groups = append(groups, g)
		}
		g.latencies = append(g.latencies, v/perSec)
	}
	if len(groups) != len(cs) {
		t.Fatalf("%d configurations, the rows hold %d", len(cs), len(groups))
	}
	var names []string
	for j, h := range header {
		if j != latCol {
			names = append(names, h)
		}
	}
	for i, g := range groups {
		c := cs[i]
		for j, n := range names {
			if c.Factors[n] != g.values[j] {
				t.Fatalf("configuration %d: %s=%q, its rows say %q", i, n, c.Factors[n], g.values[j])
			}
		}
		if !slices.Equal(c.Latencies, g.latencies) {
			t.Fatalf("configuration %d (%q): latencies %v, its rows say %v", i, c.Name, c.Latencies, g.latencies)
		}
	}
}

// encodeCSV writes configurations back as CSV: factors in sorted order,
// every field quoted, the latency in seconds in the shortest form that reads
// back exactly.
func encodeCSV(cs []Configuration) []byte {
	q := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	names := slices.Sorted(maps.Keys(cs[0].Factors))
	var b bytes.Buffer
	for _, n := range names {
		b.WriteString(q(n) + ",")
	}
	b.WriteString("latency_s\n")
	for _, c := range cs {
		for _, v := range c.Latencies {
			for _, n := range names {
				b.WriteString(q(c.Factors[n]) + ",")
			}
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64) + "\n")
		}
	}
	return b.Bytes()
}

// FuzzCSV reads arbitrary bytes as a CSV trace. An error must be short, one
// line, and name the file. A dataset that loads must hold one sample per
// data row, each finite and non-negative, in configurations with distinct
// names and the header's factors; and written back as CSV it must read back
// as the same configurations, the same samples in the same order.
func FuzzCSV(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		cs, err := readCSV(fuzzPath, bufio.NewReaderSize(bytes.NewReader(in), 16), Options{}, fuzzLine)
		if err != nil {
			checkError(t, err)
			return
		}
		checkConfigurations(t, cs, math.MaxInt)
		total := 0
		for _, c := range cs {
			total += len(c.Latencies)
			if !slices.Equal(slices.Sorted(maps.Keys(c.Factors)), slices.Sorted(maps.Keys(cs[0].Factors))) {
				t.Fatalf("configurations with different factors: %q and %q", c.Factors, cs[0].Factors)
			}
		}
		if rows := dataRows(in); total != rows {
			t.Fatalf("%d samples from %d data rows", total, rows)
		}
		checkGrouping(t, in, cs)

		again, err := readCSV(fuzzPath, bufio.NewReader(bytes.NewReader(encodeCSV(cs))), Options{}, MaxCSVLine)
		if err != nil {
			t.Fatalf("written back, the dataset does not read: %v", err)
		}
		if len(again) != len(cs) {
			t.Fatalf("written back: %d configurations, was %d", len(again), len(cs))
		}
		names := slices.Sorted(maps.Keys(cs[0].Factors))
		for i, c := range cs {
			a := again[i]
			if !maps.Equal(a.Factors, c.Factors) || !slices.Equal(a.Latencies, c.Latencies) {
				t.Fatalf("written back, configuration %d is %q %v, was %q %v", i, a.Factors, a.Latencies, c.Factors, c.Latencies)
			}
			if want := nameOf(c.Factors, names, fuzzPath); a.Name != want {
				t.Fatalf("written back, configuration %d is named %q, want %q", i, a.Name, want)
			}
		}
	})
}

// FuzzHistogramLog reads arbitrary bytes as an HdrHistogram interval log.
// An error must be short, one line, and name the file. A log that loads must
// hold as many samples as its intervals count, at most the sample limit,
// each finite and non-negative, one configuration per tag, and say which
// unit it assumed.
func FuzzHistogramLog(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		cs, err := readHistogramLog(fuzzPath, bufio.NewReaderSize(bytes.NewReader(in), 16), Options{}, fuzzLine, fuzzSamples)
		if err != nil {
			checkError(t, err)
			return
		}
		checkConfigurations(t, cs, fuzzSamples)
		want := map[string]int64{}
		for _, line := range bytes.Split(in, []byte{'\n'}) {
			tag, h, ok := decodeInterval(line)
			if ok {
				want[tag] += h.TotalCount()
			}
		}
		for _, c := range cs {
			tag := c.Factors["tag"]
			if int64(len(c.Latencies)) != want[tag] {
				t.Fatalf("tag %q: %d samples, its intervals count %d", tag, len(c.Latencies), want[tag])
			}
			if c.Note == "" {
				t.Fatalf("tag %q: no note of the unit assumed", tag)
			}
			delete(want, tag)
		}
		for tag, n := range want {
			if n > 0 {
				t.Fatalf("tag %q: %d samples counted, but no configuration", tag, n)
			}
		}
	})
}

// decodeInterval decodes one interval line independently of the reader:
// an optional "Tag=NAME," and a histogram after the third comma.
func decodeInterval(line []byte) (string, *hdrhistogram.Histogram, bool) {
	line = bytes.TrimSpace(bytes.TrimPrefix(line, utf8BOM))
	if len(line) == 0 || line[0] == '#' || bytes.HasPrefix(line, []byte(`"StartTimestamp"`)) {
		return "", nil, false
	}
	tag := ""
	if rest, ok := bytes.CutPrefix(line, []byte("Tag=")); ok {
		name, after, _ := bytes.Cut(rest, []byte{','})
		tag, line = string(name), after
	}
	fields := bytes.SplitN(line, []byte{','}, 4)
	if len(fields) != 4 {
		return "", nil, false
	}
	h, err := hdrhistogram.Decode(fields[3])
	return tag, h, err == nil
}

// TestFuzzSeedsLoad keeps the fuzzers honest: under the fuzzing limits, the
// well-formed seeds load, so the properties of a loaded dataset are checked
// from the first run.
func TestFuzzSeedsLoad(t *testing.T) {
	for _, tc := range []struct {
		target, seed string
		read         func([]byte) ([]Configuration, error)
	}{
		{"FuzzCSV", "redis-trace", func(in []byte) ([]Configuration, error) {
			return readCSV(fuzzPath, bufio.NewReaderSize(bytes.NewReader(in), 16), Options{}, fuzzLine)
		}},
		{"FuzzHistogramLog", "go-writer-tags", func(in []byte) ([]Configuration, error) {
			return readHistogramLog(fuzzPath, bufio.NewReaderSize(bytes.NewReader(in), 16), Options{}, fuzzLine, fuzzSamples)
		}},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "fuzz", tc.target, tc.seed))
		if err != nil {
			t.Fatal(err)
		}
		_, quoted, _ := strings.Cut(string(b), "[]byte(")
		in, err := strconv.Unquote(strings.TrimSuffix(strings.TrimSpace(quoted), ")"))
		if err != nil {
			t.Fatalf("%s/%s: %v", tc.target, tc.seed, err)
		}
		if cs, err := tc.read([]byte(in)); err != nil || len(cs) < 2 {
			t.Errorf("%s/%s: %d configurations, %v", tc.target, tc.seed, len(cs), err)
		}
	}
}

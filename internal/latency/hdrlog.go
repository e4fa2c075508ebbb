package latency

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/gait-dev/gait/internal/clip"
)

// MaxHistogramSamples bounds how many samples a histogram log may expand to
// (8 GiB of float64s): beyond it the analysis would not fit in memory.
const MaxHistogramSamples = 1 << 30

// The histogram log is the text format of HdrHistogram's HistogramLogWriter
// (Java, Go, C) and of the tools built on it (jHiccup, wrk2's forks,
// cassandra-stress): '#' comment lines (#[StartTime: ...], #[BaseTime: ...]),
// a legend line "StartTimestamp","Interval_Length","Interval_Max",..., and one
// line per interval, "[Tag=NAME,]start,length,max,BASE64", whose last field
// is a V2 compressed histogram. Intervals with the same tag are merged; each
// tag is a configuration.
//
// A histogram records integers and does not say in which unit. The Java and
// Go writers print Interval_Max as the histogram's max divided by 10^6, the
// millisecond:nanosecond ratio they assume; the C writer prints it unscaled.
// So without --unit, a log whose Interval_Max is max/10^6 is read as
// nanoseconds, any other as microseconds (what HdrHistogram_c users such as
// wrk2 record), and the configuration's Note says which was assumed.
//
// Samples are rebuilt from the bucket counts: every value counted in a bucket
// becomes the bucket's median-equivalent value, as HdrHistogram's own Mean
// does, which is within half a bucket (10^-d relative for d significant
// digits) of the value recorded.

type hdrTag struct {
	name      string
	latencies []float64 // in the log's units until the unit is known
	ratios    []float64 // histogram max / Interval_Max, per interval
}

func loadHistogramLog(path string, r *bufio.Reader, opt Options) ([]Configuration, error) {
	return readHistogramLog(path, r, opt, MaxHistogramLine, MaxHistogramSamples)
}

// readHistogramLog is loadHistogramLog with a line limit of maxLine bytes and
// a limit of maxSamples samples.
func readHistogramLog(path string, r *bufio.Reader, opt Options, maxLine, maxSamples int) ([]Configuration, error) {
	tags := map[string]*hdrTag{}
	var order []*hdrTag
	total, intervals := 0, 0
	lines := lineReader{r: r, max: maxLine}
	for {
		text, err := lines.next()
		if err == io.EOF {
			break
		}
		line := lines.line
		if errors.Is(err, errLineTooLong) {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		} else if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		text = bytes.TrimSpace(text)
		if line == 1 {
			text = bytes.TrimPrefix(text, utf8BOM)
		}
		if len(text) == 0 || text[0] == '#' || bytes.HasPrefix(text, []byte(`"StartTimestamp"`)) {
			continue
		}
		tag, h, ratio, err := parseInterval(text)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		intervals++
		t := tags[tag]
		if t == nil {
			t = &hdrTag{name: tag}
			tags[tag] = t
			order = append(order, t)
		}
		// Compared before adding, so that a count near MaxInt64 cannot
		// wrap the total past the check.
		n := h.TotalCount()
		if n > int64(maxSamples-total) {
			return nil, fmt.Errorf("%s:%d: more than %d samples in the log; gait analyzes samples in memory",
				path, line, maxSamples)
		}
		total += int(n)
		t.latencies = expand(h, t.latencies)
		if ratio > 0 {
			t.ratios = append(t.ratios, ratio)
		}
	}
	var out []Configuration
	for _, t := range order {
		if len(t.latencies) == 0 {
			continue
		}
		c, err := t.configuration(path, opt.Unit)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	switch {
	case intervals == 0:
		return nil, fmt.Errorf("%s: read as an HdrHistogram log (it starts like one), but it has no interval lines", path)
	case len(out) == 0:
		return nil, fmt.Errorf("%s: the histogram log holds no samples", path)
	}
	return out, nil
}

// parseInterval parses one interval line: its tag, histogram, and the ratio
// of the histogram's max to the Interval_Max column (0 when unknown).
func parseInterval(text []byte) (string, *hdrhistogram.Histogram, float64, error) {
	tag := ""
	if rest, ok := bytes.CutPrefix(text, []byte("Tag=")); ok {
		name, after, found := bytes.Cut(rest, []byte{','})
		if !found {
			return "", nil, 0, errors.New("Tag= without an interval after it")
		}
		tag, text = string(name), after
	}
	fields := bytes.SplitN(text, []byte{','}, 4)
	if len(fields) != 4 {
		return "", nil, 0, fmt.Errorf("%d fields, an interval has 4 (start,length,max,histogram)", len(fields))
	}
	var nums [3]float64
	for i, name := range []string{"start", "length", "max"} {
		v, err := strconv.ParseFloat(string(fields[i]), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return "", nil, 0, fmt.Errorf("interval %s %s is not a non-negative number", name, clip.Quote(fields[i]))
		}
		nums[i] = v
	}
	h, err := hdrhistogram.Decode(fields[3])
	if err != nil {
		return "", nil, 0, fmt.Errorf("corrupt histogram: %w", err)
	}
	ratio := 0.0
	if nums[2] > 0 && h.TotalCount() > 0 {
		ratio = float64(h.Max()) / nums[2]
	}
	return tag, h, ratio, nil
}

// expand appends every value the histogram counts, as its bucket's
// median-equivalent value.
func expand(h *hdrhistogram.Histogram, out []float64) []float64 {
	if h.TotalCount() == 0 {
		return out
	}
	out = growFloat(out, int(h.TotalCount()))
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		v := float64(bar.From + (bar.To-bar.From+1)/2)
		for range bar.Count {
			out = append(out, v)
		}
	}
	return out
}

func growFloat(s []float64, n int) []float64 {
	if cap(s)-len(s) >= n {
		return s
	}
	grown := make([]float64, len(s), max(2*cap(s), len(s)+n))
	copy(grown, s)
	return grown
}

func (t *hdrTag) configuration(path, unit string) (Configuration, error) {
	note := ""
	if unit == "" {
		unit, note = inferUnit(t.ratios)
	}
	perSec, err := perSecond(unit)
	if err != nil {
		return Configuration{}, fmt.Errorf("%s: %w", path, err)
	}
	for i, v := range t.latencies {
		t.latencies[i] = v / perSec
	}
	c := Configuration{Factors: map[string]string{}, Latencies: t.latencies, Source: path, Note: note}
	if t.name != "" {
		c.Factors["tag"] = t.name
	}
	c.Name = nameOf(c.Factors, nil, path)
	return c, nil
}

// inferUnit applies the rule explained at the top of this file to the
// intervals' max ratios.
func inferUnit(ratios []float64) (unit, note string) {
	scaled := len(ratios) > 0
	for _, r := range ratios {
		// Interval_Max is printed with a few decimals and the max is
		// rounded to its bucket: allow a few percent.
		if math.Abs(r/1e6-1) > 0.05 {
			scaled = false
		}
	}
	if scaled {
		return "ns", "values read as nanoseconds: Interval_Max is the histogram max / 10^6, " +
			"the HdrHistogram Java/Go writer's ns-to-ms scaling (override with --unit)"
	}
	return "us", "values read as microseconds, the usual unit of HdrHistogram_c users such as wrk2; " +
		"the log does not say (override with --unit)"
}

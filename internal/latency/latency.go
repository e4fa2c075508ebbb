// Package latency loads latency datasets into configurations, the unit gait
// analyze works on: a set of requests that share one value of every factor.
// It reads run directories, CSV files and HdrHistogram interval logs, and
// always hands back latencies in seconds.
package latency

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Configuration is one configuration: its factors and every request's latency.
type Configuration struct {
	// Name is "factor=level ..." (or the source's name when there is no
	// factor); it is unique among the configurations Load returns.
	Name    string
	Factors map[string]string
	// Latencies in seconds, in the order they were read.
	Latencies []float64
	// Source is the path the configuration was read from.
	Source string
	// Note records an assumption made while reading, such as the unit of
	// a histogram log's values; empty when there was none.
	Note string
	// Warning says why the latencies are not the server's alone: the
	// open-loop generator fell behind its schedule (rundir.Generator).
	Warning string
}

// Options tell Load how to read CSV files and histogram logs.
type Options struct {
	// LatencyColumn names the CSV column that holds the latency. Empty
	// means the one column named latency_ns, latency_us, latency_ms or
	// latency_s.
	LatencyColumn string
	// Unit is the unit of the latency values: ns, us (or µs), ms or s.
	// Empty means the column name's suffix for CSV and an inferred unit
	// for histogram logs.
	Unit string
	// Skipped, if set, is told of each directory passed over while
	// looking for run directories under a path, and why.
	Skipped func(path, why string)
}

// units maps unit names to the number of units in one second; dividing by it
// (rather than multiplying by its inverse) gives the correctly rounded value
// in seconds, the same float numpy gets for x / 1e6.
var units = map[string]float64{
	"ns": 1e9,
	"us": 1e6, "µs": 1e6, "μs": 1e6,
	"ms": 1e3,
	"s":  1,
}

// perSecond returns the number of units per second for a unit name.
func perSecond(unit string) (float64, error) {
	if v, ok := units[unit]; ok {
		return v, nil
	}
	return 0, fmt.Errorf("unknown unit %q (want ns, us, ms or s)", unit)
}

// Load reads the dataset at path: a run directory, a directory whose
// subdirectories are run directories, a CSV file or an HdrHistogram interval
// log. Every returned configuration has at least one sample.
func Load(path string, opt Options) ([]Configuration, error) {
	if opt.Unit != "" {
		if _, err := perSecond(opt.Unit); err != nil {
			return nil, fmt.Errorf("--unit: %w", err)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such file or directory", path)
		}
		return nil, err
	}
	if st.IsDir() {
		skip := opt.Skipped
		if skip == nil {
			skip = func(string, string) {}
		}
		return loadDir(path, skip)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, readBuffer)
	kind, err := sniff(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	switch kind {
	case kindEmpty:
		return nil, fmt.Errorf("%s: file is empty", path)
	case kindHistogramLog:
		return loadHistogramLog(path, r, opt)
	default:
		return loadCSV(path, r, opt)
	}
}

// LoadAll loads every path and merges the configurations. When two paths
// yield a configuration of the same name, every configuration gets a
// "source" factor (its path) so that all names are distinct.
func LoadAll(paths []string, opt Options) ([]Configuration, error) {
	var all []Configuration
	for _, p := range paths {
		cs, err := Load(p, opt)
		if err != nil {
			return nil, err
		}
		all = append(all, cs...)
	}
	if !uniqueNames(all) {
		for i := range all {
			all[i].Factors["source"] = all[i].Source
			all[i].Name = nameOf(all[i].Factors, nil, all[i].Source)
		}
	}
	return all, nil
}

func uniqueNames(cs []Configuration) bool {
	seen := make(map[string]bool, len(cs))
	for _, c := range cs {
		if seen[c.Name] {
			return false
		}
		seen[c.Name] = true
	}
	return true
}

// nameOf writes factors as "k=v k=v" in the given order (sorted names when
// order is nil), or the source's base name when there is no factor.
func nameOf(factors map[string]string, order []string, source string) string {
	if len(factors) == 0 {
		return filepath.Base(source)
	}
	if order == nil {
		order = slices.Sorted(maps.Keys(factors))
	}
	parts := make([]string, 0, len(order))
	for _, k := range order {
		if v, ok := factors[k]; ok {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}

// readBuffer is the read buffer of file loaders: large enough that reading
// costs a few system calls per megabyte, small enough to stay in cache.
const readBuffer = 1 << 20

type kind int

const (
	kindEmpty kind = iota
	kindCSV
	kindHistogramLog
)

// sniff tells a histogram log from a CSV file by its first line: a log opens
// with a "#[" comment (#[StartTime: ...], #[Histogram log format version
// ...]), its legend, a Tag= or an interval whose fourth field is an encoded
// histogram ("HIST..."); a CSV file opens with its header. A mere '#' is not
// enough: a Markdown file opens with one too.
func sniff(r *bufio.Reader) (kind, error) {
	head, err := r.Peek(4096)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return 0, err
	}
	head = bytes.TrimPrefix(head, utf8BOM)
	if len(bytes.TrimSpace(head)) == 0 {
		return kindEmpty, nil
	}
	line, _, _ := bytes.Cut(head, []byte{'\n'})
	switch {
	case bytes.HasPrefix(line, []byte("#[")), bytes.HasPrefix(line, []byte(`"StartTimestamp"`)), bytes.HasPrefix(line, []byte("Tag=")):
		return kindHistogramLog, nil
	}
	fields := bytes.Split(line, []byte{','})
	if len(fields) == 4 && bytes.HasPrefix(fields[3], []byte("HIST")) {
		return kindHistogramLog, nil
	}
	return kindCSV, nil
}

var utf8BOM = []byte("\xef\xbb\xbf")

// LoadOne reads one configuration's latencies (seconds) from path: the one
// named config, or the only one when config is empty.
func LoadOne(path, config string, opt Options) ([]float64, error) {
	cs, err := Load(path, opt)
	if err != nil {
		return nil, err
	}
	if config == "" && len(cs) == 1 {
		return cs[0].Latencies, nil
	}
	var names []string
	for _, c := range cs {
		if c.Name == config {
			return c.Latencies, nil
		}
		names = append(names, c.Name)
	}
	if config == "" {
		return nil, fmt.Errorf("%s holds %d configurations; pick one with --config (%s)", path, len(cs), strings.Join(names, "; "))
	}
	return nil, fmt.Errorf("%s: no configuration %q (have %s)", path, config, strings.Join(names, "; "))
}

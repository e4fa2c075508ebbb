package rundir

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// Run is an open run directory.
type Run struct {
	Dir    string
	Config Config
	n      int
}

// Open reads a run directory's configuration and checks that its sample
// columns are complete and agree.
func Open(dir string) (*Run, error) {
	if st, err := os.Stat(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("open run directory %s: no such directory", dir)
		}
		return nil, fmt.Errorf("open run directory: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("open run directory %s: not a directory", dir)
	}
	if strings.HasSuffix(filepath.Clean(dir), PartialSuffix) {
		return nil, fmt.Errorf("open run directory %s: an unfinished run directory (its writer stopped "+
			"before renaming it to %s); nothing in it can be trusted", dir,
			filepath.Base(strings.TrimSuffix(filepath.Clean(dir), PartialSuffix)))
	}
	var cfg Config
	if err := readJSON(dir, configFile, &cfg); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("open run directory %s: no %s (not a run directory?)", dir, configFile)
		}
		return nil, fmt.Errorf("open run directory %s: %w", dir, err)
	}
	switch {
	case cfg.FormatVersion == 0:
		return nil, fmt.Errorf("open run directory %s: %s has no format_version (not written by gait?)",
			dir, configFile)
	case cfg.FormatVersion != FormatVersion:
		return nil, fmt.Errorf("open run directory %s: format version %d, this gait reads %d",
			dir, cfg.FormatVersion, FormatVersion)
	}
	n, err := countSamples(dir)
	if err == nil {
		err = checkInvolved(dir, n)
	}
	if err != nil {
		return nil, fmt.Errorf("open run directory %s: %w", dir, err)
	}
	return &Run{Dir: dir, Config: cfg, n: n}, nil
}

// Len is the number of samples.
func (r *Run) Len() int { return r.n }

func (r *Run) column(name string) string { return filepath.Join(r.Dir, samplesDir, name) }

// LatencyNanos returns every sample's latency in nanoseconds.
func (r *Run) LatencyNanos() ([]int64, error) {
	return readInt64Column(r.column(latencyColumn), r.n)
}

// Latencies returns every sample's latency in seconds. It converts in place
// so the result costs 8 bytes per sample and nothing more.
func (r *Run) Latencies() ([]float64, error) {
	ns, err := r.LatencyNanos()
	if err != nil || len(ns) == 0 {
		return []float64{}, err
	}
	secs := unsafe.Slice((*float64)(unsafe.Pointer(&ns[0])), len(ns))
	for i, v := range ns {
		if v < 0 {
			return nil, fmt.Errorf("%s: sample %d has negative latency %d ns", r.column(latencyColumn), i, v)
		}
		secs[i] = float64(v) / 1e9
	}
	return secs, nil
}

// Samples returns every sample with all its fields.
func (r *Run) Samples() ([]Sample, error) {
	starts, err := readInt64Column(r.column(startColumn), r.n)
	if err != nil {
		return nil, err
	}
	lats, err := r.LatencyNanos()
	if err != nil {
		return nil, err
	}
	var bytes [3][]byte
	for i, name := range []string{opColumn, hostColumn, outcomeColumn} {
		if bytes[i], err = readByteColumn(r.column(name), r.n); err != nil {
			return nil, err
		}
	}
	out := make([]Sample, r.n)
	for i := range out {
		out[i] = Sample{Start: time.Duration(starts[i]), Latency: time.Duration(lats[i]),
			Op: bytes[0][i], Host: bytes[1][i], Outcome: Outcome(bytes[2][i])}
	}
	if err := readInvolved(r.column(involvedColumn), out); err != nil {
		return nil, err
	}
	return out, nil
}

// OpName names a sample's operation.
func (r *Run) OpName(op uint8) string {
	if int(op) < len(r.Config.Ops) {
		return r.Config.Ops[op]
	}
	return fmt.Sprintf("op%d", op)
}

// HostName names a sample's target host.
func (r *Run) HostName(host uint8) string {
	if int(host) < len(r.Config.Hosts) {
		return r.Config.Hosts[host].Name
	}
	return fmt.Sprintf("host%d", host)
}

// Summary reads summary.json.
func (r *Run) Summary() (Summary, error) {
	var s Summary
	if err := readJSON(r.Dir, summaryFile, &s); err != nil {
		return s, fmt.Errorf("read run directory %s: %w", r.Dir, err)
	}
	if s.FormatVersion != FormatVersion {
		return Summary{}, fmt.Errorf("read run directory %s: %s has format version %d, this gait reads %d",
			r.Dir, summaryFile, s.FormatVersion, FormatVersion)
	}
	return s, nil
}

// TimeSeries reads the per-second time series.
func (r *Run) TimeSeries() ([]Second, error) {
	return readTimeSeries(filepath.Join(r.Dir, timeseriesFile))
}

var seriesColumns = []string{"t", "throughput", "p50", "p90", "p99", "max"}

func writeTimeSeries(path string, rows []Second) error {
	names := map[string]bool{}
	for _, s := range rows {
		for k := range s.Metrics {
			names[k] = true
		}
	}
	metrics := make([]string, 0, len(names))
	for k := range names {
		metrics = append(metrics, k)
	}
	slices.Sort(metrics)

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write(append(slices.Clone(seriesColumns), metrics...))
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, s := range rows {
		rec := []string{strconv.Itoa(s.T), g(s.Throughput), g(s.P50), g(s.P90), g(s.P99), g(s.Max)}
		for _, k := range metrics {
			v, ok := s.Metrics[k]
			if ok {
				rec = append(rec, g(v))
			} else {
				rec = append(rec, "") // not sampled this second
			}
		}
		w.Write(rec)
	}
	w.Flush()
	err = w.Error()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func readTimeSeries(path string) ([]Second, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %s, not a file", path, fileKind(st.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	if len(header) < len(seriesColumns) || !slices.Equal(header[:len(seriesColumns)], seriesColumns) {
		return nil, fmt.Errorf("%s: header %v does not start with %v", path, header, seriesColumns)
	}
	var out []Second
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		s, err := parseSecond(header, rec)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, s)
	}
}

func parseSecond(header, rec []string) (Second, error) {
	var s Second
	t, err := strconv.Atoi(rec[0])
	if err != nil {
		return s, fmt.Errorf("column t: %w", err)
	}
	s.T = t
	fixed := []*float64{&s.Throughput, &s.P50, &s.P90, &s.P99, &s.Max}
	for i, p := range fixed {
		if *p, err = strconv.ParseFloat(rec[i+1], 64); err != nil {
			return s, fmt.Errorf("column %s: %w", header[i+1], err)
		}
	}
	for i := len(seriesColumns); i < len(rec); i++ {
		if rec[i] == "" {
			continue
		}
		v, err := strconv.ParseFloat(rec[i], 64)
		if err != nil {
			return s, fmt.Errorf("column %s: %w", header[i], err)
		}
		if s.Metrics == nil {
			s.Metrics = map[string]float64{}
		}
		s.Metrics[header[i]] = v
	}
	return s, nil
}

package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/gait-dev/gait/internal/stats"
)

// Writer writes one run directory. It builds the directory under a temporary
// name and renames it into place on Close, so a reader never sees a
// half-written run and a failed run leaves nothing behind (Abort).
type Writer struct {
	dir, tmp string
	cfg      Config
	columns  [5]*columnWriter // start, latency, op, host, outcome
	involved involvedWriter   // the optional column
	err      error            // the first error creating the optional column

	// Per-second latency histograms keyed by completion second, and metrics.
	seconds map[int]*hdrhistogram.Histogram
	metrics map[int]map[string]float64
	counts  [3]int // per outcome
	end     time.Duration
	gen     *Generator
}

// Create starts a run directory at dir, which must not exist yet.
func Create(dir string, cfg Config) (*Writer, error) {
	if _, err := os.Stat(dir); err == nil {
		return nil, fmt.Errorf("create run directory %s: already exists", dir)
	}
	tmp := dir + PartialSuffix
	os.RemoveAll(tmp) // a leftover of an earlier crash
	if err := os.MkdirAll(filepath.Join(tmp, samplesDir), 0o755); err != nil {
		return nil, fmt.Errorf("create run directory %s: %w", dir, err)
	}
	cfg.FormatVersion = FormatVersion
	if cfg.Started.IsZero() {
		cfg.Started = time.Now()
	}
	w := &Writer{dir: dir, tmp: tmp, cfg: cfg,
		seconds: map[int]*hdrhistogram.Histogram{}, metrics: map[int]map[string]float64{}}
	for i, name := range []string{startColumn, latencyColumn, opColumn, hostColumn, outcomeColumn} {
		c, err := createColumn(filepath.Join(tmp, samplesDir), name)
		if err != nil {
			w.Abort()
			return nil, fmt.Errorf("create run directory %s: %w", dir, err)
		}
		w.columns[i] = c
	}
	return w, nil
}

// Config returns the configuration being written.
func (w *Writer) Config() Config { return w.cfg }

// Add records one request.
func (w *Writer) Add(s Sample) {
	w.columns[0].putInt64(int64(s.Start))
	w.columns[1].putInt64(int64(s.Latency))
	w.columns[2].putByte(s.Op)
	w.columns[3].putByte(s.Host)
	w.columns[4].putByte(byte(s.Outcome))
	if err := w.involved.add(filepath.Join(w.tmp, samplesDir), s.Involved); err != nil && w.err == nil {
		w.err = err
	}
	if int(s.Outcome) < len(w.counts) {
		w.counts[s.Outcome]++
	}
	done := s.Start + s.Latency
	w.end = max(w.end, done)
	sec := int(done / time.Second)
	h := w.seconds[sec]
	if h == nil {
		// 1 µs to 1 h at 3 significant digits covers every latency worth
		// plotting; larger values are clamped to the top.
		h = hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
		w.seconds[sec] = h
	}
	us := max(int64(s.Latency/time.Microsecond), 1)
	if h.RecordValue(us) != nil {
		h.RecordValue(h.HighestTrackableValue())
	}
}

// AddMetric records a named white-box metric for second t of the run.
func (w *Writer) AddMetric(t int, name string, value float64) {
	m := w.metrics[t]
	if m == nil {
		m = map[string]float64{}
		w.metrics[t] = m
	}
	m[name] = value
}

// SetGenerator records how well an open-loop generator kept its schedule,
// for summary.json.
func (w *Writer) SetGenerator(g Generator) { w.gen = &g }

// Close writes the time series and the summary and moves the run directory
// into place. extra is stored in summary.json for the producer's own figures.
func (w *Writer) Close(extra map[string]any) error {
	var errs []error
	for _, c := range w.columns {
		errs = append(errs, c.close())
	}
	errs = append(errs, w.err, w.involved.close())
	if err := errors.Join(errs...); err != nil {
		w.Abort()
		return fmt.Errorf("write samples of %s: %w", w.dir, err)
	}
	if err := w.finish(extra); err != nil {
		w.Abort()
		return fmt.Errorf("write run directory %s: %w", w.dir, err)
	}
	if err := os.Rename(w.tmp, w.dir); err != nil {
		w.Abort()
		return fmt.Errorf("write run directory %s: %w", w.dir, err)
	}
	return nil
}

func (w *Writer) finish(extra map[string]any) error {
	if err := writeJSON(filepath.Join(w.tmp, configFile), w.cfg); err != nil {
		return err
	}
	if err := writeTimeSeries(filepath.Join(w.tmp, timeseriesFile), w.timeSeries()); err != nil {
		return err
	}
	sum, err := summarize(w.tmp, w.counts, w.end)
	if err != nil {
		return err
	}
	sum.Extra, sum.Generator = extra, w.gen
	return writeJSON(filepath.Join(w.tmp, summaryFile), sum)
}

// Abort removes everything written so far.
func (w *Writer) Abort() {
	for _, c := range append(w.columns[:], w.involved.col) {
		if c != nil {
			c.f.Close()
		}
	}
	os.RemoveAll(w.tmp)
}

func (w *Writer) timeSeries() []Second {
	last := -1
	for t := range w.seconds {
		last = max(last, t)
	}
	for t := range w.metrics {
		last = max(last, t)
	}
	out := make([]Second, 0, last+1)
	for t := 0; t <= last; t++ {
		s := Second{T: t, Metrics: w.metrics[t]}
		if h := w.seconds[t]; h != nil {
			s.Throughput = float64(h.TotalCount())
			us := func(q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1e6 }
			s.P50, s.P90, s.P99, s.Max = us(50), us(90), us(99), float64(h.Max())/1e6
		}
		out = append(out, s)
	}
	return out
}

// summarize computes summary.json from the stored latency column, exactly,
// with the same definitions as gait analyze (package stats).
func summarize(dir string, counts [3]int, end time.Duration) (Summary, error) {
	n := counts[OK] + counts[Error] + counts[Timeout]
	run := &Run{Dir: dir, n: n}
	lat, err := run.Latencies()
	if err != nil {
		return Summary{}, err
	}
	d := stats.Describe(lat)
	s := Summary{FormatVersion: FormatVersion, Requests: n, Errors: counts[Error], Timeouts: counts[Timeout],
		Duration: end.Seconds(), Mean: d.Mean, P50: d.P50, P99: d.P99, Max: d.Max}
	if s.Duration > 0 {
		s.Throughput = float64(n) / s.Duration
	}
	return s, nil
}

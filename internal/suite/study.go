package suite

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gait-dev/gait/internal/bench"
	"github.com/gait-dev/gait/internal/report"
	"github.com/gait-dev/gait/internal/rundir"
	"github.com/gait-dev/gait/internal/units"
)

// studyFigure is one case-study figure with its experiments' lines.
type studyFigure struct {
	study  *bench.Study // the first experiment's, which sets the axes
	series []report.Series
	rows   [][]string // one per experiment: what the figure shows of it
}

// studies draws the case-study figures (bench.Study): every experiment
// naming a figure is a point of its series (X a per-experiment value:
// its baseline's throughput, say, against its DataNodes) or a line (its
// baseline's seconds: creates per second against the files made so
// far), in the order the suite ran them.
func studies(p *report.Page, results []Result) error {
	var order []string
	figs := map[string]*studyFigure{}
	for _, r := range results {
		s, runs, err := bench.Reload(r.Dir)
		if err != nil {
			return err
		}
		st := s.Study
		if st == nil || len(runs) == 0 {
			continue
		}
		f := figs[st.Figure]
		if f == nil {
			f = &studyFigure{study: st}
			figs[st.Figure] = f
			order = append(order, st.Figure)
		}
		if st.X != f.study.X || st.Y != f.study.Y {
			p.Note(fmt.Sprintf("%s: its study's axes (%s, %s) differ from the figure's (%s, %s); left out of %q.",
				r.Experiment, st.X, st.Y, f.study.X, f.study.Y, st.Figure))
			continue
		}
		if err := f.add(s, runs[0]); err != nil {
			return fmt.Errorf("study %q: %s: %w", st.Figure, r.Experiment, err)
		}
	}
	if len(order) == 0 {
		return nil
	}
	p.Heading("Case studies")
	for _, title := range order {
		f := figs[title]
		p.Heading(title)
		chart := report.LineChart{X: report.Axis{Label: axisLabel(f.study.X)}, Y: report.Axis{Label: axisLabel(f.study.Y), Unit: axisUnit(f.study.Y)},
			Series: f.series, Markers: f.study.PerExperiment()}
		if f.study.PerExperiment() {
			// From 0, so that points are compared by their size, not
			// their difference.
			chart.X.Max, chart.Y.Max = 1.1*f.most(func(s report.Series) []float64 { return s.X }), 1.1*f.most(func(s report.Series) []float64 { return s.Y })
		}
		p.Figure(f.caption(), chart)
		p.Table([]string{"series", "experiment", axisLabel(f.study.X), axisLabel(f.study.Y)}, f.rows)
	}
	return nil
}

// most is the largest of one axis' values over the figure's series.
func (f *studyFigure) most(axis func(report.Series) []float64) float64 {
	m := 0.0
	for _, s := range f.series {
		for _, v := range axis(s) {
			m = max(m, v)
		}
	}
	return m
}

func (f *studyFigure) caption() string {
	if f.study.PerExperiment() {
		return fmt.Sprintf("%s against %s: each experiment's baseline is a point, a line joins a series' experiments.", axisLabel(f.study.Y), axisLabel(f.study.X))
	}
	return fmt.Sprintf("%s against %s, a point per second of each experiment's baseline run.", axisLabel(f.study.Y), axisLabel(f.study.X))
}

// add puts the experiment s, whose baseline run is base, on the figure.
func (f *studyFigure) add(s *bench.Scenario, base bench.RunResult) error {
	st := s.Study
	i := slices.IndexFunc(f.series, func(sr report.Series) bool { return sr.Name == st.Series })
	if i < 0 {
		f.series = append(f.series, report.Series{Name: st.Series})
		i = len(f.series) - 1
	}
	sr := &f.series[i]
	if st.PerExperiment() {
		x := float64(s.Nodes)
		if st.X == "datanodes" {
			x-- // the first host runs the master
		}
		y := summaryValue(st.Y, base.Summary, s.Workload.ValueSize)
		// In order of x, so the line joins neighbours whatever order
		// the suite ran them in.
		at, _ := slices.BinarySearch(sr.X, x)
		sr.X, sr.Y = slices.Insert(sr.X, at, x), slices.Insert(sr.Y, at, y)
		f.rows = append(f.rows, []string{st.Series, s.Name, units.Sig(x), units.Sig(y)})
		return nil
	}
	run, err := rundir.Open(base.Dir)
	if err != nil {
		return err
	}
	secs, err := run.TimeSeries()
	if err != nil {
		return err
	}
	done := 0.0
	for _, sec := range secs {
		done += sec.Throughput
		x, okx := secondValue(st.X, sec, done, s.Workload.ValueSize)
		y, oky := secondValue(st.Y, sec, done, s.Workload.ValueSize)
		if okx && oky {
			sr.X, sr.Y = append(sr.X, x), append(sr.Y, y)
		}
	}
	if len(sr.X) == 0 {
		return fmt.Errorf("its baseline's time series has no second with both %s and %s", st.X, st.Y)
	}
	f.rows = append(f.rows, []string{st.Series, s.Name, fmt.Sprintf("%s to %s", units.Sig(slices.Min(sr.X)), units.Sig(slices.Max(sr.X))),
		fmt.Sprintf("%s to %s", units.Sig(slices.Min(sr.Y)), units.Sig(slices.Max(sr.Y)))})
	return nil
}

// summaryValue is a run's y: requests/s, MB/s written (requests/s times
// the workload's value size), or a latency percentile.
func summaryValue(y string, sum rundir.Summary, valueSize int) float64 {
	switch y {
	case "mb/s":
		return sum.Throughput * float64(valueSize) / 1e6
	case "p50":
		return sum.P50
	case "p99":
		return sum.P99
	}
	return sum.Throughput
}

// secondValue is one second's value of an axis; false when the second
// does not have it (a metric not scraped that second, no request done).
func secondValue(axis string, sec rundir.Second, done float64, valueSize int) (float64, bool) {
	switch axis {
	case "requests":
		return done, true
	case "seconds":
		return float64(sec.T), true
	case "throughput":
		return sec.Throughput, true
	case "mb/s":
		return sec.Throughput * float64(valueSize) / 1e6, true
	case "p50":
		return sec.P50, sec.Throughput > 0
	case "p99":
		return sec.P99, sec.Throughput > 0
	}
	v, ok := sec.Metrics[axis]
	return v, ok
}

func axisLabel(axis string) string {
	switch axis {
	case "datanodes":
		return "DataNodes"
	case "nodes":
		return "nodes"
	case "requests":
		return "requests done"
	case "seconds":
		return "seconds"
	case "throughput":
		return "requests/s"
	case "mb/s":
		return "MB/s written"
	case "p50":
		return "p50 latency"
	case "p99":
		return "p99 latency"
	}
	return strings.TrimSpace(axis)
}

func axisUnit(axis string) string {
	if axis == "p50" || axis == "p99" {
		return "s"
	}
	return ""
}

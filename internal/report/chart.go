package report

// Chart is anything that renders itself as one self-contained <svg> element.
type Chart interface {
	SVG() string
}

// Axis describes one axis of a chart.
type Axis struct {
	Label string
	// Log draws a log10 axis with decade ticks; points with a non-positive
	// value on it are skipped.
	Log bool
	// Min and Max fix the range; Min == Max == 0 means automatic.
	Min, Max float64
	// Unit formats the tick labels:
	//   "s"  values are seconds, shown as ns, µs, ms or s ("100µs", "1.5ms");
	//   "%"  values are fractions, shown as percentages (0.25 is "25%");
	//   ""   plain numbers, large ones shortened ("20k", "1.5M");
	//   other units are plain numbers with the unit added to the label,
	//   e.g. Label "Throughput", Unit "ops/s" reads "Throughput (ops/s)".
	Unit string
	// Zero includes zero in an automatic linear range (bar charts always do).
	Zero bool
}

// Series is one named set of points. In a BarChart, Y holds one value per
// category and X is ignored. NaN and Inf values are skipped.
type Series struct {
	Name   string
	X, Y   []float64
	Dashed bool
	// Lo and Hi, when set (one per point), draw a bar at each X from Lo to
	// Hi: the range of repeated measurements whose median is Y.
	Lo, Hi []float64
}

// LineChart joins each series' points in order. Step draws a staircase (the
// value holds until the next point), for CDFs and per-second time series.
// Markers draws a dot at each point (omitted above markerLimit points).
// Series longer than maxPoints are thinned in screen space so the SVG stays
// small while the curve stays within a pixel of the original.
type LineChart struct {
	Title   string
	X, Y    Axis
	Series  []Series
	Markers bool
	Step    bool
}

// ScatterChart draws each point as a dot. Dense series keep at most one dot
// per small screen cell, so isolated points (outliers) always survive.
type ScatterChart struct {
	Title  string
	X, Y   Axis
	Series []Series
}

// BarChart draws grouped bars: one group per category, one bar per series.
type BarChart struct {
	Title      string
	Y          Axis
	Categories []string
	Series     []Series // Y per category
}

// CDF is the empirical distribution of sorted (ascending) samples: the
// points (x_i, (i+1)/n), the share of samples at or below each one. Pass
// all samples: the chart thins them by quantile in screen space.
func CDF(name string, sorted []float64) Series {
	n := float64(len(sorted))
	s := Series{Name: name, X: sorted, Y: make([]float64, len(sorted))}
	for i := range sorted {
		s.Y[i] = float64(i+1) / n
	}
	return s
}

// CCDF is the complementary distribution of sorted (ascending) samples:
// the points (x_i, (n-i)/n), the share of samples at or above each one.
// On a log y axis it shows the tail; its smallest value, 1/n, is positive.
func CCDF(name string, sorted []float64) Series {
	n := float64(len(sorted))
	s := Series{Name: name, X: sorted, Y: make([]float64, len(sorted))}
	for i := range sorted {
		s.Y[i] = float64(len(sorted)-i) / n
	}
	return s
}

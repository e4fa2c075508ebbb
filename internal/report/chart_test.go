package report

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// checkXML fails unless svg is one well-formed XML document rooted at <svg>.
func checkXML(t *testing.T, name, svg string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	depth, roots := 0, 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: invalid XML: %v\n%.400s", name, err, svg)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
				if e.Name.Local != "svg" {
					t.Errorf("%s: root element <%s>, want <svg>", name, e.Name.Local)
				}
			}
			depth++
		case xml.EndElement:
			depth--
		}
	}
	if roots != 1 {
		t.Errorf("%s: %d root elements, want 1", name, roots)
	}
}

const nasty = "<script>alert('x')</script> & \"q\" \x00\x1b\xff"

func allCharts() map[string]Chart {
	xs := []float64{1e-4, 2e-4, math.NaN(), 5e-4, math.Inf(1), -1, 0, 1e-2}
	ys := []float64{0.1, 0.5, 0.6, math.NaN(), 0.8, 0.9, 0.95, 1}
	series := []Series{{Name: nasty, X: xs, Y: ys}, {Name: "second", X: xs, Y: ys, Dashed: true}}
	return map[string]Chart{
		"line":       LineChart{Title: nasty, X: Axis{Label: nasty, Log: true, Unit: "s"}, Y: Axis{Label: "share", Unit: "%"}, Series: series, Markers: true},
		"step":       LineChart{Title: "cdf", X: Axis{Log: true, Unit: "s"}, Y: Axis{Log: true}, Series: series, Step: true},
		"scatter":    ScatterChart{Title: "scatter", X: Axis{Log: true}, Y: Axis{Log: true}, Series: series},
		"bar":        BarChart{Title: "bars", Y: Axis{Label: "p99", Unit: "s"}, Categories: []string{nasty, "b", "c"}, Series: series},
		"bar log":    BarChart{Y: Axis{Log: true, Unit: "s"}, Categories: []string{"a", "b", "c", "d", "e", "f", "g", "h"}, Series: series},
		"empty line": LineChart{Title: nasty},
		"empty bar":  BarChart{Categories: []string{"a"}},
	}
}

func TestChartsAreValidEscapedSVG(t *testing.T) {
	for name, c := range allCharts() {
		svg := c.SVG()
		checkXML(t, name, svg)
		for _, bad := range []string{"<script", "NaN", "Inf", "\x00", "\x1b"} {
			if strings.Contains(svg, bad) {
				t.Errorf("%s: SVG contains %q", name, bad)
			}
		}
	}
}

func TestNameIsEscapedNotDropped(t *testing.T) {
	svg := allCharts()["line"].SVG()
	if !strings.Contains(svg, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &#34;q&#34;") {
		t.Errorf("escaped series name missing from SVG:\n%.2000s", svg)
	}
}

func TestInvalidPointsAreSkipped(t *testing.T) {
	c := LineChart{X: Axis{Log: true}, Y: Axis{}, Series: []Series{{
		Name: "s",
		X:    []float64{1, 2, math.NaN(), 4, math.Inf(1), -1, 0, 8, 9},
		Y:    []float64{1, 2, 3, math.Inf(-1), 5, 6, 7, 8},
	}}}
	// Usable points: x=1, 2, 8 (x=9 has no y).
	if svg := c.SVG(); !strings.Contains(svg, "<title>s (3 points)</title>") {
		t.Errorf("want 3 usable points:\n%s", svg)
	}
}

func TestEmptyChartsSayNoData(t *testing.T) {
	for name, c := range map[string]Chart{
		"no series":            LineChart{},
		"no points":            ScatterChart{Series: []Series{{Name: "a"}}},
		"only NaN":             LineChart{Series: []Series{{X: []float64{math.NaN()}, Y: []float64{1}}}},
		"non-positive on log":  LineChart{Y: Axis{Log: true}, Series: []Series{{X: []float64{1, 2}, Y: []float64{0, -1}}}},
		"no categories":        BarChart{Series: []Series{{Y: []float64{1}}}},
		"no values":            BarChart{Categories: []string{"a"}, Series: []Series{{Y: []float64{math.NaN()}}}},
		"values beyond labels": BarChart{Categories: []string{}, Series: []Series{{Y: []float64{3}}}},
	} {
		svg := c.SVG()
		checkXML(t, name, svg)
		if !strings.Contains(svg, ">no data<") {
			t.Errorf("%s: does not say no data", name)
		}
	}
	if svg := (LineChart{Series: []Series{{X: []float64{1}, Y: []float64{1}}}}).SVG(); strings.Contains(svg, "no data") {
		t.Error("a chart with one point says no data")
	}
}

func TestLegend(t *testing.T) {
	one := LineChart{Series: []Series{{X: []float64{1, 2}, Y: []float64{1, 2}}}}.SVG()
	if strings.Contains(one, `class="legend"`) {
		t.Error("a single unnamed series got a legend")
	}
	var series []Series
	for i := range 12 {
		series = append(series, Series{Name: strings.Repeat("n", i+1), X: []float64{1, 2}, Y: []float64{1, float64(i)}})
	}
	svg := LineChart{Series: series}.SVG()
	if n := strings.Count(svg, `<g><title>n`); n != 24 { // one legend entry and one path per series
		t.Errorf("%d titled groups, want 24", n)
	}
	// Series 11 and 12 reuse the first colours, dashed.
	if strings.Count(svg, `stroke="`+palette[0]+`"`) != 4 || strings.Count(svg, `stroke-dasharray`) != 4 {
		t.Errorf("colour reuse after %d series is not dashed", len(palette))
	}
}

func TestBarChartDrawsOneBarPerValue(t *testing.T) {
	c := BarChart{
		Y:          Axis{Unit: "s"},
		Categories: []string{"a", "b", "c"},
		Series: []Series{
			{Name: "p99", Y: []float64{1e-3, math.NaN(), 3e-3}},
			{Name: "max", Y: []float64{2e-3, 4e-3, 6e-3, 99}}, // the fourth has no category
		},
	}
	svg := c.SVG()
	if n := strings.Count(svg, "</title></rect>"); n != 5 {
		t.Errorf("%d bars, want 5", n)
	}
	if !strings.Contains(svg, "<title>max, c: 6ms</title>") {
		t.Error("bar tooltip missing")
	}
}

func TestDownsampledChartStaysSmall(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	n := 1_000_000
	cdf := Series{Name: "cdf", X: make([]float64, n), Y: make([]float64, n)}
	noisy := Series{Name: "noisy", X: make([]float64, n), Y: make([]float64, n)}
	for i := range n {
		cdf.X[i] = math.Exp(float64(i) / float64(n) * 10)
		cdf.Y[i] = float64(i+1) / float64(n)
		noisy.X[i] = float64(i)
		noisy.Y[i] = r.NormFloat64()
	}
	for name, c := range map[string]Chart{
		"log cdf":   LineChart{X: Axis{Log: true}, Y: Axis{Log: true}, Series: []Series{cdf}, Step: true},
		"noisy":     LineChart{Series: []Series{noisy}},
		"scatter":   ScatterChart{Series: []Series{noisy}},
		"scatter 2": ScatterChart{Series: []Series{cdf}},
	} {
		svg := c.SVG()
		checkXML(t, name, svg)
		if len(svg) > 80_000 {
			t.Errorf("%s: SVG of a million points is %d bytes, want at most 80 kB", name, len(svg))
		}
		if !strings.Contains(svg, "1000000 points, ") {
			t.Errorf("%s: tooltip does not say the series was thinned", name)
		}
	}
}

func TestCDFSeries(t *testing.T) {
	sorted := []float64{1, 2, 3, 4}
	cdf, ccdf := CDF("a", sorted), CCDF("b", sorted)
	for i, want := range []float64{0.25, 0.5, 0.75, 1} {
		if cdf.Y[i] != want {
			t.Errorf("CDF y[%d] = %g, want %g", i, cdf.Y[i], want)
		}
		if got := ccdf.Y[i]; got != 1.25-want {
			t.Errorf("CCDF y[%d] = %g, want %g", i, got, 1.25-want)
		}
	}
}

func TestLongTextIsShortened(t *testing.T) {
	long := strings.Repeat("word ", 100)
	svg := LineChart{Title: long, Y: Axis{Label: long}, Series: []Series{{Name: long, X: []float64{1, 2}, Y: []float64{1, 2}}}}.SVG()
	checkXML(t, "long", svg)
	for _, line := range strings.SplitAfter(svg, "</text>") {
		if i := strings.Index(line, "<text"); i >= 0 && len(line)-i > 300 {
			t.Errorf("text not shortened: %.120s...", line[i:])
		}
	}
}

// TestRangeBars: a series with Lo and Hi draws one bar per point whose
// range the axes can show, and the axis reaches the range, not just the
// medians.
func TestRangeBars(t *testing.T) {
	c := LineChart{X: Axis{}, Y: Axis{Log: true}, Series: []Series{{
		Name: "s", X: []float64{1, 2, 3}, Y: []float64{2, 30, 300},
		Lo: []float64{1, 30, 0}, Hi: []float64{4000, 30, 500},
	}}}
	svg := c.SVG()
	checkXML(t, "range", svg)
	// Two caps and a stem per bar: the second point's range is empty and
	// the third's Lo cannot go on a log axis.
	if n := strings.Count(svg, `stroke-width="1.5"`); n != 1 {
		t.Fatalf("%d range paths, want 1:\n%s", n, svg)
	}
	if !strings.Contains(svg, ">1k<") && !strings.Contains(svg, ">1000<") {
		t.Errorf("the y axis does not reach the range's 4000:\n%.3000s", svg)
	}
}

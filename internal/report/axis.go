package report

import (
	"math"
	"strconv"
)

// tick is one grid line; only ticks with a label are drawn as major lines.
type tick struct {
	v     float64
	label string
}

// scale maps data values on one axis to pixels.
type scale struct {
	lo, hi   float64
	log      bool
	tlo, thi float64 // lo and hi, log10 on a log axis
	a, b     float64 // pixels of lo and hi
	ticks    []tick
}

func (s *scale) pos(v float64) float64 {
	if s.log {
		v = math.Log10(v)
	}
	return s.a + (v-s.tlo)/(s.thi-s.tlo)*(s.b-s.a)
}

// usable tells whether v can be placed on an axis of this kind.
func usable(v float64, log bool) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && (!log || v > 0)
}

// extent is the range of the data seen on one axis.
type extent struct {
	min, max float64
	n        int
}

func (e *extent) add(v float64) {
	if e.n == 0 || v < e.min {
		e.min = v
	}
	if e.n == 0 || v > e.max {
		e.max = v
	}
	e.n++
}

// newScale picks the range and the ticks of an axis; target is the number
// of intervals a linear axis aims for.
func newScale(ax Axis, e extent, target int) *scale {
	s := &scale{log: ax.Log}
	fixed := (ax.Min != 0 || ax.Max != 0) && ax.Min < ax.Max && (!ax.Log || ax.Min > 0)
	switch {
	case fixed:
		s.lo, s.hi = ax.Min, ax.Max
	case ax.Log:
		s.lo, s.hi = logRange(e)
	default:
		s.lo, s.hi = linearRange(e, ax.Zero, target)
	}
	s.tlo, s.thi = s.lo, s.hi
	if s.log {
		s.tlo, s.thi = math.Log10(s.lo), math.Log10(s.hi)
		s.ticks = logTicks(s.lo, s.hi, ax.Unit)
	} else {
		s.ticks = linearTicks(s.lo, s.hi, target, ax.Unit)
	}
	return s
}

// logRange widens the data to whole decades, so the ends carry labels.
func logRange(e extent) (lo, hi float64) {
	if e.n == 0 {
		return 1, 10
	}
	e0 := math.Floor(math.Log10(e.min) + 1e-9)
	e1 := math.Ceil(math.Log10(e.max) - 1e-9)
	if e1 <= e0 {
		e1 = e0 + 1
	}
	return math.Pow(10, e0), math.Pow(10, e1)
}

func linearRange(e extent, zero bool, target int) (lo, hi float64) {
	if e.n == 0 {
		return 0, 1
	}
	lo, hi = e.min, e.max
	if zero {
		lo, hi = min(lo, 0), max(hi, 0)
	}
	if lo == hi {
		pad := math.Abs(lo) * 0.1
		if pad == 0 {
			pad = 1
		}
		lo, hi = lo-pad, hi+pad
		if zero && e.min >= 0 {
			lo = 0
		}
	}
	step := niceStep((hi - lo) / float64(target))
	return clean(math.Floor(lo/step+1e-9) * step), clean(math.Ceil(hi/step-1e-9) * step)
}

// niceStep rounds raw up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / p; {
	case f <= 1+1e-9:
		return p
	case f <= 2+1e-9:
		return 2 * p
	case f <= 5+1e-9:
		return 5 * p
	}
	return 10 * p
}

func linearTicks(lo, hi float64, target int, unit string) []tick {
	step := niceStep((hi - lo) / float64(target))
	var vals []float64
	for k := math.Ceil(lo/step - 1e-9); k*step <= hi+step*1e-9; k++ {
		vals = append(vals, clean(k*step))
	}
	var big float64
	for _, v := range vals {
		big = max(big, math.Abs(v))
	}
	f := linearFormatter(unit, big)
	ticks := make([]tick, len(vals))
	for i, v := range vals {
		ticks[i] = tick{v, f(v)}
	}
	return ticks
}

// logTicks puts a labelled tick on each decade (every few decades on a wide
// axis) and unlabelled ones at 2..9 times each decade. An axis narrower than
// two decade ticks labels 1-2-5 instead.
func logTicks(lo, hi float64, unit string) []tick {
	e0 := int(math.Floor(math.Log10(lo) + 1e-9))
	e1 := int(math.Ceil(math.Log10(hi) - 1e-9))
	decades := e1 - e0
	stride := max(1, (decades+7)/8)
	inside := func(v float64) bool { return v >= lo*(1-1e-9) && v <= hi*(1+1e-9) }
	var majors int
	for e := e0; e <= e1; e++ {
		if inside(math.Pow10(e)) {
			majors++
		}
	}
	labelled := func(m, e int) bool { return m == 1 && (e-e0)%stride == 0 }
	if majors < 2 {
		labelled = func(m, e int) bool { return m == 1 || m == 2 || m == 5 }
	}
	var ticks []tick
	for e := e0; e <= e1; e++ {
		for m := 1; m <= 9; m++ {
			v := clean(float64(m) * math.Pow10(e))
			if !inside(v) || (m > 1 && decades > 8) {
				continue
			}
			t := tick{v: v}
			if labelled(m, e) {
				t.label = formatValue(v, unit)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// clean rounds away binary noise such as 0.30000000000000004.
func clean(v float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	if err != nil {
		return v
	}
	return r
}

func plain(v float64) string {
	v = clean(v)
	if v == 0 {
		return "0"
	}
	if a := math.Abs(v); a < 1e-4 || a >= 1e15 {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// prefix is a unit scale: divide by div, write suffix after the number.
type prefix struct {
	div    float64
	suffix string
}

var secondPrefixes = []prefix{{1, "s"}, {1e-3, "ms"}, {1e-6, "µs"}, {1e-9, "ns"}}
var countPrefixes = []prefix{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}}

func secondPrefix(a float64) prefix {
	for _, p := range secondPrefixes {
		if a >= p.div*(1-1e-9) {
			return p
		}
	}
	return secondPrefixes[len(secondPrefixes)-1]
}

func countPrefix(a float64) prefix {
	for _, p := range countPrefixes {
		// k from 10^4 on: "1500" reads better than "1.5k".
		if a >= p.div*(1-1e-9) && (p.suffix != "k" || a >= 1e4) {
			return p
		}
	}
	return prefix{1, ""}
}

// linearFormatter labels all ticks of a linear axis with one prefix, chosen
// by the largest tick, so "0.5ms 1ms 1.5ms" rather than "500µs 1ms 1.5ms".
func linearFormatter(unit string, big float64) func(float64) string {
	var p prefix
	switch unit {
	case "s":
		p = secondPrefix(big)
	case "%":
		p = prefix{0.01, "%"}
	default:
		p = countPrefix(big)
	}
	return func(v float64) string {
		if v == 0 {
			return "0"
		}
		return plain(v/p.div) + p.suffix
	}
}

// formatValue writes one value on its own, e.g. for a log tick or a tooltip.
func formatValue(v float64, unit string) string {
	if v == 0 {
		return "0"
	}
	var p prefix
	switch unit {
	case "s":
		p = secondPrefix(math.Abs(v))
	case "%":
		p = prefix{0.01, "%"}
	default:
		p = countPrefix(math.Abs(v))
	}
	return plain(v/p.div) + p.suffix
}

// formatPrecise is formatValue with at most 4 significant digits, for tooltips.
func formatPrecise(v float64, unit string) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return formatValue(v, unit)
	}
	digits := 3 - int(math.Floor(math.Log10(math.Abs(v))))
	p := math.Pow(10, float64(digits))
	return formatValue(math.Round(v*p)/p, unit)
}

// axisTitle is the label with a unit that the ticks do not show.
func axisTitle(ax Axis) string {
	if ax.Unit == "" || ax.Unit == "s" || ax.Unit == "%" {
		return ax.Label
	}
	if ax.Label == "" {
		return ax.Unit
	}
	return ax.Label + " (" + ax.Unit + ")"
}

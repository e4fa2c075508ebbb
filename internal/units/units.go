// Package units writes measured quantities for people: latencies in the
// unit that keeps them between 1 and 999, numbers to three significant
// digits. Every table, log line and report of gait uses it, so a number
// reads the same wherever it appears.
package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Seconds writes a latency in seconds with three significant digits and the
// unit that keeps it between 1 and 999: 45.2µs, 1.23ms, 2.5s.
func Seconds(v float64) string {
	if v == 0 {
		return "0"
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	// Round first so 999.96µs becomes 1ms, not "1e+03µs".
	exp := math.Floor(math.Log10(math.Abs(v)))
	scale := math.Pow(10, exp-2)
	v = math.Round(v/scale) * scale
	for _, u := range []struct {
		div  float64
		name string
	}{{1, "s"}, {1e-3, "ms"}, {1e-6, "µs"}} {
		if math.Abs(v) >= u.div*(1-1e-9) {
			return Sig(v/u.div) + u.name
		}
	}
	return Sig(v/1e-9) + "ns"
}

// Sig writes v with at most three significant digits, without an exponent
// below 10^6.
func Sig(v float64) string {
	if v != 0 && (math.Abs(v) >= 1e6 || math.Abs(v) < 1e-3) {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	s := strconv.FormatFloat(v, 'g', 3, 64)
	if strings.ContainsRune(s, 'e') {
		s = strconv.FormatFloat(v, 'f', 0, 64)
	}
	return s
}

// Rate writes a throughput per second as Sig does: 4062/s, 12.3/s, and
// 0.213/s for an operation that takes seconds (a rounded "0/s" would hide it).
func Rate(v float64) string { return Sig(v) + "/s" }

// ErrNoUnit is the error of a duration written without its unit: a bare
// number would mean seconds to some readers and milliseconds to others.
var ErrNoUnit = errors.New("a duration needs a unit")

// ParseDuration reads a duration with its unit into seconds: Go's syntax
// (10ms, 1.5s, 500us or 500µs, 1h30m), or a number of any size with one
// unit (1e-300s, 1e300s: models reason about durations no time.Duration
// holds). A bare number other than 0 is refused with ErrNoUnit, the same
// wherever gait reads a duration.
func ParseDuration(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f == 0 {
			return 0, nil
		}
		return 0, fmt.Errorf("%q: %w, such as %sms or %ss", s, ErrNoUnit, s, s)
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d.Seconds(), nil
	}
	for _, u := range durationUnits {
		num, ok := strings.CutSuffix(s, u.name)
		if !ok {
			continue
		}
		if f, err := strconv.ParseFloat(num, 64); err == nil && !math.IsInf(f*u.seconds, 0) && !math.IsNaN(f) {
			return f * u.seconds, nil
		}
		break // the first unit that matches is the unit: "5xs" is not 5x seconds
	}
	return 0, fmt.Errorf("%q: not a duration (want a number and a unit: ns, us, ms, s, m or h, such as 10ms)", s)
}

// durationUnits in the order their suffixes are tried: "ms" before "s".
var durationUnits = []struct {
	name    string
	seconds float64
}{{"ns", 1e-9}, {"us", 1e-6}, {"µs", 1e-6}, {"μs", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"m", 60}, {"h", 3600}}

// Count writes n and its noun, plural unless n is 1: "1 run", "4 runs".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

package report

import (
	"math"
	"slices"
	"testing"
)

func labels(ts []tick) []string {
	var out []string
	for _, t := range ts {
		if t.label != "" {
			out = append(out, t.label)
		}
	}
	return out
}

func values(ts []tick) []float64 {
	var out []float64
	for _, t := range ts {
		out = append(out, t.v)
	}
	return out
}

func TestNiceStep(t *testing.T) {
	for raw, want := range map[float64]float64{
		0.13: 0.2, 1: 1, 1.01: 2, 2: 2, 3: 5, 7: 10, 0.0004: 0.0005, 23000: 50000, 0: 1,
	} {
		if got := niceStep(raw); math.Abs(got-want) > want*1e-12 {
			t.Errorf("niceStep(%g) = %g, want %g", raw, got, want)
		}
	}
}

func TestLinearAxis(t *testing.T) {
	tests := []struct {
		name     string
		ax       Axis
		min, max float64
		want     []string
	}{
		{"unit interval", Axis{}, 0, 1, []string{"0", "0.2", "0.4", "0.6", "0.8", "1"}},
		{"rounded out", Axis{}, 0.13, 9.7, []string{"0", "2", "4", "6", "8", "10"}},
		{"zero included", Axis{Zero: true}, 30, 48, []string{"0", "10", "20", "30", "40", "50"}},
		{"thousands", Axis{}, 0, 48000, []string{"0", "10k", "20k", "30k", "40k", "50k"}},
		{"seconds share a prefix", Axis{Unit: "s"}, 0, 1.4e-3, []string{"0", "0.5ms", "1ms", "1.5ms"}},
		{"time axis", Axis{Unit: "s"}, 0, 120, []string{"0", "20s", "40s", "60s", "80s", "100s", "120s"}},
		{"percent", Axis{Unit: "%"}, 0, 1, []string{"0", "20%", "40%", "60%", "80%", "100%"}},
		{"negative", Axis{}, -3, 3, []string{"-3", "-2", "-1", "0", "1", "2", "3"}},
		{"fixed range", Axis{Min: 0, Max: 100}, 3, 7, []string{"0", "20", "40", "60", "80", "100"}},
		{"one value", Axis{}, 5, 5, []string{"4.4", "4.6", "4.8", "5", "5.2", "5.4", "5.6"}},
	}
	for _, tc := range tests {
		s := newScale(tc.ax, extent{tc.min, tc.max, 2}, 6)
		if got := labels(s.ticks); !slices.Equal(got, tc.want) {
			t.Errorf("%s: labels %q, want %q", tc.name, got, tc.want)
		}
		if s.lo > tc.min && tc.ax.Min == tc.ax.Max || s.hi < tc.max && tc.ax.Min == tc.ax.Max {
			t.Errorf("%s: range [%g, %g] does not cover the data [%g, %g]", tc.name, s.lo, s.hi, tc.min, tc.max)
		}
	}
}

func TestLogAxis(t *testing.T) {
	tests := []struct {
		name     string
		ax       Axis
		min, max float64
		want     []string
	}{
		{"latency", Axis{Log: true, Unit: "s"}, 1.5e-4, 0.032, []string{"100µs", "1ms", "10ms", "100ms"}},
		{"to seconds", Axis{Log: true, Unit: "s"}, 2e-9, 3, []string{"1ns", "100ns", "10µs", "1ms", "100ms", "10s"}},
		{"tail share", Axis{Log: true, Unit: "%"}, 1e-6, 1, []string{"0.0001%", "0.001%", "0.01%", "0.1%", "1%", "10%", "100%"}},
		{"plain", Axis{Log: true}, 3, 2e6, []string{"1", "10", "100", "1000", "10k", "100k", "1M", "10M"}},
		{"big", Axis{Unit: "B"}, 0, 2.5e9, []string{"0", "0.5G", "1G", "1.5G", "2G", "2.5G"}},
		{"one decade value", Axis{Log: true}, 100, 100, []string{"100", "1000"}},
		{"narrow fixed", Axis{Log: true, Unit: "s", Min: 2e-3, Max: 8e-3}, 2e-3, 8e-3, []string{"2ms", "5ms"}},
	}
	for _, tc := range tests {
		s := newScale(tc.ax, extent{tc.min, tc.max, 2}, 6)
		if got := labels(s.ticks); !slices.Equal(got, tc.want) {
			t.Errorf("%s: labels %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestLogAxisWideSpanLabelsEveryFewDecades(t *testing.T) {
	s := newScale(Axis{Log: true}, extent{1e-12, 1e12, 2}, 6)
	got := labels(s.ticks)
	if len(got) > 9 || len(got) < 4 {
		t.Errorf("24 decades got %d labels %q, want 4 to 9", len(got), got)
	}
	if len(s.ticks) != 25 {
		t.Errorf("24 decades got %d ticks, want one per decade (25), no minor ticks", len(s.ticks))
	}
}

func TestLogTicksWithinDecade(t *testing.T) {
	s := newScale(Axis{Log: true}, extent{1, 10, 2}, 6)
	want := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if got := values(s.ticks); !slices.Equal(got, want) {
		t.Errorf("ticks %v, want %v", got, want)
	}
}

func TestFormatPrecise(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		unit string
		want string
	}{
		{1.234567e-4, "s", "123.5µs"},
		{0.0123456, "%", "1.235%"},
		{1234567, "", "1.235M"},
		{2.5, "s", "2.5s"},
		{0, "s", "0"},
		{-0.002, "s", "-2ms"},
	} {
		if got := formatPrecise(tc.v, tc.unit); got != tc.want {
			t.Errorf("formatPrecise(%g, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
}

func TestAxisTitle(t *testing.T) {
	for ax, want := range map[Axis]string{
		{Label: "throughput", Unit: "ops/s"}: "throughput (ops/s)",
		{Label: "latency", Unit: "s"}:        "latency",
		{Unit: "B"}:                          "B",
	} {
		if got := axisTitle(ax); got != want {
			t.Errorf("axisTitle(%+v) = %q, want %q", ax, got, want)
		}
	}
}

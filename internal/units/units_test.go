package units

import (
	"errors"
	"math"
	"testing"
)

func TestSeconds(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 45.23e-6: "45.2µs", 999.96e-6: "1ms", 1.2345e-3: "1.23ms", 2.5: "2.5s",
		120: "120s", 3e-9: "3ns", 0.1: "100ms",
	} {
		if got := Seconds(v); got != want {
			t.Errorf("Seconds(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestRate(t *testing.T) {
	for v, want := range map[float64]string{4062.4: "4062/s", 12.34: "12.3/s", 0.2132: "0.213/s", 0: "0/s"} {
		if got := Rate(v); got != want {
			t.Errorf("Rate(%g) = %q, want %q", v, got, want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]float64{"10ms": 0.01, "1.5s": 1.5, "500us": 500e-6, "500µs": 500e-6, " 2m ": 120, "0": 0, "-3ms": -0.003} {
		if got, err := ParseDuration(in); err != nil || math.Abs(got-want) > 1e-15 {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	// A bare number is refused whatever it is, with the same error.
	for _, in := range []string{"10", "2", "0.5", "1e3"} {
		_, err := ParseDuration(in)
		if !errors.Is(err, ErrNoUnit) || err.Error() != `"`+in+`": a duration needs a unit, such as `+in+`ms or `+in+`s` {
			t.Errorf("%q: %v, want ErrNoUnit", in, err)
		}
	}
	for _, in := range []string{"10x", "", "ms", "1h2"} {
		if _, err := ParseDuration(in); err == nil || errors.Is(err, ErrNoUnit) {
			t.Errorf("%q: %v, want not a duration", in, err)
		}
	}
}

func TestCount(t *testing.T) {
	if got := Count(1, "run") + ", " + Count(4, "run") + ", " + Count(0, "run"); got != "1 run, 4 runs, 0 runs" {
		t.Errorf("got %q", got)
	}
}

func TestParseDurationBeyondTimeDuration(t *testing.T) {
	for in, want := range map[string]float64{"1e-300s": 1e-300, "1e300s": 1e300, "2562048h": 2562048 * 3600, "1.5e3ms": 1.5} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"1e400s", "1e3", "5xs", "e5ms"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

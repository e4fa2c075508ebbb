package units

import "testing"

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

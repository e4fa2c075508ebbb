package verdict

import (
	"slices"
	"testing"
)

func TestCountsAndAgreement(t *testing.T) {
	on := Mark{On: true}
	reps := []Verdict{{Operation: on, Cluster: on}, {Operation: on}, {Operation: on, Cluster: on}}
	got := Counts(reps)
	if want := []Count{{"OL", 3, 3}, {"CL", 2, 3}}; !slices.Equal(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	if s := CountText(got); s != "OL 3/3 CL 2/3" {
		t.Errorf("text %q", s)
	}
	// A milder step's counts do not lower a stronger one's.
	milder := []Count{{"OL", 1, 3}, {"backlog", 1, 3}}
	if s := Strongest([][]Count{milder, got}); !slices.Equal(s, []Count{{"OL", 3, 3}, {"CL", 2, 3}, {"backlog", 1, 3}}) {
		t.Errorf("strongest %v", s)
	}
	for _, c := range []struct {
		want []string
		got  []Count
		is   string
	}{
		{nil, got, ""},
		{[]string{"OL", "CL"}, got, "flips"},                // CL decides, and flips
		{[]string{"OL"}, got, "flips"},                      // so does an unwanted CL in 2 of 3
		{[]string{"OL", "CL"}, []Count{{"OL", 1, 1}}, "no"}, // CL missing every time
		{[]string{}, []Count{{"OL", 3, 3}}, "no"},           // OL in every repetition, wanted none
		{[]string{"CL", "OL"}, []Count{{"OL", 3, 3}, {"CL", 3, 3}}, "yes"},
		{[]string{}, nil, "yes"},
		{[]string{"backlog"}, []Count{{"OL", 2, 3}}, "no"}, // the backlog never came
	} {
		if a := Agreement(c.want, c.got); a != c.is {
			t.Errorf("Agreement(%v, %v) = %q, want %q", c.want, c.got, a, c.is)
		}
	}
}

func TestSpread(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want Spread
		text string
	}{
		{nil, Spread{}, "0.00x"},
		{[]float64{2}, Spread{2, 2, 2}, "2.00x"},
		{[]float64{30, 9, 50}, Spread{30, 9, 50}, "30.00x (9.00-50.00x)"},
		{[]float64{4, 1, 3, 2}, Spread{2.5, 1, 4}, "2.50x (1.00-4.00x)"},
	} {
		if s := SpreadOf(c.xs); s != c.want || s.Ratio() != c.text {
			t.Errorf("SpreadOf(%v) = %+v %q, want %+v %q", c.xs, s, s.Ratio(), c.want, c.text)
		}
	}
}

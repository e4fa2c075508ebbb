package verdict

import (
	"slices"
	"testing"
)

func TestCountsAndAgreement(t *testing.T) {
	on := Mark{On: true}
	reps := []Verdict{{Operation: on, Cluster: on}, {Operation: on}, {Operation: on, Cluster: on}}
	got := Counts(reps)
	if want := []Count{{Mark: "OL", Given: 3, Of: 3}, {Mark: "CL", Given: 2, Of: 3}}; !slices.Equal(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	if s := CountText(got); s != "OL 3/3 CL 2/3" {
		t.Errorf("text %q", s)
	}
	// A milder step's counts do not lower a stronger one's.
	milder := []Count{{Mark: "OL", Given: 1, Of: 3}, {Mark: "backlog", Given: 1, Of: 3}}
	if s := Strongest([][]Count{milder, got}); !slices.Equal(s, []Count{{Mark: "OL", Given: 3, Of: 3}, {Mark: "CL", Given: 2, Of: 3}, {Mark: "backlog", Given: 1, Of: 3}}) {
		t.Errorf("strongest %v", s)
	}
	for _, c := range []struct {
		want []string
		got  []Count
		is   string
	}{
		{nil, got, ""},
		{[]string{"OL", "CL"}, got, "flips"}, // CL decides, and flips
		{[]string{"OL"}, got, "flips"},       // so does an unwanted CL in 2 of 3
		{[]string{"OL", "CL"}, []Count{{Mark: "OL", Given: 1, Of: 1}}, "no"}, // CL missing every time
		{[]string{}, []Count{{Mark: "OL", Given: 3, Of: 3}}, "no"},           // OL in every repetition, wanted none
		{[]string{"CL", "OL"}, []Count{{Mark: "OL", Given: 3, Of: 3}, {Mark: "CL", Given: 3, Of: 3}}, "yes"},
		{[]string{}, nil, "yes"},
		{[]string{"backlog"}, []Count{{Mark: "OL", Given: 2, Of: 3}}, "no"}, // the backlog never came
	} {
		if a := Agreement(c.want, c.got); a != c.is {
			t.Errorf("Agreement(%v, %v) = %q, want %q", c.want, c.got, a, c.is)
		}
	}
}

// A repetition with too few baseline requests to judge node limplock
// (HDFS's F11, a baseline of 19 decommissions where 20 are needed) is left
// out of the count rather than counted as a no: 1 of the 1 that judged it.
func TestUnjudgedRepetitionsAreNotNos(t *testing.T) {
	on, unjudged := Mark{On: true}, Mark{Unjudged: true}
	reps := []Verdict{{Node: on, Cluster: on}, {Node: unjudged, Cluster: on}}
	got := Counts(reps)
	want := []Count{{Mark: "NL", Given: 1, Of: 1, Unjudged: 1}, {Mark: "CL", Given: 2, Of: 2}}
	if !slices.Equal(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	if s := CountText(got); s != "NL 1/1 (1 not judged) CL 2/2" {
		t.Errorf("text %q", s)
	}
	if a := Agreement([]string{"NL", "CL"}, got); a != "yes" {
		t.Errorf("agreement %q, want yes: the one repetition that judged NL gave it", a)
	}
	// Judged by none: never given, so it is no verdict at all.
	if got := Counts([]Verdict{{Node: unjudged}}); len(got) != 0 {
		t.Errorf("counts of an unjudged verdict %v, want none", got)
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

package report

import (
	"math"
	"math/rand/v2"
	"testing"
)

// checkSubsequence fails unless got is p's first and last point and some
// in between, in order.
func checkSubsequence(t *testing.T, p, got []pt) {
	t.Helper()
	if got[0] != p[0] || got[len(got)-1] != p[len(p)-1] {
		t.Fatalf("first or last point dropped")
	}
	j := 0
	for _, q := range got {
		for j < len(p) && p[j] != q {
			j++
		}
		if j == len(p) {
			t.Fatalf("point %v is not from the input, or out of order", q)
		}
	}
}

func TestThinLineKeepsMonotoneCurveWithinAPixel(t *testing.T) {
	// A CDF with a long tail, as drawn: a million points over 780x320 pixels.
	n := 1_000_000
	p := make([]pt, n)
	for i := range p {
		q := float64(i) / float64(n)
		p[i] = pt{780 * math.Pow(q, 0.2), 320 * (1 - q)}
	}
	got := thinLine(p, maxPoints)
	if len(got) > maxPoints {
		t.Fatalf("kept %d points, want at most %d", len(got), maxPoints)
	}
	checkSubsequence(t, p, got)
	// Every dropped point lies within a pixel of the last kept one.
	j := 0
	for _, q := range p {
		if j+1 < len(got) && q == got[j+1] {
			j++
		}
		if d := math.Abs(q.x-got[j].x) + math.Abs(q.y-got[j].y); d > 1 {
			t.Fatalf("point %v is %.2f pixels from the drawn curve", q, d)
		}
	}
}

func TestThinLineKeepsExtremesOfNoise(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	n := 500_000
	p := make([]pt, n)
	lo, hi := 0, 0
	for i := range p {
		p[i] = pt{780 * float64(i) / float64(n), 160 + 40*r.NormFloat64()}
		if p[i].y < p[lo].y {
			lo = i
		}
		if p[i].y > p[hi].y {
			hi = i
		}
	}
	got := thinLine(p, maxPoints)
	if len(got) > maxPoints {
		t.Fatalf("kept %d points, want at most %d", len(got), maxPoints)
	}
	checkSubsequence(t, p, got)
	var sawLo, sawHi bool
	for _, q := range got {
		sawLo = sawLo || q == p[lo]
		sawHi = sawHi || q == p[hi]
	}
	if !sawLo || !sawHi {
		t.Errorf("spikes dropped: lowest kept %v, highest kept %v", sawLo, sawHi)
	}
}

func TestThinLineBoundsBackAndForth(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	p := make([]pt, 100_000)
	for i := range p {
		p[i] = pt{780 * r.Float64(), 320 * r.Float64()}
	}
	if got := thinLine(p, maxPoints); len(got) > maxPoints {
		t.Fatalf("kept %d points, want at most %d", len(got), maxPoints)
	}
}

func TestThinLineKeepsShortSeries(t *testing.T) {
	p := []pt{{0, 0}, {0.1, 0}, {0.2, 0}}
	if got := thinLine(p, maxPoints); len(got) != 3 {
		t.Errorf("kept %d of 3 points", len(got))
	}
}

func TestThinScatterKeepsOutliers(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	p := make([]pt, 1_000_000)
	for i := range p {
		p[i] = pt{300 + 30*r.NormFloat64(), 200 + 30*r.NormFloat64()}
	}
	outlier := pt{770, 5}
	p[123456] = outlier
	got := thinScatter(p, maxPoints)
	if len(got) > maxPoints || len(got) < maxPoints/8 {
		t.Fatalf("kept %d points, want between %d and %d", len(got), maxPoints/8, maxPoints)
	}
	found := false
	for _, q := range got {
		found = found || q == outlier
	}
	if !found {
		t.Error("the outlier was dropped")
	}
}

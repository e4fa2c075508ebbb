package model

import (
	"math"
	"testing"
)

// TestWeighedBins: the runs cover every cell once, as few as the share
// asked allows, each at most a cell over it and standing within itself.
func TestWeighedBins(t *testing.T) {
	w := make([]float64, 2000)
	for c := range w {
		w[c] = math.Exp(-float64(c) / 400)
	}
	total := 0.0
	for _, v := range w {
		total += v
	}
	share := total / 7.5
	bins := weighedBins(w, share)
	if len(bins) != 8 {
		t.Fatalf("%d bins, want 8", len(bins))
	}
	next := 0
	for _, b := range bins {
		if b.lo != next || b.hi <= b.lo || b.at < b.lo || b.at >= b.hi {
			t.Fatalf("bin %+v after cell %d", b, next)
		}
		next = b.hi
		if b.w > share*(1+1e-9)+w[b.hi-1] {
			t.Errorf("bin %+v weighs more than %.3f", b, share)
		}
	}
	if next != len(w) {
		t.Errorf("bins end at %d, want %d", next, len(w))
	}
}

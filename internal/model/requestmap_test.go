package model

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestRequestErrorMapLoads: a load is one server's taking every access
// (each of r groups then carries 1/r of it) unless PerServer makes it every
// server's, and each cell says the load its servers carry.
func TestRequestErrorMapLoads(t *testing.T) {
	sys := System{Service: Exponential{1e-3}, Request: Request{Phases: []int{4}}}
	opt := SimOptions{Requests: 20000, Seed: 1}
	for _, perServer := range []bool{false, true} {
		cells, err := RequestErrorMap(sys, RequestMapScope{Utilizations: []float64{0.2}, PerServer: perServer, MaxNodes: 2}, []float64{0.5}, opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cells {
			want := 0.2
			if !perServer {
				want /= float64(c.Replicas)
			}
			if c.Utilization != 0.2 || math.Abs(c.ServerUtilization-want) > 1e-12 {
				t.Errorf("per server %v, %dx%d: load %g, each server's %g, want %g", perServer, c.Duplicates, c.Replicas, c.Utilization, c.ServerUtilization, want)
			}
		}
	}
}

// TestMergeRequestCells: a later run's cell replaces an earlier one's of
// the same load, mix and quantile; the rest keep theirs, in the map's
// order; a cell without its servers' load gets it from the scope.
func TestMergeRequestCells(t *testing.T) {
	cell := func(u float64, d, r int, sla float64) RequestErrorCell {
		return RequestErrorCell{Utilization: u, Config: Config{d, r}, Quantile: 0.5, Predicted: sla}
	}
	whole := []RequestErrorCell{cell(0.3, 1, 1, 1), cell(0.3, 2, 1, 2), cell(0.3, 1, 2, 3), cell(0.01, 1, 1, 4)}
	part := []RequestErrorCell{cell(0.3, 2, 1, 20), cell(0.01, 1, 2, 30)}
	got := MergeRequestCells(RequestMapScope{}, whole, part)
	want := []struct {
		u         float64
		d, r      int
		sla, load float64
	}{{0.3, 1, 1, 1, 0.3}, {0.3, 2, 1, 20, 0.3}, {0.3, 1, 2, 3, 0.15}, {0.01, 1, 1, 4, 0.01}, {0.01, 1, 2, 30, 0.005}}
	if len(got) != len(want) {
		t.Fatalf("merged %d cells, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		c := got[i]
		if c.Utilization != w.u || c.Duplicates != w.d || c.Replicas != w.r || c.Predicted != w.sla || math.Abs(c.ServerUtilization-w.load) > 1e-15 {
			t.Errorf("cell %d: %g%% %dx%d sla %g per server %g, want %g%% %dx%d sla %g per server %g",
				i, 100*c.Utilization, c.Duplicates, c.Replicas, c.Predicted, c.ServerUtilization, 100*w.u, w.d, w.r, w.sla, w.load)
		}
	}
}

// TestResimulateRequestCells: simulated again with the map's own requests
// and seed, every cell's reference is the map's (the rate read back from
// the servers' load is the map's rate); with more requests the reference
// moves within its standard errors and the predictions stay.
func TestResimulateRequestCells(t *testing.T) {
	t.Parallel()
	sys := System{Service: Exponential{1e-3}, Request: Request{Phases: []int{3, 2}, Batch: 2}}
	opt := SimOptions{Requests: 20000, Seed: 1}
	cells, err := RequestErrorMap(sys, RequestMapScope{Utilizations: []float64{0.2}, MaxNodes: 2}, []float64{0.5, 0.9}, opt)
	if err != nil {
		t.Fatal(err)
	}
	same, err := ResimulateRequestCells(sys, cells, opt)
	if err != nil {
		t.Fatal(err)
	}
	finer, err := ResimulateRequestCells(sys, cells, SimOptions{Requests: 200000, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cells {
		if same[i] != c {
			t.Errorf("cell %d resimulated with the map's requests and seed: %+v, want %+v", i, same[i], c)
		}
		f := finer[i]
		if f.Predicted != c.Predicted || f.Bound != c.Bound || f.StdErr >= c.StdErr || math.Abs(f.Simulated-c.Simulated) > 4*math.Hypot(c.StdErr, f.StdErr) {
			t.Errorf("cell %dx%d q%g: finer reference %.4f±%.4f (prediction %.4f), the map's %.4f±%.4f (prediction %.4f)",
				c.Duplicates, c.Replicas, c.Quantile, f.Simulated, f.StdErr, f.Predicted, c.Simulated, c.StdErr, c.Predicted)
		}
	}
	bad := slices.Clone(cells)
	bad[0].ServerUtilization = 0
	if _, err := ResimulateRequestCells(sys, bad, opt); err == nil || !strings.Contains(err.Error(), "cell 1x1 at 20% load, quantile 0.5") {
		t.Errorf("a cell without its servers' load: %v, want an error naming the cell", err)
	}
}

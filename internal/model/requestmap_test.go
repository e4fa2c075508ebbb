package model

import (
	"math"
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

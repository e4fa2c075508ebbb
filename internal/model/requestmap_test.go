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

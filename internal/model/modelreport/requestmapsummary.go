package modelreport

import (
	"fmt"
	"math"
	"slices"

	"github.com/gait-dev/gait/internal/model"
)

// mixShapes are the four shapes of mix the request predictor takes
// different paths for, and so the rows an error map is summed up by.
var mixShapes = []struct {
	name string
	is   func(model.Config) bool
}{
	{"one server (1x1)", func(c model.Config) bool { return c.Duplicates == 1 && c.Replicas == 1 }},
	{"one server per group (1xr)", func(c model.Config) bool { return c.Duplicates == 1 && c.Replicas > 1 }},
	{"duplicates in one group (dx1)", func(c model.Config) bool { return c.Duplicates > 1 && c.Replicas == 1 }},
	{"duplicates in several groups (dxr)", func(c model.Config) bool { return c.Duplicates > 1 && c.Replicas > 1 }},
}

// requestMapSummary sums an error map up per shape of mix and load: the
// range of the mixes' largest errors over the quantiles, and how many of
// them are within the goal. inside and total count the map's mixes x
// loads.
func requestMapSummary(cells []model.RequestErrorCell) (header []string, rows [][]string, inside, total int) {
	worst := worstByLoad(cells)
	utils := make([]float64, 0, len(worst))
	for u := range worst {
		utils = append(utils, u)
	}
	slices.Sort(utils)
	header = []string{"mixes"}
	for _, u := range utils {
		header = append(header, fmt.Sprintf("%g%% load", 100*u))
	}
	for _, shape := range mixShapes {
		row := []string{shape.name}
		seen := false
		for _, u := range utils {
			lo, hi, in, n := math.Inf(1), 0.0, 0, 0
			for c, e := range worst[u] {
				if !shape.is(c) {
					continue
				}
				lo, hi, n = math.Min(lo, e), math.Max(hi, e), n+1
				if e <= accuracyGoal {
					in++
				}
			}
			inside, total = inside+in, total+n
			switch {
			case n == 0:
				row = append(row, "")
			case n == 1:
				row = append(row, fmt.Sprintf("%.4f (%d/1)", hi, in))
			default:
				row = append(row, fmt.Sprintf("%.4f–%.4f (%d/%d)", lo, hi, in, n))
			}
			seen = seen || n > 0
		}
		if seen {
			rows = append(rows, row)
		}
	}
	return header, rows, inside, total
}

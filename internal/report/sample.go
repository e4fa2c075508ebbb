package report

import "math"

// maxPoints bounds the points drawn per series: more cannot be told apart
// on an 800 pixel wide chart, and each costs about 12 bytes of SVG.
const maxPoints = 2000

// pt is a point in pixels.
type pt struct{ x, y float64 }

// thinLine keeps a polyline within about a pixel of the original using at
// most max points. It first drops points closer than 0.75 pixel
// (Manhattan) to the last one kept: a monotone curve such as a CDF has a
// screen length of at most width+height, so this suffices for it, and since
// every kept point is a data point, a CDF keeps its quantiles in screen
// space and thus its tail on a log axis. A noisy series needs more, so it
// then keeps the lowest and highest point of each pixel column in order.
func thinLine(p []pt, max int) []pt {
	if len(p) <= max {
		return p
	}
	if out, ok := thinByDistance(p, 0.75, max); ok {
		return out
	}
	out := columnExtremes(p)
	if len(out) <= max {
		return out
	}
	return stride(out, max)
}

func thinByDistance(p []pt, d float64, max int) ([]pt, bool) {
	out := []pt{p[0]}
	last := p[0]
	for _, q := range p[1 : len(p)-1] {
		if math.Abs(q.x-last.x)+math.Abs(q.y-last.y) < d {
			continue
		}
		if len(out) == max-1 {
			return nil, false
		}
		out = append(out, q)
		last = q
	}
	return append(out, p[len(p)-1]), true
}

// columnExtremes keeps, for each run of points in the same pixel column,
// the lowest and the highest in their original order, and both ends.
func columnExtremes(p []pt) []pt {
	out := []pt{p[0]}
	for i := 0; i < len(p); {
		col := math.Floor(p[i].x)
		lo, hi := i, i
		j := i + 1
		for ; j < len(p) && math.Floor(p[j].x) == col; j++ {
			if p[j].y < p[lo].y {
				lo = j
			}
			if p[j].y > p[hi].y {
				hi = j
			}
		}
		for _, k := range []int{min(lo, hi), max(lo, hi)} {
			if k > 0 && out[len(out)-1] != p[k] {
				out = append(out, p[k])
			}
		}
		i = j
	}
	if last := p[len(p)-1]; out[len(out)-1] != last {
		out = append(out, last)
	}
	return out
}

// stride keeps n evenly spaced points including both ends; the last resort
// for a series whose x goes back and forth.
func stride(p []pt, n int) []pt {
	if len(p) <= n || n < 2 {
		return p
	}
	out := make([]pt, n)
	for i := range out {
		out[i] = p[i*(len(p)-1)/(n-1)]
	}
	return out
}

// thinScatter keeps the first point in each cell of a grid, doubling the
// cell from one pixel until at most max points remain. Isolated points
// have a cell to themselves, so outliers are never dropped.
func thinScatter(p []pt, max int) []pt {
	if len(p) <= max {
		return p
	}
	for cell := 1.0; ; cell *= 2 {
		seen := make(map[[2]int32]bool)
		var out []pt
		for _, q := range p {
			k := [2]int32{int32(math.Floor(q.x / cell)), int32(math.Floor(q.y / cell))}
			if !seen[k] {
				seen[k] = true
				out = append(out, q)
				if len(out) > max {
					break
				}
			}
		}
		if len(out) <= max {
			return out
		}
	}
}

package limplock

import "fmt"

// Row is one cluster size of Table 2: the formulas and their Monte Carlo check.
type Row struct {
	Formula Formulas `json:"formula"`
	Sim     Estimate `json:"simulation"`
}

// Table evaluates Table 2 and its Monte Carlo check for each cluster size.
func Table(nodes []int, blocks, requests, trials int, seed uint64, progress Progress) ([]Row, error) {
	if len(nodes) == 0 {
		return nil, &InputError{"nodes", 0, "no cluster size given"}
	}
	for _, n := range nodes {
		if err := Validate(n, blocks, requests); err != nil {
			return nil, err
		}
	}
	if err := validateTrials(trials); err != nil {
		return nil, err
	}
	pts := make([]point, len(nodes))
	for i, n := range nodes {
		pts[i] = point{n, blocks, requests}
	}
	w := newWork(pts, trials, progress)
	var rows []Row
	for _, p := range pts {
		f, err := Table2(p.n, p.b, p.r)
		if err != nil {
			return nil, err
		}
		e, err := w.simulate(p, seed)
		if err != nil {
			return nil, err
		}
		rows = append(rows, Row{f, e})
	}
	return rows, nil
}

// Panel is one of Figure 3's four panels: a probability against cluster
// size, a line per value of Param (requests or blocks), each by the
// formula and by Monte Carlo.
type Panel struct {
	Title string // e.g. "(a) read limplock P_rl"
	Param string // what the lines vary: requests or blocks
	Sizes []int  // the cluster sizes, the x axis
	Lines []Line
}

// Line is one parameter value's probabilities, one per cluster size.
type Line struct {
	Value      int
	Formula    []float64
	MonteCarlo []float64
}

// Figure3 computes the Limplock paper's Figure 3: read and write limplock
// against cluster size for 1, 10 and 100 requests (100 blocks), and block
// and cluster regeneration limplock for 100, 800 and 3200 blocks (1 request).
func Figure3(trials int, seed uint64, progress Progress) ([]Panel, error) {
	if err := validateTrials(trials); err != nil {
		return nil, err
	}
	sizes := []int{5, 10, 15, 20, 30, 40, 50, 70, 100}
	panels := []struct {
		title, param string
		values       []int
		isReq        bool
		formula      func(Formulas) float64
		est          func(Estimate) float64
	}{
		{"(a) read limplock P_rl", "requests", []int{1, 10, 100}, true, func(f Formulas) float64 { return f.PRL }, func(e Estimate) float64 { return e.PRL }},
		{"(b) write limplock P_wl", "requests", []int{1, 10, 100}, true, func(f Formulas) float64 { return f.PWL }, func(e Estimate) float64 { return e.PWL }},
		{"(c) block limplock P_bl", "blocks", []int{100, 800, 3200}, false, func(f Formulas) float64 { return f.PBL }, func(e Estimate) float64 { return e.PBL }},
		{"(d) cluster regeneration limplock P_cl", "blocks", []int{100, 800, 3200}, false, func(f Formulas) float64 { return f.PCL }, func(e Estimate) float64 { return e.PCL }},
	}
	at := func(isReq bool, v, n int) point {
		if isReq {
			return point{n, 100, v}
		}
		return point{n, v, 1}
	}
	// (a) and (b), (c) and (d) draw from the same simulations: run each once.
	var pts []point
	seen := map[point]bool{}
	for _, p := range panels {
		for _, v := range p.values {
			for _, n := range sizes {
				if pt := at(p.isReq, v, n); !seen[pt] {
					seen[pt] = true
					pts = append(pts, pt)
				}
			}
		}
	}
	w := newWork(pts, trials, progress)
	est := map[point]Estimate{}
	for _, pt := range pts {
		e, err := w.simulate(pt, seed)
		if err != nil {
			return nil, err
		}
		est[pt] = e
	}
	var out []Panel
	for _, p := range panels {
		panel := Panel{Title: p.title, Param: p.param, Sizes: sizes}
		for _, v := range p.values {
			line := Line{Value: v}
			for _, n := range sizes {
				pt := at(p.isReq, v, n)
				f, err := Table2(pt.n, pt.b, pt.r)
				if err != nil {
					return nil, err
				}
				line.Formula = append(line.Formula, p.formula(f))
				line.MonteCarlo = append(line.MonteCarlo, p.est(est[pt]))
			}
			panel.Lines = append(panel.Lines, line)
		}
		out = append(out, panel)
	}
	return out, nil
}

// point is one simulation: n nodes, b blocks, r requests.
type point struct{ n, b, r int }

// work tells progress how many of the simulations' steps are done.
type work struct {
	progress    Progress
	trials      int
	total, done float64
}

func newWork(pts []point, trials int, progress Progress) *work {
	w := &work{progress: progress, trials: trials}
	for _, p := range pts {
		w.total += w.cost(p)
	}
	return w
}

// cost is a trial's steps: placing the blocks and the nodes' tally.
func (w *work) cost(p point) float64 { return float64(w.trials) * float64(p.b+p.n+10) }

func (w *work) simulate(p point, seed uint64) (Estimate, error) {
	var tick func(int)
	if w.progress != nil {
		what := fmt.Sprintf("%d nodes, %d blocks, %d requests", p.n, p.b, p.r)
		per := w.cost(p) / float64(w.trials)
		tick = func(t int) { w.progress(what, (w.done+per*float64(t))/w.total) }
	}
	e, err := simulate(p.n, p.b, p.r, w.trials, seed, tick)
	w.done += w.cost(p)
	return e, err
}

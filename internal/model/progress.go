package model

// Progress is told, now and then (many times a second at most), what a
// long computation is doing and the share of it that is done, from 0 to 1.
// Calls come from one goroutine at a time.
type Progress func(what string, done float64)

// stage maps a part of a computation onto its share of the whole: what
// names the part (or nothing, "": the part's own names pass unchanged),
// from is the share done before it, weight the share it is.
func (p Progress) stage(what string, from, weight float64) Progress {
	if p == nil {
		return nil
	}
	return func(inner string, done float64) {
		switch {
		case what == "":
		case inner != "":
			inner = what + ", " + inner
		default:
			inner = what
		}
		p(inner, from+weight*done)
	}
}

// mixShares is where each mix's part of a pass over cfgs starts and the
// share it is, weighed by what predicting sys's requests on it costs:
// with the accurate predictor, requests of two phases arriving alone over
// several groups take about six times what one group does with one
// server per group (more at 30%) and five times with duplicates
// (BenchmarkPredictRequest, Olio at 8%, session 11's timed holds: 1x4
// 8.7-9.2 s, 2x2 9.1-9.4 s, 4x1 1.6-2.3 s), so equal shares told a third
// of the time left.
func mixShares(sys System, cfgs []Config, accurate bool) (from, weight []float64) {
	cost := make([]float64, len(cfgs))
	total := 0.0
	for k, cfg := range cfgs {
		cost[k] = 1
		if twoPhaseOverGroups(sys.Request, cfg, !accurate) {
			cost[k] = 6
			if cfg.Duplicates > 1 {
				cost[k] = 5
			}
		}
		total += cost[k]
	}
	from, weight = make([]float64, len(cfgs)), make([]float64, len(cfgs))
	done := 0.0
	for k, c := range cost {
		from[k], weight[k] = done/total, c/total
		done += c
	}
	return from, weight
}

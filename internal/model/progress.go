package model

// Progress is told, now and then (many times a second at most), what a
// long computation is doing and the share of it that is done, from 0 to 1.
// Calls come from one goroutine at a time.
type Progress func(what string, done float64)

// stage maps a part of a computation onto its share of the whole: what
// names the part, from is the share done before it, weight the share it is.
func (p Progress) stage(what string, from, weight float64) Progress {
	if p == nil {
		return nil
	}
	return func(inner string, done float64) {
		if inner != "" {
			inner = what + ", " + inner
		} else {
			inner = what
		}
		p(inner, from+weight*done)
	}
}

package limp

import "time"

// Least is the least of the values observed over the last one to two
// windows (two buckets of a window each). A replica reports the least of
// its raft log appends this way rather than their mean: a busy machine
// only ever delays an append, so one fast append in the window shows the
// disk is not slow, while a limping disk makes every append slow. It is not
// safe for concurrent use.
type Least struct {
	window    time.Duration
	start     time.Time // the current bucket's start
	cur, prev float64   // the least in each bucket; 0 when it saw nothing
}

// NewLeast returns a Least over window.
func NewLeast(window time.Duration) *Least { return &Least{window: window} }

func (l *Least) roll(now time.Time) {
	switch since := now.Sub(l.start); {
	case since >= 2*l.window:
		l.prev, l.cur, l.start = 0, 0, now
	case since >= l.window:
		l.prev, l.cur, l.start = l.cur, 0, l.start.Add(l.window)
	}
}

// Observe adds a value seen at now.
func (l *Least) Observe(v float64, now time.Time) {
	l.roll(now)
	if l.cur == 0 || v < l.cur {
		l.cur = v
	}
}

// Value is the least value of the last one to two windows at now, 0 when
// there was none.
func (l *Least) Value(now time.Time) float64 {
	l.roll(now)
	switch {
	case l.prev == 0:
		return l.cur
	case l.cur == 0:
		return l.prev
	}
	return min(l.prev, l.cur)
}

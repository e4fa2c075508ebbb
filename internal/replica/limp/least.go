package limp

import (
	"slices"
	"time"
)

// Least is the least of the values observed over the last one to two
// windows (two buckets of a window each). A replica reports the least of
// its raft log appends this way rather than their mean: a busy machine
// only ever delays an append, so one fast append in the window shows the
// disk is not slow, while a limping disk makes every append slow. It is not
// safe for concurrent use.
type Least struct {
	buckets // the least in each bucket; 0 when it saw nothing
}

// NewLeast returns a Least over window.
func NewLeast(window time.Duration) *Least { return &Least{buckets{window: window}} }

// buckets are the two buckets of a window each that Least and Rate keep.
type buckets struct {
	window    time.Duration
	start     time.Time // the current bucket's start
	cur, prev float64
}

func (b *buckets) roll(now time.Time) {
	switch since := now.Sub(b.start); {
	case since >= 2*b.window:
		b.prev, b.cur, b.start = 0, 0, now
	case since >= b.window:
		b.prev, b.cur, b.start = b.cur, 0, b.start.Add(b.window)
	}
}

// Rate is how fast something grew, per second, over the last whole window:
// an agent's raft log, in bytes, which a follower must take to keep up
// (Tracker.ObserveLogRate). The window in progress does not count, so the
// value holds steady for a window at a time. It is not safe for
// concurrent use.
type Rate struct {
	buckets // what each bucket added
}

// NewRate returns a Rate over window.
func NewRate(window time.Duration) *Rate { return &Rate{buckets{window: window}} }

// Observe adds n at now.
func (r *Rate) Observe(n float64, now time.Time) {
	r.roll(now)
	r.cur += n
}

// Value is what the last whole window added, per second; 0 until one
// ended, and after a whole window added nothing.
func (r *Rate) Value(now time.Time) float64 {
	r.roll(now)
	return r.prev / r.window.Seconds()
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

// DiskTime is the time three of every four raft log appends of the last
// one to two windows stayed under (their 75th percentile). A log disk at
// 10x slower than its peers' shows in it, while its least append (Least)
// stays near theirs: on limpfs at 8 MB/s an append of a few KiB costs a
// fraction of a millisecond, which the file system sleeps only once it
// adds up to one, so every other append of the leader took about 1.2 ms
// more and the rest none (round 3: the least under the 5-ms floor, clients
// paying 3 to 5 times). A real disk slow on every append shows in it as
// well. It is not safe for concurrent use.
type DiskTime struct {
	window    time.Duration
	start     time.Time
	cur, prev []float64
}

// diskMinAppends is how many appends a DiskTime needs to say anything: a
// few appends in a window are a busy machine's chance as often as not.
// diskKeep bounds what one window keeps: the newest count.
const (
	diskMinAppends = 8
	diskKeep       = 512
)

// NewDiskTime returns a DiskTime over window.
func NewDiskTime(window time.Duration) *DiskTime { return &DiskTime{window: window} }

func (d *DiskTime) roll(now time.Time) {
	switch since := now.Sub(d.start); {
	case since >= 2*d.window:
		d.prev, d.cur, d.start = d.prev[:0], d.cur[:0], now
	case since >= d.window:
		d.prev, d.cur, d.start = d.cur, d.prev[:0], d.start.Add(d.window)
	}
}

// Observe adds one append that took secs, finished at now.
func (d *DiskTime) Observe(secs float64, now time.Time) {
	d.roll(now)
	if len(d.cur) == diskKeep {
		d.cur = d.cur[1:]
	}
	d.cur = append(d.cur, secs)
}

// Value is the 75th percentile of the appends of the last one to two
// windows at now; 0 when there were fewer than diskMinAppends.
func (d *DiskTime) Value(now time.Time) float64 {
	d.roll(now)
	n := len(d.cur) + len(d.prev)
	if n < diskMinAppends {
		return 0
	}
	all := append(slices.Clone(d.prev), d.cur...)
	slices.Sort(all)
	return all[n*3/4]
}

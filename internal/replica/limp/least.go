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

// DiskTime is what a replica's raft log appends cost over the last one to
// two windows: their mean time, and their time per MiB appended. The
// replicas append the same entries, so a log disk slower than its peers'
// shows in both, while the least append (Least) of a disk at 10x can stay
// near its peers' (an append of a few KiB takes a fraction of a
// millisecond even at 8 MB/s). Per MiB, since a leader and its followers
// batch the same entries differently. It is not safe for concurrent use.
type DiskTime struct {
	window    time.Duration
	start     time.Time
	cur, prev diskBucket
}

type diskBucket struct {
	secs  float64
	bytes int64
	n     int
}

// diskMinAppends is how many appends a DiskTime needs to say anything: one
// or two appends in a window are a busy machine's chance as often as not.
const diskMinAppends = 4

// NewDiskTime returns a DiskTime over window.
func NewDiskTime(window time.Duration) *DiskTime { return &DiskTime{window: window} }

func (d *DiskTime) roll(now time.Time) {
	switch since := now.Sub(d.start); {
	case since >= 2*d.window:
		d.prev, d.cur, d.start = diskBucket{}, diskBucket{}, now
	case since >= d.window:
		d.prev, d.cur, d.start = d.cur, diskBucket{}, d.start.Add(d.window)
	}
}

// Observe adds one append of bytes that took secs, finished at now.
func (d *DiskTime) Observe(secs float64, bytes int, now time.Time) {
	d.roll(now)
	d.cur.secs += secs
	d.cur.bytes += int64(bytes)
	d.cur.n++
}

// Value is the mean time of an append and the time per MiB appended over
// the last one to two windows at now; both 0 when there were fewer than
// diskMinAppends appends or no bytes.
func (d *DiskTime) Value(now time.Time) (mean, perMiB float64) {
	d.roll(now)
	secs, bytes, n := d.cur.secs+d.prev.secs, d.cur.bytes+d.prev.bytes, d.cur.n+d.prev.n
	if n < diskMinAppends || bytes == 0 {
		return 0, 0
	}
	return secs / float64(n), secs * (1 << 20) / float64(bytes)
}

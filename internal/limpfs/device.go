package limpfs

import (
	"sync"
	"time"
)

// minSleep is the shortest wait worth a sleep: Go's timers are not finer
// than about a millisecond when the process is idle.
const minSleep = time.Millisecond

// Stats count what went through the file system.
type Stats struct {
	ReadBytes  int64
	WriteBytes int64
	Reads      int64
	Writes     int64
	Fsyncs     int64
}

// device is the emulated disk: one queue whose clock says when it is
// next idle. Each operation takes the next slot of its size, so
// concurrent operations share the bandwidth as on a real disk. Two
// corrections keep a stream of operations at the exact bandwidth on a
// busy machine with coarse timers: a thread sleeps only once the device
// is at least minSleep ahead of the wall clock (the next operation
// inherits what it did not sleep), and when a sleep overshot because the
// thread woke late (by up to maxCredit), an idle gap before the next
// operation is forgiven up to that much. Otherwise an idle disk saves
// nothing up: a client's pause between operations gains it nothing.
type device struct {
	mu        sync.Mutex
	bandwidth float64 // bytes per second at factor 1
	factor    float64
	latency   time.Duration
	free      time.Time     // when the device is next idle
	credit    time.Duration // late wake-ups not yet made up for
	st        Stats
}

// maxCredit bounds the credit, so that one long stall of the process
// does not let a burst through.
const maxCredit = 20 * time.Millisecond

func (d *device) setFactor(f float64) {
	d.mu.Lock()
	d.factor = f
	d.mu.Unlock()
}

func (d *device) getFactor() float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.factor
}

func (d *device) stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st
}

// reserve books the device for n bytes for an operation that began at
// began and returns when the operation may complete; the time the real
// I/O took since began counts towards the slot. The caller then calls
// d.complete.
func (d *device) reserve(n int, began time.Time) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	start := d.free
	if gap := began.Sub(d.free); gap > 0 {
		// The device went idle; as far as a late wake-up caused that,
		// it did not.
		start = began.Add(-min(gap, d.credit))
	}
	d.credit = 0
	cost := time.Duration(float64(n) / (d.bandwidth / d.factor) * float64(time.Second))
	d.free = start.Add(cost)
	return d.free.Add(d.latency)
}

// complete waits until a reserved slot is over, and credits the device
// with how late the wake-up was.
func (d *device) complete(until time.Time) {
	wait := time.Until(until)
	if wait < minSleep {
		return
	}
	time.Sleep(wait)
	if late := time.Since(until); late > 0 {
		d.mu.Lock()
		d.credit = min(maxCredit, d.credit+late)
		d.mu.Unlock()
	}
}

func (d *device) count(f func(*Stats)) {
	d.mu.Lock()
	f(&d.st)
	d.mu.Unlock()
}

package limp

import "time"

// Throttle turns the running total of time a replica's cgroup was held
// back by its CPU quota (read from the kernel every status interval) into
// the share of the last throttleWindow it was held back: the kernel's own
// word that the replica was ready to run but out of CPU. It is not safe
// for concurrent use.
type Throttle struct {
	samples []throttleSample // oldest first; the first at or before the window's start
}

type throttleSample struct {
	at    time.Time
	total time.Duration
}

// throttleWindow is what a share covers: from the newest reading at least
// this old to the latest. The kernel adds a period's throttled time when
// the period ends and the quota is refilled (every 100 ms at the
// testbed's 10x and 100x, and by default in Kubernetes), so a window
// longer than one period holds at least one refill while the quota keeps
// running out: the share of a replica at a tenth of a CPU stays at 0.45
// or more. A refill that stands alone (one period that spent its quota) is
// in it for at most three status intervals, fewer than throttleHold.
const throttleWindow = 150 * time.Millisecond

// Observe records the running total read at now. A total that went back
// (the cgroup was replaced) starts over.
func (th *Throttle) Observe(total time.Duration, now time.Time) {
	if n := len(th.samples); n > 0 && total < th.samples[n-1].total {
		th.samples = th.samples[:0]
	}
	th.samples = append(th.samples, throttleSample{now, total})
	for len(th.samples) > 2 && !th.samples[1].at.After(now.Add(-throttleWindow)) {
		th.samples = th.samples[1:]
	}
}

// Share is the throttled time over the wall time between the oldest
// sample kept and the newest: about throttleWindow once samples have come
// that long. It counts per CPU, so a replica throttled on two CPUs at once
// may pass 1. Zero before two samples.
func (th *Throttle) Share() float64 {
	n := len(th.samples)
	if n < 2 {
		return 0
	}
	first, last := th.samples[0], th.samples[n-1]
	wall := last.at.Sub(first.at)
	if wall <= 0 {
		return 0
	}
	return float64(last.total-first.total) / float64(wall)
}

package rundir

import (
	"fmt"

	"github.com/gait-dev/gait/internal/units"
)

// Generator is how well an open-loop load generator kept its arrival
// schedule, kept in summary.json under "generator". A request's latency is
// measured from its intended start (no coordinated omission), so when the
// generator itself sends late, that lateness is in the latency too: then
// the run's tail is the generator's, not the server's, and readers must say
// so (wrk2 and HdrHistogram's guidance: report the generator's own lag
// apart from the latency).
type Generator struct {
	// Sent counts the requests whose lateness was measured.
	Sent int `json:"sent"`
	// SendLateP50, P99 and Max are how late requests were sent after
	// their intended start, in seconds: the dispatcher's own delay plus the
	// wait for a free worker.
	SendLateP50 float64 `json:"send_late_p50"`
	SendLateP99 float64 `json:"send_late_p99"`
	SendLateMax float64 `json:"send_late_max"`
	// HeldBack counts the arrivals that found all MaxInFlight workers busy
	// and had to wait in the generator's queue.
	HeldBack    int `json:"held_back"`
	MaxInFlight int `json:"max_in_flight"`
	// Workers is how many workers (connections) the pool grew to.
	Workers int `json:"workers"`
	// Tolerance is the p99 send lateness, in seconds, within which the
	// schedule counts as kept; KeptSchedule is SendLateP99 <= Tolerance.
	Tolerance    float64 `json:"tolerance"`
	KeptSchedule bool    `json:"kept_schedule"`
}

// Warning says, when the generator did not keep its schedule, that the
// run's latencies hold the generator's own lag and by how much; it is empty
// when the schedule was kept.
func (g *Generator) Warning() string {
	if g == nil || g.KeptSchedule {
		return ""
	}
	s := fmt.Sprintf("the load generator fell behind its schedule: p99 of send lateness %s (max %s), more than %s",
		units.Seconds(g.SendLateP99), units.Seconds(g.SendLateMax), units.Seconds(g.Tolerance))
	if g.HeldBack > 0 {
		s += fmt.Sprintf("; the in-flight limit (%d) held back %d of %d requests (%s%%)",
			g.MaxInFlight, g.HeldBack, g.Sent, units.Sig(100*float64(g.HeldBack)/float64(max(g.Sent, 1))))
	} else {
		// Not the limit: the generator's workers did not get to run in time.
		s += fmt.Sprintf("; the in-flight limit (%d) held back none, %d workers could not send faster on this machine",
			g.MaxInFlight, g.Workers)
	}
	return s + "; its latencies include the generator's own queue, so its tail is not the server's"
}

// Kept says in a few words that the schedule was kept, with the figure.
func (g *Generator) Kept() string {
	return fmt.Sprintf("the load generator kept its schedule: p99 of send lateness %s (within %s)",
		units.Seconds(g.SendLateP99), units.Seconds(g.Tolerance))
}

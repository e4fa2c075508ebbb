package limp

import (
	"testing"
	"time"
)

// quotaKernel is how the kernel counts a cgroup's throttled time under a
// CFS quota of a tenth of a CPU with a 100-ms period: a period that spent
// its quota adds the 90 ms it was held back when it ends and the quota is
// refilled. spent tells which periods (by their end, from t0) spent it.
func quotaKernel(spent func(end time.Duration) bool) func(d time.Duration) time.Duration {
	const period, held = 100 * time.Millisecond, 90 * time.Millisecond
	return func(d time.Duration) time.Duration {
		var total time.Duration
		for end := period; end <= d; end += period {
			if spent(end) {
				total += held
			}
		}
		return total
	}
}

func from(start time.Duration) func(time.Duration) bool {
	return func(end time.Duration) bool { return end > start }
}

// TestThrottleShare: the share of the last throttleWindow held back. A
// cgroup without a quota (or whose quota never runs out, however busy the
// machine) shows none; one at a tenth of a CPU shows at least 0.45 from
// its first refill on, read every status interval at any phase of the
// periods; a counter that went back starts over.
func TestThrottleShare(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var idle Throttle
	for d := time.Duration(0); d < time.Second; d += ms(50) {
		idle.Observe(0, t0.Add(d))
		if got := idle.Share(); got != 0 {
			t.Fatalf("no quota: share %v at %v, want 0", got, d)
		}
	}
	kernel := quotaKernel(from(ms(500)))
	for _, phase := range []time.Duration{ms(1), ms(20), ms(49)} {
		var th Throttle
		for d := phase; d < 2*time.Second; d += ms(50) {
			th.Observe(kernel(d), t0.Add(d))
			got := th.Share()
			switch {
			case d < ms(600) && got != 0:
				t.Errorf("phase %v: share %v at %v, before the first refill, want 0", phase, got, d)
			case d >= ms(600) && got < 0.45:
				t.Errorf("phase %v: share %v at %v, quota spent every period from 500 ms, want 0.45 or more", phase, got, d)
			}
		}
	}
	var th Throttle
	th.Observe(time.Second, t0)
	th.Observe(time.Second+ms(90), t0.Add(ms(100)))
	th.Observe(ms(10), t0.Add(ms(150))) // a new cgroup
	if got := th.Share(); got != 0 {
		t.Errorf("share %v after the counter went back, want 0 until a second reading", got)
	}
}

// TestQuotaMarks drives agent a's tracker, a leading, with statuses every
// 50 ms (at a phase of 20 ms to the quota's periods) in which a reports
// the share of its Throttle fed by kernel, and its peers theirs. A leader
// that spends its quota in every period from 1 s is marked on it ("quota")
// within half a second and hands over; one period spent alone (a burst of
// work), or every replica at its quota alike, is never marked; a busy
// machine without a quota (a starved agent's probes 70 ms, its round trips
// 40 ms against its peers' 12 ms) keeps the full hold; the mark is lifted
// once the quota stops running out.
func TestQuotaMarks(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	none := func(time.Duration) time.Duration { return 0 }
	for _, tc := range []struct {
		name             string
		self, peers      func(time.Duration) time.Duration
		busy             bool
		earliest, latest time.Duration // when a is marked; an hour: never
		quota            bool          // marked on the quota rule
		lifted           time.Duration // a's quota is lifted then (0: never); its mark must be lifted within 0.5 s
	}{
		{name: "10x from 1 s", self: quotaKernel(from(time.Second)), peers: none,
			earliest: ms(1150), latest: ms(1500), quota: true},
		{name: "10x from 1 s to 3 s", self: quotaKernel(func(end time.Duration) bool { return end > time.Second && end <= 3*time.Second }),
			peers: none, earliest: ms(1150), latest: ms(1500), quota: true, lifted: 3 * time.Second},
		{name: "one period spent at 1 s", self: quotaKernel(func(end time.Duration) bool { return end == ms(1100) }), peers: none,
			earliest: time.Hour, latest: time.Hour},
		{name: "one period spent at 1 s and one at 2 s", self: quotaKernel(func(end time.Duration) bool { return end == ms(1100) || end == ms(2100) }),
			peers: none, earliest: time.Hour, latest: time.Hour}, // two spells apart are not one held
		{name: "every replica at its quota", self: quotaKernel(from(time.Second)), peers: quotaKernel(from(time.Second)),
			earliest: time.Hour, latest: time.Hour},
		{name: "busy machine, no quota, one agent starved from 1 s", self: none, peers: none, busy: true,
			earliest: 2 * time.Second, latest: ms(2400)},
		{name: "busy machine, every replica at its quota, one agent starved from 1 s", self: quotaKernel(from(time.Second)),
			peers: quotaKernel(from(time.Second)), busy: true, earliest: 2 * time.Second, latest: ms(2400)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := heldTracker()
			ths := map[string]*Throttle{"a": {}, "b": {}, "c": {}}
			marked, lifted := time.Hour, time.Duration(0)
			for d := ms(20); d < 5*time.Second; d += ms(50) {
				now := t0.Add(d)
				for id, th := range ths {
					kernel := tc.peers
					if id == "a" {
						kernel = tc.self
					}
					th.Observe(kernel(d), now)
					st := Status{ID: id, Incarnation: "inc-" + id, Applied: 1, NetSecs: 0.001, ProbeSecs: 0.003, Throttled: th.Share()}
					if tc.busy && d >= time.Second {
						st.NetSecs = 0.012
						if id == "a" {
							st.NetSecs, st.ProbeSecs = 0.04, 0.07
						}
					}
					tr.Observe(st, now)
				}
				dec := tr.Tick(now, true, nil)
				for _, m := range dec.Marks {
					switch {
					case m.ID != "a":
						t.Errorf("at %v: %+v, want only a marked", d, m)
					case m.Limping && marked == time.Hour:
						marked = d
						if m.Quota != tc.quota {
							t.Errorf("at %v: %+v, want Quota %v", d, m, tc.quota)
						}
						if dec.Transfer == nil {
							t.Errorf("at %v: marked without a transfer", d)
						}
					case !m.Limping && lifted == 0:
						lifted = d
					default:
						t.Errorf("at %v: %+v, want one mark and at most one recovery", d, m)
					}
				}
			}
			if marked < tc.earliest || marked > tc.latest {
				t.Errorf("marked at %v, want %v to %v", marked, tc.earliest, tc.latest)
			}
			if tc.lifted > 0 && (lifted < tc.lifted || lifted > tc.lifted+ms(500)) {
				t.Errorf("mark lifted at %v, want within 0.5 s of the quota's end at %v", lifted, tc.lifted)
			}
			if tc.lifted == 0 && lifted != 0 {
				t.Errorf("mark lifted at %v while the replica still limps", lifted)
			}
		})
	}
}

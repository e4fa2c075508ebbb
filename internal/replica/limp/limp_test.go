package limp

import (
	"testing"
	"time"
)

var t0 = time.Unix(1000, 0)

// newTracker is agent a's tracker in a deployment of the voters a, b, c.
func newTracker(floor time.Duration, interval time.Duration) *Tracker {
	tr := New(Config{Self: "a", StatusInterval: interval, Floor: floor, Factor: 10, PeerInflight: 8,
		Born: t0.Add(-time.Minute)}, "inc-a")
	tr.SetMembers([]Member{{"a", "a:1", true}, {"b", "b:1", true}, {"c", "c:1", true}}, t0)
	return tr
}

// heldTracker is agent a's tracker, born at t0, in a deployment of the
// voters a, b, c, with the agents' defaults: a 1-s Hold, statuses every
// 50 ms, a lag floor of 250 ms.
func heldTracker() *Tracker {
	tr := New(Config{Self: "a", StatusInterval: 50 * time.Millisecond, Floor: 250 * time.Millisecond, Factor: 10,
		Hold: time.Second, PeerInflight: 8, Born: t0}, "inc-a")
	tr.SetMembers([]Member{{"a", "a:1", true}, {"b", "b:1", true}, {"c", "c:1", true}}, t0)
	return tr
}

// report has every replica report an applied index at now.
func report(tr *Tracker, now time.Time, applied map[string]uint64) {
	for id, n := range applied {
		tr.Observe(Status{ID: id, Incarnation: "inc-" + id, Applied: n}, now)
	}
}

func limping(tr *Tracker) map[string]bool {
	out := map[string]bool{}
	for _, r := range tr.Replicas() {
		out[r.ID] = r.Limping
	}
	return out
}

func lag(tr *Tracker, id string) time.Duration {
	for _, r := range tr.Replicas() {
		if r.ID == id {
			return r.Lag
		}
	}
	return -1
}

func TestLagAndLimping(t *testing.T) {
	tr := newTracker(100*time.Millisecond, 10*time.Millisecond)
	step := func(at time.Duration, a, b, c uint64) Decision {
		now := t0.Add(at)
		report(tr, now, map[string]uint64{"a": a, "b": b, "c": c})
		return tr.Tick(now, false, nil)
	}
	step(0, 10, 10, 10)
	step(50*time.Millisecond, 20, 20, 10)
	// The lag counts from the first report that showed a replica past c.
	if l, m := lag(tr, "c"), limping(tr); l != 0 || m["c"] {
		t.Fatalf("c: lag %v limping %v; want 0, not limping", l, m["c"])
	}
	d := step(300*time.Millisecond, 30, 29, 10)
	if l := lag(tr, "c"); l != 250*time.Millisecond || len(d.Marks) != 1 || d.Marks[0].ID != "c" || !d.Marks[0].Limping {
		t.Fatalf("c: lag %v, marks %+v; want 250ms, c marked limping", l, d.Marks)
	}
	if d.Transfer != nil {
		t.Errorf("a follower limps, yet transfer %+v", d.Transfer)
	}
	d = step(310*time.Millisecond, 30, 30, 30)
	if l, m := lag(tr, "c"), limping(tr); l != 0 || m["c"] || len(d.Marks) != 1 || d.Marks[0].Limping {
		t.Errorf("c caught up: lag %v limping %v, marks %+v", l, m["c"], d.Marks)
	}
	// Silence counts as lag: b's last report is from 310 ms.
	now := t0.Add(time.Second)
	report(tr, now, map[string]uint64{"a": 30, "c": 30})
	tr.Tick(now, false, nil)
	if m := limping(tr); !m["b"] || m["a"] || m["c"] {
		t.Errorf("b silent for 690ms: lag %v, limping %v", lag(tr, "b"), m)
	}
	if ts := tr.ReadTargets(3, nil, now); len(ts) != 2 || !ts[0].Local || ts[1].ID != "c" {
		t.Errorf("read targets %+v, want a (local) then c, not the limping b", ts)
	}
}

// TestMissingRepliesCountAsLag: a replica whose replies to this agent's
// writes are overdue limps even while its status reports look fine.
func TestMissingRepliesCountAsLag(t *testing.T) {
	tr := newTracker(100*time.Millisecond, 10*time.Millisecond)
	report(tr, t0, map[string]uint64{"a": 5, "b": 5, "c": 5})
	d := tr.Tick(t0, false, map[string]time.Duration{"b": 400 * time.Millisecond})
	if len(d.Marks) != 1 || d.Marks[0].ID != "b" || d.Marks[0].Lag != 400*time.Millisecond {
		t.Errorf("marks %+v, want b limping with lag 400ms", d.Marks)
	}
}

// TestNetworkLimping: the round trip comes from the echoed stamp, and a
// replica slow to reach even its nearest peer (its own link limps) is
// marked, while the peers that are slow only towards it are not.
func TestNetworkLimping(t *testing.T) {
	tr := newTracker(250*time.Millisecond, 50*time.Millisecond)
	now := t0
	// b held a's stamp for 20 ms; it was sent 120 ms ago: 100 ms in flight.
	tr.Observe(Status{ID: "b", Stamp: 7, Echo: tr.Stamp(now.Add(-120 * time.Millisecond)), Hold: int64(20 * time.Millisecond),
		NetSecs: 0.0004}, now)
	if rtt := tr.replicas["b"].rttSecs; rtt < 0.099 || rtt > 0.101 {
		t.Fatalf("round trip to b %.4fs, want 0.1s", rtt)
	}
	if es := tr.Echoes(now.Add(5 * time.Millisecond)); !hasEcho(es, Echo{Addr: "b:1", Echo: 7, Hold: int64(5 * time.Millisecond)}) {
		t.Errorf("echoes %+v, want b's stamp 7 held 5ms", es)
	}
	// a reaches b in 0.5 ms and c in 300 ms; c reports 300 ms to its nearest peer.
	tr.replicas["b"].rttSecs, tr.replicas["c"].rttSecs = 0.0005, 0.3
	tr.Observe(Status{ID: "c", NetSecs: 0.3}, now)
	tr.Observe(Status{ID: "a", NetSecs: tr.NearestPeer(now)}, now)
	if got := tr.replicas["a"].netSecs; got != 0.0005 {
		t.Fatalf("a's nearest peer %.4fs, want 0.0005s (b)", got)
	}
	tr.Tick(now, false, nil)
	for id, want := range map[string]bool{"a": false, "b": false, "c": true} {
		if got := limping(tr)[id]; got != want {
			t.Errorf("%s limping %v, want %v", id, got, want)
		}
	}
	tr.Observe(Status{ID: "c", NetSecs: 0.004}, now) // under half the floor: healed
	tr.Tick(now, false, nil)
	if limping(tr)["c"] {
		t.Error("c still limping after its link recovered")
	}
}

func hasEcho(es []Echo, want Echo) bool {
	for _, e := range es {
		if e == want {
			return true
		}
	}
	return false
}

// TestTransfer: a limping leader hands over to the healthiest voter that
// is neither limping nor quarantined, at most once per TransferPause; a
// limping follower, or a leader that does not limp, does not.
func TestTransfer(t *testing.T) {
	tr := newTracker(100*time.Millisecond, 10*time.Millisecond)
	tr.SetMembers([]Member{{"a", "a:1", true}, {"b", "b:1", true}, {"c", "c:1", true}, {"d", "d:1", false}}, t0)
	ms := time.Millisecond
	disk := func(now time.Time, a, b float64) {
		for id, s := range map[string]float64{"a": a, "b": b, "c": 0.001, "d": 0.0005} {
			tr.Observe(Status{ID: id, Incarnation: "inc-" + id, Applied: 9, AppendSecs: s}, now)
		}
	}
	disk(t0, 0.001, 0.001)
	if d := tr.Tick(t0, true, nil); d.Transfer != nil || len(d.Marks) != 0 {
		t.Fatalf("healthy: %+v", d)
	}
	// a's disk appends take 500 ms: a limps, and leads.
	now := t0.Add(100 * ms)
	disk(now, 0.5, 0.001)
	d := tr.Tick(now, false, nil)
	if len(d.Marks) != 1 || d.Marks[0].ID != "a" || d.Marks[0].Append != 500*ms || d.Transfer != nil {
		t.Fatalf("a's disk limps while following: %+v", d)
	}
	now = now.Add(10 * ms)
	disk(now, 0.5, 0.001)
	d = tr.Tick(now, true, nil)
	// b and c tie on lag and append time; the nonvoter d is no target.
	if d.Transfer == nil || d.Transfer.ID != "b" || d.Transfer.Addr != "b:1" {
		t.Fatalf("limping leader: transfer %+v, want b", d.Transfer)
	}
	now = now.Add(TransferPause / 2)
	disk(now, 0.5, 0.001)
	if d := tr.Tick(now, true, nil); d.Transfer != nil {
		t.Errorf("second transfer within TransferPause: %+v", d.Transfer)
	}
	// b diverged: the next transfer goes to c.
	tr.Quarantine("b", "inc-b")
	now = now.Add(TransferPause)
	disk(now, 0.5, 0.001)
	if d := tr.Tick(now, true, nil); d.Transfer == nil || d.Transfer.ID != "c" {
		t.Errorf("b quarantined: transfer %+v, want c", d.Transfer)
	}
}

// TestQuarantine: a quarantined incarnation gets no reads and no longer
// counts for writes; a new incarnation of the same replica does.
func TestQuarantine(t *testing.T) {
	tr := newTracker(100*time.Millisecond, 10*time.Millisecond)
	report(tr, t0, map[string]uint64{"a": 1, "b": 1, "c": 1})
	if !tr.Quarantine("c", "inc-c") || tr.Quarantine("c", "inc-c") {
		t.Fatal("Quarantine must tell a new mark from a known one")
	}
	if e := tr.Expected(); len(e) != 2 || e["c"] {
		t.Errorf("expected repliers %v, want a and b", e)
	}
	if ts := tr.ReadTargets(3, nil, t0); len(ts) != 2 || ts[1].ID != "b" {
		t.Errorf("read targets %+v, want a and b", ts)
	}
	tr.Observe(Status{ID: "c", Incarnation: "inc-c2", Applied: 1}, t0) // restarted with a fresh state
	if !tr.Expected()["c"] {
		t.Error("a new incarnation of c still quarantined")
	}
	if tr.SelfQuarantined() {
		t.Fatal("a quarantined without being told")
	}
	tr.Quarantine("a", "inc-a")
	if !tr.SelfQuarantined() || tr.ReadTargets(3, nil, t0)[0].Local {
		t.Error("a quarantined itself, yet still reads locally")
	}
}

// TestReadTargets: peers are ordered by read latency, skipped when tried,
// full (PeerInflight), or hedged away from within the last second unless
// no other replica may answer.
func TestReadTargets(t *testing.T) {
	tr := newTracker(100*time.Millisecond, 10*time.Millisecond)
	report(tr, t0, map[string]uint64{"a": 1, "b": 1, "c": 1})
	tr.ReadSent("b")
	tr.ReadDone("b", 3*time.Millisecond, true)
	tr.ReadSent("c")
	tr.ReadDone("c", time.Millisecond, true)
	ids := func(ts []Target) (s string) {
		for _, t := range ts {
			s += t.ID
		}
		return s
	}
	if got := ids(tr.ReadTargets(3, nil, t0)); got != "acb" {
		t.Errorf("targets %s, want acb (c reads faster)", got)
	}
	if got := ids(tr.ReadTargets(2, map[string]bool{"a": true}, t0)); got != "cb" {
		t.Errorf("a tried: targets %s, want cb", got)
	}
	tr.ReadLimp("c", 50*time.Millisecond, t0)
	if got := ids(tr.ReadTargets(3, nil, t0.Add(500*time.Millisecond))); got != "ab" {
		t.Errorf("c hedged 500ms ago: targets %s, want ab", got)
	}
	if got := ids(tr.ReadTargets(3, nil, t0.Add(2*time.Second))); got != "abc" {
		t.Errorf("c hedged 2s ago: targets %s, want abc (c now slower)", got)
	}
	for range 8 {
		tr.ReadSent("b")
	}
	if got := ids(tr.ReadTargets(3, nil, t0.Add(2*time.Second))); got != "ac" {
		t.Errorf("b has 8 reads outstanding: targets %s, want ac", got)
	}

	// With this replica tried, reads go to the peers hedged away from
	// lately rather than to none; a full one stays left out.
	t3 := t0.Add(3 * time.Second)
	tr.ReadLimp("c", 50*time.Millisecond, t3)
	if got := ids(tr.ReadTargets(2, map[string]bool{"a": true}, t3)); got != "c" {
		t.Errorf("a tried, b full, c hedged away from: targets %s, want c", got)
	}
	for range 8 {
		tr.ReadDone("b", 0, false)
	}
	tr.ReadLimp("b", 150*time.Millisecond, t3)
	if got := ids(tr.ReadTargets(2, map[string]bool{"a": true}, t3)); got != "cb" {
		t.Errorf("a tried, b and c hedged away from: targets %s, want cb (c reads faster)", got)
	}
	if got := ids(tr.ReadTargets(3, nil, t3)); got != "a" {
		t.Errorf("b and c hedged away from: targets %s, want a alone (it may answer)", got)
	}
}

// TestStoppedLimps: a leader that cannot apply limps and hands over at
// once, even when the others are stuck too (the median lag is no help),
// and recovers only once it applies again.
func TestStoppedLimps(t *testing.T) {
	tr := newTracker(100*time.Millisecond, 10*time.Millisecond)
	report(tr, t0, map[string]uint64{"a": 7, "b": 7, "c": 7})
	tr.Observe(Status{ID: "a", Incarnation: "inc-a", Applied: 7, Stopped: true}, t0)
	d := tr.Tick(t0, true, nil)
	if len(d.Marks) != 1 || !d.Marks[0].Stopped || d.Transfer == nil {
		t.Fatalf("stopped leader: %+v, want it marked and a transfer", d)
	}
	now := t0.Add(50 * time.Millisecond)
	report(tr, now, map[string]uint64{"a": 7, "b": 7, "c": 7})
	if d := tr.Tick(now, false, nil); len(d.Marks) != 1 || d.Marks[0].Limping {
		t.Errorf("applying again: %+v, want a recovery mark", d.Marks)
	}
}

// TestHoldIgnoresNoise: with Hold, a replica whose disk looks slow for
// bursts shorter than Hold (a machine busy with other work) is never
// marked, and a leader never hands over; one slow for longer is.
func TestHoldIgnoresNoise(t *testing.T) {
	tr := heldTracker()
	at := func(tick int) time.Time { return t0.Add(time.Duration(tick) * 50 * time.Millisecond) }
	tick := func(i int, aSecs float64) Decision {
		for id, s := range map[string]float64{"a": aSecs, "b": 0.001, "c": 0.001} {
			tr.Observe(Status{ID: id, Incarnation: "inc-" + id, Applied: uint64(i), AppendSecs: s}, at(i))
		}
		return tr.Tick(at(i), true, nil)
	}
	// 15 bursts of 0.5 s slow appends, 0.5 s apart: 15 s of noise.
	for i := range 300 {
		slow := 0.001
		if i%20 < 10 {
			slow = 0.2
		}
		if d := tick(i, slow); len(d.Marks) > 0 || d.Transfer != nil {
			t.Fatalf("tick %d, bursts of noise: %+v", i, d)
		}
	}
	// Then slow for good: marked once Hold has passed, and handed over.
	var marked int
	for i := 300; i < 330; i++ {
		if d := tick(i, 0.2); len(d.Marks) > 0 {
			if d.Transfer == nil || marked != 0 {
				t.Fatalf("tick %d: %+v, want one mark with a transfer", i, d)
			}
			marked = i
		}
	}
	if marked != 320 {
		t.Errorf("marked at tick %d, want 320 (1 s after the disk turned slow)", marked)
	}
}

// TestModestLeaderLimp: a leader whose link or disk is 10x slower shows only
// a few times its peers' probe round trip or log append time, and dips
// under that now and then. It is marked once it has looked slow for Hold,
// dips included, or for a quarter of it without a dip when strongFactor
// past the factor, and hands over; a replica 1.6 times its peers' (a busy
// machine) is not. The disk numbers are those measured on testbed hosts
// (docs/systems/gait-redis.md): log appends 6 to 11 ms against 2.3 to
// 4.5 ms; a probe of 32 KiB takes 2.6 ms at 100 Mbit/s and 26 ms at 10.
func TestModestLeaderLimp(t *testing.T) {
	for _, tc := range []struct {
		name       string
		probe      bool    // a's probe, else its log append, is slow
		slow, dips float64 // a's time when slow and during a dip
		slowNet    bool    // a's nearest peer 4 times its peers' while slow
		wantMark   int     // the tick a is marked at; 0: never
	}{
		{"link 10x", true, 0.028, 0.012, false, 20},
		{"link 10x behind appends", true, 0.08, 0.012, false, 9}, // strong: a quarter of Hold after a dip
		// the scheduler's period on a machine at load average 12 to 16:
		// slow, not strong, so only a full Hold of it marks
		{"busy machine, probes late", true, 0.038, 0.012, false, 20},
		{"CPU 10x, probes and round trips late", true, 0.045, 0.012, true, 9},
		{"disk 10x", false, 0.008, 0.005, false, 20},
		{"busy machine, link", true, 0.006, 0.006, false, 0},
		{"busy machine, disk", false, 0.0055, 0.0055, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := heldTracker()
			marked := 0
			for i := range 60 {
				now := t0.Add(time.Duration(i) * 50 * time.Millisecond)
				a := tc.slow
				if i%7 == 3 { // one tick in seven dips under the threshold
					a = tc.dips
				}
				// b and c: nearest peer 1 and 1.1 ms, probes 3.6 and 4 ms,
				// log appends 3 and 3.3 ms.
				for id, x := range map[string]float64{"a": 1, "b": 1, "c": 1.1} {
					st := Status{ID: id, Incarnation: "inc-" + id, Applied: uint64(i), NetSecs: x / 1000,
						ProbeSecs: 3.6 * x / 1000, AppendSecs: 3 * x / 1000}
					if id == "a" && tc.probe {
						st.ProbeSecs = a
					}
					if id == "a" && tc.slowNet && a == tc.slow {
						st.NetSecs = 0.004
					}
					if id == "a" && !tc.probe {
						st.AppendSecs = a
					}
					tr.Observe(st, now)
				}
				d := tr.Tick(now, true, nil)
				if len(d.Marks) > 0 {
					if marked != 0 || d.Marks[0].ID != "a" || d.Transfer == nil {
						t.Fatalf("tick %d: %+v, want a marked once, with a transfer", i, d)
					}
					marked = i
				}
			}
			if marked != tc.wantMark {
				t.Errorf("a marked at tick %d, want %d", marked, tc.wantMark)
			}
		})
	}
}

// TestProbes: a probe goes to each peer every probeEvery, or every
// probeShare round trips on a slow link, never two at once unless one is
// lost; its round trip
// comes from the echo in the peer's status; the nearest peer's is the least
// of its last probeKeep.
func TestProbes(t *testing.T) {
	tr := newTracker(250*time.Millisecond, 50*time.Millisecond)
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	// echo has peer id echo probe p, received after rtt (held 1 ms there).
	echo := func(id string, p Probe, rtt time.Duration) {
		sent := t0.Add(time.Duration(p.Stamp - 1 + int64(tr.cfg.Born.Sub(t0))))
		tr.Observe(Status{ID: id, ProbeEcho: p.Stamp, ProbeHold: int64(time.Millisecond)}, sent.Add(rtt))
	}
	ps := tr.Probes(at(0))
	if len(ps) != 2 || ps[0].Addr != "b:1" || ps[1].Addr != "c:1" {
		t.Fatalf("first probes %+v, want one to b and one to c", ps)
	}
	if again := tr.Probes(at(ms(300))); len(again) != 0 {
		t.Errorf("probes %+v while both are outstanding", again)
	}
	echo("c", ps[1], ms(31)) // c: 30 ms, a slow link
	if got := tr.NearestProbe(); got != 0 {
		t.Errorf("nearest probe before b's came back %vs, want 0 (not known)", got)
	}
	echo("b", ps[0], ms(4)) // b: 3 ms on the wire
	if got := tr.NearestProbe(); got != 0.003 {
		t.Errorf("nearest probe %vs, want 0.003 (b)", got)
	}
	// b is due again at 250 ms; c only after 10 round trips, 300 ms.
	pb := tr.Probes(at(ms(260)))
	if len(pb) != 1 || pb[0].Addr != "b:1" {
		t.Fatalf("probes at 260 ms %+v, want b's alone", pb)
	}
	if ps := tr.Probes(at(ms(301))); len(ps) != 1 || ps[0].Addr != "c:1" {
		t.Errorf("probes at 301 ms %+v, want c's", ps)
	}
	// The least of the last probeKeep counts.
	echo("b", pb[0], ms(9))
	if got := tr.NearestProbe(); got != 0.003 {
		t.Errorf("nearest probe after b's 8 ms: %vs, want 0.003 (b's earlier)", got)
	}
	// A probe unanswered for probeLost (10 round trips are less, for b and
	// c) is lost and sent again: c's of 301 ms at 801, b's of 600 ms at 1100.
	if ps := tr.Probes(at(ms(600))); len(ps) != 1 || ps[0].Addr != "b:1" {
		t.Errorf("probes at 600 ms %+v, want b's", ps)
	}
	for _, c := range []struct {
		ms   float64
		want string
	}{{700, ""}, {801, "c:1"}, {1000, ""}, {1100, "b:1"}} {
		var got string
		for _, p := range tr.Probes(at(ms(c.ms))) {
			got += p.Addr
		}
		if got != c.want {
			t.Errorf("probes at %v ms to %q, want %q", c.ms, got, c.want)
		}
	}
	// A peer's probe to this agent is echoed with how long it was held.
	tr.ObserveProbe("b", 42, at(ms(400)))
	for _, e := range tr.Echoes(at(ms(402))) {
		if e.Addr == "b:1" && (e.ProbeEcho != 42 || e.ProbeHold != int64(ms(2))) {
			t.Errorf("echo to b %+v, want probe 42 held 2ms", e)
		}
	}
}

// TestSlowLinkFound: a leader whose link slows to 1 Mbit/s (100x: a probe
// takes 300 ms) is marked once probeKeep slow probes came back, back to
// back, and the Hold passed: not with probes spaced 3 s apart meanwhile.
// One at 10 Mbit/s sends its next probes sooner after the first slow one
// (probeConfirm); with probes of 26 ms (the bytes alone) it is marked
// after the Hold, 1.23 s here; with 72 ms (behind a leader's queue of
// appends on testbed hosts), past strongFactor times the floor and factor,
// after a quarter of it: 0.63 s, where it took 1.53 s and more with
// neither.
func TestSlowLinkFound(t *testing.T) {
	for _, tc := range []struct {
		name     string
		slow     time.Duration
		earliest time.Duration // after the slowdown
		latest   time.Duration
	}{
		{"100x", 300 * time.Millisecond, time.Second, probeKeep*(probeEvery+300*time.Millisecond) + 1300*time.Millisecond},
		{"10x", 26 * time.Millisecond, time.Second, 1400 * time.Millisecond},
		{"10x behind appends", 72 * time.Millisecond, 250 * time.Millisecond, 900 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := slowMarked(func(time.Duration) time.Duration { return tc.slow }, nil, 0)
			if got < tc.earliest || got > tc.latest {
				t.Errorf("handed over %v after the slowdown, want %v to %v", got, tc.earliest, tc.latest)
			}
		})
	}
}

// slowMarked is how long after a leader slows, 3 s into the run, it hands
// over: from then its probes sent at d after the slowdown take probe(d)
// (3 ms before), and its round trip to its nearest peer is net(d) (1 ms
// before, and always when net is nil); its peers' are peersNet (1 ms if
// zero), their probes 3 ms.
func slowMarked(probe, net func(d time.Duration) time.Duration, peersNet time.Duration) time.Duration {
	tr := heldTracker()
	slowAt := 3 * time.Second
	type flight struct {
		p    Probe
		id   string
		back time.Time
	}
	var inFlight []flight
	for now := t0; now.Before(t0.Add(10 * time.Second)); now = now.Add(10 * time.Millisecond) {
		rtt, aNet, pNet := 3*time.Millisecond, 0.001, 0.001
		if peersNet > 0 {
			pNet = peersNet.Seconds()
		}
		if d := now.Sub(t0) - slowAt; d >= 0 {
			rtt = probe(d)
			if net != nil {
				aNet = net(d).Seconds()
			}
		}
		for _, p := range tr.Probes(now) {
			inFlight = append(inFlight, flight{p, p.Addr[:1], now.Add(rtt)})
		}
		// b and c report every tick, and echo a's probes as they come back.
		var left []flight
		for _, f := range inFlight {
			if now.Before(f.back) {
				left = append(left, f)
				continue
			}
			tr.Observe(Status{ID: f.id, Incarnation: "inc-" + f.id, NetSecs: pNet, ProbeEcho: f.p.Stamp, ProbeSecs: 0.003}, f.back)
		}
		inFlight = left
		for _, id := range []string{"b", "c"} {
			tr.Observe(Status{ID: id, Incarnation: "inc-" + id, NetSecs: pNet, ProbeSecs: 0.003}, now)
		}
		tr.Observe(Status{ID: "a", Incarnation: "inc-a", NetSecs: aNet, ProbeSecs: tr.NearestProbe()}, now)
		if d := tr.Tick(now, true, nil); d.Transfer != nil {
			return now.Sub(t0) - slowAt
		}
	}
	return time.Hour
}

// TestAgreement: a leader whose fresh probes and round trips to its
// nearest peer are both past their strong lines (a tenth of a CPU: every
// message waits for its agent's share of the CPU) hands over after
// agreeHold status intervals; either alone, or a busy machine's late probes, or one stall of
// the agent, or a busy machine whose every agent is slow, waits for the
// holds as before.
func TestAgreement(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	steady := func(v time.Duration) func(time.Duration) time.Duration {
		return func(time.Duration) time.Duration { return v }
	}
	// A stall of 150 ms at the slowdown: what is sent in it comes back
	// after it, and the smoothed round trip is high for 300 ms.
	stallProbe := func(d time.Duration) time.Duration {
		if d < ms(150) {
			return ms(153) - d
		}
		return ms(3)
	}
	stallNet := func(d time.Duration) time.Duration {
		if d < ms(300) {
			return ms(30)
		}
		return ms(1)
	}
	for _, tc := range []struct {
		name             string
		probe, net       func(time.Duration) time.Duration
		peersNet         time.Duration
		earliest, latest time.Duration // after the slowdown
	}{
		{"CPU 10x: probes 70 ms, round trips 20 ms", steady(ms(70)), steady(ms(20)), 0, ms(100), ms(450)},
		{"probes 70 ms alone: the least of three, then the short hold", steady(ms(70)), nil, 0, ms(550), ms(1000)},
		{"round trips 3 times their peers': the short hold", steady(ms(70)), steady(ms(3)), 0, ms(550), ms(1000)},
		{"round trips under agreeNetFloor: the short hold", steady(ms(70)), steady(ms(9)), 0, ms(550), ms(1000)},
		// probes 38 ms, round trips 1.5 times their peers': slow, not
		// strong, so only after the full hold
		{"busy machine, probes late", steady(ms(38)), steady(ms(1) + ms(1)/2), 0, time.Second, ms(1400)},
		{"round trips 20 ms, probes fine", steady(ms(3)), steady(ms(20)), 0, time.Hour, time.Hour},
		{"one stall of 150 ms", stallProbe, stallNet, 0, time.Hour, time.Hour},
		// one agent starved on a busy machine whose every agent is slow: its
		// probes 70 ms, its round trips 40 ms against its peers' 12 ms; not
		// calmFactor times their round trips, so only after the full hold
		{"busy machine, one agent starved", steady(ms(70)), steady(ms(40)), ms(12), time.Second, ms(1400)},
		// a busy machine's healthy probe of 247 ms (round 8) beside round
		// trips of 30 ms: noise, the full hold
		{"busy machine, probes of 247 ms", steady(ms(247)), nil, ms(30), ms(1200), ms(2500)},
		// a link at 10x and at 100x on a machine whose round trips are
		// 12 ms: far enough out of the noise for the short hold
		{"busy machine, link 10x", steady(ms(150)), nil, ms(12), ms(550), ms(1000)},
		{"busy machine, link 100x", steady(ms(300)), nil, ms(20), ms(550), ms(1300)},
		// peers at 6 ms: not calm enough to agree, calm enough for the
		// probe's short hold
		{"peers' round trips 6 ms", steady(ms(70)), steady(ms(40)), ms(6), ms(550), ms(1000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := slowMarked(tc.probe, tc.net, tc.peersNet)
			if got < tc.earliest || got > tc.latest {
				t.Errorf("handed over %v after the slowdown, want %v to %v", got, tc.earliest, tc.latest)
			}
		})
	}
}

// TestAgreedHeals: a leader marked on its fresh probes is marked while the
// least of its probeKeep still holds a fast one from before, is not lifted
// while they stay slow though its round trips come back, and is once its
// probes come back too.
func TestAgreedHeals(t *testing.T) {
	tr := heldTracker()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	type flight struct {
		p    Probe
		back time.Time
	}
	var inFlight []flight
	var marked, recovered time.Duration
	for d := time.Duration(0); d < 5*time.Second; d += ms(10) {
		now := t0.Add(d)
		// Probes 70 ms from 1 s to 2.5 s, round trips 20 ms from 1 s to 2 s;
		// else 10 ms (a probe comes back at the next step) and 1 ms, as
		// their peers'.
		rtt, net := ms(10), 0.001
		if d >= time.Second && d < ms(2500) {
			rtt = ms(70)
		}
		if d >= time.Second && d < 2*time.Second {
			net = 0.02
		}
		for _, p := range tr.Probes(now) {
			inFlight = append(inFlight, flight{p, now.Add(rtt)})
		}
		var left []flight
		for _, f := range inFlight {
			if now.Before(f.back) {
				left = append(left, f)
				continue
			}
			tr.Observe(Status{ID: f.p.Addr[:1], Incarnation: "inc-" + f.p.Addr[:1], NetSecs: 0.001, ProbeEcho: f.p.Stamp, ProbeSecs: 0.01}, now)
		}
		inFlight = left
		for _, id := range []string{"b", "c"} {
			tr.Observe(Status{ID: id, Incarnation: "inc-" + id, NetSecs: 0.001, ProbeSecs: 0.01}, now)
		}
		tr.Observe(Status{ID: "a", Incarnation: "inc-a", NetSecs: net, ProbeSecs: tr.NearestProbe()}, now)
		for _, m := range tr.Tick(now, true, nil).Marks {
			switch {
			case m.Limping && marked == 0:
				if !m.Agreed || m.Probe != ms(10) {
					t.Errorf("at %v: %+v, want a marked on agreement while the least of its probes was 10 ms", d, m)
				}
				marked = d
			case !m.Limping && recovered == 0:
				recovered = d
			default:
				t.Errorf("at %v: %+v, want one mark and one recovery", d, m)
			}
		}
	}
	if marked < time.Second || marked > ms(1500) {
		t.Errorf("marked at %v, want within 0.5 s of the slowdown at 1 s", marked)
	}
	if recovered < ms(2500) || recovered > 4*time.Second {
		t.Errorf("recovered at %v, want after the probes came back at 2.5 s", recovered)
	}
}

// TestLateProbe: one probe late on a busy machine (120 ms against 3 ms)
// neither spaces the peer's probes out nor counts: the least of the kept
// ones does.
func TestLateProbe(t *testing.T) {
	tr := newTracker(250*time.Millisecond, 50*time.Millisecond)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	back := func(p Probe, sent, rtt int) {
		tr.Observe(Status{ID: p.Addr[:1], ProbeEcho: p.Stamp}, at(sent+rtt))
	}
	for i, rtt := range []int{3, 3, 120} { // sent at 0, 250 and 500 ms
		for _, p := range tr.Probes(at(250 * i)) {
			back(p, 250*i, rtt)
		}
	}
	ps := tr.Probes(at(870))
	if len(ps) != 2 {
		t.Fatalf("probes at 870 ms %+v, want both peers again (every 250 ms)", ps)
	}
	if got := tr.NearestProbe(); got != 0.003 {
		t.Errorf("nearest probe %vs, want 0.003 (the least kept, not the late one)", got)
	}
}

// TestLeast: the least append of the last one to two windows; a burst of
// slow appends beside one fast one does not raise it, a window of only
// slow ones does, and an idle disk reads as zero.
func TestLeast(t *testing.T) {
	l := NewLeast(time.Second)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for i, v := range []float64{0.001, 0.06, 0.05, 0.08} { // noise around one fast append
		l.Observe(v, at(100*i))
	}
	if got := l.Value(at(900)); got != 0.001 {
		t.Errorf("least in the first window %v, want 0.001", got)
	}
	for ms := 1000; ms < 3000; ms += 100 { // the disk turns slow at 1 s
		l.Observe(0.02, at(ms))
		if got := l.Value(at(ms)); ms == 1500 && got != 0.001 {
			t.Errorf("at 1.5 s %v, want 0.001 (the previous window still counts)", got)
		}
	}
	if got := l.Value(at(2999)); got != 0.02 {
		t.Errorf("at 3 s %v, want 0.02 (two windows of slow appends)", got)
	}
	if got := l.Value(at(5000)); got != 0 {
		t.Errorf("after 2 s without appends %v, want 0", got)
	}
}

// TestPaces: a leader paces a follower from the first tick it lags by
// paceLag, at half its link as its nearest probe estimates it, keeps the
// pace while the follower catches up and falls behind again, lifts it
// paceHold after the follower was last behind, and a follower never paces.
func TestPaces(t *testing.T) {
	tr := newTracker(250*time.Millisecond, 50*time.Millisecond)
	// Probes of 2.6 ms to b and c (100 Mbit/s): a's link carries about 12 MB/s.
	for _, id := range []string{"b", "c"} {
		tr.Probes(t0)
		tr.Observe(Status{ID: id, Incarnation: "inc-" + id, ProbeEcho: tr.Stamp(t0), Applied: 1}, t0.Add(2600*time.Microsecond))
	}
	paces := func(at time.Duration, leader bool, a, b, c uint64) []Pace {
		now := t0.Add(at)
		report(tr, now, map[string]uint64{"a": a, "b": b, "c": c})
		return tr.Tick(now, leader, nil).Paces
	}
	if p := paces(50*time.Millisecond, true, 10, 10, 10); len(p) != 0 {
		t.Fatalf("nobody lags, yet paces %+v", p)
	}
	paces(100*time.Millisecond, true, 20, 20, 10)
	p := paces(200*time.Millisecond, true, 30, 30, 10) // c 100 ms behind
	if len(p) != 1 || p[0].Addr != "c:1" || p[0].BytesPerSec < 6.2e6 || p[0].BytesPerSec > 6.4e6 {
		t.Fatalf("c lags 100 ms: paces %+v, want c:1 at half of 32 KiB per 2.6 ms, 6.3 MB/s", p)
	}
	// Caught up, behind again (500 ms), caught up from 600 ms: paced until 5.6 s.
	steps := []struct {
		at     time.Duration
		top, c uint64
	}{{300, 40, 40}, {400, 50, 50}, {500, 60, 10}, {600, 70, 70}, {3000, 80, 80}, {5550, 85, 85}}
	for _, st := range steps {
		if p := paces(st.at*time.Millisecond, true, st.top, st.top, st.c); len(p) != 0 {
			t.Fatalf("at %d ms: paces %+v, want none while c stays paced", st.at, p)
		}
	}
	if p := paces(5600*time.Millisecond, true, 90, 90, 90); len(p) != 1 || p[0] != (Pace{Addr: "c:1"}) {
		t.Fatalf("5 s after c last lagged: paces %+v, want c:1 lifted", p)
	}
	// Right after a leader change both followers lag the new leader: only
	// the one behind the median (here the old leader, c) is paced.
	paces(5620*time.Millisecond, true, 91, 91, 90)
	paces(5650*time.Millisecond, true, 95, 92, 90)
	if p := paces(5800*time.Millisecond, true, 99, 92, 90); len(p) != 1 || p[0].Addr != "c:1" {
		t.Fatalf("b 150 ms and c 180 ms behind, the median b's: paces %+v, want c:1 alone", p)
	}
	// c paced, b lags alone past the median: b is not paced, since a and b
	// are the majority every commit waits on.
	paces(5850*time.Millisecond, true, 105, 99, 99)
	if p := paces(6000*time.Millisecond, true, 110, 99, 110); len(p) != 0 {
		t.Fatalf("b 150 ms behind while c is paced: paces %+v, want none", p)
	}
	// A follower paces no one, whatever lags.
	paces(6100*time.Millisecond, false, 120, 120, 110)
	if p := paces(6300*time.Millisecond, false, 130, 130, 110); len(p) != 0 {
		t.Fatalf("a follower paced %+v", p)
	}
}

// TestSlowLeaderPacesNot: a leader that looks slow itself (its probe time
// over its factor), and then is marked limping, does not pace a follower
// that lags 150 ms behind (the lags it sees are its own); once it is fine
// again it paces that follower at the next tick.
func TestSlowLeaderPacesNot(t *testing.T) {
	tr := heldTracker()
	for i := range 50 {
		now := t0.Add(time.Duration(i) * 50 * time.Millisecond)
		probe := 0.02 // over 15 ms and twice its peers' 3 ms, under the strong line: marked after the 1-s Hold
		if i >= 40 {
			probe = 0.003
		}
		for id, st := range map[string]Status{
			"a": {Applied: uint64(i + 3), ProbeSecs: probe},
			"b": {Applied: uint64(i + 3), ProbeSecs: 0.003},
			"c": {Applied: uint64(i), ProbeSecs: 0.003}, // 3 ticks, 150 ms, behind
		} {
			st.ID, st.Incarnation, st.NetSecs = id, "inc-"+id, 0.001
			tr.Observe(st, now)
		}
		d := tr.Tick(now, true, nil)
		if i == 20 && (len(d.Marks) != 1 || d.Marks[0].ID != "a" || !d.Marks[0].Limping) {
			t.Fatalf("tick 20: marks %+v, want a marked limping after the Hold", d.Marks)
		}
		switch {
		case i < 40 && len(d.Paces) != 0:
			t.Fatalf("tick %d: the leader looks slow (limping %v), yet paces %+v", i, limping(tr)["a"], d.Paces)
		case i == 40 && (len(d.Paces) != 1 || d.Paces[0].Addr != "c:1" || limping(tr)["a"]):
			t.Fatalf("tick 40: the leader is fine again (limping %v): paces %+v, want c:1", limping(tr)["a"], d.Paces)
		}
	}
}

func TestDiskTime(t *testing.T) {
	d := NewDiskTime(500 * time.Millisecond)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// limpfs at 10x: every other append sleeps the cost the fast ones left.
	for i := range diskMinAppends - 1 {
		d.Observe(0.0005+0.0012*float64(i%2), at(10*i))
	}
	if got := d.Value(at(100)); got != 0 {
		t.Errorf("%d appends: %v, want 0 (too few to say)", diskMinAppends-1, got)
	}
	d.Observe(0.0005, at(100))
	if got := d.Value(at(600)); got != 0.0017 {
		t.Errorf("%d appends, half of them slow: %v, want 0.0017", diskMinAppends, got)
	}
	if got := d.Value(at(1001)); got != 0 {
		t.Errorf("two windows later: %v, want 0", got)
	}
	for i := range 2 * diskKeep {
		d.Observe(float64(i), at(2000))
	}
	if got := d.Value(at(2000)); got != float64(2*diskKeep-diskKeep/4) {
		t.Errorf("after %d appends in one window: %v, want the newest %d's 75th percentile", 2*diskKeep, got, diskKeep)
	}
}

// TestDiskP75: a leader whose log disk limps at 10x has a 75th percentile
// append a few times its followers' while its least append stays under
// appendLimpFloor. It is marked and hands over after Hold, or
// Hold/strongShorten when it is strongFactor past the factor; a disk slow
// for every replica alike (the one disk they share, busy with other work),
// a fast one, or one with no peer to compare with is not marked, unless
// alone it is past diskAloneFloor (a leader whose stalled appends leave its
// followers nothing to append).
func TestDiskP75(t *testing.T) {
	for _, tc := range []struct {
		name              string
		p75               [3]float64 // a's, b's and c's
		wantMark          int        // the tick a is marked at; 0: never
		wantStrong, dipsA bool
	}{
		{"disk 10x", [3]float64{0.0022, 0.0005, 0.0005}, 5, true, false},
		{"disk 3x", [3]float64{0.0015, 0.0005, 0.0006}, 20, false, false},
		{"disk 3x, dips", [3]float64{0.0015, 0.0005, 0.0006}, 20, false, true},
		{"shared disk busy", [3]float64{0.03, 0.025, 0.028}, 0, false, false},
		{"under the floor", [3]float64{0.0009, 0.0002, 0.0002}, 0, false, false},
		{"no peer appends", [3]float64{0.0022, 0, 0}, 0, false, false},
		{"no peer appends, disk 1000x", [3]float64{0.15, 0, 0}, 5, true, false},
		{"no peer appends, past the line", [3]float64{0.06, 0, 0}, 20, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := heldTracker()
			marked := 0
			for i := range 60 {
				now := t0.Add(time.Duration(i) * 50 * time.Millisecond)
				for j, id := range []string{"a", "b", "c"} {
					st := Status{ID: id, Incarnation: "inc-" + id, Applied: uint64(i), AppendSecs: 0.0002,
						AppendP75Secs: tc.p75[j]}
					if id == "a" && tc.dipsA && i%7 == 3 { // one tick in seven at 1.6 times its peers'
						st.AppendP75Secs = 0.00096
					}
					tr.Observe(st, now)
				}
				d := tr.Tick(now, true, nil)
				if len(d.Marks) > 0 {
					if marked != 0 || d.Marks[0].ID != "a" || d.Transfer == nil || d.Marks[0].Strong != tc.wantStrong {
						t.Fatalf("tick %d: %+v, want a marked once (short hold %v), with a transfer", i, d, tc.wantStrong)
					}
					marked = i
				}
			}
			if marked != tc.wantMark {
				t.Errorf("a marked at tick %d, want %d", marked, tc.wantMark)
			}
		})
	}
}

// TestPaceFollowsLogRate: a leader paces a lagging follower at a quarter
// above what its log grows by, when that is under half its link by the
// probe; the pace is set again once the log's rate moved by more than
// paceRetune, and not for a smaller move.
func TestPaceFollowsLogRate(t *testing.T) {
	tr := newTracker(250*time.Millisecond, 50*time.Millisecond)
	for _, id := range []string{"b", "c"} { // half the link by the probe: 6.3 MB/s
		tr.Probes(t0)
		tr.Observe(Status{ID: id, Incarnation: "inc-" + id, ProbeEcho: tr.Stamp(t0), Applied: 1}, t0.Add(2600*time.Microsecond))
	}
	paces := func(at time.Duration, logRate float64, top, c uint64) []Pace {
		now := t0.Add(at)
		report(tr, now, map[string]uint64{"a": top, "b": top, "c": c})
		tr.ObserveLogRate(logRate)
		return tr.Tick(now, true, nil).Paces
	}
	paces(100*time.Millisecond, 4e6, 20, 10)
	if p := paces(200*time.Millisecond, 4e6, 30, 10); len(p) != 1 || p[0] != (Pace{Addr: "c:1", BytesPerSec: 5e6}) {
		t.Fatalf("c lags, the log grows 4 MB/s: paces %+v, want c:1 at 5 MB/s", p)
	}
	if p := paces(300*time.Millisecond, 4.8e6, 40, 10); len(p) != 0 {
		t.Fatalf("log at 4.8 MB/s (pace 6 MB/s, a fifth more): paces %+v, want none", p)
	}
	if p := paces(400*time.Millisecond, 2e6, 50, 10); len(p) != 1 || p[0] != (Pace{Addr: "c:1", BytesPerSec: 2.5e6}) {
		t.Fatalf("log down to 2 MB/s: paces %+v, want c:1 at 2.5 MB/s", p)
	}
	p := paces(500*time.Millisecond, 20e6, 60, 10)
	if len(p) != 1 || p[0].Addr != "c:1" || p[0].BytesPerSec < 6.2e6 || p[0].BytesPerSec > 6.4e6 {
		t.Fatalf("log at 20 MB/s: paces %+v, want c:1 at half the link, 6.3 MB/s", p)
	}
}

func TestRate(t *testing.T) {
	r := NewRate(time.Second)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	if got := r.Value(at(0)); got != 0 {
		t.Fatalf("nothing added: %v, want 0", got)
	}
	for ms := 0; ms < 3000; ms += 100 {
		r.Observe(1000, at(ms)) // 10 000 a second
		if got := r.Value(at(ms)); ms < 1000 && got != 0 {
			t.Fatalf("at %d ms, before a whole window ended: %v, want 0", ms, got)
		}
	}
	if got := r.Value(at(2999)); got != 10000 {
		t.Errorf("after 3 s at 10 000/s: %v", got)
	}
	if got := r.Value(at(3500)); got != 10000 {
		t.Errorf("the last window at 10 000/s, the current one without: %v", got)
	}
	if got := r.Value(at(4500)); got != 0 {
		t.Errorf("a whole window with nothing: %v, want 0", got)
	}
}

// observeSlowC has a and c report top applied, b report b, at now, with
// c's link at 100x (probes of 200 ms).
func observeSlowC(tr *Tracker, now time.Time, top, b uint64) {
	for id, st := range map[string]Status{
		"a": {Applied: top, ProbeSecs: 0.003, NetSecs: 0.001},
		"b": {Applied: b, ProbeSecs: 0.003, NetSecs: 0.001},
		"c": {Applied: top, ProbeSecs: 0.2, NetSecs: 0.2},
	} {
		st.ID, st.Incarnation = id, "inc-"+id
		tr.Observe(st, now)
	}
}

// TestLimpingVoterLeavesLaggingOneUnpaced: an agent that marked the old
// leader limping while it followed, and now leads, paces that replica in
// its first tick as leader, but not the other follower, which lags
// 150 ms as followers do right after a leader change: with both paced,
// every commit waits on a paced follower (a 100x leader NIC's handover:
// the healthy follower paced at 1 MiB/s for its 5-s hold, throughput 0.3x
// to 0.6x its healthy run's).
func TestLimpingVoterLeavesLaggingOneUnpaced(t *testing.T) {
	tr := heldTracker()
	for i := range 21 {
		now := t0.Add(time.Duration(i) * 50 * time.Millisecond)
		b := uint64(i + 3)
		if i == 20 {
			b = uint64(i) // 3 ticks, 150 ms, behind
		}
		observeSlowC(tr, now, uint64(i+3), b)
		d := tr.Tick(now, i == 20, nil) // a follower until tick 20
		if i < 20 {
			continue
		}
		if !limping(tr)["c"] {
			t.Fatalf("tick 20: c not marked limping: %+v", d.Marks)
		}
		if len(d.Paces) != 1 || d.Paces[0].Addr != "c:1" {
			t.Fatalf("tick 20: c marked limping and b 150 ms behind: paces %+v, want c:1 alone", d.Paces)
		}
	}
}

// TestLimpingVoterLiftsLagPace: b, paced for lagging in a catch-up, is
// still within its hold when c is marked limping; b's pace is lifted at
// that tick, since every commit now waits on b.
func TestLimpingVoterLiftsLagPace(t *testing.T) {
	tr := heldTracker()
	pacedB, marked := false, false
	for i := range 40 {
		now := t0.Add(time.Duration(i) * 50 * time.Millisecond)
		b := uint64(i + 3)
		if i >= 3 && i <= 5 {
			b = uint64(i) // 3 ticks, 150 ms, behind
		}
		observeSlowC(tr, now, uint64(i+3), b)
		d := tr.Tick(now, true, nil)
		for _, p := range d.Paces {
			if p.Addr == "b:1" && p.BytesPerSec > 0 {
				pacedB = true
			}
		}
		if !limping(tr)["c"] {
			continue
		}
		if !pacedB {
			t.Fatalf("tick %d: b was never paced for its 150-ms lag", i)
		}
		want := []Pace{{Addr: "b:1"}, {Addr: "c:1"}}
		if len(d.Paces) != 2 || d.Paces[0] != want[0] || d.Paces[1].Addr != "c:1" || d.Paces[1].BytesPerSec == 0 {
			t.Fatalf("tick %d: c marked limping while b is paced for lag: paces %+v, want b:1 lifted and c:1 paced", i, d.Paces)
		}
		marked = true
		break
	}
	if !marked {
		t.Fatal("c was never marked limping")
	}
}

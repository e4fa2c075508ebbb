package replica

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gait-dev/gait/internal/cgroupcpu"
	"github.com/gait-dev/gait/internal/replica/limp"
	"github.com/hashicorp/raft"
)

// health is the agent's edge around its limp tracker: it feeds the tracker
// the raft configuration, status messages and this replica's own progress,
// and acts on its decisions (logs, metrics, leadership transfers,
// quarantine messages). The tracker itself decides.
type health struct {
	a *Agent

	mu sync.Mutex // guards t
	t  *limp.Tracker

	// membersChanged is set when a configuration entry commits.
	membersChanged atomic.Bool

	// cpu and cgroup are this agent's CPU cgroup, whose throttled time
	// (read every status interval; only the heartbeat touches throttle)
	// tells a CPU quota held it back; cpu is nil where there is none to
	// read, and the signal is off.
	cpu      *cgroupcpu.Controller
	cgroup   string
	throttle limp.Throttle

	// aside is set while this replica, limping and not leading, keeps out
	// of elections (standAside).
	aside atomic.Bool
}

func newHealth(a *Agent) *health {
	cfg := limp.Config{Self: a.cfg.ID, StatusInterval: a.cfg.StatusInterval, Floor: a.cfg.LimpFloor,
		Factor: a.cfg.LimpFactor, Hold: a.cfg.LimpHold, PeerInflight: a.cfg.PeerInflight, Born: a.born}
	h := &health{a: a, t: limp.New(cfg, a.incarnation)}
	if c := cgroupcpu.Find(); c != nil {
		dir, err := c.SelfDir()
		if err == nil {
			_, err = c.Throttled(dir)
		}
		if err != nil {
			a.logger.Printf("no cpu quota signal: %v", err)
		} else {
			h.cpu, h.cgroup = c, dir
		}
	}
	return h
}

// throttled is the share of the last 150 ms this agent's cgroup was held
// back by its CPU quota (limp.Throttle).
func (h *health) throttled(now time.Time) float64 {
	if h.cpu == nil {
		return 0
	}
	total, err := h.cpu.Throttled(h.cgroup)
	if err != nil {
		return 0 // the cgroup went away with the host being torn down; nothing to judge
	}
	h.throttle.Observe(total, now)
	return h.throttle.Share()
}

// with runs f with the tracker locked.
func (h *health) with(f func(t *limp.Tracker)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h.t)
}

func (h *health) run() {
	t := time.NewTicker(h.a.cfg.StatusInterval)
	defer t.Stop()
	for {
		select {
		case <-h.a.done:
			return
		case now := <-t.C:
			h.tick(now)
		}
	}
}

// tick refreshes membership, re-sends orphaned writes, tells every peer
// this replica's progress, and acts on the tracker's marks and transfer.
func (h *health) tick(now time.Time) {
	a := h.a
	h.refreshMembers()
	missing := a.sweepWrites(now)
	a.sweepPending(now)
	a.reproposeOrphans()
	h.sendStatus(now)
	var d limp.Decision
	var selfLimping bool
	leader := a.IsLeader()
	rate := a.logs.bytesPerSec(now)
	h.with(func(t *limp.Tracker) {
		t.ObserveLogRate(rate)
		d = t.Tick(now, leader, missing)
		selfLimping = t.SelfLimping()
	})
	for _, m := range d.Marks {
		if m.Limping {
			a.m.limpMarks.Inc()
			a.logger.Printf("replica %s limps: apply lag %v (median %v), log append %v (median %v), append p75 %v (median %v), nearest peer %v (median %v), probe %v (median %v), throttled %.2f (median %.2f), stopped applying %v, short hold %v, agreed %v, quota %v",
				m.ID, m.Lag.Round(time.Millisecond), m.MedianLag.Round(time.Millisecond), m.Append, m.MedianAppend,
				m.AppendP75.Round(10*time.Microsecond), m.MedianP75.Round(10*time.Microsecond),
				m.Net.Round(100*time.Microsecond), m.MedianNet.Round(100*time.Microsecond),
				m.Probe.Round(100*time.Microsecond), m.MedianProbe.Round(100*time.Microsecond), m.Throttled, m.MedianThrottled,
				m.Stopped, m.Strong, m.Agreed, m.Quota)
		} else {
			a.logger.Printf("replica %s recovered: apply lag %v, nearest peer %v, probe %v", m.ID, m.Lag.Round(time.Millisecond),
				m.Net.Round(100*time.Microsecond), m.Probe.Round(100*time.Microsecond))
		}
	}
	for _, p := range d.Paces {
		if p.BytesPerSec > 0 {
			a.logger.Printf("pacing raft's connections to %s at %d bytes/s", p.Addr, p.BytesPerSec)
		} else {
			a.logger.Printf("no longer pacing raft's connections to %s", p.Addr)
		}
		if err := a.pacer.set(p.Addr, p.BytesPerSec); err != nil {
			a.logger.Printf("%v", err)
		}
	}
	h.standAside(selfLimping && !leader)
	if tr := d.Transfer; tr != nil {
		a.logger.Printf("this leader limps; handing leadership to %s", tr.ID)
		a.m.transfers.Inc()
		go a.transferLeadership(tr.ID, tr.Addr)
	}
}

// standAside keeps this replica out of elections while on (it limps and
// does not lead): it still grants votes, so the healthy voters elect one
// of themselves (raft's StandAside, third_party/hashicorp-raft). A leader
// whose link limps loses its lease and, its log the longest (its appends
// reached no one), won the next election again in the Z3 step at 100x
// (docs/results/gait-zookeeper-limplock.md). After raft.StandAsideFactor
// heartbeat timeouts without a leader it campaigns all the same.
func (h *health) standAside(on bool) {
	a := h.a
	if on == h.aside.Load() || a.raft == nil {
		return
	}
	a.raft.StandAside(on)
	h.aside.Store(on)
	if on {
		a.logger.Printf("this replica limps; standing aside from elections")
	} else {
		a.logger.Printf("no longer standing aside from elections")
	}
}

// sendStatus records this replica's own progress and tells every peer its
// applied index, log append time and round trip to its nearest peer, and
// echoes the stamp of the peer's last status with how long it was held
// here: the peer gets a round trip measured on its own clock alone (as NTP
// does), through the same queues and link as every other message between
// the two agents.
func (h *health) sendStatus(now time.Time) {
	a := h.a
	self := limp.Status{ID: a.cfg.ID, Incarnation: a.incarnation, Applied: a.fsm.appliedIndex(),
		AppendSecs: a.logs.leastSeconds(), Stopped: a.fsm.failure() != nil}
	self.AppendP75Secs, self.Throttled = a.logs.p75Seconds(), h.throttled(now)
	var echoes []limp.Echo
	var probes []limp.Probe
	var quarantined [][]byte
	h.with(func(t *limp.Tracker) {
		self.Stamp, self.NetSecs, self.ProbeSecs = t.Stamp(now), t.NearestPeer(now), t.NearestProbe()
		t.Observe(self, now)
		echoes, probes, quarantined = t.Echoes(now), t.Probes(now), t.QuarantineList()
	})
	for _, e := range echoes {
		status := [][]byte{[]byte("STATUS"), []byte(a.cfg.ID), []byte(a.incarnation),
			strconv.AppendUint(nil, self.Applied, 10), strconv.AppendFloat(nil, self.AppendSecs, 'g', 6, 64),
			strconv.AppendInt(nil, self.Stamp, 10), strconv.AppendInt(nil, e.Echo, 10), strconv.AppendInt(nil, e.Hold, 10),
			strconv.AppendFloat(nil, self.NetSecs, 'g', 6, 64), strconv.AppendInt(nil, e.ProbeEcho, 10),
			strconv.AppendInt(nil, e.ProbeHold, 10), strconv.AppendFloat(nil, self.ProbeSecs, 'g', 6, 64),
			strconv.AppendFloat(nil, self.AppendP75Secs, 'g', 6, 64), strconv.AppendFloat(nil, self.Throttled, 'g', 4, 64)}
		a.peer(e.Addr).send(peerMsg{data: appendFrame(nil, append(status, quarantined...)...)})
	}
	for _, p := range probes {
		a.peer(p.Addr).send(peerMsg{data: appendFrame(nil, []byte("PROBE"), []byte(a.cfg.ID),
			strconv.AppendInt(nil, p.Stamp, 10), probePad)})
	}
}

// probePad is what a probe carries (limp.ProbeBytes): its bytes, not its
// contents, are the measurement.
var probePad = make([]byte, limp.ProbeBytes)

// onProbe records a peer's probe, echoed in the next status to it.
func (h *health) onProbe(id string, stamp int64) {
	now := time.Now()
	h.with(func(t *limp.Tracker) { t.ObserveProbe(id, stamp, now) })
}

// refreshMembers follows the raft configuration.
func (h *health) refreshMembers() {
	f := h.a.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	var ms []limp.Member
	for _, s := range f.Configuration().Servers {
		ms = append(ms, limp.Member{ID: string(s.ID), Addr: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	now := time.Now()
	h.with(func(t *limp.Tracker) { t.SetMembers(ms, now) })
}

// onStatus records a peer's progress report.
func (h *health) onStatus(st limp.Status) {
	now := time.Now()
	h.with(func(t *limp.Tracker) { t.Observe(st, now) })
}

// expectedReplicas are the replicas that should reply to a write proposed
// now. Members are refreshed when a configuration entry commits and on
// every tick.
func (h *health) expectedReplicas() map[string]bool {
	if h.membersChanged.Swap(false) {
		h.refreshMembers()
	}
	var out map[string]bool
	h.with(func(t *limp.Tracker) { out = t.Expected() })
	return out
}

func (h *health) observeReply(id string, d time.Duration) {
	h.with(func(t *limp.Tracker) { t.ObserveReply(id, d) })
}

// quarantine marks a divergent replica: it answers no more reads and its
// replies no longer count. Every agent is told, the replica itself included.
func (h *health) quarantine(id, inc, why string) {
	var fresh bool
	var addrs []string
	h.with(func(t *limp.Tracker) { fresh, addrs = t.Quarantine(id, inc), t.PeerAddrs() })
	if !fresh {
		return
	}
	h.a.logger.Printf("quarantined replica %s: %s", id, why)
	h.a.m.quarantines.Inc()
	msg := appendFrame(nil, []byte("QUARANTINE"), []byte(id), []byte(inc), []byte(why))
	for _, addr := range addrs {
		h.a.peer(addr).send(peerMsg{data: msg})
	}
}

// onQuarantine takes another agent's quarantine of a replica.
func (h *health) onQuarantine(id, incarnation, why string) {
	var fresh bool
	h.with(func(t *limp.Tracker) { fresh = t.Quarantine(id, incarnation) })
	if fresh {
		h.a.logger.Printf("replica %s quarantined by a peer: %s", id, why)
	}
}

func (h *health) isQuarantined(id, incarnation string) (q bool) {
	h.with(func(t *limp.Tracker) { q = t.IsQuarantined(id, incarnation) })
	return q
}

func (h *health) selfQuarantined() (q bool) {
	h.with(func(t *limp.Tracker) { q = t.SelfQuarantined() })
	return q
}

// readTargets picks up to k replicas for a read at now (limp.Tracker.ReadTargets).
func (h *health) readTargets(k int, tried map[string]bool, now time.Time) (out []limp.Target) {
	h.with(func(t *limp.Tracker) { out = t.ReadTargets(k, tried, now) })
	return out
}

// size is how many replicas this agent knows of.
func (h *health) size() (n int) {
	h.with(func(t *limp.Tracker) { n = t.Size() })
	return n
}

func (h *health) readSent(id string) { h.with(func(t *limp.Tracker) { t.ReadSent(id) }) }

func (h *health) readDone(id string, d time.Duration, ok bool) {
	h.with(func(t *limp.Tracker) { t.ReadDone(id, d, ok) })
}

// readLimp notes that a read to id had to be hedged: retries avoid it for a while.
func (h *health) readLimp(id string, waited time.Duration) {
	now := time.Now()
	h.with(func(t *limp.Tracker) { t.ReadLimp(id, waited, now) })
}

// Replica is one replica's state as this agent sees it, for tests and metrics.
type Replica = limp.Replica

// Replicas lists what this agent knows of every replica, by ID.
func (a *Agent) Replicas() (out []Replica) {
	a.health.with(func(t *limp.Tracker) { out = t.Replicas() })
	return out
}

// Quarantined tells whether this agent's own replica has been quarantined.
func (a *Agent) Quarantined() bool { return a.health.selfQuarantined() }

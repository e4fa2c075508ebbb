// Package limp tracks how every replica of a gait replica deployment is
// doing, as one agent sees it: how far behind in applying (apply lag, from
// the highest applied index over time, Limplock §6), how slow its raft log
// appends and its link to its nearest peer are, which replicas diverged
// (quarantined), and how reads to each peer fare. From that it decides
// which replicas limp, whether a limping leader should hand over, and where
// a read should go.
//
// It is plain computation: no clock, no I/O, no locking. The caller passes
// the time of every observation and acts on the Decision a Tick returns;
// tests drive it step by step with explicit times.
package limp

import (
	"math"
	"slices"
	"sort"
	"time"
)

// Config is how a Tracker judges.
type Config struct {
	Self           string        // this agent's replica ID
	StatusInterval time.Duration // how often every replica reports its progress
	// Floor is the smallest apply lag that counts as limping; Factor how
	// many times its peers' median a replica's lag must be to count (its
	// log append time and round trip to its nearest peer: sideFactor).
	Floor  time.Duration
	Factor float64
	// Hold is how long a replica must look slow before it is marked: a
	// machine busy with other work makes every replica look slow now and
	// then, and a handover on noise costs more than the noise. Gaps of up
	// to a quarter of Hold do not break the spell, since a limping link or
	// disk near the threshold dips under it now and then. A replica that
	// cannot apply at all is marked at once.
	Hold time.Duration
	// PeerInflight is how many reads may be outstanding at one peer before
	// it is given no more.
	PeerInflight int
	// Born is the origin of this agent's stamps (Stamp), which peers echo
	// back so that round trips are measured on this agent's clock alone.
	Born time.Time
}

// historyKeep bounds the apply-lag history; a lag longer than this is
// reported as this long, which is far past any limping threshold.
const historyKeep = 30 * time.Second

// TransferPause spaces leadership transfers, so a deployment where every
// voter limps does not pass leadership around without end.
const TransferPause = 2 * time.Second

// A limping disk or link is judged against its peers by a smaller factor
// than the apply lag: a leader's log append and its link are on every
// write's path, so twice its peers' time already costs every client, while
// at 10x a slow disk or link shows only as 2 to 4 times its peers' (the
// healthy part of each write, CPU and page cache, does not slow). The floors
// keep a healthy deployment, where both take about a millisecond, from being
// judged on fractions of one.
const (
	sideFactor      = 2.0
	appendLimpFloor = 5 * time.Millisecond
	probeLimpFloor  = 15 * time.Millisecond
)

// A log disk at 10x is found by the 75th percentile of its appends
// (DiskTime) against its peers', by sideFactor: its least append stayed
// under appendLimpFloor (3.3 ms at most in round 3's runs) while clients
// paid 3 to 5 times. The replicas of a deployment here share one disk, so
// the shared disk's noise (another program's writes) slows every
// replica's appends alike and does not change the ratio. The floor keeps
// an idle or healthy deployment from being judged on tenths of a
// millisecond.
const diskP75Floor = time.Millisecond

// diskAloneFloor judges a replica whose peers appended too little to say
// what an append costs: a leader whose own appends stall sends its
// followers almost nothing to append. At 1000x on limpfs its percentile
// was 109-151 ms while its followers reported none, and it was marked
// only by its least append after the full hold, 2.7-2.9 s into the step.
// Alone, a percentile past this line is slow, and strongFactor past it
// strong; a healthy fdatasync of a few KiB takes under a millisecond
// here, and when the shared disk is busy the peers append too and the
// comparison with them decides.
const diskAloneFloor = 50 * time.Millisecond

// strongFactor: a replica that looks slow by strongFactor times a
// signal's factor and floor is marked after Hold/strongShorten, not Hold.
// A busy machine's noise near a threshold is common, far past it rare,
// while every second a leader limps at 10x costs clients its slow requests
// (the 1-s hold and the transfer were the p99 of round 3's 10-s steps; a
// 10x leader link's probes took 72 to 87 ms against medians of 2 ms). The
// floor doubles too: with the factor alone a healthy leader's probe of
// 17.7 ms against a median of 2.2 ms, at load average 11 to 15, handed
// over after 250 ms.
const (
	strongFactor  = 2.0
	strongShorten = 4
)

// probeStrongFloor is the probe's strong line on its own. Between
// strongFactor times probeLimpFloor and it, a probe is strong only when
// the replica's small round trips to its nearest peer are also sideFactor
// times its peers': on a machine at load average 12 to 16 (2 cores),
// healthy replicas' probes took 31 to 40 ms against medians of 1.7 to
// 8.8 ms (about one period of the kernel's scheduler with a dozen runnable
// tasks) and set off 3 handovers in 18 minutes, while their round trips
// were 0.8 to 1.8 times their peers' (a busy machine slows every replica
// alike); a leader limping at 10x took 60 to 98 ms (CPU) and 72 to 172 ms
// (link), its round trips 4 to 50 times its peers'.
//
// Neither counts unless the probe is also calmFactor times the replicas'
// median round trip, the machine's noise as the peers measure it now. On
// a busy machine healthy probes pass the lines above (60 to 247 ms beside
// medians of 10.8 to 49.5 ms at load 11 to 22), while beside a limping
// leader the median stays small (1.6 to 5.2 ms) and the probe does not.
// The line is relative because load defeats an absolute one: an 8-ms
// cap on the median let no probe be strong at load 33 and more, a link at
// 1000x included. A slow enough link still stands out (a 1-Mbit/s link's
// probe takes 262 ms on the wire alone); noise alone does not.
const (
	probeStrongFloor = 60 * time.Millisecond
	calmFactor       = 10.0
)

// slowProbeStrong tells a probe strongFactor past its line: on its own past
// probeStrongFloor, or past twice probeLimpFloor with the round trips slow
// too, while it stands out of the round trips' noise (calmFactor).
func slowProbeStrong(probe, medianProbe, net, medianNet time.Duration) bool {
	if probe <= strongFactor*probeLimpFloor || float64(probe) <= strongFactor*sideFactor*float64(medianProbe) ||
		!outOfNoise(probe, medianNet) {
		return false
	}
	return probe > probeStrongFloor || medianNet > 0 && float64(net) > sideFactor*float64(medianNet)
}

// outOfNoise tells whether a round trip v stands out of the replicas'
// median round trip by calmFactor: then the machine's scheduling delays,
// which slow every message alike, do not explain it.
func outOfNoise(v, medianNet time.Duration) bool { return float64(v) > calmFactor*float64(medianNet) }

// A replica judging itself has a second view of its link and CPU besides
// the probes it reports: its own round trips to its nearest peer (NetSecs),
// through the same agent. When both are past their strong lines at once
// (agreeProbes fresh probes to every peer past strongFactor times the probe
// line, and the round trip strongFactor*sideFactor times its peers' and past
// agreeNetFloor), the replica is marked after agreeHold status intervals,
// not Hold/strongShorten. A leader at a
// tenth of a CPU had probes of 43 to 98 ms and round trips of 18 to 49 ms
// against its peers' 1.6 to 2 ms, and was marked 0.86 to 1.01 s into the
// step, by the least of probeKeep probes and then Hold/strongShorten; its
// clients' slow writes of that second were a quarter of a 10-s step's
// 1 %, and the p99 sat at the 1.5x line. A busy machine does not give both:
// its healthy replicas' probes reached 31 to 40 ms while their round trips
// stayed 0.8 to 1.8 times their peers' (probeStrongFloor), and one stall of
// an agent slows one probe per peer (the next goes out after it,
// probeConfirm), so two in a row need the agent slow for two probes' time.
// Only this agent's own probes are kept here, so it judges itself alone
// this way; that is the judgement that hands leadership over.
//
// At first agreement marked with no hold, and on a machine at load average
// 10 to 20 (2 cores; three other helpers building and measuring) it handed
// leadership over 4 times in 16 minutes: one agent starved of CPU for a
// second is a replica at a tenth of a CPU for that second, probes and
// round trips alike (round trips 25 to 88 ms). But then its peers were
// slow too: their median round trip was 6 to 20 ms in six of the seven
// marks, where a 10x leader's peers had 1.7 to 3.8 ms at the same load
// averages. So agreement counts only while the peers' median is under
// agreeCalm, and only once it has lasted agreeHold status intervals, no
// gaps bridged (the seventh mark's peers were at 3 ms).
const (
	agreeProbes   = 2
	agreeNetFloor = 10 * time.Millisecond
	agreeCalm     = 5 * time.Millisecond
	agreeHold     = 2
)

// A replica whose cgroup the kernel held back by its CPU quota for more
// than throttleFloor of the last throttleWindow (Status.Throttled), and
// sideFactor times its peers' median share, is marked once that has lasted
// throttleHold status intervals, no gaps bridged (logged as "quota"): the
// quota ran out in two or three periods in a row, not in one (a burst of
// work such as a garbage collection, which clients barely feel). This
// is the kernel's own word, not an inference from timing: the replica's
// processes were ready to run and were not let. A busy machine without a
// quota shows none, however late it runs them, and so never sets it off,
// while every timing signal here (probes, round trips) is slowed by both
// alike. It is what a container at its CPU limit looks like in production.
// Probes missed it: a leader at a tenth of a CPU serves in bursts, one per
// quota period, and when a probe lands in a burst it comes back at once, so
// the least of a few is fast (round 8: marked 2.7 and 5.35 s into the step
// in two runs of ten, probes of 3 to 18 ms, against 0.7 s when they were
// slow); with this rule, leaders at a tenth and a hundredth of a CPU were
// marked 0.28 to 0.48 s into the step, round 8's rules beside them 0.77 to
// 2.17 s (round 9, docs/replica.md). It does not see a CPU slowed without a quota (a slower or
// overheating core, another process's hyperthread, a VM's stolen time),
// which is left to the probes and round trips; and replicas that all run
// at their quota (a deployment too small for its load) are alike, so none
// is marked: handing over would not help.
const (
	throttleFloor = 0.2
	throttleHold  = 4
)

// netLimpFloor is the smallest round trip to the nearest peer that counts as
// a limping link, at Factor times the median; on a LAN or between
// namespaces a healthy one is well under a millisecond, and a few
// milliseconds while the agents are busy. A link limping at 10x adds too
// little to a small message's round trip to tell it from a busy machine's
// scheduling delays (2.5 to 5 ms against 1.5 to 5 ms at load average 17);
// the probe below finds it.
const netLimpFloor = 50 * time.Millisecond

// A probe is a message of ProbeBytes to one peer, echoed back in that
// peer's next status: its round trip is dominated by the time the bytes
// take on the slower of the two links (2.6 ms at 100 Mbit/s, 26 ms at
// 10 Mbit/s), which a busy machine's scheduling delays of a few
// milliseconds do not hide. One goes to each peer every probeEvery, or
// every probeShare times the kept round trips' least if that is longer, so
// probes take at most a tenth of a slow link; probeKeep round trips are
// kept, and the smallest counts, since delays only ever add to one. The
// spacing follows the least, not the last: spaced by the last, a link that
// went 100x sent its probes 3 s apart from its first slow one, and its
// leader kept the lead for 7 s until 5 slow ones had come back; now the
// first probeKeep slow ones go back to back. Three, not five: one stall of
// a busy agent delays one probe per peer, and a window of time instead (the
// probes of the last second) counted a stall of a second as a slow link:
// 11 handovers between healthy voters in 5 min at load average 63 to 87.
const (
	ProbeBytes = 32 << 10
	probeEvery = 250 * time.Millisecond
	probeShare = 10
	probeKeep  = 3
	// A probe that came back slower than sideFactor times the least kept
	// is followed by the next after probeConfirm times its round trip, if
	// that is sooner: a link that turned slow then shows in the least of
	// probeKeep within about half a second rather than probeKeep*probeEvery
	// (750 ms at 10x), for a third of the slow link while it lasts (a
	// 10x leader's probes took 72 ms behind its queue of appends, 1.6 s
	// from the slowdown to the handover with probes 250 ms apart).
	// Never sooner than probeConfirmMin, so that a busy machine's late
	// probes on a healthy link do not send a probe every few milliseconds.
	probeConfirm    = 2
	probeConfirmMin = 100 * time.Millisecond
	// A probe unanswered for probeLost, or for probeShare round trips if
	// that is longer, is sent again: a probe is dropped when the queue to
	// its peer is full (a leader's queue of replies behind a limping link),
	// and waiting long for it would leave the link unmeasured. Half a
	// second, not one: the probe a leader sent just before its link slowed
	// to 10x did not come back (the link's queue was replaced), and with
	// 1 s the next went out 1.05 s after it, half the time to a handover.
	probeLost = 500 * time.Millisecond
)

// readAvoid is how long a peer gets no reads after one had to be hedged away
// from it.
const readAvoid = time.Second

// Member is one server of the raft configuration.
type Member struct {
	ID, Addr string
	Voter    bool
}

// Status is one replica's progress report (this agent's own included).
type Status struct {
	ID, Incarnation string
	Applied         uint64
	AppendSecs      float64 // its least raft log append time of the last 1 to 2 s (Least)
	Stamp           int64   // the sender's stamp when it sent the report
	Echo, Hold      int64   // this agent's stamp it last got, and how long the sender held it
	NetSecs         float64 // the sender's round trip to its nearest peer
	// ProbeEcho and ProbeHold echo this agent's last probe to the sender
	// (Probe), as Echo and Hold echo its status; ProbeSecs is the sender's
	// probe round trip to its nearest peer.
	ProbeEcho, ProbeHold int64
	ProbeSecs            float64
	// AppendP75Secs is the 75th percentile of its raft log appends over
	// the last 0.5 to 1 s (DiskTime).
	AppendP75Secs float64
	// Stopped says the replica cannot apply at all (its redis-server is
	// gone): it limps whatever its peers' lag, which matters when several
	// stopped at once and the median lag is stuck too. Only this agent's
	// own status carries it.
	Stopped bool
	// Throttled is the share of the last throttleWindow the replica's
	// cgroup was held back by its CPU quota (Throttle); zero without one.
	Throttled float64
}

// Mark is a change in whether a replica limps, with what it was judged on.
type Mark struct {
	ID      string
	Limping bool // true: it now limps; false: it recovered
	// The replica's apply lag, log append time and round trip to its
	// nearest peer, each with its peers' median.
	Lag, MedianLag       time.Duration
	Append, MedianAppend time.Duration
	Net, MedianNet       time.Duration
	Probe, MedianProbe   time.Duration
	AppendP75, MedianP75 time.Duration // its appends' 75th percentile (DiskTime)
	Stopped              bool          // it cannot apply at all
	Strong               bool          // marked after the shorter hold (strongFactor)
	Agreed               bool          // marked at once, its probes and round trips agreeing (agreeProbes)
	// Its share of time held back by its CPU quota, its peers' median, and
	// whether that marked it (throttleFloor).
	Throttled, MedianThrottled float64
	Quota                      bool
}

// Transfer names the voter a limping leader should hand leadership to.
type Transfer struct{ ID, Addr string }

// Decision is what a Tick found: the marks that changed, and a leadership
// transfer when this agent leads and limps.
type Decision struct {
	Marks    []Mark
	Transfer *Transfer
	Paces    []Pace
}

// Pace caps this agent's sending rate to the replica at Addr at
// BytesPerSec, or lifts the cap (0). A replica marked limping is paced: it
// catches up in bursts, and a burst sent at the full rate of this agent's
// link queues every other replica's messages behind it on that link (the
// leader's appends to its healthy follower waited 10 to 25 ms of every
// 100 ms behind a follower limping on CPU). Paced, the burst takes at most
// paceShare of the link and queues about a millisecond of it.
type Pace struct {
	Addr        string
	BytesPerSec uint64
}

// The limping replica's share of this agent's link, estimated from the
// probe time to its nearest peer (ProbeBytes across the link and a small
// echo back); at least minPace, and defaultPace while no probe time is
// known (half of a 100 Mbit/s link). At most paceHeadroom times what the
// log grows by (ObserveLogRate): the probe overestimates a shaped link,
// whose token bucket lets most of a probe through at once (the testbed's
// holds 2 ms, 25 KB at 100 Mbit/s), so half the link by the probe was 5 to
// 11.8 MB/s of a 12.5 MB/s link. The leader's link carries the healthy
// follower's appends beside the paced one's bursts: with a leader at a
// tenth of a CPU handed over and paced as a follower, in 14 runs of that
// cell at 4.7 MB/s of log (rounds 9 to 11), every pace up to 6.9 MB/s kept
// the clients' p99 at 1.01 to 1.21 times the healthy run's, and five of six
// at 7.4 MB/s or more missed 1.5 (1.41 to 2.29). A quarter above the log's
// rate is what a follower that keeps up needs and a margin to catch up.
// A pace more than paceRetune off the rate the replica is paced at is
// set again.
const (
	paceShare    = 0.5
	minPace      = 1 << 20
	defaultPace  = 100e6 / 8 * paceShare
	paceHeadroom = 1.25
	paceRetune   = 0.25
	paceHold     = 5 * time.Second
)

// Echo is what this agent's next status to one peer carries back: the
// peer's last stamp and how long it was held here (zero before any).
type Echo struct {
	Addr                 string
	Echo, Hold           int64
	ProbeEcho, ProbeHold int64 // the same for the peer's last probe
}

// Probe is one probe to send: ProbeBytes to Addr, with the stamp Stamp.
type Probe struct {
	Addr  string
	Stamp int64
}

// Target is one replica a read may go to.
type Target struct {
	ID, Addr string
	Local    bool // this agent's own replica
}

// Replica is one replica's state as the tracker sees it.
type Replica struct {
	ID            string
	Voter         bool
	Applied       uint64
	Lag           time.Duration
	Limping       bool
	Quarantined   bool
	Inflight      int     // reads outstanding at it
	ReplySecs     float64 // smoothed delay of its replies to this agent's writes
	NetSecs       float64 // its round trip to its nearest peer
	ProbeSecs     float64 // its probe round trip to its nearest peer
	AppendP75Secs float64 // its raft log appends' 75th percentile, as it reports
	Throttled     float64 // its share of time held back by its CPU quota, as it reports
}

// replica is what the tracker knows of one replica (this agent's included).
type replica struct {
	id, addr    string
	voter       bool
	incarnation string
	applied     uint64
	appendSecs  float64   // the replica's least recent raft log append time, as it reports
	appendP75   float64   // its appends' 75th percentile, as it reports (DiskTime)
	stopped     bool      // it cannot apply (Status.Stopped)
	slowSince   time.Time // since when it has looked slow (gaps under Hold/4 bridged); zero while it does not
	slowLast    time.Time // the last tick it looked slow
	strongSince time.Time // since when it has looked slow by strongFactor (no gaps bridged); zero while it does not
	agreeSince  time.Time // since when this agent's own signals have agreed (agreeProbes); zero while they do not
	throttled   float64   // its share of time held back by its CPU quota, as it reports (Status.Throttled)
	quotaSince  time.Time // since when that share has been past throttleFloor (no gaps bridged); zero while it is not
	paced       bool      // this agent paces its sending to it (Pace)
	paceRate    uint64    // at this rate, while paced
	fineSince   time.Time // since when a paced replica has not been marked limping
	seen        time.Time // its last status
	lag         time.Duration
	limping     bool
	readSecs    float64   // smoothed latency of reads this agent sent it
	readLimped  time.Time // when a read to it last had to be hedged
	inflight    int       // reads outstanding at it
	replySecs   float64   // smoothed delay of its replies to this agent's writes
	// rttSecs is the smoothed round trip of status messages between this
	// agent and the replica; netSecs is the replica's own round trip to its
	// nearest peer, as it reports.
	rttSecs, netSecs float64
	echo             int64     // the stamp of the replica's last status, echoed back to it
	echoAt           time.Time // when that status arrived
	// probes are this agent's last probe round trips to the replica, the
	// newest last; probeSent is the outstanding probe's stamp (zero when
	// none) and probeAt when the last one was sent. probeSecs is the
	// replica's own probe round trip to its nearest peer, as it reports;
	// probeEcho and probeEchoAt are its last probe to this agent.
	probes      []float64
	probeSent   int64
	probeAt     time.Time
	probeSecs   float64
	probeEcho   int64
	probeEchoAt time.Time
}

// maxSample is one observation of the highest applied index of any replica.
type maxSample struct {
	at    time.Time
	index uint64
}

// Tracker is one agent's view of every replica. It is not safe for
// concurrent use.
type Tracker struct {
	cfg         Config
	replicas    map[string]*replica // by raft server ID
	history     []maxSample         // highest applied index over the last historyKeep
	quarantined map[string]string   // replica ID -> incarnation that diverged
	selfQuar    bool
	selfInc     string
	transferred time.Time
	logRate     float64 // bytes per second this agent's raft log grows by (ObserveLogRate)
}

// New returns a tracker that knows no replica yet; selfIncarnation is this
// agent's, so that a quarantine of it is recognised.
func New(cfg Config, selfIncarnation string) *Tracker {
	return &Tracker{cfg: cfg, replicas: map[string]*replica{}, quarantined: map[string]string{}, selfInc: selfIncarnation}
}

// Stamp is this agent's stamp for time now: nanoseconds since Born, plus
// one so that no stamp is zero (zero means "nothing to echo").
func (t *Tracker) Stamp(now time.Time) int64 { return int64(now.Sub(t.cfg.Born)) + 1 }

// SetMembers follows the raft configuration. A replica new to it counts as
// heard from now, so that its silence from then on counts as lag.
func (t *Tracker) SetMembers(ms []Member, now time.Time) {
	current := map[string]bool{}
	for _, m := range ms {
		current[m.ID] = true
		r := t.replicas[m.ID]
		if r == nil {
			r = &replica{id: m.ID, seen: now}
			t.replicas[m.ID] = r
		}
		r.addr, r.voter = m.Addr, m.Voter
	}
	for id := range t.replicas {
		if !current[id] {
			delete(t.replicas, id)
		}
	}
}

// Observe records a replica's progress report, received at now, and from
// the echoed stamp the round trip to it. A report from a replica not (yet)
// in the configuration is ignored.
func (t *Tracker) Observe(st Status, now time.Time) {
	r := t.replicas[st.ID]
	if r == nil {
		return
	}
	r.incarnation, r.applied, r.appendSecs, r.seen = st.Incarnation, st.Applied, st.AppendSecs, now
	r.netSecs, r.echo, r.echoAt, r.stopped = st.NetSecs, st.Stamp, now, st.Stopped
	r.probeSecs, r.appendP75, r.throttled = st.ProbeSecs, st.AppendP75Secs, st.Throttled
	if st.Echo > 0 {
		if rtt := t.Stamp(now) - st.Echo - st.Hold; rtt > 0 {
			r.rttSecs = EWMA(r.rttSecs, time.Duration(rtt).Seconds())
		}
	}
	if st.ProbeEcho > 0 && st.ProbeEcho == r.probeSent {
		if rtt := t.Stamp(now) - st.ProbeEcho - st.ProbeHold; rtt > 0 {
			r.probes = append(r.probes, time.Duration(rtt).Seconds())
			if len(r.probes) > probeKeep {
				r.probes = r.probes[1:]
			}
		}
		r.probeSent = 0
	}
}

// Probes are the probes to send to peers at now: to each one with none
// outstanding (or one lost) whose last was sent long enough ago.
func (t *Tracker) Probes(now time.Time) []Probe {
	var out []Probe
	for id, r := range t.replicas {
		if id == t.cfg.Self || r.addr == "" {
			continue
		}
		since := now.Sub(r.probeAt)
		every, lost := probeEvery, probeLost
		if n := len(r.probes); n > 0 {
			least, last := seconds(slices.Min(r.probes)), seconds(r.probes[n-1])
			every = max(every, probeShare*least)
			if last > sideFactor*least {
				every = min(every, max(probeConfirmMin, probeConfirm*last))
			}
			lost = max(lost, every)
		}
		if (r.probeSent != 0 && since < lost) || since < every {
			continue
		}
		r.probeSent, r.probeAt = t.Stamp(now), now
		out = append(out, Probe{Addr: r.addr, Stamp: r.probeSent})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}

// ObserveProbe records a probe from a replica, received at now, to echo
// back in the next status to it.
func (t *Tracker) ObserveProbe(id string, stamp int64, now time.Time) {
	if r := t.replicas[id]; r != nil {
		r.probeEcho, r.probeEchoAt = stamp, now
	}
}

// NearestProbe is this agent's probe round trip, in seconds, to its nearest
// peer: for each peer the smallest of its last probes; zero (not known)
// until a probe came back from every peer, since a fresh agent whose only
// probe back so far is from a limping leader would look limping itself
// (it did, and handed leadership to that leader). While a peer is down the
// probe rule is off and a limping link is left to the round-trip rule. A link too slow to bring a probe back at all is found by
// its silence (NearestPeer); an outstanding probe does not count, since on
// a busy machine a healthy peer's echo is sometimes late by 100 ms or more
// and would raise this agent's figure, and with it the median its peers
// are judged against.
func (t *Tracker) NearestProbe() float64 { return t.nearestProbeOf(0) }

// recentProbe is this agent's probe round trip to its nearest peer by its
// freshest agreeProbes probes to each peer; zero until a probe came back
// from every peer (NearestProbe).
func (t *Tracker) recentProbe() time.Duration { return seconds(t.nearestProbeOf(agreeProbes)) }

// nearestProbeOf is the least probe round trip to the nearest peer over
// each peer's last n probes (all of them when n is 0), in seconds; zero
// until a probe came back from every peer.
func (t *Tracker) nearestProbeOf(n int) float64 {
	best, any := 0.0, false
	for id, r := range t.replicas {
		if id == t.cfg.Self || r.addr == "" {
			continue
		}
		if len(r.probes) == 0 {
			return 0
		}
		probes := r.probes
		if n > 0 {
			probes = probes[max(0, len(probes)-n):]
		}
		if d := slices.Min(probes); !any || d < best {
			best, any = d, true
		}
	}
	return best
}

// selfAgrees tells whether this agent's fresh probes and its round trips to
// its nearest peer are both past their strong lines (agreeProbes) while
// its peers' round trips are calm.
func (t *Tracker) selfAgrees(net, medianNet, medianProbe time.Duration) bool {
	line := strongFactor * sideFactor
	probe := t.recentProbe()
	return probe > strongFactor*probeLimpFloor && float64(probe) > line*float64(medianProbe) &&
		net > agreeNetFloor && float64(net) > line*float64(medianNet) && medianNet < agreeCalm
}

// Echoes are the stamps to send back to every peer with an address.
func (t *Tracker) Echoes(now time.Time) []Echo {
	var out []Echo
	for id, r := range t.replicas {
		if id == t.cfg.Self || r.addr == "" {
			continue
		}
		e := Echo{Addr: r.addr}
		if r.echo != 0 {
			e.Echo, e.Hold = r.echo, int64(now.Sub(r.echoAt))
		}
		if r.probeEcho != 0 {
			e.ProbeEcho, e.ProbeHold = r.probeEcho, int64(now.Sub(r.probeEchoAt))
		}
		out = append(out, e)
	}
	return out
}

// NearestPeer is this agent's smoothed round trip, in seconds, to its
// nearest peer: a limping link of its own slows every one of them, a
// limping peer only one. A peer silent for longer than its round trip
// counts as that far away, so a link too slow to bring back any echo
// still shows.
func (t *Tracker) NearestPeer(now time.Time) float64 {
	best, any := 0.0, false
	for id, r := range t.replicas {
		if id == t.cfg.Self {
			continue
		}
		d := max(r.rttSecs, (now.Sub(r.seen) - 2*t.cfg.StatusInterval).Seconds())
		if !any || d < best {
			best, any = d, true
		}
	}
	return best
}

// Tick recomputes every replica's apply lag and limping mark at now, and
// when this agent leads (leader) and limps picks the voter to hand over to.
// missing is, per replica, how long its reply to one of this agent's writes
// has been overdue; it counts as lag.
func (t *Tracker) Tick(now time.Time, leader bool, missing map[string]time.Duration) Decision {
	medianLag := t.computeLags(now, missing)
	d := Decision{Marks: t.markLimping(now, medianLag)}
	d.Transfer = t.transferTarget(now, leader)
	d.Paces = t.paces(now, leader, medianLag)
	return d
}

// paces starts and ends the pacing of replicas (Pace). Only a leader
// paces: it is the one that sends a replica behind its catch-up, while a
// follower's own messages to the leader are proposals on every write's
// path. A replica is paced at once, with no hold, when it is marked
// limping or its apply lag reaches paceLag (a follower at a tenth of a CPU
// lagged 100 to 250 ms and was not always marked within a 10-s step), and
// until it has been neither for paceHold, since such a follower catches up
// and falls behind again within seconds. Pacing a healthy follower that
// lags once on a busy machine costs little: it still has half the link.
// Only a lag past the median counts: right after a leader change every
// follower lags the new leader, and a new leader that paced its healthy
// follower too (at 5.3 MB/s a 16-KiB batch is 3 ms on the wire) kept
// commits at 5 to 30 ms for the rest of a 10-s step after handing over
// from a 1000x disk. Nor does a leader that limps, or looks slow itself at
// this tick, pace on lag: the lags it sees are its own (a leader at a
// tenth or a hundredth of a CPU reads its followers' statuses late, so
// they look silent), and in round 4 such leaders paced a healthy follower
// (three times of five at the 1-MiB/s floor, their own probes being slow)
// 0.02 to 0.7 s before they marked themselves and handed over, to that
// follower or past it.
// A paced replica's rate follows the log's (paceRate, set again when it
// moved by more than paceRetune). Losing leadership ends every pace.
func (t *Tracker) paces(now time.Time, leader bool, medianLag time.Duration) []Pace {
	self := t.replicas[t.cfg.Self]
	selfSlow := self != nil && (self.limping || self.slowLast.Equal(now))
	// The most behind first, and a voter paced on lag only while enough
	// voters stay unpaced for a majority: with one follower limping and
	// the other paced for a lag on a busy machine (at 2.7 MB/s, a noisy
	// probe's estimate), every commit waited on the paced one and
	// throughput fell to a third for the rest of the step. A limping
	// voter counts as paced before its turn: a new leader that had marked
	// its predecessor limping while it followed paced, in its first tick
	// as leader, the healthy follower that lagged it (the more behind of
	// the two, so the first) and then the limping one, and commits waited
	// on a follower paced at 1 MiB/s for the 5-s hold (a 100x leader NIC).
	var rs []*replica
	voters, unpaced := 0, 0
	for _, r := range t.replicas {
		rs = append(rs, r)
		if r.voter {
			voters++
			if !r.paced && !(leader && r.limping && r.id != t.cfg.Self) {
				unpaced++
			}
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].lag > rs[j].lag || (rs[i].lag == rs[j].lag && rs[i].id < rs[j].id) })
	var out []Pace
	for _, r := range rs {
		if r.id == t.cfg.Self || r.addr == "" {
			continue
		}
		// A voter paced for lag stays paced only while the unpaced voters
		// are a majority without it (it is not counted among them).
		room := !r.voter || unpaced-1 > voters/2 || (r.paced && !r.limping && unpaced > voters/2)
		lagging := !selfSlow && r.lag >= t.paceLag() && r.lag > medianLag && room
		switch {
		case leader && (r.limping || lagging):
			r.fineSince = time.Time{}
			rate := t.paceRate()
			if !r.paced {
				r.paced = true
				if r.voter && !r.limping {
					unpaced--
				}
			} else if math.Abs(float64(rate)-float64(r.paceRate)) <= paceRetune*float64(r.paceRate) {
				continue
			}
			r.paceRate = rate
			out = append(out, Pace{Addr: r.addr, BytesPerSec: rate})
		case r.paced:
			if r.fineSince.IsZero() {
				r.fineSince = now
			}
			// Without the hold when commits need it: a follower paced for
			// lagging in the warm-up's catch-up was still capped at 1 MiB/s
			// when the other follower's CPU went to 1/100 or 1/1000, and
			// for the rest of the hold every commit waited on it (304 to
			// 777 sets a second against 1,223 to 2,080 once lifted).
			if !leader || now.Sub(r.fineSince) >= paceHold || (r.voter && unpaced <= voters/2) {
				r.paced, r.fineSince = false, time.Time{}
				if r.voter {
					unpaced++
				}
				out = append(out, Pace{Addr: r.addr})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}

// ObserveLogRate tells the tracker how fast this agent's raft log grows,
// in bytes per second: what a follower takes to keep up, and so what a
// paced one is given (paceRate).
func (t *Tracker) ObserveLogRate(bytesPerSec float64) { t.logRate = bytesPerSec }

// paceLag is the apply lag from which a leader paces a replica: two
// status intervals, past what a healthy replica's reports lag behind.
func (t *Tracker) paceLag() time.Duration { return 2 * t.cfg.StatusInterval }

// paceRate is what a limping replica may take of this agent's link, in
// bytes per second (Pace).
func (t *Tracker) paceRate() uint64 {
	rate := defaultPace
	if probe := t.NearestProbe(); probe > 0 {
		rate = paceShare * ProbeBytes / probe
	}
	if t.logRate > 0 {
		rate = min(rate, paceHeadroom*t.logRate)
	}
	return uint64(max(minPace, rate))
}

// computeLags sets each replica's apply lag: how long ago the most advanced
// replica passed the index this one is at. A replica silent for longer is
// as late as its silence, and so is one whose replies to this agent's
// writes are missing. It returns the median lag.
func (t *Tracker) computeLags(now time.Time, missing map[string]time.Duration) time.Duration {
	var top uint64
	for _, r := range t.replicas {
		top = max(top, r.applied)
	}
	t.history = append(t.history, maxSample{now, top})
	cut := 0
	for cut < len(t.history)-1 && now.Sub(t.history[cut].at) > historyKeep {
		cut++
	}
	t.history = t.history[cut:]
	var lags []time.Duration
	for _, r := range t.replicas {
		r.lag = 0
		if r.applied < top {
			// The earliest sample in which some replica was past r.
			i := sort.Search(len(t.history), func(i int) bool { return t.history[i].index > r.applied })
			r.lag = now.Sub(t.history[min(i, len(t.history)-1)].at)
		}
		if silent := now.Sub(r.seen) - 2*t.cfg.StatusInterval; r.id != t.cfg.Self && silent > r.lag {
			r.lag = silent
		}
		r.lag = max(r.lag, missing[r.id])
		lags = append(lags, r.lag)
	}
	return median(lags)
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// markLimping compares each replica with its peers: far behind in applying,
// slower in appending to its raft log, or slower to reach even its nearest
// peer (its own link limps). A mark is lifted only once the replica is back
// under the thresholds' lower halves. A mark needs the replica to have
// looked slow for Hold, or for Hold/strongShorten when its probe or its
// appends' 75th percentile is strongFactor times past its factor
// throughout; this agent's own replica is marked sooner still when its
// fresh probes and its round trips agree (agreeProbes).
func (t *Tracker) markLimping(now time.Time, medianLag time.Duration) []Mark {
	cfg := t.cfg
	var appends, nets, probes, p75s []time.Duration
	var throttles []float64
	for _, r := range t.replicas {
		throttles = append(throttles, r.throttled)
		appends = append(appends, seconds(r.appendSecs))
		nets = append(nets, seconds(r.netSecs))
		probes = append(probes, seconds(r.probeSecs))
		if r.appendP75 > 0 {
			p75s = append(p75s, seconds(r.appendP75))
		}
	}
	medianAppend, medianNet, medianProbe := median(appends), median(nets), median(probes)
	slices.Sort(throttles)
	medianThrottled := 0.0
	if len(throttles) > 0 {
		medianThrottled = throttles[len(throttles)/2]
	}
	// Only the replicas that appended lately say what an append costs;
	// with fewer than two of them there is nothing to compare.
	medianP75 := time.Duration(0)
	if len(p75s) >= 2 {
		medianP75 = median(p75s)
	}
	slow := func(v, floor, med time.Duration, factor float64) bool {
		return v > floor && float64(v) > factor*float64(med)
	}
	// Healed is under half the floor, or under the factor's lower half
	// (for sideFactor 2: 1.5 times the median, as 2/2 would be the median
	// itself, which a replica is never under).
	fine := func(v, floor, med time.Duration, factor float64) bool {
		return v < floor/2 || float64(v) < (1+factor)/2*float64(med)
	}
	var marks []Mark
	for _, r := range t.replicas {
		appendTime, net, probe := seconds(r.appendSecs), seconds(r.netSecs), seconds(r.probeSecs)
		p75 := seconds(r.appendP75)
		alone := medianP75 == 0 && p75 > 0
		slowP75 := func(k float64) bool {
			if alone {
				return p75 > time.Duration(k*float64(diskAloneFloor))
			}
			return medianP75 > 0 && slow(p75, time.Duration(k*float64(diskP75Floor)), medianP75, k*sideFactor)
		}
		slowNow := slow(r.lag, cfg.Floor, medianLag, cfg.Factor) || slowP75(1) ||
			slow(appendTime, appendLimpFloor, medianAppend, sideFactor) ||
			slow(net, netLimpFloor, medianNet, cfg.Factor) || slow(probe, probeLimpFloor, medianProbe, sideFactor)
		// Only the peer-relative probe and percentile signals shorten the hold:
		// lags and least appends of a second came and went on every replica
		// of a machine at load average 130 to 250, so far past their
		// thresholds says little there.
		strongNow := slowP75(strongFactor) || slowProbeStrong(probe, medianProbe, net, medianNet)
		agreeNow := r.id == cfg.Self && t.selfAgrees(net, medianNet, medianProbe)
		agreed := heldFor(agreeNow, &r.agreeSince, now, agreeHold*cfg.StatusInterval)
		quotaNow := r.throttled > throttleFloor && r.throttled > sideFactor*medianThrottled
		quota := heldFor(quotaNow, &r.quotaSince, now, throttleHold*cfg.StatusInterval)
		slowNow = slowNow || agreeNow || quotaNow
		// A replica marked on its fresh probes (agreed) heals on them too,
		// not on the least of probeKeep, which lags them.
		healed := !r.stopped && !agreeNow && (r.throttled < throttleFloor/2 || r.throttled < (1+sideFactor)/2*medianThrottled) &&
			(r.id != cfg.Self || fine(t.recentProbe(), probeLimpFloor, medianProbe, sideFactor)) &&
			r.lag < cfg.Floor/2 && fine(appendTime, appendLimpFloor, medianAppend, sideFactor) &&
			fine(net, netLimpFloor, medianNet, cfg.Factor) && fine(probe, probeLimpFloor, medianProbe, sideFactor) &&
			(alone && p75 < diskAloneFloor/2 || !alone && (medianP75 == 0 || fine(p75, diskP75Floor, medianP75, sideFactor)))
		switch {
		case slowNow:
			if r.slowSince.IsZero() {
				r.slowSince = now
			}
			r.slowLast = now
		case now.Sub(r.slowLast) > cfg.Hold/4:
			r.slowSince = time.Time{}
		}
		// The strong spell is held by its own start, with no gaps bridged.
		strong := heldFor(strongNow, &r.strongSince, now, cfg.Hold/strongShorten)
		held := agreed || quota || slowNow && (now.Sub(r.slowSince) >= cfg.Hold || strong)
		if (!r.limping && (r.stopped || held)) || (r.limping && healed) {
			r.limping = !r.limping
			marks = append(marks, Mark{ID: r.id, Limping: r.limping, Lag: r.lag, MedianLag: medianLag,
				Append: appendTime, MedianAppend: medianAppend, Net: net, MedianNet: medianNet,
				Probe: probe, MedianProbe: medianProbe, AppendP75: p75, MedianP75: medianP75,
				Stopped: r.stopped, Strong: r.limping && strong && now.Sub(r.slowSince) < cfg.Hold,
				Agreed:    r.limping && agreed && !strong && now.Sub(r.slowSince) < cfg.Hold,
				Throttled: r.throttled, MedianThrottled: medianThrottled,
				Quota: r.limping && quota && !agreed && !strong && now.Sub(r.slowSince) < cfg.Hold})
		}
	}
	sort.Slice(marks, func(i, j int) bool { return marks[i].ID < marks[j].ID })
	return marks
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// transferTarget picks the healthiest other voter when this agent leads
// and limps, at most once per TransferPause.
func (t *Tracker) transferTarget(now time.Time, leader bool) *Transfer {
	self := t.replicas[t.cfg.Self]
	if self == nil || !self.limping || !leader || now.Sub(t.transferred) < TransferPause {
		return nil
	}
	var best *replica
	for _, r := range t.replicas {
		// A limping link delays every status message, so a target need only
		// have been heard from lately, not within a few status intervals.
		if r == self || !r.voter || r.limping || t.isQuarantined(r.id, r.incarnation) ||
			now.Sub(r.seen) > TransferPause+time.Second {
			continue
		}
		if best == nil || r.lag < best.lag || (r.lag == best.lag && r.appendSecs < best.appendSecs) ||
			(r.lag == best.lag && r.appendSecs == best.appendSecs && r.id < best.id) {
			best = r
		}
	}
	if best == nil {
		return nil
	}
	t.transferred = now
	return &Transfer{ID: best.id, Addr: best.addr}
}

// Expected are the replicas that should reply to a write proposed now:
// every member not quarantined, or this agent alone before the first
// configuration is known.
func (t *Tracker) Expected() map[string]bool {
	out := map[string]bool{}
	for id, r := range t.replicas {
		if !t.isQuarantined(id, r.incarnation) {
			out[id] = true
		}
	}
	if len(out) == 0 {
		out[t.cfg.Self] = true
	}
	return out
}

// ObserveReply records how long a replica took to reply to one of this
// agent's writes.
func (t *Tracker) ObserveReply(id string, d time.Duration) {
	if r := t.replicas[id]; r != nil {
		r.replySecs = EWMA(r.replySecs, d.Seconds())
	}
}

// EWMA smooths every latency the tracker is told of: the first sample
// stands alone, then each new one weighs a fifth.
func EWMA(old, v float64) float64 {
	if old == 0 {
		return v
	}
	return 0.8*old + 0.2*v
}

// Quarantine marks a replica's incarnation as divergent: it answers no more
// reads and its replies no longer count. It tells whether the mark is new.
func (t *Tracker) Quarantine(id, incarnation string) bool {
	if t.isQuarantined(id, incarnation) {
		return false
	}
	t.quarantined[id] = incarnation
	if id == t.cfg.Self && incarnation == t.selfInc {
		t.selfQuar = true
	}
	return true
}

// QuarantineList is every quarantined replica as ID, incarnation pairs.
func (t *Tracker) QuarantineList() [][]byte {
	var out [][]byte
	for id, inc := range t.quarantined {
		out = append(out, []byte(id), []byte(inc))
	}
	return out
}

// IsQuarantined tells whether that incarnation of the replica is quarantined.
func (t *Tracker) IsQuarantined(id, incarnation string) bool { return t.isQuarantined(id, incarnation) }

func (t *Tracker) isQuarantined(id, incarnation string) bool {
	q, ok := t.quarantined[id]
	return ok && q == incarnation
}

// SelfQuarantined tells whether this agent's own replica is quarantined.
func (t *Tracker) SelfQuarantined() bool { return t.selfQuar }

// SelfLimping tells whether this agent has marked its own replica limping.
func (t *Tracker) SelfLimping() bool {
	self := t.replicas[t.cfg.Self]
	return self != nil && self.limping
}

// PeerAddrs are the addresses of every other replica.
func (t *Tracker) PeerAddrs() []string {
	var out []string
	for id, r := range t.replicas {
		if id != t.cfg.Self && r.addr != "" {
			out = append(out, r.addr)
		}
	}
	return out
}

// Size is how many replicas the tracker knows of.
func (t *Tracker) Size() int { return len(t.replicas) }

// ReadTargets picks up to k replicas for a read at now: this one first when
// it may answer, then peers that neither limp, nor are quarantined, nor had
// a read hedged away from them lately, nor have PeerInflight reads
// outstanding, lowest read latency first. tried are left out. When no
// other may answer, peers a read was hedged away from lately are picked
// all the same.
func (t *Tracker) ReadTargets(k int, tried map[string]bool, now time.Time) []Target {
	var out []Target
	self := t.replicas[t.cfg.Self]
	if !tried[t.cfg.Self] && !t.selfQuar && (self == nil || !self.limping) {
		out = append(out, Target{ID: t.cfg.Self, Local: true})
	}
	if len(out) >= k {
		return out // every read asks the local replica first: no peer to rank (one per read at --fanout 1)
	}
	var peers, avoided []*replica
	for id, r := range t.replicas {
		if id == t.cfg.Self || tried[id] || r.limping || r.addr == "" || t.isQuarantined(id, r.incarnation) ||
			r.inflight >= t.cfg.PeerInflight {
			continue
		}
		if now.Sub(r.readLimped) < readAvoid {
			avoided = append(avoided, r)
			continue
		}
		peers = append(peers, r)
	}
	if len(out) == 0 && len(peers) == 0 {
		// A hedge fires after a tenth of the limp floor (20 ms at a floor
		// of 200 ms), which a healthy peer's answer takes on a loaded
		// machine: with the local replica limping, the two reads a
		// connection's HELLO hedged left every peer avoided, and the next
		// read was refused ("every one limps", TestLimping at load average
		// 14). Avoiding is a preference among replicas that may answer;
		// only limping, quarantine or a full queue make one unfit.
		peers = avoided
	}
	sort.Slice(peers, func(i, j int) bool {
		if peers[i].readSecs != peers[j].readSecs {
			return peers[i].readSecs < peers[j].readSecs
		}
		return peers[i].id < peers[j].id
	})
	for _, r := range peers {
		if len(out) >= k {
			break
		}
		out = append(out, Target{ID: r.id, Addr: r.addr})
	}
	return out
}

// ReadSent counts a read sent to a peer; ReadDone counts it back, with its
// latency when it succeeded.
func (t *Tracker) ReadSent(id string) {
	if r := t.replicas[id]; r != nil {
		r.inflight++
	}
}

// ReadDone: see ReadSent.
func (t *Tracker) ReadDone(id string, d time.Duration, ok bool) {
	if r := t.replicas[id]; r != nil {
		r.inflight--
		if ok {
			r.readSecs = EWMA(r.readSecs, d.Seconds())
		}
	}
}

// ReadLimp notes at now that a read to id had to be hedged after waiting
// that long: reads avoid it for a while.
func (t *Tracker) ReadLimp(id string, waited time.Duration, now time.Time) {
	if r := t.replicas[id]; r != nil {
		r.readLimped = now
		r.readSecs = max(2*r.readSecs, waited.Seconds())
	}
}

// Replicas lists every replica's state, by ID.
func (t *Tracker) Replicas() []Replica {
	var out []Replica
	for id, r := range t.replicas {
		out = append(out, Replica{ID: id, Voter: r.voter, Applied: r.applied, Lag: r.lag, Limping: r.limping,
			Quarantined: t.isQuarantined(id, r.incarnation), Inflight: r.inflight, ReplySecs: r.replySecs, NetSecs: r.netSecs,
			ProbeSecs: r.probeSecs, AppendP75Secs: r.appendP75, Throttled: r.throttled})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// heldFor tells whether a condition has held without a gap for at least d
// as of now: since records when it began, and is cleared whenever it does
// not hold, so it must be called at every tick, held or not.
func heldFor(holds bool, since *time.Time, now time.Time, d time.Duration) bool {
	if !holds {
		*since = time.Time{}
		return false
	}
	if since.IsZero() {
		*since = now
	}
	return now.Sub(*since) >= d
}

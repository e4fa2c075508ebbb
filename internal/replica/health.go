package replica

import (
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gait-dev/gait/internal/resp"
	"github.com/hashicorp/raft"
)

// replicaState is what one agent knows of one replica (itself included).
type replicaState struct {
	id, addr    string
	voter       bool
	incarnation string
	applied     uint64
	appendSecs  float64   // the replica's mean raft log append time, as it reports
	seen        time.Time // last status message (now, for this agent itself)
	lag         time.Duration
	limping     bool
	readSecs    float64   // smoothed latency of reads this agent sent it
	readLimped  time.Time // when a read to it last had to be hedged
	inflight    int       // reads outstanding at it
	replySecs   float64   // smoothed delay of its replies to this agent's writes
	// rttSecs is the smoothed round trip of status messages between this
	// agent and the replica; netSecs is the replica's own round trip to its
	// nearest peer, as it reports (computed here for this agent itself).
	rttSecs, netSecs float64
	echo             int64     // the stamp of the replica's last status, echoed back to it
	echoAt           time.Time // when that status arrived
}

// maxSample is one observation of the highest applied index of any replica.
type maxSample struct {
	at    time.Time
	index uint64
}

// health keeps every replica's progress, finds replicas that limp (apply
// lag far above their peers' median, Limplock §6) and divergent replicas
// (quarantined), and moves leadership away from a limping leader.
type health struct {
	a *Agent

	mu          sync.Mutex
	replicas    map[string]*replicaState // by raft server ID
	history     []maxSample              // highest applied index over the last seconds
	quarantined map[string]string        // replica ID -> incarnation that diverged
	selfQuar    bool
	transferred time.Time

	// membersChanged is set when a configuration entry commits.
	membersChanged atomic.Bool
}

// historyKeep bounds the apply-lag history; a lag longer than this is
// reported as this long, which is far past any limping threshold.
const historyKeep = 30 * time.Second

// transferPause spaces leadership transfers, so a deployment where every
// voter limps does not pass leadership around without end.
const transferPause = 2 * time.Second

// appendLimpFloor is the smallest raft log append time that counts as a
// limping disk; a healthy one takes about a millisecond.
const appendLimpFloor = 20 * time.Millisecond

// netLimpFloor is the smallest round trip to the nearest peer that counts as
// a limping link; on a LAN or between namespaces a healthy one is well under
// a millisecond, and a few milliseconds while the agents are busy.
const netLimpFloor = 50 * time.Millisecond

func newHealth(a *Agent) *health {
	return &health{a: a, replicas: map[string]*replicaState{}, quarantined: map[string]string{}}
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
// this replica's progress, recomputes lags and limping marks, and acts on a
// limping leader.
func (h *health) tick(now time.Time) {
	a := h.a
	h.refreshMembers()
	missing := a.sweepWrites(now)
	a.sweepPending(now)
	a.reproposeOrphans()
	h.sendStatus(now)
	h.mu.Lock()
	h.computeLags(now, missing)
	target, transfer := h.transferTarget(now)
	h.mu.Unlock()
	if transfer {
		a.logger.Printf("this leader limps; handing leadership to %s", target.id)
		a.m.transfers.Inc()
		go a.raft.LeadershipTransferToServer(raft.ServerID(target.id), raft.ServerAddress(target.addr))
	}
}

// sendStatus tells every peer this replica's applied index, log append
// time and round trip to its nearest peer, and echoes the stamp of the
// peer's last status with how long it was held here: the peer gets a round
// trip measured on its own clock alone (as NTP does), through the same
// queues and link as every other message between the two agents.
func (h *health) sendStatus(now time.Time) {
	a := h.a
	self := a.fsm.appliedIndex()
	appendSecs := a.logs.meanSeconds()
	quarantined := h.quarantineList()
	stamp := a.stamp(now)
	type out struct {
		addr       string
		echo, hold int64
	}
	var outs []out
	h.mu.Lock()
	netSecs := h.nearestPeerLocked(now)
	if s := h.replicas[a.cfg.ID]; s != nil {
		s.applied, s.appendSecs, s.seen, s.incarnation, s.netSecs = self, appendSecs, now, a.incarnation, netSecs
	}
	for id, r := range h.replicas {
		if id == a.cfg.ID || r.addr == "" {
			continue
		}
		o := out{addr: r.addr}
		if r.echo != 0 {
			o.echo, o.hold = r.echo, int64(now.Sub(r.echoAt))
		}
		outs = append(outs, o)
	}
	h.mu.Unlock()
	for _, o := range outs {
		status := [][]byte{[]byte("STATUS"), []byte(a.cfg.ID), []byte(a.incarnation),
			strconv.AppendUint(nil, self, 10), strconv.AppendFloat(nil, appendSecs, 'g', 6, 64),
			strconv.AppendInt(nil, stamp, 10), strconv.AppendInt(nil, o.echo, 10), strconv.AppendInt(nil, o.hold, 10),
			strconv.AppendFloat(nil, netSecs, 'g', 6, 64)}
		a.peer(o.addr).send(peerMsg{data: resp.AppendCommand(nil, append(status, quarantined...)...)})
	}
}

// nearestPeerLocked is this agent's smoothed round trip to its nearest
// peer: a limping link of its own slows every one of them, a limping peer
// only one. A peer silent for longer than its round trip counts as that
// far away, so a link too slow to bring back any echo still shows. Called
// with h.mu held.
func (h *health) nearestPeerLocked(now time.Time) float64 {
	best, any := 0.0, false
	for id, r := range h.replicas {
		if id == h.a.cfg.ID {
			continue
		}
		d := max(r.rttSecs, (now.Sub(r.seen) - 2*h.a.cfg.StatusInterval).Seconds())
		if !any || d < best {
			best, any = d, true
		}
	}
	return best
}

// refreshMembers follows the raft configuration.
func (h *health) refreshMembers() {
	f := h.a.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	current := map[string]bool{}
	for _, s := range f.Configuration().Servers {
		id := string(s.ID)
		current[id] = true
		r := h.replicas[id]
		if r == nil {
			r = &replicaState{id: id, seen: time.Now()} // silent from now on counts as lag
			h.replicas[id] = r
		}
		r.addr, r.voter = string(s.Address), s.Suffrage == raft.Voter
	}
	for id := range h.replicas {
		if !current[id] {
			delete(h.replicas, id)
		}
	}
}

func (h *health) peerAddrs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for id, r := range h.replicas {
		if id != h.a.cfg.ID && r.addr != "" {
			out = append(out, r.addr)
		}
	}
	return out
}

// status is one peer's progress report.
type status struct {
	id, incarnation string
	applied         uint64
	appendSecs      float64
	stamp           int64   // the sender's clock when it sent the report
	echo, hold      int64   // this agent's stamp it last got, and how long the sender held it
	netSecs         float64 // the sender's round trip to its nearest peer
}

// onStatus records a peer's progress report and, from the echoed stamp,
// the round trip to it.
func (h *health) onStatus(st status) {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.replicas[st.id]
	if r == nil {
		return // not (yet) in the configuration this agent knows
	}
	r.incarnation, r.applied, r.appendSecs, r.seen = st.incarnation, st.applied, st.appendSecs, now
	r.netSecs, r.echo, r.echoAt = st.netSecs, st.stamp, now
	if st.echo > 0 {
		if rtt := h.a.stamp(now) - st.echo - st.hold; rtt > 0 {
			r.rttSecs = ewma(r.rttSecs, time.Duration(rtt).Seconds())
		}
	}
}

// computeLags sets each replica's apply lag: how long ago the most advanced
// replica passed the index this one is at. A replica silent for longer is
// as late as its silence, and so is one whose replies to this agent's
// writes are missing. Then it marks limping replicas. Called with h.mu held.
func (h *health) computeLags(now time.Time, missing map[string]time.Duration) {
	var top uint64
	for _, r := range h.replicas {
		top = max(top, r.applied)
	}
	h.history = append(h.history, maxSample{now, top})
	cut := 0
	for cut < len(h.history)-1 && now.Sub(h.history[cut].at) > historyKeep {
		cut++
	}
	h.history = h.history[cut:]
	var lags []time.Duration
	for _, r := range h.replicas {
		r.lag = 0
		if r.applied < top {
			// The earliest sample in which some replica was past r.
			i := sort.Search(len(h.history), func(i int) bool { return h.history[i].index > r.applied })
			r.lag = now.Sub(h.history[min(i, len(h.history)-1)].at)
		}
		if silent := now.Sub(r.seen) - 2*h.a.cfg.StatusInterval; r.id != h.a.cfg.ID && silent > r.lag {
			r.lag = silent
		}
		r.lag = max(r.lag, missing[r.id])
		lags = append(lags, r.lag)
	}
	h.markLimping(median(lags))
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
// far slower in appending to its raft log, or far slower to reach even its
// nearest peer (its own link limps). A mark is lifted only once the replica
// is back under half the thresholds. Called with h.mu held.
func (h *health) markLimping(medianLag time.Duration) {
	cfg := h.a.cfg
	var appends, nets []time.Duration
	for _, r := range h.replicas {
		appends = append(appends, seconds(r.appendSecs))
		nets = append(nets, seconds(r.netSecs))
	}
	medianAppend, medianNet := median(appends), median(nets)
	slow := func(v, floor, med time.Duration) bool {
		return v > floor && float64(v) > cfg.LimpFactor*float64(med)
	}
	fine := func(v, floor, med time.Duration) bool {
		return v < floor/2 || float64(v) < cfg.LimpFactor/2*float64(med)
	}
	for _, r := range h.replicas {
		appendTime, net := seconds(r.appendSecs), seconds(r.netSecs)
		slowApply := slow(r.lag, cfg.LimpFloor, medianLag)
		slowDisk := slow(appendTime, appendLimpFloor, medianAppend)
		slowNet := slow(net, netLimpFloor, medianNet)
		healed := r.lag < cfg.LimpFloor/2 && fine(appendTime, appendLimpFloor, medianAppend) && fine(net, netLimpFloor, medianNet)
		switch {
		case !r.limping && (slowApply || slowDisk || slowNet):
			r.limping = true
			h.a.m.limpMarks.Inc()
			h.a.logger.Printf("replica %s limps: apply lag %v (median %v), log append %v (median %v), nearest peer %v (median %v)",
				r.id, r.lag.Round(time.Millisecond), medianLag.Round(time.Millisecond), appendTime, medianAppend,
				net.Round(100*time.Microsecond), medianNet.Round(100*time.Microsecond))
		case r.limping && healed:
			r.limping = false
			h.a.logger.Printf("replica %s recovered: apply lag %v, nearest peer %v", r.id, r.lag.Round(time.Millisecond),
				net.Round(100*time.Microsecond))
		}
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// transferTarget picks the healthiest other voter when this agent leads
// and limps. Called with h.mu held.
func (h *health) transferTarget(now time.Time) (*replicaState, bool) {
	self := h.replicas[h.a.cfg.ID]
	if self == nil || !self.limping || !h.a.IsLeader() || now.Sub(h.transferred) < transferPause {
		return nil, false
	}
	var best *replicaState
	for _, r := range h.replicas {
		// A limping link delays every status message, so a target need only
		// have been heard from lately, not within a few status intervals.
		if r == self || !r.voter || r.limping || h.quarantinedLocked(r.id, r.incarnation) ||
			now.Sub(r.seen) > transferPause+time.Second {
			continue
		}
		if best == nil || r.lag < best.lag || (r.lag == best.lag && r.appendSecs < best.appendSecs) {
			best = r
		}
	}
	if best == nil {
		return nil, false
	}
	h.transferred = now
	return best, true
}

// expectedReplicas are the replicas that should reply to a write proposed
// now: every member not quarantined. Members are refreshed when a
// configuration entry commits and on every tick.
func (h *health) expectedReplicas() map[string]bool {
	if h.membersChanged.Swap(false) {
		h.refreshMembers()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]bool{}
	for id, r := range h.replicas {
		if !h.quarantinedLocked(id, r.incarnation) {
			out[id] = true
		}
	}
	if len(out) == 0 {
		out[h.a.cfg.ID] = true // before the first configuration is known
	}
	return out
}

func (h *health) observeReply(id string, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.replicas[id]; r != nil {
		r.replySecs = ewma(r.replySecs, d.Seconds())
	}
}

func ewma(old, v float64) float64 {
	if old == 0 {
		return v
	}
	return 0.8*old + 0.2*v
}

// quarantine marks a divergent replica: it answers no more reads and its
// replies no longer count. Every agent is told, the replica itself included.
func (h *health) quarantine(id, inc, why string) {
	h.mu.Lock()
	if h.quarantinedLocked(id, inc) {
		h.mu.Unlock()
		return
	}
	h.quarantined[id] = inc
	h.mu.Unlock()
	h.a.logger.Printf("quarantined replica %s: %s", id, why)
	h.a.m.quarantines.Inc()
	h.setQuarantine(id, inc)
	msg := resp.AppendCommand(nil, []byte("QUARANTINE"), []byte(id), []byte(inc), []byte(why))
	for _, addr := range h.peerAddrs() {
		h.a.peer(addr).send(peerMsg{data: msg})
	}
}

// onQuarantine takes another agent's quarantine of a replica.
func (h *health) onQuarantine(id, incarnation, why string) {
	h.mu.Lock()
	known := h.quarantined[id] == incarnation
	h.mu.Unlock()
	if known {
		return
	}
	h.a.logger.Printf("replica %s quarantined by a peer: %s", id, why)
	h.setQuarantine(id, incarnation)
}

func (h *health) setQuarantine(id, incarnation string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.quarantined[id] = incarnation
	if id == h.a.cfg.ID && incarnation == h.a.incarnation {
		h.selfQuar = true
	}
}

// quarantineList is every quarantined replica as ID, incarnation pairs.
func (h *health) quarantineList() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out [][]byte
	for id, inc := range h.quarantined {
		out = append(out, []byte(id), []byte(inc))
	}
	return out
}

func (h *health) quarantinedLocked(id, incarnation string) bool {
	q, ok := h.quarantined[id]
	return ok && q == incarnation
}

func (h *health) isQuarantined(id, incarnation string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.quarantinedLocked(id, incarnation)
}

// progress is the incarnation and applied index a replica last reported.
func (h *health) progress(id string) (string, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.replicas[id]; r != nil {
		return r.incarnation, r.applied
	}
	return "", 0
}

func (h *health) selfQuarantined() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.selfQuar
}

// target is one replica a read may go to.
type target struct {
	id, addr string
	local    bool
}

// readTargets picks up to k replicas for a read: this one first when it
// may answer, then peers that neither limp, nor are quarantined, nor had a
// read hedged away from them lately, nor have PeerInflight reads
// outstanding, lowest read latency first. tried are left out.
func (h *health) readTargets(k int, tried map[string]bool) []target {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []target
	self := h.replicas[h.a.cfg.ID]
	if !tried[h.a.cfg.ID] && !h.selfQuar && (self == nil || !self.limping) {
		out = append(out, target{id: h.a.cfg.ID, local: true})
	}
	now := time.Now()
	var peers []*replicaState
	for id, r := range h.replicas {
		if id == h.a.cfg.ID || tried[id] || r.limping || r.addr == "" || h.quarantinedLocked(id, r.incarnation) ||
			now.Sub(r.readLimped) < time.Second || r.inflight >= h.a.cfg.PeerInflight {
			continue
		}
		peers = append(peers, r)
	}
	sort.Slice(peers, func(i, j int) bool { return peers[i].readSecs < peers[j].readSecs })
	for _, r := range peers {
		if len(out) >= k {
			break
		}
		out = append(out, target{id: r.id, addr: r.addr})
	}
	return out
}

// size is how many replicas this agent knows of.
func (h *health) size() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.replicas)
}

// readSent and readDone keep the per-peer in-flight count and latency.
func (h *health) readSent(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.replicas[id]; r != nil {
		r.inflight++
	}
}

func (h *health) readDone(id string, d time.Duration, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.replicas[id]; r != nil {
		r.inflight--
		if ok {
			r.readSecs = ewma(r.readSecs, d.Seconds())
		}
	}
}

// readLimp notes that a read to id had to be hedged: retries avoid it for a while.
func (h *health) readLimp(id string, waited time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.replicas[id]; r != nil {
		r.readLimped = time.Now()
		r.readSecs = max(2*r.readSecs, waited.Seconds())
	}
}

// Replica is one replica's state as this agent sees it, for tests and metrics.
type Replica struct {
	ID          string
	Voter       bool
	Applied     uint64
	Lag         time.Duration
	Limping     bool
	Quarantined bool
}

// Replicas lists what this agent knows of every replica, by ID.
func (a *Agent) Replicas() []Replica {
	h := a.health
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Replica
	for id, r := range h.replicas {
		out = append(out, Replica{ID: id, Voter: r.voter, Applied: r.applied, Lag: r.lag, Limping: r.limping,
			Quarantined: h.quarantinedLocked(id, r.incarnation)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Quarantined tells whether this agent's own replica has been quarantined.
func (a *Agent) Quarantined() bool { return a.health.selfQuarantined() }

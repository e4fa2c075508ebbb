// Package replica is gait's replication agent for unmodified servers:
// agents beside the servers agree on the order of client commands with raft
// (hashicorp/raft, log in a write-ahead log on disk), each applies the
// committed commands to its own server in log order, and a client talking
// to any agent gets the first reply any replica produced (TRIPOD §4; RP
// ZooKeeper). Replies carry digests, so a replica that diverges is
// quarantined; a replica that limps is found by comparison with its peers
// and is not waited on (Limplock §3, §6).
//
// The package is the protocol-neutral core; a server's protocol is an
// Adapter (adapter.go), in a package of its own under internal/replica
// (redis, zookeeper), which this package never imports.
package replica

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// ReadMode says how fresh a read must be.
type ReadMode string

const (
	// Linearizable reads see every write acknowledged before they started:
	// the leader confirms its leadership and names its last log index, and
	// the first replica that has applied that far answers.
	Linearizable ReadMode = "linearizable"
	// Session reads see at least the connection's own acknowledged writes:
	// any replica that has applied the connection's last write may answer.
	Session ReadMode = "session"
	// Any reads take the first answer of any replica and may be stale.
	Any ReadMode = "any"
)

// ParseReadMode checks a read mode named on the command line.
func ParseReadMode(s string) (ReadMode, error) {
	switch m := ReadMode(s); m {
	case Linearizable, Session, Any:
		return m, nil
	}
	return "", fmt.Errorf("read mode %q: want %s, %s or %s", s, Linearizable, Session, Any)
}

// Durability says when a write is acknowledged.
type Durability string

const (
	// DurableDisk acknowledges a write once a majority of voters appended
	// it to their raft log and fsynced it: it survives any crash of any
	// number of replicas.
	DurableDisk Durability = "disk"
	// DurableReplicated acknowledges a write once a majority of voters
	// appended it to their raft log in memory (the kernel's page cache);
	// the log is fsynced in the background every syncInterval, as TRIPOD
	// and APUS do. It survives the crash of any number of agents (the
	// kernel still holds what they wrote) and of a minority of hosts; a
	// simultaneous power loss or kernel crash of a majority of hosts may
	// lose the writes acknowledged in the last syncInterval plus one fsync
	// (docs/replica.md says what follows).
	DurableReplicated Durability = "replicated"
)

// syncInterval is how often a replicated-durability log is fsynced.
const syncInterval = 10 * time.Millisecond

// ParseDurability checks a durability named on the command line.
func ParseDurability(s string) (Durability, error) {
	switch d := Durability(s); d {
	case DurableDisk, DurableReplicated:
		return d, nil
	}
	return "", fmt.Errorf("durability %q: want %s or %s", s, DurableDisk, DurableReplicated)
}

// Config is one agent's configuration.
type Config struct {
	ID       string // raft server ID, unique in the deployment
	RaftAddr string // host:port for raft and agent-to-agent messages; port 0 picks one
	// Adapter serves clients and fronts the local server at ServerAddr
	// (adapter.go). The agent owns that server: its data is replaced.
	Adapter    Adapter
	ServerAddr string
	Listen     string // host:port for clients; port 0 picks one
	DataDir    string // raft log, stable store and snapshots; empty: a temporary directory
	Bootstrap  bool   // start a new deployment with this agent as its only voter
	Join       string // raft address of any member, to join through
	NonVoter   bool   // join as a non-voting duplicate
	Read       ReadMode
	// Fanout is how many replicas a read goes to (the local one first, then
	// the peers with the lowest recent latency); the first fitting answer wins.
	Fanout int
	// WriteAll makes every write answer only once every replica applied it.
	WriteAll bool
	// Durability is when a write is acknowledged (default DurableDisk).
	Durability Durability
	// Metrics is host:port for Prometheus metrics on /metrics; empty: none.
	Metrics string
	// MaxRequest, RequestMemory and RequestTimeout bound what clients
	// send; the adapter that reads their requests applies them.
	//
	// MaxRequest bounds the bytes of one client request (default 512 MiB,
	// DefaultMaxRequest).
	MaxRequest int
	// RequestMemory caps the bytes that the requests of all clients
	// together hold while they arrive and until they are handled (default
	// 256 MiB, or MaxRequest if larger): a request that would take more is
	// refused with an error and its connection closed, and everyone else
	// is served on.
	RequestMemory int
	// RequestTimeout is how long a request may pause once it has begun
	// (default 10 s): a client that stops half-way is answered with an
	// error and its connection closed. An idle connection may wait forever.
	RequestTimeout time.Duration
	// WriteTimeout bounds the wait for a write's first reply (default 10 s).
	WriteTimeout time.Duration
	// SnapshotThreshold is how many log entries trigger a snapshot (default 8192).
	SnapshotThreshold uint64
	// TrailingLogs is how many entries a snapshot leaves in the log (default 10240).
	TrailingLogs uint64
	// HeartbeatTimeout scales raft's timeouts; the default suits one machine or a LAN.
	HeartbeatTimeout time.Duration
	// StatusInterval is how often agents tell each other their progress (default 50 ms).
	StatusInterval time.Duration
	// A replica limps when its apply lag exceeds both LimpFloor (default
	// 250 ms) and LimpFactor (default 10) times the median lag of all replicas.
	LimpFloor  time.Duration
	LimpFactor float64
	// LimpHold is how long a replica must look slow before it is marked
	// limping (default 1 s): noise on a shared machine is not limping.
	LimpHold time.Duration
	// PeerInflight bounds the reads outstanding at one peer (default 256).
	PeerInflight int
	Log          io.Writer // default os.Stderr
}

func (c *Config) setDefaults() error {
	if c.Adapter == nil || c.ID == "" || c.RaftAddr == "" || c.ServerAddr == "" || c.Listen == "" {
		return errors.New("replica agent: Adapter, ID, RaftAddr, ServerAddr and Listen are required")
	}
	if c.Read == "" {
		c.Read = Linearizable
	}
	if _, err := ParseReadMode(string(c.Read)); err != nil {
		return err
	}
	if c.Durability == "" {
		c.Durability = DurableDisk
	}
	if _, err := ParseDurability(string(c.Durability)); err != nil {
		return err
	}
	if c.Bootstrap && c.Join != "" {
		return errors.New("replica agent: bootstrap and join exclude each other")
	}
	if c.Fanout < 0 {
		return fmt.Errorf("replica agent: fan-out %d: want at least 1", c.Fanout)
	}
	defaults := []struct {
		d   *time.Duration
		def time.Duration
	}{{&c.WriteTimeout, 10 * time.Second}, {&c.RequestTimeout, 10 * time.Second}, {&c.HeartbeatTimeout, 500 * time.Millisecond},
		{&c.StatusInterval, 50 * time.Millisecond}, {&c.LimpFloor, 250 * time.Millisecond}, {&c.LimpHold, time.Second}}
	for _, d := range defaults {
		if *d.d <= 0 {
			*d.d = d.def
		}
	}
	if c.Fanout == 0 {
		c.Fanout = 1
	}
	if c.MaxRequest <= 0 {
		c.MaxRequest = DefaultMaxRequest
	}
	if c.RequestMemory <= 0 {
		c.RequestMemory = max(DefaultRequestMemory, c.MaxRequest)
	}
	if c.RequestMemory < c.MaxRequest {
		return fmt.Errorf("replica agent: request memory %d bytes is less than one request of the largest size, %d", c.RequestMemory, c.MaxRequest)
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 8192
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 10240
	}
	if c.LimpFactor <= 1 {
		c.LimpFactor = 10
	}
	if c.PeerInflight <= 0 {
		c.PeerInflight = 256
	}
	if c.Log == nil {
		c.Log = os.Stderr
	}
	return nil
}

// result is what a waiting request gets: a reply, a read index, or an error.
type result struct {
	raw    []byte
	index  uint64
	err    error
	leader string // raft address of the leader, when a request went to another agent
	// remaining is how much longer a voter refuses to elect anyone but
	// leader: its answer to LEASE.
	remaining time.Duration
	from      string    // raft address of the agent that answered
	at        time.Time // when the answer came
}

// waiter is a request waiting for another agent's answer: it gets it on ch,
// or fn is called with it. A waiter past its deadline is failed.
type waiter struct {
	ch       chan result
	fn       func(result)
	via      string // the peer whose connection carries the request; "" for local
	deadline time.Time
}

// Agent is one replica's agent.
type Agent struct {
	cfg         Config
	logger      *log.Logger
	incarnation string // tells this run's requests from an earlier run's
	born        time.Time
	raftAddr    string
	raft        *raft.Raft
	fsm         *fsm
	store       *raftboltdb.BoltStore // raft's stable store: terms and votes
	logStore    *walLog               // raft's log
	snaps       raft.SnapshotStore
	// raftUp is closed once raft runs: peer messages wait for it, because
	// another agent may talk to a restarting one before its raft exists.
	raftUp     chan struct{}
	logs       *timedLogStore
	transport  *raft.NetworkTransport
	clients    net.Listener
	metricsSrv *http.Server
	metricsLn  net.Listener
	tmpDir     string
	done       chan struct{}
	closeOnce  sync.Once
	wg         sync.WaitGroup
	m          *metrics
	health     *health
	indexes    *indexBatcher
	lease      *lease
	futures    chan appliedFuture
	gate       *gate // holds this leader's own proposals while a group is in raft
	grouping   bool  // the gate's groups go as one entry each (Grouping)

	mu      sync.Mutex
	seq     uint64
	floor   uint64 // no write below it waits for its first reply
	pending map[uint64]waiter
	writes  map[uint64]*write
	peers   map[string]*peer
	pacer   *pacer // caps the rate to replicas marked limping (pace.go)
	// open are the client connections being served.
	open map[net.Conn]struct{}
	// adapter serves the clients and the local server (Config.Adapter).
	adapter Adapter
	// arrival orders the proposals of writes and blocking commands of
	// different connections as the agent read them (arrival.go).
	arrival arrivals
}

// Start starts an agent: it empties the local server (the log rebuilds it),
// starts raft, joins the deployment if asked and serves clients.
func Start(cfg Config) (*Agent, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, logger: log.New(cfg.Log, "replica "+cfg.ID+": ", log.LstdFlags|log.Lmicroseconds),
		done: make(chan struct{}), raftUp: make(chan struct{}), pending: map[uint64]waiter{}, writes: map[uint64]*write{},
		peers: map[string]*peer{}, pacer: newPacer(), open: map[net.Conn]struct{}{},
		futures: make(chan appliedFuture, 4096)}
	a.gate = newGate(a.proposeGroup)
	a.incarnation, a.born = newIncarnation(), time.Now()
	a.m = newMetrics(a)
	a.health = newHealth(a)
	a.indexes = &indexBatcher{fetch: a.fetchReadIndex, timeout: cfg.WriteTimeout}
	a.lease = newLease()
	if err := a.start(); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

func newIncarnation() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (a *Agent) start() error {
	a.adapter = a.cfg.Adapter
	if g, ok := a.adapter.(Grouping); ok {
		a.grouping = g.GroupsWrites()
	}
	if h, ok := a.adapter.(Hosted); ok {
		h.Attach(&agentHost{a})
	}
	backend, err := a.adapter.Open(a.cfg.ServerAddr)
	if err != nil {
		return err
	}
	a.fsm = newFSM(backend, a.report, a.logger) // Close closes the backend from now on
	if err := backend.Reset(); err != nil {
		return fmt.Errorf("empty the local server: %w", err)
	}
	a.fsm.observe = a.m.observeApply
	a.fsm.onConfig = func() { a.health.membersChanged.Store(true) }
	a.wg.Add(1)
	go func() { defer a.wg.Done(); a.fsm.runApplier() }()
	if err := a.startRaft(); err != nil {
		return err
	}
	if a.clients, err = net.Listen("tcp", a.cfg.Listen); err != nil {
		return fmt.Errorf("listen for clients: %w", err)
	}
	if err := a.arrival.setListener(stampListener(a.clients)); err != nil {
		return err
	}
	if err := a.serveMetrics(); err != nil {
		return err
	}
	a.wg.Add(5)
	go func() { defer a.wg.Done(); a.runLease() }()
	go func() { defer a.wg.Done(); a.watchServer() }()
	go func() { defer a.wg.Done(); a.serveClients() }()
	// Not waited for by Close: a proposal raft took into its buffered
	// apply channel just before it shut down is never answered
	// (hashicorp/raft drains that channel only while it runs), and
	// watchFutures may be blocked on it for good (TestReplica's
	// LeaderFailover hung in Close for 10 minutes so).
	go a.watchFutures()
	go func() { defer a.wg.Done(); a.watchLeadership() }()
	go func() { defer a.wg.Done(); a.health.run() }()
	if a.cfg.Join != "" {
		return a.join()
	}
	return nil
}

func (a *Agent) startRaft() error {
	dir := a.cfg.DataDir
	if dir == "" {
		var err error
		if a.tmpDir, err = os.MkdirTemp("", "gait-replica-"); err != nil {
			return fmt.Errorf("replica data directory: %w", err)
		}
		dir = a.tmpDir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("replica data directory: %w", err)
	}
	var err error
	// Terms and votes in BoltDB; the log in gait's own segment files
	// (wal.go), not raft-wal: raft-wal v0.4.0 cannot reopen a log whose last
	// segment a SIGKILL left without an index block ("sealed segment has no
	// index block", hashicorp/raft-wal#31), and surviving kill -9 is the point.
	// Group commit (below) spreads the log's fsyncs over a whole batch.
	if a.store, err = raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db")); err != nil {
		return fmt.Errorf("open raft state in %s: %w", dir, err)
	}
	if a.logStore, err = a.openLog(dir); err != nil {
		return err
	}
	snaps, err := raft.NewFileSnapshotStore(dir, 2, a.cfg.Log)
	if err != nil {
		return fmt.Errorf("open snapshots in %s: %w", dir, err)
	}
	a.snaps = snaps
	ln, err := net.Listen("tcp", a.cfg.RaftAddr)
	if err != nil {
		return fmt.Errorf("listen for raft: %w", err)
	}
	a.raftAddr = ln.Addr().String()
	a.transport = raft.NewNetworkTransportWithLogger(newStreamLayer(ln, a.pacer, a.servePeer), 3, 10*time.Second,
		hclog.New(&hclog.LoggerOptions{Name: "raft-net", Level: hclog.Warn, Output: a.cfg.Log}))
	rc := a.raftConfig()
	has, err := raft.HasExistingState(a.logStore, a.store, snaps)
	if err != nil {
		return fmt.Errorf("read raft state: %w", err)
	}
	if has {
		// A voter restarting may have promised the leader, just before it
		// stopped, to elect no one else for HeartbeatTimeout; its new raft
		// knows no leader and would vote at once (lease.go).
		time.Sleep(a.cfg.HeartbeatTimeout)
	}
	if a.cfg.Bootstrap {
		if !has {
			boot := raft.Configuration{Servers: []raft.Server{{ID: rc.LocalID, Address: raft.ServerAddress(a.raftAddr)}}}
			if err := raft.BootstrapCluster(rc, a.logStore, a.store, snaps, a.transport, boot); err != nil {
				return fmt.Errorf("bootstrap raft: %w", err)
			}
		}
	}
	a.logs = &timedLogStore{LogStore: a.logStore, observe: a.m.observeAppend,
		syncedLater: a.cfg.Durability == DurableReplicated}
	if a.logs.syncedLater {
		a.wg.Add(1)
		go func() { defer a.wg.Done(); a.syncLog() }()
	}
	// Replication reads back what was just appended: keep recent entries in
	// memory rather than read them from the segment file.
	cached, err := raft.NewLogCache(logCacheEntries, a.logs)
	if err != nil {
		return fmt.Errorf("raft log cache: %w", err)
	}
	if a.raft, err = raft.NewRaft(rc, a.fsm, cached, a.store, snaps, a.transport); err != nil {
		return fmt.Errorf("start raft: %w", err)
	}
	close(a.raftUp)
	return nil
}

// logCacheEntries is how many recent log entries stay in memory.
const logCacheEntries = 4096

func (a *Agent) raftConfig() *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(a.cfg.ID)
	rc.HeartbeatTimeout = a.cfg.HeartbeatTimeout
	rc.ElectionTimeout = a.cfg.HeartbeatTimeout
	// A leader that has not heard from a majority for this long steps down.
	// At half the heartbeat timeout, a loaded machine (a scheduler stall of a
	// few hundred ms) deposed healthy leaders many times an hour; the read
	// lease (lease.go) does not rely on it, and the limp tracker, not this
	// timeout, is what hands over from a leader that limps.
	rc.LeaderLeaseTimeout = a.cfg.HeartbeatTimeout
	// Group commit: proposals queue in a buffered channel while the leader
	// appends the previous batch, and up to MaxAppendEntries of them share
	// the next append (one fsync) and the next AppendEntries message.
	rc.BatchApplyCh = true
	rc.MaxAppendEntries = 1024
	// Followers learn the commit index no later than this: it bounds how
	// long a follower's reply to a write waits behind the leader's.
	rc.CommitTimeout = 5 * time.Millisecond
	rc.SnapshotThreshold = a.cfg.SnapshotThreshold
	rc.TrailingLogs = a.cfg.TrailingLogs
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft " + a.cfg.ID, Level: hclog.Warn, Output: a.cfg.Log})
	return rc
}

// watchLeadership appends a no-op entry whenever this agent becomes leader:
// raft's own no-op never reaches the FSM, and a read index must be an index
// some replica's FSM will reach. When another agent becomes leader, it
// revokes what waits on the old one: requests fail (reads ask again), and
// writes go to the new leader at once instead of waiting out the timeout.
func (a *Agent) watchLeadership() {
	obs := make(chan raft.Observation, 16)
	o := raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	a.raft.RegisterObserver(o)
	defer a.raft.DeregisterObserver(o)
	var last string
	for {
		select {
		case leader := <-a.raft.LeaderCh():
			a.m.leaderChanges.Inc()
			if leader {
				// The line times a handover (scripts/limping-matrix.sh).
				a.logger.Printf("this replica leads (term %d)", a.raft.CurrentTerm())
				a.raft.Apply(entry{}.encode(), a.cfg.WriteTimeout)
			} else {
				a.logger.Printf("this replica no longer leads")
			}
		case ob := <-obs:
			addr := string(ob.Data.(raft.LeaderObservation).LeaderAddr)
			if addr == "" {
				continue
			}
			if last != "" && addr != last {
				a.failVia(last, fmt.Errorf("%s is no longer the raft leader", last))
			}
			last = addr
			a.reproposeOrphans()
		case <-a.done:
			return
		}
	}
}

// join asks the deployment, through cfg.Join or the leader it names, to add
// this agent; it retries until the leader answers or 30 s pass.
func (a *Agent) join() error {
	kind := "voter"
	if a.cfg.NonVoter {
		kind = "nonvoter"
	}
	target := a.cfg.Join
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := a.request(target, func(id string) [][]byte {
			return [][]byte{[]byte("JOIN"), []byte(id), []byte(a.cfg.ID), []byte(a.raftAddr), []byte(kind)}
		}, 5*time.Second)
		if r.err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("join through %s: %w", a.cfg.Join, r.err)
		}
		if r.leader != "" {
			target = r.leader
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (a *Agent) addServer(id, addr string, voter bool) error {
	if a.raft.State() != raft.Leader {
		return errors.New("not the raft leader")
	}
	if voter {
		return a.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, 10*time.Second).Error()
	}
	return a.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, 10*time.Second).Error()
}

// request sends a message built around a fresh request id to the agent at
// addr and waits for its answer.
func (a *Agent) request(addr string, build func(id string) [][]byte, timeout time.Duration) result {
	ch := make(chan result, 1)
	id := a.register(addr, ch)
	defer a.forget(id)
	a.peer(addr).send(peerMsg{data: appendFrame(nil, build(strconv.FormatUint(id, 10))...), id: id})
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r
	case <-t.C:
		return result{err: fmt.Errorf("no answer from %s within %v", addr, timeout)}
	case <-a.done:
		return result{err: errors.New("agent stopped")}
	}
}

// register files a waiter for a request's answer; ch must have room for it.
func (a *Agent) register(via string, ch chan result) uint64 {
	return a.file(waiter{ch: ch, via: via})
}

// registerFunc files a waiter that calls fn with the answer, or with an
// error once deadline passes.
func (a *Agent) registerFunc(via string, deadline time.Time, fn func(result)) uint64 {
	return a.file(waiter{fn: fn, via: via, deadline: deadline})
}

func (a *Agent) file(w waiter) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	a.pending[a.seq] = w
	return a.seq
}

// sweepPending fails the waiters whose deadline passed.
func (a *Agent) sweepPending(now time.Time) {
	a.mu.Lock()
	var late []uint64
	for id, w := range a.pending {
		if !w.deadline.IsZero() && now.After(w.deadline) {
			late = append(late, id)
		}
	}
	a.mu.Unlock()
	for _, id := range late {
		a.deliver(id, result{err: errors.New("no answer in time")})
	}
}

func (a *Agent) forget(id uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.pending, id)
}

// deliver completes a request or fails a write that has no reply yet; only
// the first result counts.
func (a *Agent) deliver(id uint64, r result) {
	a.mu.Lock()
	w, ok := a.pending[id]
	delete(a.pending, id)
	wr := a.writes[id]
	a.mu.Unlock()
	if ok {
		if w.fn != nil {
			w.fn(r)
		} else {
			w.ch <- r
		}
		return
	}
	if wr != nil && r.err != nil {
		a.orphan(wr, r.err)
	}
}

// failVia fails every request that waits on the connection to addr and
// orphans every unanswered write proposed through it.
func (a *Agent) failVia(addr string, err error) {
	a.mu.Lock()
	var ids []uint64
	for id, w := range a.pending {
		if w.via == addr {
			ids = append(ids, id)
		}
	}
	for id, w := range a.writes {
		if w.via == addr {
			ids = append(ids, id)
		}
	}
	a.mu.Unlock()
	for _, id := range ids {
		a.deliver(id, result{err: err, from: addr})
	}
}

func (a *Agent) peer(addr string) *peer {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.peers[addr]
	if !ok {
		p = &peer{a: a, addr: addr, out: make(chan peerMsg, peerOutbox)}
		a.peers[addr] = p
		a.wg.Add(1)
		go func() { defer a.wg.Done(); p.run() }()
	}
	return p
}

// report sends the replies this replica got for a batch of entries to
// their proposers, each with the digest of every reply so far: this
// agent's own at once, each other agent's in one message per batch.
func (a *Agent) report(aps []applied) {
	if a.health.selfQuarantined() {
		return // a divergent replica's replies must not win
	}
	var to []string // proposers in order of their first reply
	msgs := map[string][]byte{}
	for i, ap := range aps {
		addr, incarnation := splitProposer(ap.entry.proposer)
		if addr == a.raftAddr {
			a.onReply(ap.entry.seq, incarnation, ap.index, ap.digest, a.cfg.ID, a.incarnation, ap.raw, &ap)
			continue
		}
		if _, ok := msgs[addr]; !ok {
			to = append(to, addr)
			// Room for this reply and the frames of every later one
			// (short replies, such as SET's, fit), so the message is
			// mostly made once rather than grown frame by frame.
			msgs[addr] = make([]byte, 0, (len(aps)-i)*replyFrameBytes+len(ap.raw))
		}
		verb, raw := []byte("REPLY"), ap.raw
		if c, ok := compressReply(raw); ok {
			verb, raw = []byte("REPLYS2"), c
		}
		var seq, index, digest [20]byte // the numbers' text, on the stack
		msgs[addr] = appendFrame(msgs[addr], verb, strconv.AppendUint(seq[:0], ap.entry.seq, 10),
			[]byte(incarnation), strconv.AppendUint(index[:0], ap.index, 10), strconv.AppendUint(digest[:0], ap.digest, 16),
			[]byte(a.cfg.ID), []byte(a.incarnation), raw)
	}
	for _, addr := range to {
		a.peer(addr).send(peerMsg{data: msgs[addr]})
	}
}

// replyFrameBytes is about what a REPLY frame takes with a short reply:
// its verb, numbers, replica ID and incarnations, and a few bytes of reply.
const replyFrameBytes = 96

func splitProposer(p string) (addr, incarnation string) {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '#' {
			return p[:i], p[i+1:]
		}
	}
	return p, ""
}

// leaderAddr is the current leader's raft address, "" when none is known.
func (a *Agent) leaderAddr() string {
	addr, _ := a.raft.LeaderWithID()
	return string(addr)
}

// waitLeader waits up to a few election timeouts for a leader to be known.
func (a *Agent) waitLeader(ctx context.Context) (string, error) {
	for {
		if addr := a.leaderAddr(); addr != "" {
			return addr, nil
		}
		select {
		case <-ctx.Done():
			return "", errors.New("no raft leader")
		case <-a.done:
			return "", errors.New("agent stopped")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ClientAddr is where clients connect.
func (a *Agent) ClientAddr() string { return a.clients.Addr().String() }

// RaftAddr is the address of raft and agent-to-agent messages.
func (a *Agent) RaftAddr() string { return a.raftAddr }

// MetricsAddr is where /metrics is served, "" without --metrics.
func (a *Agent) MetricsAddr() string {
	if a.metricsLn == nil {
		return ""
	}
	return a.metricsLn.Addr().String()
}

// ID is the agent's raft server ID.
func (a *Agent) ID() string { return a.cfg.ID }

// IsLeader tells whether this agent leads the deployment now.
func (a *Agent) IsLeader() bool { return a.raft != nil && a.raft.State() == raft.Leader }

// Applied is the last log index whose effect the local server holds.
func (a *Agent) Applied() uint64 { return a.fsm.appliedIndex() }

// LastIndex is the last index in this agent's raft log.
func (a *Agent) LastIndex() uint64 { return a.raft.LastIndex() }

// Failure is why the local server stopped applying (it failed, and the
// agent waits for it to answer again); nil while it applies.
func (a *Agent) Failure() error { return a.fsm.failure() }

// Metrics are the agent's metrics, its adapter's included, as /metrics
// serves them.
func (a *Agent) Metrics() prometheus.Gatherer { return a.m.reg }

// RaftStats are raft's figures (last_snapshot_index, commit_index, ...).
func (a *Agent) RaftStats() map[string]string { return a.raft.Stats() }

// Snapshot makes raft take a snapshot now and compact its log.
func (a *Agent) Snapshot() error { return a.raft.Snapshot().Error() }

// Close stops the agent: clients, raft, peers; the local server stays up.
func (a *Agent) Close() error {
	var errs []error
	a.closeOnce.Do(func() {
		close(a.done)
		if a.clients != nil {
			a.clients.Close()
			a.arrival.closeListener()
		}
		if a.metricsSrv != nil {
			a.metricsSrv.Close()
		}
		a.mu.Lock()
		for c := range a.open {
			c.Close()
		}
		a.mu.Unlock()
		if a.fsm != nil {
			a.fsm.close() // before raft: a full apply queue must not hold up its shutdown
		}
		if a.raft != nil {
			errs = append(errs, a.raft.Shutdown().Error())
		}
		if a.transport != nil {
			errs = append(errs, a.transport.Close())
		}
		if a.fsm != nil {
			a.fsm.backend.Close()
		}
		a.wg.Wait()
		if a.fsm != nil {
			a.fsm.backend.Close() // again: a reattach may have swapped its connection meanwhile
		}
		if a.logStore != nil {
			errs = append(errs, a.logStore.Sync(), a.logStore.Close())
		}
		if a.store != nil {
			errs = append(errs, a.store.Close())
		}
		if a.tmpDir != "" {
			errs = append(errs, os.RemoveAll(a.tmpDir))
		}
	})
	return errors.Join(errs...)
}

// reattachPause is how often an agent whose server failed tries it again.
const reattachPause = 500 * time.Millisecond

// watchServer re-attaches the applier once the local server answers again
// after a failure (it was restarted, or came back), and rebuilds its data;
// meanwhile the replica limps and the others serve.
func (a *Agent) watchServer() {
	t := time.NewTicker(reattachPause)
	defer t.Stop()
	var last string
	for {
		select {
		case <-a.done:
			return
		case <-t.C:
		}
		if a.fsm.failure() == nil {
			last = ""
			continue
		}
		if err := a.fsm.reattach(a.snaps, a.logs); err != nil && err.Error() != last {
			last = err.Error()
			a.logger.Printf("server not back yet: %v", err)
		}
	}
}

// Package replica is gait's replication agent for unmodified Redis: agents
// beside redis-servers agree on the order of client commands with raft
// (hashicorp/raft, log in BoltDB on disk), each applies the committed
// commands to its own redis in log order, and a client talking RESP to any
// agent gets the first reply any replica produced (TRIPOD §4; RP ZooKeeper).
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
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// ReadMode says how fresh a read must be.
type ReadMode string

const (
	// Linearizable reads see every write acknowledged before they started:
	// the leader confirms its leadership and names its last log index, and
	// the replica answers once it has applied that far.
	Linearizable ReadMode = "linearizable"
	// Any reads answer from the local redis at once and may be stale.
	Any ReadMode = "any"
)

// ParseReadMode checks a read mode named on the command line.
func ParseReadMode(s string) (ReadMode, error) {
	switch m := ReadMode(s); m {
	case Linearizable, Any:
		return m, nil
	}
	return "", fmt.Errorf("read mode %q: want %s or %s", s, Linearizable, Any)
}

// Config is one agent's configuration.
type Config struct {
	ID        string // raft server ID, unique in the deployment
	RaftAddr  string // host:port for raft and agent-to-agent messages; port 0 picks one
	RedisAddr string // the local redis-server, which the agent owns: its data is replaced
	Listen    string // host:port for clients; port 0 picks one
	DataDir   string // raft log, stable store and snapshots; empty: a temporary directory
	Bootstrap bool   // start a new deployment with this agent as its only voter
	Join      string // raft address of any member, to join through
	NonVoter  bool   // join as a non-voting duplicate
	Read      ReadMode
	// MaxRequest bounds the bytes of one client request (default 64 MiB).
	MaxRequest int
	// WriteTimeout bounds the wait for a write's first reply (default 10 s).
	WriteTimeout time.Duration
	// SnapshotThreshold is how many log entries trigger a snapshot (default 8192).
	SnapshotThreshold uint64
	// TrailingLogs is how many entries a snapshot leaves in the log (default 10240).
	TrailingLogs uint64
	// Timing scales raft's timeouts; the default suits one machine or a LAN.
	HeartbeatTimeout time.Duration
	Log              io.Writer // default os.Stderr
}

func (c *Config) setDefaults() error {
	if c.ID == "" || c.RaftAddr == "" || c.RedisAddr == "" || c.Listen == "" {
		return errors.New("replica agent: ID, RaftAddr, RedisAddr and Listen are required")
	}
	if c.Read == "" {
		c.Read = Linearizable
	}
	if _, err := ParseReadMode(string(c.Read)); err != nil {
		return err
	}
	if c.Bootstrap && c.Join != "" {
		return errors.New("replica agent: bootstrap and join exclude each other")
	}
	if c.MaxRequest <= 0 {
		c.MaxRequest = 64 << 20
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 8192
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 10240
	}
	if c.HeartbeatTimeout <= 0 {
		c.HeartbeatTimeout = 500 * time.Millisecond
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
}

type waiter struct {
	ch  chan result
	via string // the peer whose connection carries the request; "" for local
}

// Agent is one replica's agent.
type Agent struct {
	cfg         Config
	logger      *log.Logger
	incarnation string // tells this run's requests from an earlier run's
	raftAddr    string
	raft        *raft.Raft
	fsm         *fsm
	store       *raftboltdb.BoltStore
	transport   *raft.NetworkTransport
	clients     net.Listener
	pool        *redisPool
	applyConn   *redisConn
	tmpDir      string
	done        chan struct{}
	closeOnce   sync.Once
	wg          sync.WaitGroup

	mu      sync.Mutex
	seq     uint64
	pending map[uint64]waiter
	peers   map[string]*peer
	conns   map[net.Conn]struct{}
}

// Start starts an agent: it empties the local redis (the log rebuilds it),
// starts raft, joins the deployment if asked and serves clients.
func Start(cfg Config) (*Agent, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, logger: log.New(cfg.Log, "replica "+cfg.ID+": ", log.LstdFlags|log.Lmicroseconds),
		done: make(chan struct{}), pending: map[uint64]waiter{}, peers: map[string]*peer{},
		conns: map[net.Conn]struct{}{}, pool: newRedisPool(cfg.RedisAddr, 64)}
	a.incarnation = newIncarnation()
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
	var err error
	if a.applyConn, err = dialRedis(a.cfg.RedisAddr); err != nil {
		return err
	}
	if _, err := a.applyConn.command("FLUSHALL"); err != nil {
		return fmt.Errorf("empty local redis: %w", err)
	}
	a.fsm = newFSM(a.applyConn, a.report, a.logger)
	if err := a.startRaft(); err != nil {
		return err
	}
	if a.clients, err = net.Listen("tcp", a.cfg.Listen); err != nil {
		return fmt.Errorf("listen for clients: %w", err)
	}
	a.wg.Add(2)
	go func() { defer a.wg.Done(); a.serveClients() }()
	go func() { defer a.wg.Done(); a.watchLeadership() }()
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
	if a.store, err = raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db")); err != nil {
		return fmt.Errorf("open raft log %s: %w", dir, err)
	}
	snaps, err := raft.NewFileSnapshotStore(dir, 2, a.cfg.Log)
	if err != nil {
		return fmt.Errorf("open snapshots in %s: %w", dir, err)
	}
	ln, err := net.Listen("tcp", a.cfg.RaftAddr)
	if err != nil {
		return fmt.Errorf("listen for raft: %w", err)
	}
	a.raftAddr = ln.Addr().String()
	a.transport = raft.NewNetworkTransportWithLogger(newStreamLayer(ln, a.servePeer), 3, 10*time.Second,
		hclog.New(&hclog.LoggerOptions{Name: "raft-net", Level: hclog.Warn, Output: a.cfg.Log}))
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(a.cfg.ID)
	rc.HeartbeatTimeout = a.cfg.HeartbeatTimeout
	rc.ElectionTimeout = a.cfg.HeartbeatTimeout
	rc.LeaderLeaseTimeout = a.cfg.HeartbeatTimeout / 2
	// Followers learn the commit index no later than this: it bounds how
	// long a follower's reply to a write waits behind the leader's.
	rc.CommitTimeout = 5 * time.Millisecond
	rc.SnapshotThreshold = a.cfg.SnapshotThreshold
	rc.TrailingLogs = a.cfg.TrailingLogs
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft " + a.cfg.ID, Level: hclog.Warn, Output: a.cfg.Log})
	if a.cfg.Bootstrap {
		has, err := raft.HasExistingState(a.store, a.store, snaps)
		if err != nil {
			return fmt.Errorf("read raft state: %w", err)
		}
		if !has {
			boot := raft.Configuration{Servers: []raft.Server{{ID: rc.LocalID, Address: raft.ServerAddress(a.raftAddr)}}}
			if err := raft.BootstrapCluster(rc, a.store, a.store, snaps, a.transport, boot); err != nil {
				return fmt.Errorf("bootstrap raft: %w", err)
			}
		}
	}
	if a.raft, err = raft.NewRaft(rc, a.fsm, a.store, a.store, snaps, a.transport); err != nil {
		return fmt.Errorf("start raft: %w", err)
	}
	return nil
}

// watchLeadership appends a no-op entry whenever this agent becomes leader:
// raft's own no-op never reaches the FSM, and a read index must be an index
// some replica's FSM will reach.
func (a *Agent) watchLeadership() {
	for {
		select {
		case leader := <-a.raft.LeaderCh():
			if leader {
				a.raft.Apply(entry{}.encode(), a.cfg.WriteTimeout)
			}
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
	id, ch := a.register(addr)
	defer a.forget(id)
	a.peer(addr).send(peerMsg{data: appendCommand(nil, build(strconv.FormatUint(id, 10))...), id: id})
	select {
	case r := <-ch:
		return r
	case <-time.After(timeout):
		return result{err: fmt.Errorf("no answer from %s within %v", addr, timeout)}
	case <-a.done:
		return result{err: errors.New("agent stopped")}
	}
}

func (a *Agent) register(via string) (uint64, chan result) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	ch := make(chan result, 1)
	a.pending[a.seq] = waiter{ch: ch, via: via}
	return a.seq, ch
}

func (a *Agent) forget(id uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.pending, id)
}

// deliver completes a request; only the first result counts.
func (a *Agent) deliver(id uint64, r result) {
	a.mu.Lock()
	w, ok := a.pending[id]
	delete(a.pending, id)
	a.mu.Unlock()
	if ok {
		w.ch <- r
	}
}

// failVia fails every request that waits on the connection to addr.
func (a *Agent) failVia(addr string, err error) {
	a.mu.Lock()
	var ids []uint64
	for id, w := range a.pending {
		if w.via == addr {
			ids = append(ids, id)
		}
	}
	a.mu.Unlock()
	for _, id := range ids {
		a.deliver(id, result{err: err})
	}
}

func (a *Agent) deliverReply(id, incarnation string, raw []byte) {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil || incarnation != a.incarnation {
		return // a reply to an earlier run of this agent
	}
	a.deliver(n, result{raw: raw})
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

// report sends the reply a replica got for an entry to the entry's proposer.
func (a *Agent) report(e entry, raw []byte) {
	addr, incarnation := splitProposer(e.proposer)
	if addr == a.raftAddr {
		a.deliverReply(strconv.FormatUint(e.seq, 10), incarnation, raw)
		return
	}
	msg := appendCommand(nil, []byte("REPLY"), []byte(strconv.FormatUint(e.seq, 10)), []byte(incarnation), raw)
	a.peer(addr).send(peerMsg{data: msg})
}

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

// startWrite proposes commands (their RESP encoding, making n replies) and
// returns the waiter for the first replica's reply.
func (a *Agent) startWrite(payload []byte, n int) (uint64, chan result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*a.cfg.HeartbeatTimeout+time.Second)
	defer cancel()
	leader, err := a.waitLeader(ctx)
	if err != nil {
		return 0, nil, err
	}
	via := leader
	if leader == a.raftAddr {
		via = ""
	}
	id, ch := a.register(via)
	e := entry{proposer: a.raftAddr + "#" + a.incarnation, seq: id, replies: n, payload: payload}
	if via == "" {
		f := a.raft.Apply(e.encode(), a.cfg.WriteTimeout)
		go func() {
			if err := f.Error(); err != nil {
				a.deliver(id, result{err: err})
			}
		}()
	} else {
		msg := appendCommand(nil, []byte("PROPOSE"), []byte(strconv.FormatUint(id, 10)), e.encode())
		a.peer(leader).send(peerMsg{data: msg, id: id})
	}
	return id, ch, nil
}

// awaitWrite waits for the first reply to a proposed write.
func (a *Agent) awaitWrite(id uint64, ch chan result) ([]byte, error) {
	defer a.forget(id)
	t := time.NewTimer(a.cfg.WriteTimeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.raw, r.err
	case <-t.C:
		return nil, fmt.Errorf("no replica applied the write within %v; it may still be applied", a.cfg.WriteTimeout)
	case <-a.done:
		return nil, errors.New("agent stopped")
	}
}

// read answers a read on the local redis, after the read index in
// linearizable mode.
func (a *Agent) read(payload []byte, consistent bool) ([]byte, error) {
	if err := a.fsm.failure(); err != nil {
		return nil, err
	}
	if consistent && a.cfg.Read == Linearizable {
		ctx, cancel := context.WithTimeout(context.Background(), a.cfg.WriteTimeout)
		defer cancel()
		index, err := a.readIndex(ctx)
		if err != nil {
			return nil, err
		}
		if err := a.fsm.waitApplied(ctx, index); err != nil {
			return nil, err
		}
	}
	return a.pool.do(payload, 1)
}

func (a *Agent) readIndex(ctx context.Context) (uint64, error) {
	leader, err := a.waitLeader(ctx)
	if err != nil {
		return 0, err
	}
	if leader == a.raftAddr {
		return a.readIndexLocal()
	}
	deadline, _ := ctx.Deadline()
	r := a.request(leader, func(id string) [][]byte { return [][]byte{[]byte("READINDEX"), []byte(id)} },
		time.Until(deadline))
	return r.index, r.err
}

// readIndexLocal is the leader's half of a linearizable read: every write
// acknowledged so far is at or below the last log index, and confirming
// leadership afterwards rules out a newer leader with newer writes.
func (a *Agent) readIndexLocal() (uint64, error) {
	index := a.raft.LastIndex()
	if err := a.raft.VerifyLeader().Error(); err != nil {
		return 0, fmt.Errorf("confirm raft leadership: %w", err)
	}
	return index, nil
}

// ClientAddr is where clients connect.
func (a *Agent) ClientAddr() string { return a.clients.Addr().String() }

// RaftAddr is the address of raft and agent-to-agent messages.
func (a *Agent) RaftAddr() string { return a.raftAddr }

// IsLeader tells whether this agent leads the deployment now.
func (a *Agent) IsLeader() bool { return a.raft != nil && a.raft.State() == raft.Leader }

// Applied is the last log index whose effect the local redis holds.
func (a *Agent) Applied() uint64 { return a.fsm.appliedIndex() }

// LastIndex is the last index in this agent's raft log.
func (a *Agent) LastIndex() uint64 { return a.raft.LastIndex() }

// Snapshot makes raft take a snapshot now and compact its log.
func (a *Agent) Snapshot() error { return a.raft.Snapshot().Error() }

// Close stops the agent: clients, raft, peers; the redis-server stays up.
func (a *Agent) Close() error {
	var errs []error
	a.closeOnce.Do(func() {
		close(a.done)
		if a.clients != nil {
			a.clients.Close()
		}
		a.mu.Lock()
		for c := range a.conns {
			c.Close()
		}
		a.mu.Unlock()
		if a.raft != nil {
			errs = append(errs, a.raft.Shutdown().Error())
		}
		if a.transport != nil {
			errs = append(errs, a.transport.Close())
		}
		a.wg.Wait()
		if a.store != nil {
			errs = append(errs, a.store.Close())
		}
		if a.applyConn != nil {
			a.applyConn.close()
		}
		a.pool.close()
		if a.tmpDir != "" {
			errs = append(errs, os.RemoveAll(a.tmpDir))
		}
	})
	return errors.Join(errs...)
}

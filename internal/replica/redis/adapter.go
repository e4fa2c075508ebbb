// Package redis is gait replica's adapter for unmodified redis-servers:
// clients speak RESP (2 and 3) to any agent; writes, transactions and
// scripts go through the core's log and every replica applies them to
// its own redis-server in log order; reads go to the fastest replica the
// read mode allows. It owns everything Redis: the session (server.go and
// the files beside it: MULTI and WATCH, blocking commands, pub/sub,
// CLIENT TRACKING, CLIENT PAUSE, commandstats and the slow log), the
// log record of a Redis command (record.go), and the Backend that applies
// records to redis-server (backend.go). internal/rediscmd is its command
// table and internal/resp its codec; the core (internal/replica) knows
// neither.
package redis

import (
	"bytes"
	"encoding/binary"
	"errors"
	"log"
	"net"
	"sync"
	"sync/atomic"

	"github.com/gait-dev/gait/internal/replica"
	"github.com/gait-dev/gait/internal/resp"
	"github.com/prometheus/client_golang/prometheus"
)

// Options are the Redis adapter's own settings.
type Options struct {
	// ScriptCommandStats counts in INFO commandstats the commands this
	// agent's clients' scripts call, as redis does (scriptstats.go). Off
	// by default: it costs every script two INFO commandstats on the
	// local redis-server and a round trip of its own, about a third of
	// EVAL's throughput, and read-only scripts go through the log.
	ScriptCommandStats bool
}

// Adapter serves Redis's protocol in front of gait replica's core: set it
// as replica.Config.Adapter, with the local redis-server's address as
// ServerAddr. It serves one agent at a time: each Start attaches it
// afresh (a restarted agent may take the same Adapter).
type Adapter struct {
	opts Options
	a    *agent
}

// New is an adapter with these options.
func New(opts Options) *Adapter { return &Adapter{opts: opts} }

// agent is one agent's Redis serving: its clients' sessions, the
// redis-server behind it, and the core's Host they run on.
type agent struct {
	host   replica.Host
	cfg    replica.Config
	opts   Options
	logger *log.Logger
	done   <-chan struct{}
	m      metrics

	redis *redisBackend // the core applies through it; the session asks it too
	reads *redisMux     // connections to the local redis-server for reads
	// budget caps the bytes all client requests hold (Config.RequestMemory).
	budget *resp.Budget
	// replyBufs are DEBUG REPLYBUFFER's settings for the clients' reply buffers.
	replyBufs *replyBuffers
	mu        sync.Mutex
	conns     map[net.Conn]*clientState // under mu
	// clientIDs numbers client connections, for CLIENT ID and CLIENT LIST.
	clientIDs atomic.Uint64
	// blockedClients counts connections waiting in a blocking command.
	blockedClients atomic.Int64
	// waited counts, per key, this agent's blocked commands that wait on
	// it: a client counts as blocked (INFO) before its first attempt is in
	// the replicated queues, and a write to its key must wait for it
	// (Host.Take's feeds) from then on.
	waitedMu sync.Mutex
	waited   map[string]int
	// track is CLIENT TRACKING's state (tracking.go).
	track tracker
	// pause is CLIENT PAUSE's (pause.go).
	pause pauseState
	// stats and slow are the commandstats and the slow log of the agent's
	// clients' commands (observe.go).
	stats cmdStats
	slow  *slowLog
}

// metrics are the adapter's, on the agent's /metrics beside the core's.
type metrics struct {
	pipelined prometheus.Histogram
	// Requests refused for the memory cap or for stalling half-way.
	refusedMemory, refusedStalled prometheus.Counter
}

// Name is "redis".
func (*Adapter) Name() string { return "redis" }

// GroupsWrites lets the leader send its clients' writes that the gate
// holds together as one log entry (replica.Grouping): nothing of Redis's
// is named by a log index (a blocked client is named by its proposer and
// sequence number; the index only orders the table of blocked clients'
// changes, which a shared one keeps).
func (*Adapter) GroupsWrites() bool { return true }

// Attach takes the agent's Host, before Open, and starts the agent's
// Redis state anew.
func (ad *Adapter) Attach(h replica.Host) {
	a := &agent{opts: ad.opts, replyBufs: newReplyBuffers(), conns: map[net.Conn]*clientState{}, slow: newSlowLog()}
	ad.a = a
	a.host, a.cfg, a.logger, a.done = h, h.Config(), h.Logger(), h.Done()
	a.budget = resp.NewBudget(int64(a.cfg.RequestMemory))
	opts := func(name, help string) prometheus.CounterOpts {
		return prometheus.CounterOpts{Namespace: "gait_replica", Name: name, Help: help}
	}
	a.m = metrics{
		pipelined: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "gait_replica", Name: "pipelined_batch_commands",
			Help: "Commands per log entry made of one connection's pipelined requests.", Buckets: prometheus.ExponentialBuckets(1, 2, 11)}),
		refusedMemory:  prometheus.NewCounter(opts("requests_refused_memory_total", "Client requests refused because all requests being read held --request-memory.")),
		refusedStalled: prometheus.NewCounter(opts("requests_refused_stalled_total", "Client requests abandoned after pausing longer than --request-timeout.")),
	}
	held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "gait_replica", Name: "request_bytes_held",
		Help: "Bytes that client requests being read or handled hold, capped by --request-memory."},
		func() float64 { return float64(a.budget.Held()) })
	h.Metrics().MustRegister(a.m.pipelined, a.m.refusedMemory, a.m.refusedStalled, held)
}

// Open connects to the local redis-server and starts the session's
// housekeeping, which ends with the agent.
func (ad *Adapter) Open(addr string) (replica.Backend, error) {
	a := ad.a
	if a == nil {
		return nil, errRedisUnattached
	}
	reads := newRedisMux(addr, 4)
	b, err := openRedis(addr, &a.pause.server, reads, a.logger)
	if err != nil {
		reads.close()
		return nil, err
	}
	a.reads = reads
	if a.opts.ScriptCommandStats {
		b.scripts = &scriptCounting{self: a.host.Proposer(), add: a.addScriptCalls}
		b.scripts.busyReply.Store(5000) // redis's default, until followSlowlogConfig reads it
	}
	a.redis = b
	go a.followSlowlogConfig()
	go a.resizeBuffers()
	go func() { <-a.done; reads.close() }()
	return b, nil
}

// ServeConn serves one RESP client. The session keeps each connection's
// ordering itself (its last write and read, its acknowledged index), so
// it proposes and reads through the Host rather than the Client.
func (ad *Adapter) ServeConn(c net.Conn, _ replica.Client) {
	a := ad.a
	st := a.newClientState(c.(replica.Conn))
	a.mu.Lock()
	a.conns[st.conn] = st
	a.mu.Unlock()
	a.serveConn(st.conn, st)
}

// OnPeer takes another agent's SCRIPT KILL or FUNCTION KILL (killScript).
func (ad *Adapter) OnPeer(data []byte) {
	index, n := binary.Uvarint(data)
	if n <= 0 {
		return
	}
	ad.a.onKill(index, data[n:])
}

// blockOn registers keys a blocked command of this agent waits on, until
// the returned func is called.
func (a *agent) blockOn(keys [][]byte) (done func()) {
	a.waitedMu.Lock()
	defer a.waitedMu.Unlock()
	if a.waited == nil {
		a.waited = map[string]int{}
	}
	for _, k := range keys {
		a.waited[string(k)]++
	}
	return func() {
		a.waitedMu.Lock()
		defer a.waitedMu.Unlock()
		for _, k := range keys {
			if a.waited[string(k)]--; a.waited[string(k)] <= 0 {
				delete(a.waited, string(k))
			}
		}
	}
}

// waitedOn says whether payload names a key a blocked command of this
// agent waits on (by name, as blockQueues.mentioned).
func (a *agent) waitedOn(payload []byte) bool {
	a.waitedMu.Lock()
	defer a.waitedMu.Unlock()
	for k := range a.waited {
		if bytes.Contains(payload, []byte(k)) {
			return true
		}
	}
	return false
}

var errRedisUnattached = errors.New("redis adapter: Open before Attach; set it as replica.Config.Adapter")

var (
	_ replica.Hosted      = (*Adapter)(nil)
	_ replica.PeerHandler = (*Adapter)(nil)
)

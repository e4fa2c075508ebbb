package replica

import (
	"context"
	"log"
	"net"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/replica/limp"
	"github.com/prometheus/client_golang/prometheus"
)

// Hosted is an Adapter that needs more of its agent than each
// connection's Client: Start hands it the agent's Host once, before Open.
// Redis's adapter is one: it keeps each connection's ordering itself
// (pipelined writes, reads behind them, blocked clients), answers a read
// straight from its server when nothing is to be waited for, and tells
// the other agents to kill a script.
type Hosted interface {
	Adapter
	Attach(h Host)
}

// PeerHandler is an Adapter that gets the messages Host.Broadcast sends
// from the same adapter on the other agents.
type PeerHandler interface {
	OnPeer(data []byte)
}

// Conn is a client connection as the core hands it to Adapter.ServeConn.
// Its reads go through the core, which notes when the kernel received each
// read's bytes (arrival.go); its writes go straight to the socket.
type Conn interface {
	net.Conn
	syscall.Conn
	// Arrived is when the kernel received the bytes the latest Read
	// returned, Unix ns.
	Arrived() int64
	// Accepted is when the agent accepted the connection.
	Accepted() time.Time
	// Handled says the requests the latest Read brought have their place
	// in arrival order (their proposals are made, or they need none), so
	// other connections' later requests need not wait for them.
	Handled()
	// WaitRead waits until the connection has bytes to read, or has
	// ended, and reads none.
	WaitRead() error
}

// Ticket is one request's place in arrival order among all connections
// (arrival.go), from Host.Take until Host.Propose or Release gives it up.
type Ticket = ticket

// Proposal is a write proposed through Host.Propose.
type Proposal interface {
	// Wait returns the first replica's reply (this replica's, for a
	// volatile write) and the write's log index, or why it failed; with
	// --write-all only once every replica replied.
	Pending
	// Seq is the write's sequence number: Committed.Seq on every replica.
	Seq() uint64
	// Replied tells how many replicas have replied, of how many expected.
	Replied() (got, want int)
	// WaitAll waits up to timeout until every expected replica has
	// replied, and tells how many have.
	WaitAll(timeout time.Duration) int
}

// Host is the agent as a Hosted adapter sees it. It is safe for
// concurrent use.
type Host interface {
	// Config is the agent's configuration, its defaults filled in.
	Config() Config
	Logger() *log.Logger
	// Done is closed when the agent stops.
	Done() <-chan struct{}
	// Proposer names this agent run as Committed.Proposer names a write's
	// proposer: a committed write whose Proposer equals it is this
	// agent's own.
	Proposer() string

	// Take gives a request of c (a Conn ServeConn got; nil for none) its
	// place in arrival order: blocking for a command that waits for data
	// (from then on c is watched, and its later requests wait behind it),
	// feeds for a write that may give such a command data. Client.Write
	// takes a plain write's ticket itself.
	Take(c net.Conn, blocking, feeds bool) *Ticket
	// Release gives a ticket up without a proposal (the request waits for
	// something else first); a nil or released ticket stays as it is.
	Release(t *Ticket)
	// Propose proposes data as Client.Write proposes a command, once the
	// requests t must follow have been proposed, and releases t (nil:
	// at once).
	Propose(t *Ticket, data []byte, volatile bool) (Proposal, error)

	// Read serves a read as Client.Read does, for a connection whose
	// acknowledged writes go up to log index own.
	Read(ctx context.Context, own uint64, cmd Command) ([]byte, error)
	// MinIndex is the index a replica must have applied to answer a read
	// of such a connection in the deployment's read mode.
	MinIndex(ctx context.Context, own uint64) (uint64, error)
	// LinearizableIndex is the index a replica must have applied to see
	// every write acknowledged before the call (the lease's, or a round
	// of messages); LastIndex is this agent's last log index.
	LinearizableIndex(ctx context.Context) (uint64, error)
	LastIndex() uint64
	// ReadsHere says a read of such a connection may go to the local
	// server at once, with no message and no wait: one replica answers a
	// read, this one is the replica the tracker would ask first, it
	// applies, and it has applied what the read mode asks (under the read
	// lease). start is the clock reading the read is timed from.
	ReadsHere(own uint64) (start time.Time, ok bool)
	// HedgeAfter is how long a read waits for a replica before it asks
	// another; ObserveRead records a read served since start.
	HedgeAfter() time.Duration
	ObserveRead(start time.Time)

	// Applied is the last log index the local server holds the effect
	// of; WaitApplied waits until it reaches index, or the server failed.
	Applied() uint64
	WaitApplied(ctx context.Context, index uint64) error
	// Failure is why the local server stopped applying, nil while it
	// applies.
	Failure() error
	// Limping says the limp tracker marks this agent's own replica
	// limping: what waits for it would make its clients feel the limp.
	Limping() bool
	// Exclusive runs fn between two of the applier's batches, not at all
	// while the local server has failed; an error fails it as a failed
	// Apply does (the core rebuilds it once Alive answers).
	Exclusive(fn func() error)

	// Replicas is how many replicas are expected to apply a write now.
	Replicas() int
	// Broadcast sends data to the adapter on every other agent
	// (PeerHandler.OnPeer); it may be dropped, as any peer message.
	Broadcast(data []byte)

	// Metrics is where the adapter registers its metrics, served with the
	// core's on /metrics; Stage records one stage of a write
	// (write_stage_seconds: request_read, reply).
	Metrics() prometheus.Registerer
	Stage(name string, d time.Duration)
}

// agentHost is an agent's Host.
type agentHost struct{ a *Agent }

func (h *agentHost) Config() Config        { return h.a.cfg }
func (h *agentHost) Logger() *log.Logger   { return h.a.logger }
func (h *agentHost) Done() <-chan struct{} { return h.a.done }
func (h *agentHost) Proposer() string      { return h.a.proposer() }

func (h *agentHost) Take(c net.Conn, blocking, feeds bool) *Ticket {
	stamped, _ := c.(*stampedConn)
	t := h.a.arrival.take(stamped, blocking, feeds, arrivedAt(stamped))
	if blocking && stamped != nil {
		h.a.arrival.sawBlocking(stamped)
		stamped.unhandled.Store(blockedHere)
	}
	return t
}

func (h *agentHost) Release(t *Ticket) { h.a.arrival.release(t) }

func (h *agentHost) Propose(t *Ticket, data []byte, volatile bool) (Proposal, error) {
	w, err := h.a.proposeTurn(t, data, volatile)
	if err != nil {
		return nil, err
	}
	return &pending{a: h.a, w: w}, nil
}

func (h *agentHost) Read(ctx context.Context, own uint64, cmd Command) ([]byte, error) {
	if cmd.Pinned {
		return h.a.readHere(ctx, own, cmd.Data)
	}
	return h.a.read(ctx, own, cmd.Data)
}

func (h *agentHost) MinIndex(ctx context.Context, own uint64) (uint64, error) {
	return h.a.minIndex(ctx, own)
}

func (h *agentHost) LinearizableIndex(ctx context.Context) (uint64, error) {
	if index, _, ok := h.a.leaseIndex(); ok {
		return index, nil
	}
	return h.a.indexes.get(ctx)
}

func (h *agentHost) LastIndex() uint64 { return h.a.raft.LastIndex() }

func (h *agentHost) ReadsHere(own uint64) (time.Time, bool) {
	a := h.a
	if a.cfg.Fanout != 1 || a.fsm.failure() != nil {
		return time.Time{}, false
	}
	// One clock read times the read, its hedge wait and the limp
	// tracker's choice: a read of the clock costs 0.1 to 0.3 µs on this
	// machine's VM, and a GET read it about a dozen times.
	var index uint64
	var start time.Time
	switch a.cfg.Read {
	case Linearizable:
		var ok bool
		if index, start, ok = a.leaseIndex(); !ok {
			return start, false
		}
	case Session:
		index, start = own, time.Now()
	default:
		start = time.Now()
	}
	if a.fsm.appliedIndex() < index {
		return start, false
	}
	ts := a.health.readTargets(1, nil, start)
	return start, len(ts) > 0 && ts[0].Local
}

func (h *agentHost) HedgeAfter() time.Duration { return h.a.hedgeAfter() }
func (h *agentHost) ObserveRead(start time.Time) {
	h.a.m.read.Observe(time.Since(start).Seconds())
}

func (h *agentHost) Applied() uint64 { return h.a.fsm.appliedIndex() }
func (h *agentHost) WaitApplied(ctx context.Context, index uint64) error {
	return h.a.fsm.waitApplied(ctx, index)
}
func (h *agentHost) Failure() error { return h.a.fsm.failure() }
func (h *agentHost) Limping() (limping bool) {
	h.a.health.with(func(t *limp.Tracker) { limping = t.SelfLimping() })
	return limping
}

func (h *agentHost) Exclusive(fn func() error) {
	f := h.a.fsm
	f.run.Lock()
	defer f.run.Unlock()
	if f.failure() != nil {
		return // brought in line when the server is back
	}
	if err := fn(); err != nil {
		f.fail(err)
	}
}

func (h *agentHost) Replicas() int { return len(h.a.health.expectedReplicas()) }

func (h *agentHost) Broadcast(data []byte) {
	var addrs []string
	h.a.health.with(func(t *limp.Tracker) { addrs = t.PeerAddrs() })
	msg := appendFrame(nil, []byte("ADAPTER"), []byte(h.a.cfg.ID), data)
	for _, addr := range addrs {
		h.a.peer(addr).send(peerMsg{data: msg})
	}
}

func (h *agentHost) Metrics() prometheus.Registerer { return h.a.m.reg }
func (h *agentHost) Stage(name string, d time.Duration) {
	h.a.m.stage(name, d)
}

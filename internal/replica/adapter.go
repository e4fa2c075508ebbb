package replica

import (
	"context"
	"io"
	"net"
	"time"
)

// The seam between gait replica's core and the servers it replicates.
//
// The core (this package) orders opaque commands through raft (write-ahead
// log, both durabilities), applies each committed command once on every
// replica (duplicates of a re-sent write are skipped), answers a write with
// the first replica's reply, serves reads from the fastest replica the read
// mode allows (fan-out, hedging, first reply wins), makes a write-all
// command wait for every replica, chains every reply into a digest and
// quarantines a replica whose digest departs from the majority's, brings a
// restarted or re-attached server back from a snapshot and the log, and
// tracks which replica limps and hands leadership away from it. It knows
// nothing of any server's protocol.
//
// An Adapter knows one server's protocol and nothing of raft, as a net/http
// Handler knows its application and nothing of TCP: it decodes a client's
// requests into Commands, says how each is to be served (its Class), hands
// reads and writes to the core through the connection's Client, and encodes
// replies; on the other side, its Backend applies committed commands to the
// one local server it fronts and says what each replied. Every replica runs
// the same adapter. Its packages live under internal/replica (redis,
// zookeeper); the core imports none of them, and none imports another.
//
// Wiring picks the adapter: Start(Config{..., Adapter: a, ServerAddr:
// addr}); the core accepts client connections and hands each to
// ServeConn as a Conn, read through the core (so the core knows when each
// request's bytes arrived, and proposes the writes of different
// connections in that order). An adapter that must propose with no client
// connection (expiring a ZooKeeper session) takes a Client from
// Agent.NewClient; Agent.IsLeader tells whether this agent leads.
// adapter_test.go's lineAdapter is the smallest complete example.
//
// An adapter that keeps each connection's ordering itself, rather than
// through Client (Redis pipelines a connection's writes and reads, blocks
// clients, and answers some reads straight from its server), also
// implements Hosted: the core hands it a Host, the agent's side of the
// seam, before Open (host.go).

// Class says how the core serves a command.
type Class uint8

const (
	// ClassRefused is a command gait will not serve (it would let
	// replicas diverge, or it administers the server behind gait's back):
	// the adapter answers it with an error and the core never sees it.
	ClassRefused Class = iota
	// ClassLocal is a command the connection's own state answers, or
	// the agent answers for itself, with no server and no log (Redis's
	// MULTI queueing, SELECT, HELLO, CLIENT; ZooKeeper's ping). The
	// adapter answers it; the core never sees it.
	ClassLocal
	// ClassRead reads without changing any server's state: Client.Read
	// serves it from the first replica that has applied far enough for
	// the read mode. It is not logged.
	ClassRead
	// ClassWrite may change the server's state: Client.Write orders it
	// through raft, and every replica applies it in log order.
	ClassWrite
)

// Command is one request as the core carries it.
type Command struct {
	Class Class
	// Data is the adapter's own encoding of the command: the core logs it,
	// ships it to other agents and hands it back to every replica's
	// Backend (Apply for a write, Read for a read) byte for byte. It holds
	// whatever the server needs to run the command as this client would
	// have (Redis frames it with the connection's protocol and database).
	// Keep it compact: it is written to every replica's log.
	Data []byte
	// Volatile marks a write whose reply may differ between replicas
	// whose state agrees (PUBLISH counts the local server's subscribers):
	// the digest leaves its reply out, and the proposer's client gets its
	// own replica's reply rather than the first.
	Volatile bool
	// Pinned marks a read only this agent's own server may answer (a SCAN
	// cursor means something to the server that returned it; a ZooKeeper
	// read that sets a watch must be served where the watch will fire).
	Pinned bool
}

// Grouping is an Adapter whose writes may share a log index. The leader's
// agent holds its clients' writes while a group of them is in raft (the
// gate, gate.go) and sends those it held together; with GroupsWrites true
// it sends them as one raft entry, which every replica applies write by
// write in the group's order, each its own Committed with the group's
// Index and Time: one log append, one AppendEntries record and one commit
// for the group, in place of one each per write. An adapter that derives
// identifiers from Index (ZooKeeper's zxid) does not implement it.
type Grouping interface {
	GroupsWrites() bool
}

// Committed is one committed write as a Backend applies it.
type Committed struct {
	// Index is the write's raft log index: the same on every replica, so
	// an adapter may derive identifiers from it (ZooKeeper's zxid). The
	// writes of one group entry (Grouping) share it.
	Index uint64
	// Time is when the leader appended the write to its log, on the
	// leader's clock, carried in the log: the same on every replica (a
	// ZooKeeper node's ctime and mtime). A new leader's clock may be
	// behind its predecessor's: an adapter that needs it to grow keeps the
	// largest it has seen, which is the same on every replica too.
	Time time.Time
	// Proposer names the agent run that proposed the write ("" for none)
	// and Seq its request number: together they name the write alike on
	// every replica (Redis names a blocked client by its first attempt).
	Proposer string
	Seq      uint64
	// Data is Command.Data as the proposer encoded it.
	Data []byte
}

// Result is what one committed write produced on the local server.
type Result struct {
	// Reply is what the client gets, already encoded for it.
	Reply []byte
	// Digest is what the replica's chained digest takes in: the bytes
	// of the reply that every replica in the same state gives alike (for
	// most commands, Reply; empty for a volatile reply). nil leaves the
	// digest as it was (a write that ran nothing). Replicas whose digests
	// differ at the same index diverged, and the minority is quarantined.
	Digest []byte
}

// Backend is an adapter's hold on the one local server it fronts. The core
// owns the server's data: it replaces it (Reset, Restore) at start and on
// re-attach, and changes it only through Apply, one goroutine at a time and
// in log order. Apply, Snapshot, Restore and Reset are never called
// concurrently with each other; Read is, from many goroutines.
type Backend interface {
	// Apply runs committed writes on the server in log order, each
	// exactly once (the core has dropped duplicates and entries a restored
	// snapshot covers), and returns one Result per write it ran. It may
	// send many at once, and may run only the first few (at least one):
	// the core marks those applied and calls it again with the rest, so
	// such an Apply looks at no more of batch than it runs (a replica
	// catching up is handed tens of thousands of writes at once). On
	// the server's failure it returns the Results of the writes applied
	// before it and the error; the core then stops applying, calls Alive
	// until the server answers, and rebuilds it from the newest snapshot
	// and the log.
	Apply(batch []Committed) ([]Result, error)
	// Read runs a read command (Command.Data of a ClassRead) on the server
	// and returns the client's reply. The core calls it once the replica
	// has applied what the read mode asks, on this agent or on another
	// one that the read was sent to.
	Read(ctx context.Context, data []byte) ([]byte, error)
	// Snapshot writes the server's whole state, and whatever the adapter
	// keeps beside it that the log changes (Redis's queue of blocked
	// clients), to w. It is called between two Apply calls.
	Snapshot(w io.Writer) error
	// Restore replaces the server's state with one Snapshot wrote.
	Restore(r io.Reader) error
	// Reset empties the server: the state before the first log entry.
	Reset() error
	// Alive reconnects to the server now at the Backend's address
	// (restarted, empty or not) and tells whether it answers, and why
	// not. The core calls it every so often once Apply failed; once it
	// returns nil, the core rebuilds the server (Restore or Reset, then
	// Apply of the log after the snapshot).
	Alive(ctx context.Context) error
	// Close releases the Backend's connections; the server stays up.
	Close() error
}

// Adapter is one kind of server behind gait replica.
type Adapter interface {
	// Name names the server ("redis", "zookeeper") in logs and metrics.
	Name() string
	// Open connects to the local server at addr and returns a Backend for
	// it, once per agent.
	Open(addr string) (Backend, error)
	// ServeConn serves one client connection until it ends: it reads and
	// decodes requests, answers refused and local commands itself, hands
	// reads and writes to cl and writes their replies, in request order
	// (pipelining as the protocol allows). It owns c and closes it.
	ServeConn(c net.Conn, cl Client)
}

// Client is the core's side of one client connection, as net/http's
// ResponseWriter is the server's side of one request. It keeps the
// connection's guarantees: a read sees the connection's own acknowledged
// writes (read-your-writes, in every read mode but any), and a write is
// ordered after the connection's earlier reads. An Adapter calls Write and
// Read from the goroutine that reads the connection, in request order; it
// may wait on a Pending from another goroutine (the one writing replies).
type Client interface {
	// Write proposes a ClassWrite command now, in arrival order among all
	// connections, and returns at once: the reply comes through Pending.
	Write(cmd Command) Pending
	// Read serves a ClassRead command from the first replica that has
	// applied what the read mode asks (with fan-out and hedging), once the
	// connection's earlier writes are acknowledged.
	Read(ctx context.Context, cmd Command) ([]byte, error)
	// WaitAll returns once every replica has applied the connection's
	// last write, or ctx ends: how many replicas have (Redis's WAITALL,
	// ZooKeeper's sync, the thesis's write-all-duplicate).
	WaitAll(ctx context.Context) (int, error)
}

// Pending is a proposed write's outcome.
type Pending interface {
	// Wait returns the first replica's reply (its own replica's, for a
	// volatile write) and the write's log index, or why it failed (no
	// leader within the write timeout, the agent stopping).
	Wait() (reply []byte, index uint64, err error)
}

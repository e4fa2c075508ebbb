package redis

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gait-dev/gait/internal/rediscmd"
	"github.com/gait-dev/gait/internal/replica"
	"github.com/gait-dev/gait/internal/resp"
)

// pipelineDepth bounds the commands one connection may have in flight.
const pipelineDepth = 1024

// pipelinedFor is how many requests a connection's writes go through the
// reply writer once its client sent a request before the reply to the
// write before it (clientState.pipelining).
const pipelinedFor = 256

// maxArgs bounds the arguments of one client request.
const maxArgs = 1 << 20

// databases is how many databases SELECT reaches: redis's default, which
// the redis-servers gait starts keep.
const databases = 16

// slot is one reply owed to a client, in request order. Either reply is
// ready, or fill computes it once every earlier reply has been written.
type slot struct {
	reply []byte
	fill  func() []byte
	done  chan struct{} // closed once fill ran (or was skipped); nil without fill
	close bool          // close the connection after this reply
	// silent drops the reply (CLIENT REPLY OFF or SKIP); fill still runs.
	silent bool
	// direct says fill only waits for the local redis-server (a fast
	// read): the reading goroutine may run it and write the reply itself
	// when no reply is owed before it.
	direct bool
	// awaited says fill waits for a plain write's first reply: the reading
	// goroutine may wait for it and write the reply itself, as for direct,
	// when its client waits for each reply before it sends the next
	// request (clientState.pipelining).
	awaited bool
}

// clientState is the per-connection state.
type clientState struct {
	clientConn
	inMulti bool
	aborted bool
	queued  [][][]byte
	// lastRead is done once the latest read has run: a later write must not
	// be proposed before it, or the read could see the write.
	lastRead chan struct{}
	// lastWrite is the latest write; lastWriteDone is closed once its reply
	// is known, and a later read waits for it (read-your-writes).
	lastWrite     replica.Proposal
	lastWriteDone chan struct{}
	// lastIndex is the highest log index of this connection's acknowledged
	// writes: a session read needs a replica that has applied it.
	lastIndex atomic.Uint64
	// watched are the keys WATCH read, with their values then.
	watched []watched
	// queuedVolatile says a queued command's reply differs between replicas.
	queuedVolatile bool
	// replyOff and skipNext are CLIENT REPLY's: no reply until ON, and how
	// many more replies to drop.
	replyOff bool
	skipNext int
	// killed is set when CLIENT KILL named this connection itself.
	killed bool
	// repliedAt is when the reading goroutine wrote an awaited write's
	// reply itself (Unix ns; 0: it did not); pipelining counts down the
	// requests for which it hands such writes to the reply writer
	// instead, after one of them arrived before the reply to the one
	// before it went out: the client pipelines, and a reader waiting for
	// a write's reply would hold its next requests unread meanwhile.
	repliedAt  int64
	pipelining int
	// stamped reads the connection, and knows when its bytes arrived.
	stamped replica.Conn
	pubsub
}

// serveConn reads requests and proposes writes in arrival order; a second
// goroutine writes replies in the same order (but for a fast read with no
// reply owed before it, answered by this one). Writes of one connection are
// pipelined through raft, reads wait for everything before them.
func (a *agent) serveConn(c net.Conn, st *clientState) {
	defer func() {
		a.mu.Lock()
		delete(a.conns, c)
		a.mu.Unlock()
	}()
	out, slots := st.out.Load(), st.replies
	defer func() { slots.close(); <-slots.done; st.unsubscribeAll() }()
	sc := &stallConn{Conn: st.stamped, stamped: st.stamped, timeout: a.cfg.RequestTimeout, idleAfter: queryIdle,
		observe: func(d time.Duration) { a.host.Stage("request_read", d) }}
	rd := resp.NewReader(sc, a.cfg.MaxRequest, maxArgs)
	rd.Budget, rd.Begin = a.budget, sc.begin
	st.query.Store(rd)
	defer rd.Done()
	var next [][]byte // read while batching, and not part of the batch
	var trimmed int64 // when the query buffer was last looked at (Trim)
	for {
		args := next
		next = nil
		if args == nil {
			var err error
			args, err = rd.ReadCommand()
			sc.end()
			if err != nil {
				a.endConn(out, slots, err)
				return
			}
			st.touch(args, st.stamped.Arrived())
		}
		if st.repliedAt != 0 {
			if st.stamped.Arrived() < st.repliedAt {
				st.pipelining = pipelinedFor
			}
			st.repliedAt = 0
		}
		if t := st.last.Load(); t-trimmed >= int64(trimEvery) {
			rd.Trim()
			trimmed = t
		}
		var s slot
		var err error
		a.holdIfPaused(st, args)
		st.obs = a.observe(st, args)
		if st.tracking() != nil {
			s = a.trackedHandle(st, args) // its replies carry invalidations; never batched
		} else if rd.Buffered() > 0 && !a.paused() {
			s, next, err = a.pipelined(st, rd, sc, args)
		} else {
			s = a.handle(st, args)
		}
		s = st.obs.done(s)
		st.serving.Store(0) // handled: no longer in redis's query buffer
		st.stamped.Handled()
		if st.replyOff || st.skipNext > 0 {
			s.silent = true
		}
		st.skipNext = max(st.skipNext-1, 0)
		if !st.inMulti && next == nil {
			// The arguments are encoded into a proposal or a read by now; a
			// transaction's stay queued, and charged, until EXEC or DISCARD.
			rd.Release()
		}
		awaited := s.awaited && st.pipelining == 0
		st.pipelining = max(st.pipelining-1, 0)
		if (s.direct || awaited) && !s.silent && next == nil && rd.Buffered() == 0 && out.owed.Load() == 0 {
			// Nothing owed before it and nothing read after it: answer here,
			// without waking the writer twice (once for the slot, once for
			// redis's answer, or the write's first reply).
			reply := s.fill()
			close(s.done)
			if awaited {
				// Before the write: the client may answer the reply before
				// the write returns.
				st.repliedAt = time.Now().UnixNano()
			}
			out.put(reply, true, false)
		} else {
			out.owed.Add(1)
			slots.put(s)
		}
		if err != nil {
			a.endConn(out, slots, err)
			return
		}
		if s.close {
			return
		}
	}
}

// endConn answers a request that could not be read, if it deserves an
// answer; the connection then closes.
func (a *agent) endConn(out *replyWriter, slots *replyQueue, err error) {
	if msg := a.requestError(err); msg != "" {
		out.owed.Add(1)
		slots.put(slot{reply: resp.Error(msg), close: true})
	}
}

// Bounds of one pipelined batch.
const (
	batchCommands = 1024
	batchBytes    = 1 << 20
)

// pipelined serves a command that more commands follow already: it and
// the plain writes and reads right behind it that have arrived go into one
// log entry (one raft round for the batch, not one per command), and the
// client gets their replies in order. Reads in the batch are ordered by the
// log like the writes, so they are linearizable and see the batch's earlier
// writes. It returns the slot, the first command read that does not fit
// the batch (nil if none), and an error reading the connection (after the
// batch's slot).
func (a *agent) pipelined(st *clientState, rd *resp.Reader, sc *stallConn, args [][]byte) (slot, [][]byte, error) {
	e := redisRecord{batch: true}
	// add encodes a command into the batch if it may join it.
	add := func(args [][]byte) bool {
		payload, read, ok := a.batchable(st, args, e.payload)
		if !ok {
			return false
		}
		if read {
			e.reads = append(e.reads, e.replies)
		}
		e.payload = payload
		e.replies++
		return true
	}
	if !add(args) {
		return a.handle(st, args), nil, nil
	}
	var next, last [][]byte
	var err error
	for rd.Buffered() > 0 && e.replies < batchCommands && len(e.payload) < batchBytes {
		if next, err = rd.ReadCommand(); err != nil {
			next = nil
			break
		}
		sc.end()
		if !add(next) {
			st.touch(next, st.stamped.Arrived())
			break
		}
		st.obs.join(next)
		last, next = next, nil
	}
	sc.end()
	if last != nil {
		// CLIENT LIST shows a connection's last command: the batch's last
		// stands for all of it.
		st.touch(last, st.stamped.Arrived())
	}
	if e.replies == 1 {
		return a.handle(st, args), next, err
	}
	a.m.pipelined.Observe(float64(e.replies))
	return a.write(st, e), next, err
}

// batchable tells whether a command may join a pipelined batch: a plain
// write or read that the log may order (not a blocking command, not one
// pinned to one server, not one whose reply differs between replicas, not
// inside MULTI), of a connection that is not subscribed and wants every
// reply; if so it appends the command's encoding to dst.
func (a *agent) batchable(st *clientState, args [][]byte, dst []byte) (out []byte, read, ok bool) {
	if st.inMulti || st.subscribed() || st.replyOff || st.skipNext > 0 {
		return dst, false, false
	}
	_, sp, msg := rediscmd.Lookup(args)
	if msg != "" || sp.Blocks || sp.Volatile || (sp.Kind != rediscmd.Write && (sp.Kind != rediscmd.Read || sp.Pinned)) {
		return dst, false, false
	}
	if sp.Rewrite != nil {
		args = a.rewrite(st, sp, args)
	}
	return resp.AppendCommand(dst, args...), sp.Kind == rediscmd.Read, true
}

// requestError is the error line for a request that could not be read,
// or "" when the connection just ended.
func (a *agent) requestError(err error) string {
	var pe *resp.ProtocolError
	var be *resp.BudgetError
	switch {
	case errors.As(err, &pe):
		return "ERR " + pe.Error()
	case errors.As(err, &be):
		a.m.refusedMemory.Inc()
		return "ERR " + be.Error()
	case errors.Is(err, os.ErrDeadlineExceeded):
		a.m.refusedStalled.Inc()
		return fmt.Sprintf("ERR request stalled: no byte of it for %v (--request-timeout); closing the connection", a.cfg.RequestTimeout)
	}
	return ""
}

// queryIdle is how long a connection reads nothing before its query buffer
// is given up (redis: more than 2 s idle, clientsCronResizeQueryBuffer);
// trimEvery how often a busy connection's is looked at (Reader.Trim;
// redis: every 100 ms with a few clients).
const (
	queryIdle = 2 * time.Second
	trimEvery = 100 * time.Millisecond
)

// stallConn bounds how long a request may pause once it has begun: while
// one is being read, every read must bring bytes within timeout. Between
// requests the connection may idle without limit; once it has read nothing
// for idleAfter, a read answers resp.ErrIdle, once, so the reader gives its
// buffer up. Only the reading goroutine uses it.
type stallConn struct {
	net.Conn
	stamped replica.Conn // when the latest bytes arrived, and WaitRead
	timeout time.Duration
	// idleAfter (0: never) and the idle deadline armed (zero: none); quiet
	// after ErrIdle until bytes come.
	idleAfter time.Duration
	idleAt    time.Time
	quiet     bool
	mid       bool // a request has begun
	// began is when the rest of the request was first read from the
	// socket; zero while all of it came from what was already buffered,
	// as most pipelined requests do: no clock read for them (a clock
	// read costs 0.1 to 0.3 µs on this machine's VM, as much as a SET).
	began   time.Time
	armed   bool                // a read deadline is set
	observe func(time.Duration) // told how long each request took to arrive
}

func (c *stallConn) begin() { c.mid = true }

// end disarms the deadline once a request is read: the connection may idle.
func (c *stallConn) end() {
	if c.mid {
		var d time.Duration
		if !c.began.IsZero() {
			d = time.Since(c.began)
		}
		c.observe(d)
	}
	c.mid, c.began = false, time.Time{}
	if c.armed {
		c.Conn.SetReadDeadline(time.Time{})
		c.armed, c.idleAt = false, time.Time{}
	}
}

func (c *stallConn) Read(p []byte) (int, error) {
	if c.mid {
		now := time.Now()
		if c.began.IsZero() {
			c.began = now
		}
		c.Conn.SetReadDeadline(now.Add(c.timeout))
		c.armed = true
		return c.Conn.Read(p)
	}
	for {
		if c.idleAfter > 0 && !c.quiet {
			// Armed lazily: a second past due, so a busy connection sets
			// its deadline about once a second, not once a read.
			if due := time.Unix(0, c.stamped.Arrived()).Add(c.idleAfter); c.idleAt.Before(due) {
				c.idleAt = due.Add(time.Second)
				c.Conn.SetReadDeadline(c.idleAt)
			}
		}
		n, err := c.Conn.Read(p)
		if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) || c.mid {
			c.quiet = false
			return n, err
		}
		c.idleAt = time.Time{}
		if time.Since(time.Unix(0, c.stamped.Arrived())) >= c.idleAfter {
			c.Conn.SetReadDeadline(time.Time{})
			c.quiet = true
			return 0, resp.ErrIdle
		}
	}
}

// WaitRead waits until the connection has bytes, or has ended.
func (c *stallConn) WaitRead() error { return c.stamped.WaitRead() }

// replyWriter writes one connection's replies: writeReplies those owed,
// in order, and the reading goroutine a direct slot's when none is owed.
type replyWriter struct {
	c    net.Conn
	owed atomic.Int64 // slots handed to writeReplies and not yet done with
	mu   sync.Mutex   // guards the buffer and broken
	// The reply buffer (replybuf.go): buf[:n] not yet written, made at
	// its size on the first reply that waits in it (nil until then: an
	// idle connection, or one answered a reply at a time, holds none);
	// peak the most it held since peakAt; rbs and rbp its
	// size and peak for CLIENT LIST.
	buf      []byte
	size     int
	n, peak  int
	peakAt   time.Time
	rbs, rbp atomic.Int64
	broken   bool // a write failed or the connection was closed after a reply
	// deadline bounds a write the client does not take (up to a minute).
	deadline lazyDeadline
}

// put writes b, then flushes when flush; after a failure, or when closeAfter,
// it closes the connection and writes nothing more.
func (o *replyWriter) put(b []byte, flush, closeAfter bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.broken {
		return
	}
	if at, ok := o.deadline.renew(time.Minute); ok {
		o.c.SetWriteDeadline(at)
	}
	var err error
	if flush && o.n == 0 && len(b) <= o.size {
		// Nothing is buffered and it goes out now: written as it is, not
		// copied into the buffer first (a connection answered one reply at
		// a time never needs one), and counted as the buffer counts it.
		o.peak = max(o.peak, len(b))
		_, err = o.c.Write(b)
	} else if err = o.write(b); err == nil && flush {
		err = o.flush()
	}
	if err != nil || closeAfter {
		o.broken = true
		o.c.Close()
	}
}

func (o *replyWriter) isBroken() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.broken
}

// writeReplies writes what q holds: the replies in request order, and
// between them what the connection's subscriptions push (messages, and
// redis's answers to SUBSCRIBE and the like), as it comes. It returns when
// q is empty (replyQueue); the last, once q closed, closes the connection.
func writeReplies(out *replyWriter, q *replyQueue) {
	for {
		s, push, last, ok, end := q.take()
		switch {
		case end:
			out.c.Close()
			close(q.done)
			return
		case !ok:
			return
		case push != nil:
			out.put(push, true, false)
			continue
		}
		reply := s.reply
		broken := out.isBroken()
		if s.fill != nil {
			if !broken {
				reply = s.fill()
			}
			if s.done != nil {
				close(s.done)
			}
		}
		if !broken && (!s.silent || s.close) {
			out.put(reply, last || s.close, s.close)
		}
		out.owed.Add(-1)
	}
}

// handle serves one command and returns the reply slot.
func (a *agent) handle(st *clientState, args [][]byte) slot {
	name, sp, msg := rediscmd.Lookup(args)
	if st.inMulti && name != "EXEC" && name != "DISCARD" && name != "MULTI" && name != "QUIT" && name != "RESET" {
		return a.queue(st, name, sp, msg, args)
	}
	if msg != "" {
		return slot{reply: resp.Error(msg)}
	}
	if name == "DEBUG" {
		if reply := a.debugReplyBuffer(args); reply != nil {
			return slot{reply: reply}
		}
	}
	if st.subscribed() && st.proto.Load() == 2 && !subscribedContext[name] {
		return slot{reply: resp.Error(fmt.Sprintf("ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", strings.ToLower(string(args[0]))))}
	}
	if sp.Blocks {
		if d, forever, ok := blockTimeout(name, args); ok {
			// The connection waits, as a blocked redis client does: nothing
			// after it is read until it is answered.
			return slot{reply: a.block(st, name, args, d, forever)}
		}
	}
	if name == "CONFIG" && strings.EqualFold(string(args[1]), "SET") {
		rest, reply := a.ownConfigSet(args)
		if reply != nil {
			return slot{reply: reply}
		}
		args = rest
	}
	switch sp.Kind {
	case rediscmd.Write:
		if a.track.active.Load() {
			a.track.noteWrite(args)
		}
		if sp.Rewrite != nil {
			args = a.rewrite(st, sp, args)
		}
		s := a.write(st, redisRecord{replies: 1, payload: resp.AppendCommand(nil, args...), volatile: sp.Volatile})
		s.awaited = s.fill != nil
		return s
	case rediscmd.Read:
		if readScripts[name] && a.redis.scripts != nil {
			// Through the log, as a write whose reply is this replica's, so
			// this agent sees what the script calls (scriptstats.go).
			return a.write(st, redisRecord{replies: 1, payload: resp.AppendCommand(nil, args...), volatile: true})
		}
		return a.readSlot(st, resp.AppendCommand(nil, args...), sp.Pinned)
	case rediscmd.Local:
		if name == "INFO" {
			return a.ownWritesFirst(st, a.infoSlot(st.mode(), resp.AppendCommand(nil, args...)))
		}
		if name == "COMMAND" {
			return a.commandSlot(st, args)
		}
		return a.ownWritesFirst(st, a.localSlot(st.mode(), resp.AppendCommand(nil, args...)))
	}
	return a.agentCommand(st, name, args)
}

func (a *agent) agentCommand(st *clientState, name string, args [][]byte) slot {
	switch name {
	case "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE":
		return a.subscribeSlot(st, args)
	case "PING":
		if st.subscribed() && st.proto.Load() == 2 {
			return a.subscribeSlot(st, args) // redis answers a subscriber's PING as a message
		}
		if len(args) > 2 {
			return slot{reply: resp.Error("ERR wrong number of arguments for 'ping' command")}
		}
		return a.pingSlot(st, args)
	case "SCRIPT", "FUNCTION":
		if isKill(args) {
			return a.killScript(args)
		}
	case "ECHO":
		return slot{reply: resp.AppendBulk(nil, args[1])}
	case "SELECT":
		db, err := strconv.ParseInt(string(args[1]), 10, 64)
		if err != nil {
			return slot{reply: resp.Error("ERR value is not an integer or out of range")}
		}
		if db < 0 || db >= databases {
			return slot{reply: resp.Error("ERR DB index is out of range")}
		}
		st.db.Store(db)
		return slot{reply: resp.Simple("OK")}
	case "QUIT":
		return slot{reply: resp.Simple("OK"), close: true}
	case "MULTI":
		if st.inMulti {
			return slot{reply: resp.Error("ERR MULTI calls can not be nested")}
		}
		st.inMulti, st.aborted, st.queued, st.queuedVolatile = true, false, nil, false
		return slot{reply: resp.Simple("OK")}
	case "DISCARD":
		if !st.inMulti {
			return slot{reply: resp.Error("ERR DISCARD without MULTI")}
		}
		st.inMulti, st.queued, st.watched, st.queuedVolatile = false, nil, nil, false
		return slot{reply: resp.Simple("OK")}
	case "WATCH":
		return slot{reply: a.watch(st, args)}
	case "UNWATCH":
		st.watched = nil
		return slot{reply: resp.Simple("OK")}
	case "EXEC":
		return a.exec(st)
	case "WAITALL":
		return a.waitAllSlot(st, args)
	case "WAIT":
		return a.waitSlot(st, args)
	case "CLIENT":
		reply := a.clientCommand(st, args)
		return slot{reply: reply, close: st.killed}
	case "HELLO":
		return slot{reply: a.hello(st, args)}
	case "SLOWLOG", "LATENCY":
		return slot{reply: a.ownCommand(st, args)}
	case "RESET":
		reply := a.reset(st)
		st.subCount.Store(0)
		return slot{fill: func() []byte { st.unsubscribeAll(); return reply }}
	}
	return slot{reply: resp.Error("ERR internal: no handler for " + name)}
}

// queue adds a command to the open transaction. As in redis, an invalid
// command makes EXEC discard the whole transaction.
func (a *agent) queue(st *clientState, name string, sp rediscmd.Spec, msg string, args [][]byte) slot {
	if name == "WATCH" && msg == "" {
		// As redis: refused, but the transaction goes on.
		return slot{reply: resp.Error("ERR WATCH inside MULTI is not allowed")}
	}
	if msg == "" && sp.Rewrite != nil {
		args = a.rewrite(st, sp, args)
	}
	switch {
	case msg != "" && sp.Kind == rediscmd.Refused:
		// Redis's own refusal inside MULTI (SHUTDOWN: not allowed in a
		// transaction) comes first, as it would.
		if m := a.probeQueued(args); m != "" {
			msg = m
		}
	case msg != "":
	case sp.Kind == rediscmd.Local:
		// Redis's own refusal (SAVE: not allowed inside a transaction)
		// where it has one. Else every replica runs it inside the
		// transaction (DEBUG SLEEP sleeps in each), and the client gets
		// its own replica's answer, as outside one: the transaction is
		// volatile.
		msg = a.probeQueued(args)
	case ownQueued(args):
		msg = ownQueuedArity(args)
	case sp.Kind == rediscmd.Agent && name != "PING" && name != "ECHO":
		msg = "ERR '" + name + "' is not supported inside MULTI by gait replica"
	case sp.Kind != rediscmd.Agent:
		msg = a.probeQueued(args)
	}
	if msg != "" {
		st.aborted = true
		return slot{reply: resp.Error(msg)}
	}
	st.queued = append(st.queued, args)
	st.queuedVolatile = st.queuedVolatile || sp.Volatile || sp.Kind == rediscmd.Local
	return slot{reply: resp.Simple("QUEUED")}
}

// exec proposes the whole transaction as one log entry, so every replica
// runs it between the same two other entries.
func (a *agent) exec(st *clientState) slot {
	if !st.inMulti {
		return slot{reply: resp.Error("ERR EXEC without MULTI")}
	}
	queued, aborted, ws, volatile := st.queued, st.aborted, st.watched, st.queuedVolatile
	st.inMulti, st.aborted, st.queued, st.watched, st.queuedVolatile = false, false, nil, nil, false
	// As in redis, a busy server refuses EXEC itself before it looks at
	// the queue.
	if msg := a.execBusy(); msg != "" {
		return slot{reply: resp.Error(msg)}
	}
	if aborted {
		return slot{reply: resp.Error("EXECABORT Transaction discarded because of previous errors.")}
	}
	queued, own := a.withoutOwn(st, queued)
	if len(ws) == 0 && readOnly(queued) {
		return a.runOwn(a.readTransaction(st, queued), own)
	}
	payload, extra := watchPrefix(ws)
	payload = resp.AppendCommand(payload, []byte("MULTI"))
	for _, q := range queued {
		payload = resp.AppendCommand(payload, q...)
	}
	payload = resp.AppendCommand(payload, []byte("EXEC"))
	return a.runOwn(a.execAbortCause(a.write(st, redisRecord{replies: extra + len(queued) + 2, payload: payload, volatile: volatile}), queued), own)
}

// write proposes e (its commands) for the connection, in the connection's
// mode, and returns the slot its reply goes into.
func (a *agent) write(st *clientState, e redisRecord) slot {
	if st.lastRead != nil {
		<-st.lastRead
	}
	// A batch's frame is as many commands before as after.
	e.payload, e.replies, e.after = st.mode().frame(e.payload, e.replies)
	feeds := a.waitedOn(e.payload) || a.redis.blocked.mentioned(e.payload)
	w, err := a.host.Propose(a.host.Take(st.stamped, false, feeds), e.encode(), e.volatile)
	if err != nil {
		return slot{reply: resp.Error("TRYAGAIN gait replica: " + err.Error())}
	}
	done := make(chan struct{})
	st.lastWrite, st.lastWriteDone = w, done
	return slot{done: done, fill: func() []byte {
		raw, index, err := w.Wait()
		if err != nil {
			return resp.Error("ERR gait replica: " + err.Error())
		}
		if index > st.lastIndex.Load() {
			st.lastIndex.Store(index)
		}
		return raw
	}}
}

// readSlot starts a read at once, after the connection's last write is
// acknowledged; its reply still goes out in request order.
func (a *agent) readSlot(st *clientState, payload []byte, pinned bool) slot {
	if s, ok := a.fastRead(st, payload, pinned); ok {
		return s
	}
	done := make(chan struct{})
	st.lastRead = done
	after, md := st.lastWriteDone, st.mode()
	var raw []byte
	go func() {
		defer close(done)
		if after != nil {
			<-after
		}
		var err error
		if raw, err = a.redisRead(st, md, payload, pinned); err != nil {
			raw = resp.Error("ERR gait replica: " + strings.TrimSpace(err.Error()))
		}
	}()
	return slot{fill: func() []byte { <-done; return raw }}
}

// redisRead serves a read of st's in mode md: pinned, from the local
// redis-server only.
func (a *agent) redisRead(st *clientState, md mode, payload []byte, pinned bool) ([]byte, error) {
	cmd := replica.Command{Class: replica.ClassRead, Data: encodeRead(md, payload), Pinned: pinned}
	return a.host.Read(context.Background(), st.lastIndex.Load(), cmd)
}

// rewrite makes a time-relative command absolute (Spec.Rewrite) with this
// agent's clock. A relative expiry counts, as in redis, from when the
// command runs on the client's server: where this replica has yet to apply
// writes the client saw acknowledged (another replica answered first), the
// clock is read once it has (up to the write timeout; not while it limps,
// which its clients must not feel). Read earlier, the time could pass
// before this server applies the expiry, and redis then deletes the key
// inside PEXPIREAT rather than expiring it: Redis's suite's test of
// expire-cycle latency events (its million-SADD script ran seconds longer
// on the client's server than on the one that answered). Every replica
// applies the same absolute time; one that applies it after that time
// deletes the key there, as before.
func (a *agent) rewrite(st *clientState, sp rediscmd.Spec, args [][]byte) [][]byte {
	out, changed := sp.Rewrite(args, time.Now())
	own := st.lastIndex.Load()
	if !sp.Expires || !changed || a.host.Applied() >= own || a.host.Limping() {
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.WriteTimeout)
	defer cancel()
	a.host.WaitApplied(ctx, own)
	out, _ = sp.Rewrite(args, time.Now())
	return out
}

// ownWritesFirst has a command about the local redis-server wait until that
// server has applied the connection's own writes (up to the write timeout):
// INFO's counters and errorstats then count them, as one redis-server
// would, although another replica answered the write first.
func (a *agent) ownWritesFirst(st *clientState, s slot) slot {
	fill := s.fill
	s.fill = func() []byte {
		ctx, cancel := context.WithTimeout(context.Background(), a.cfg.WriteTimeout)
		a.host.WaitApplied(ctx, st.lastIndex.Load())
		cancel()
		return fill()
	}
	return s
}

// localSlot answers a command about the local redis-server itself, in the
// client's mode md.
func (a *agent) localSlot(md mode, payload []byte) slot {
	return slot{fill: func() []byte {
		raw, err := a.reads.do(md, payload)
		if err != nil {
			return resp.Error("ERR gait replica: " + strings.TrimSpace(err.Error()))
		}
		return raw
	}}
}

// infoSlot answers INFO from the local redis-server, with the agent's own
// count of clients and of blocked clients: the clients are the agent's,
// and one that waits in BLPOP waits in its agent, never in a redis-server.
func (a *agent) infoSlot(md mode, payload []byte) slot {
	s := a.localSlot(md, payload)
	fill := s.fill
	s.fill = func() []byte {
		a.mu.Lock()
		conns := len(a.conns)
		a.mu.Unlock()
		raw := patchInfo(fill(), "connected_clients", int64(conns))
		return a.patchCommandStats(a.patchTrackingInfo(patchInfo(raw, "blocked_clients", a.blockedClients.Load())))
	}
	return s
}

// patchInfo sets field's value in an INFO reply (a bulk or verbatim string
// of "field:value" lines) to n.
func patchInfo(raw []byte, field string, n int64) []byte {
	_, v, err := resp.ReadReply(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil || (v.Kind != '$' && v.Kind != '=') || v.Null {
		return raw
	}
	key := []byte("\n" + field + ":")
	i := bytes.Index(v.Str, key)
	if i < 0 {
		return raw
	}
	start := i + len(key)
	end := start + bytes.IndexByte(v.Str[start:], '\r')
	if end < start {
		return raw
	}
	v.Str = append(append(append([]byte(nil), v.Str[:start]...), strconv.FormatInt(n, 10)...), v.Str[end:]...)
	return appendValue(nil, v)
}

// waitAllSlot answers WAITALL [timeout-ms]: once every replica has applied the
// connection's last write, or the timeout (default the write timeout)
// passed, the number of replicas that have.
func (a *agent) waitAllSlot(st *clientState, args [][]byte) slot {
	timeout := a.cfg.WriteTimeout
	if len(args) > 2 {
		return slot{reply: resp.Error("ERR wrong number of arguments for 'waitall' command")}
	}
	if len(args) == 2 {
		ms, err := strconv.ParseInt(string(args[1]), 10, 64)
		if err != nil || ms < 0 {
			return slot{reply: resp.Error("ERR timeout is not an integer or out of range")}
		}
		if ms > 0 {
			timeout = time.Duration(ms) * time.Millisecond
		}
	}
	w := st.lastWrite
	if w == nil {
		n := a.host.Replicas()
		return slot{reply: resp.Int(n)}
	}
	return slot{fill: func() []byte {
		return resp.Int(w.WaitAll(timeout))
	}}
}

package redis

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gait-dev/gait/internal/replica"
	"github.com/gait-dev/gait/internal/resp"
)

// redisTimeout bounds one exchange with the local redis-server, so a hung
// server shows up as an error rather than a stuck agent.
const redisTimeout = 30 * time.Second

// redisConn is one connection to the local redis-server.
type redisConn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
	// rd and wd are a redisMux connection's read and write deadlines.
	rd, wd lazyDeadline
	// pause, on the applier's connection, is when the agent's CLIENT PAUSE
	// ends (Unix nanoseconds; 0: none, pause.go). While it holds, the local
	// redis-server is paused too, so it expires no key (redis neither
	// actively nor lazily expires keys while paused), and the applier's
	// every send goes between CLIENT UNPAUSE and a CLIENT PAUSE WRITE for
	// what is left: redis runs the commands of one read one after another,
	// so no expiry happens between them (but one between the reads of a
	// write over 16 KiB may), and its writes are not held by the pause.
	// skip and trail count the replies of those two not yet read.
	pause       *atomic.Int64
	skip, trail int
	// reading says the commands sent now only read (a snapshot's): they
	// go to a paused server as they are, since a read run between the
	// brackets would expire the keys it finds expired.
	reading bool
}

var unpauseCmd = resp.AppendCommand(nil, []byte("CLIENT"), []byte("UNPAUSE"))

func dialRedis(addr string) (*redisConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("connect to redis %s: %w", addr, err)
	}
	c = replica.RawIO(c)
	return &redisConn{c: c, r: bufio.NewReaderSize(c, 64<<10), w: bufio.NewWriterSize(c, 64<<10)}, nil
}

// do sends payload and reads n replies; it returns the raw bytes of the last.
func (c *redisConn) do(payload []byte, n int) ([]byte, resp.Value, error) {
	if err := c.send(payload); err != nil {
		return nil, resp.Value{}, err
	}
	if err := c.skipPause(); err != nil {
		return nil, resp.Value{}, err
	}
	var raw []byte
	var v resp.Value
	for range n {
		var err error
		if raw, v, err = resp.ReadReply(c.r); err != nil {
			return nil, resp.Value{}, err
		}
	}
	return raw, v, nil
}

// send writes payload; the deadline it sets also bounds reading the replies.
func (c *redisConn) send(payload []byte) error {
	c.c.SetDeadline(time.Now().Add(redisTimeout))
	for ; c.trail > 0; c.trail-- {
		if _, _, err := resp.ReadReply(c.r); err != nil {
			return fmt.Errorf("read reply of CLIENT PAUSE: %w", err)
		}
	}
	var until int64
	if c.pause != nil && !c.reading {
		until = c.pause.Load()
	}
	if until != 0 {
		c.w.Write(unpauseCmd)
		c.skip = 1
	}
	if _, err := c.w.Write(payload); err != nil {
		return fmt.Errorf("write to redis: %w", err)
	}
	if until != 0 {
		if left := time.Until(time.Unix(0, until)).Milliseconds(); left > 0 {
			c.w.Write(resp.AppendCommand(nil, []byte("CLIENT"), []byte("PAUSE"), strconv.AppendInt(nil, left, 10), []byte("WRITE")))
			c.trail = 1
		} else {
			c.pause.CompareAndSwap(until, 0)
		}
	}
	if err := c.w.Flush(); err != nil {
		return fmt.Errorf("write to redis: %w", err)
	}
	return nil
}

// onlyReads marks what is sent until the returned func runs as reads
// (see reading).
func (c *redisConn) onlyReads() func() {
	c.reading = true
	return func() { c.reading = false }
}

// value reads one reply, decoded.
func (c *redisConn) value() (resp.Value, error) {
	if err := c.skipPause(); err != nil {
		return resp.Value{}, err
	}
	_, v, err := resp.ReadReply(c.r)
	return v, err
}

// skipPause reads the reply of the CLIENT UNPAUSE that went before the
// commands sent last (see pause).
func (c *redisConn) skipPause() error {
	for ; c.skip > 0; c.skip-- {
		if _, _, err := resp.ReadReply(c.r); err != nil {
			return fmt.Errorf("read reply of CLIENT UNPAUSE: %w", err)
		}
	}
	return nil
}

// replies reads n replies and returns the raw bytes of the last but after.
func (c *redisConn) replies(n, after int) ([]byte, error) {
	var kept []byte
	for i := range n {
		raw, err := c.reply()
		if err != nil {
			return nil, err
		}
		if i == n-1-after {
			kept = bytes.Clone(raw)
		}
	}
	return kept, nil
}

// reply reads one reply's raw bytes, valid until the next read. A reply
// whole in the buffer (what replies mostly are) is measured (resp.Skip)
// and taken as it is there; anything else is read by resp.ReadReply. An
// applier reads a reply per command it applies, and the reads' mux one per
// read: reading them through ReadReply (two copies each, and a third for a
// bulk) was a tenth of BenchmarkWriteReplicated's CPU.
func (c *redisConn) reply() ([]byte, error) {
	if c.skip > 0 {
		if err := c.skipPause(); err != nil {
			return nil, err
		}
	}
	if c.r.Buffered() == 0 {
		if _, err := c.r.Peek(1); err != nil {
			return nil, fmt.Errorf("read reply: %w", err)
		}
	}
	b, _ := c.r.Peek(c.r.Buffered())
	if k, ok := resp.Skip(b); ok && k >= 2 && b[k-2] == '\r' && b[k-1] == '\n' {
		c.r.Discard(k)
		return b[:k], nil
	}
	raw, _, err := resp.ReadReply(c.r)
	return raw, err
}

// batchReplies reads a batch entry's n replies, of which the first and
// last frame (the client's mode) are no one's: all the others,
// concatenated, for the client, and those of its writes (not at the
// positions in reads, counted after the frame, ascending), concatenated,
// for the digest.
func (c *redisConn) batchReplies(n, frame int, reads []int) (all, writes []byte, err error) {
	for i := range n {
		raw, err := c.reply()
		if err != nil {
			return nil, nil, err
		}
		if i < frame || i >= n-frame {
			continue
		}
		all = append(all, raw...)
		if len(reads) > 0 && reads[0] == i-frame {
			reads = reads[1:]
			continue
		}
		writes = append(writes, raw...)
	}
	return all, writes, nil
}

// command sends one command and returns its decoded reply; a redis error
// reply becomes a Go error.
func (c *redisConn) command(args ...string) (resp.Value, error) {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	_, v, err := c.do(resp.AppendCommand(nil, bs...), 1)
	if err == nil && v.Kind == '-' {
		err = fmt.Errorf("redis %s: %s", args[0], v.Str)
	}
	return v, err
}

func (c *redisConn) close() error { return c.c.Close() }

// lazyDeadline is a connection's deadline for one direction, set again
// only once less than three quarters of its timeout is left, so a stalled
// exchange fails after three quarters of the timeout to all of it. Setting
// a deadline updates a runtime timer; set before every reply (a GET's
// reply to its client, its read on the local redis-server) that was about
// 1.3 % of the leader's CPU at GET c=8. Only one goroutine at a time
// renews a given one.
type lazyDeadline struct{ at time.Time }

// renew returns the deadline to set and true, or false when the one set
// is still far enough away.
func (d *lazyDeadline) renew(timeout time.Duration) (time.Time, bool) {
	now := time.Now()
	if d.at.Sub(now) >= timeout*3/4 {
		return time.Time{}, false
	}
	d.at = now.Add(timeout)
	return d.at, true
}

// redisMux sends reads to the local redis-server over a few pipelined
// connections: requests go out back to back, and since redis answers one
// connection's requests in order, replies are matched by their position. A
// thousand concurrent reads cost a few connections, not a thousand.
type redisMux struct {
	addr  string
	conns []*muxConn
	next  atomic.Uint64
}

// muxCall is one request on a pipelined connection: payload carries
// replies commands back to back (at least one), raw is the reply of the
// keep-th (from 0).
type muxCall struct {
	payload []byte
	replies int
	keep    int
	raw     []byte
	err     error
	done    chan struct{}
}

// muxConn is one pipelined connection; it redials after a failure.
type muxConn struct {
	addr     string
	calls    chan *muxCall // to the writer, while no connection is up
	inflight chan *muxCall // written, awaiting their replies, in order
	stop     chan struct{}
	// mu guards up, pending, spare and changes to flushing. While a connection is
	// up, a caller writes its call itself: a hop to the writer goroutine
	// and back cost a read as much as its round trip to redis.
	mu sync.Mutex
	up *redisConn
	// pending holds the payloads of calls put in flight and not yet
	// written, while flushing says one caller is writing them out: a call
	// that arrives meanwhile leaves its bytes to that caller, so reads of
	// many clients share one write to redis (one syscall and one packet,
	// not one per read). spare is the buffer last written, for reuse.
	pending, spare []byte
	flushing       atomic.Bool
}

// muxDepth bounds the requests queued or in flight on one connection.
const muxDepth = 4096

func newRedisMux(addr string, conns int) *redisMux {
	m := &redisMux{addr: addr}
	for range conns {
		c := &muxConn{addr: addr, calls: make(chan *muxCall, muxDepth), inflight: make(chan *muxCall, muxDepth),
			stop: make(chan struct{})}
		m.conns = append(m.conns, c)
		go c.run()
	}
	return m
}

// do sends one command (payload, one reply) in the client's mode md and
// returns its raw reply.
func (m *redisMux) do(md mode, payload []byte) ([]byte, error) {
	p, n, after := md.frame(payload, 1)
	return m.doSome(p, n, n-1-after)
}

// doSome sends commands that must reach redis back to back on one
// connection (payload, n replies) and returns the raw reply of the keep-th.
func (m *redisMux) doSome(payload []byte, n, keep int) ([]byte, error) {
	call := m.start(payload, n, keep)
	<-call.done
	return call.raw, call.err
}

// start queues commands as doSome does and returns at once; the call's
// done channel closes once its reply (or error) is in.
func (m *redisMux) start(payload []byte, n, keep int) *muxCall {
	// A call joins the connection whose writer is gathering calls, else
	// the next one.
	c := m.conns[m.next.Load()%uint64(len(m.conns))]
	if !c.flushing.Load() {
		c = m.conns[m.next.Add(1)%uint64(len(m.conns))]
	}
	call := &muxCall{payload: payload, replies: n, keep: keep, done: make(chan struct{})}
	if c.writeNow(call) {
		return call
	}
	select {
	case c.calls <- call:
	case <-c.stop:
		call.err = errors.New("agent stopped")
		close(call.done)
	}
	return call
}

// writeNow writes call on the connection that is up, if one is, and
// tells whether it did. A call whose write fails stays in flight: the
// reader fails it once the connection is closed.
func (c *muxConn) writeNow(call *muxCall) bool {
	c.mu.Lock()
	if c.up == nil {
		c.mu.Unlock()
		return false
	}
	c.send(call)
	return true
}

// send puts call in flight and has it written; called with mu held, which
// it releases. The caller that finds no one writing writes everything
// pending, again until nothing is, to whichever connection is up.
func (c *muxConn) send(call *muxCall) {
	c.inflight <- call
	c.pending = append(c.pending, call.payload...)
	if c.flushing.Load() {
		c.mu.Unlock()
		return
	}
	c.flushing.Store(true)
	c.mu.Unlock()
	// Goroutines that are runnable already (other clients' requests,
	// woken by the same network poll) add theirs before the write: with
	// one thread per agent (--procs 1) no other could while it runs.
	runtime.Gosched()
	c.mu.Lock()
	for len(c.pending) > 0 && c.up != nil {
		conn, buf := c.up, c.pending
		c.pending = c.spare[:0]
		c.mu.Unlock()
		if at, ok := conn.wd.renew(redisTimeout); ok {
			conn.c.SetWriteDeadline(at)
		}
		_, err := conn.c.Write(buf)
		c.mu.Lock()
		c.spare = buf
		if err != nil {
			conn.close()
			if c.up == conn {
				c.up = nil
			}
		}
	}
	c.flushing.Store(false)
	c.mu.Unlock()
}

func (m *redisMux) close() {
	for _, c := range m.conns {
		close(c.stop)
	}
}

// run dials, then writes calls until the connection fails; the reader
// fails the calls in flight, and run dials again.
func (c *muxConn) run() {
	for {
		select {
		case <-c.stop:
			c.mu.Lock()
			c.up = nil
			c.mu.Unlock()
			c.drain(errors.New("agent stopped"))
			return
		default:
		}
		conn, err := dialRedis(c.addr)
		if err != nil {
			c.failNext(err)
			continue
		}
		broken := make(chan struct{})
		go c.read(conn, broken)
		c.mu.Lock()
		// What is pending belongs to calls of the connection before, which
		// drain failed.
		c.up, c.pending = conn, c.pending[:0]
		c.mu.Unlock()
		c.write(conn, broken)
		conn.close()
		<-broken
		c.mu.Lock()
		c.up = nil
		c.mu.Unlock()
		// A call may have been put in flight after the reader stopped: fail
		// it, or the next connection would hand it another call's reply.
		c.drain(errors.New("connection to redis lost"))
	}
}

// failNext fails one waiting call after a failed dial, pacing the redials.
func (c *muxConn) failNext(err error) {
	select {
	case call := <-c.calls:
		call.err = err
		close(call.done)
	case <-c.stop:
	case <-time.After(100 * time.Millisecond):
	}
}

// write writes the calls queued while no connection was up, and any a
// caller queues before it sees this one up.
func (c *muxConn) write(conn *redisConn, broken chan struct{}) {
	for {
		var call *muxCall
		select {
		case call = <-c.calls:
		case <-broken:
			return
		case <-c.stop:
			return
		}
		c.mu.Lock()
		if c.up != conn {
			c.mu.Unlock()
			call.err = errors.New("connection to redis lost")
			close(call.done)
			return
		}
		c.send(call)
		c.mu.Lock()
		up := c.up != nil
		c.mu.Unlock()
		if !up {
			return // the reader fails what is in flight once the connection closes
		}
	}
}

func (c *muxConn) read(conn *redisConn, broken chan struct{}) {
	defer close(broken)
	for {
		var call *muxCall
		select {
		case call = <-c.inflight:
		case <-c.stop:
			conn.close()
			c.drain(errors.New("agent stopped"))
			return
		}
		var err error
		for i := 0; i < call.replies && err == nil; i++ {
			if at, ok := conn.rd.renew(redisTimeout); ok {
				conn.c.SetReadDeadline(at)
			}
			var raw []byte
			if raw, err = conn.reply(); i == call.keep && err == nil {
				call.raw = bytes.Clone(raw)
			}
		}
		call.err = err
		close(call.done)
		if err != nil {
			conn.close()
			c.drain(fmt.Errorf("read from redis: %w", err))
			return
		}
	}
}

// drain fails every call in flight.
func (c *muxConn) drain(err error) {
	for {
		select {
		case call := <-c.inflight:
			call.err = err
			close(call.done)
		default:
			return
		}
	}
}

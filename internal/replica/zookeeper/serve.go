// Package zookeeper is gait replica's adapter for unmodified ZooKeeper
// servers (RP ZooKeeper, Zoolander thesis ch. 5, without its repeater).
// Clients speak ZooKeeper's own protocol to any agent. Writes (every kind
// of create, delete, setData, setACL, multi, check) and session changes
// (connect, close, a session's keep-alive) go through the log; every
// replica applies them to its own server in log order. Reads go to the
// fastest replica the read mode allows, and a read that sets a watch to
// the agent's own server, where the watch will fire. Sessions belong to
// the log, not to any server: their ids are log indexes and they expire by
// the log's clock, so every replica drops the same ephemeral nodes before
// the same entry; zxids, times and owners in replies come from the log too
// (meta.go), so replicas reply byte for byte alike.
package zookeeper

import (
	"bufio"
	"context"
	"crypto/rand"
	"net"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/replica"
	"github.com/gait-dev/gait/third_party/zkwire"
)

// readTimeout bounds one read's wait for a replica.
const readTimeout = 10 * time.Second

// Adapter serves ZooKeeper's protocol in front of gait replica's core.
// The zero value is ready.
type Adapter struct {
	mu      sync.Mutex
	backend *backend
	conns   map[int64]*clientConn // sessions whose client is connected here
}

// Name is "zookeeper".
func (a *Adapter) Name() string { return "zookeeper" }

// openWait bounds how long Open waits for a server that does not serve
// yet: a ZooKeeper JVM accepts connections a while before it serves
// (closing them at once), and after a host's crash the agent and its
// server are restarted together.
const openWait = 60 * time.Second

// Open connects to the local ZooKeeper server, waiting up to openWait
// for it to serve.
func (a *Adapter) Open(addr string) (replica.Backend, error) {
	b, err := openBackend(addr, a.deliver)
	for deadline := time.Now().Add(openWait); err != nil && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		b, err = openBackend(addr, a.deliver)
	}
	if err != nil {
		return nil, err
	}
	b.reconnected = a.hangUp
	a.mu.Lock()
	a.backend = b
	a.mu.Unlock()
	return b, nil
}

// hangUp disconnects every client connected here: their watches lived on
// sessions of a server the backend had to reconnect to. They reconnect
// and set their watches again (setWatches).
func (a *Adapter) hangUp() {
	a.mu.Lock()
	var all []*clientConn
	for _, c := range a.conns {
		all = append(all, c)
	}
	a.mu.Unlock()
	for _, c := range all {
		c.close()
	}
}

func (a *Adapter) current() *backend {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.backend
}

// deliver hands a watch's event, or a session's expiry, to the session's
// connection here, if it has one.
func (a *Adapter) deliver(session int64, ev zkwire.WatcherEvent) {
	a.mu.Lock()
	c := a.conns[session]
	a.mu.Unlock()
	if c == nil {
		return
	}
	// Never wait here: events come from the applier (an expiry) and from
	// the server's session; a client too slow to take them is hung up on.
	if !c.offer(ready(packet(zkwire.ReplyHeader{Xid: zkwire.XidNotification, Zxid: -1}, &ev))) {
		c.close()
		return
	}
	if ev.State == zkwire.StateExpired && !c.offer(nil) { // then hang up
		c.close()
	}
}

// A reply source: the bytes to write once it is the connection's turn
// (nil bytes: hang up).
type outgoing func() ([]byte, error)

func ready(p []byte) outgoing { return func() ([]byte, error) { return p, nil } }

// clientConn is one client connection.
type clientConn struct {
	c       net.Conn
	cl      replica.Client
	session int64
	timeout time.Duration
	out     chan outgoing
	closed  chan struct{}
	written chan struct{} // closed once the writer has stopped
	once    sync.Once
	touched time.Time // when this connection last proposed a keep-alive
}

func (c *clientConn) enqueue(o outgoing) {
	select {
	case c.out <- o:
	case <-c.closed:
	}
}

// offer queues o if there is room, without waiting.
func (c *clientConn) offer(o outgoing) bool {
	select {
	case c.out <- o:
		return true
	default:
		return false
	}
}

func (c *clientConn) close() { c.once.Do(func() { close(c.closed); c.c.Close() }) }

// ServeConn serves one client connection: its connect request, then its
// requests in order, each reply in the order of the requests.
func (a *Adapter) ServeConn(nc net.Conn, cl replica.Client) {
	defer nc.Close()
	r := bufio.NewReaderSize(nc, 64<<10)
	_ = nc.SetReadDeadline(time.Now().Add(readTimeout))
	p, err := readPacket(r, nil)
	if err != nil {
		return
	}
	_ = nc.SetReadDeadline(time.Time{})
	var req zkwire.ConnectRequest
	if _, err := zkwire.Decode(p, &req); err != nil {
		return
	}
	cmd := command{kind: kindConnect, timeout: req.TimeOut, secret: make([]byte, 16)}
	if req.SessionID != 0 {
		cmd = command{kind: kindResume, session: req.SessionID, timeout: req.TimeOut, secret: req.Passwd}
	} else if _, err := rand.Read(cmd.secret); err != nil {
		return
	}
	reply, _, err := cl.Write(replica.Command{Class: replica.ClassWrite, Data: cmd.encode()}).Wait()
	if err != nil {
		return
	}
	var resp zkwire.ConnectResponse
	if len(reply) < 4 {
		return
	}
	if _, err := zkwire.Decode(reply[4:], &resp); err != nil {
		return
	}
	if _, err := nc.Write(reply); err != nil || resp.SessionID == 0 {
		return // an expired session is told so and hung up on
	}
	c := &clientConn{c: nc, cl: cl, session: resp.SessionID, timeout: time.Duration(resp.TimeOut) * time.Millisecond,
		out: make(chan outgoing, 1024), closed: make(chan struct{}), written: make(chan struct{}), touched: time.Now()}
	a.attach(c)
	defer a.detach(c)
	go c.writeLoop()
	c.readLoop(r)
}

// attach makes c the session's connection here; an older one is hung up
// on, as ZooKeeper does when a session moves.
func (a *Adapter) attach(c *clientConn) {
	a.mu.Lock()
	if a.conns == nil {
		a.conns = map[int64]*clientConn{}
	}
	old := a.conns[c.session]
	a.conns[c.session] = c
	a.mu.Unlock()
	if old != nil {
		old.close()
	}
}

func (a *Adapter) detach(c *clientConn) {
	c.close()
	a.mu.Lock()
	mine := a.conns[c.session] == c
	if mine {
		delete(a.conns, c.session)
	}
	a.mu.Unlock()
	if b := a.current(); mine && b != nil {
		b.dropWatches(c.session)
	}
}

func (c *clientConn) writeLoop() {
	defer close(c.written)
	w := bufio.NewWriter(c.c)
	for {
		var o outgoing
		select {
		case o = <-c.out:
		case <-c.closed:
			return
		}
		p, err := []byte(nil), error(nil)
		if o != nil {
			p, err = o()
		}
		if err != nil || p == nil {
			w.Flush()
			c.close()
			return
		}
		if _, err := w.Write(p); err != nil {
			c.close()
			return
		}
		if len(c.out) == 0 {
			if err := w.Flush(); err != nil {
				c.close()
				return
			}
		}
	}
}

func (c *clientConn) readLoop(r *bufio.Reader) {
	var buf []byte
	for {
		p, err := readPacket(r, buf)
		if err != nil {
			return
		}
		buf = p[:0]
		var hdr zkwire.RequestHeader
		n, err := zkwire.Decode(p, &hdr)
		if err != nil {
			return
		}
		if !c.serve(hdr, append([]byte(nil), p[n:]...)) {
			// The last reply, then hang up (closeSession, an expired
			// session, a refused setAuth).
			select {
			case <-c.written:
			case <-time.After(readTimeout):
			}
			return
		}
	}
}

// serve handles one request; false ends the connection.
func (c *clientConn) serve(hdr zkwire.RequestHeader, record []byte) bool {
	req := command{kind: kindRequest, session: c.session, xid: hdr.Xid, opcode: hdr.Opcode, record: record}
	switch op := hdr.Opcode; {
	case op == zkwire.OpPing:
		c.keepAlive()
		c.enqueue(ready(packet(zkwire.ReplyHeader{Xid: zkwire.XidPing}, nil)))
	case op == zkwire.OpClose:
		pending := c.cl.Write(replica.Command{Class: replica.ClassWrite, Data: command{kind: kindClose, session: c.session, xid: hdr.Xid}.encode()})
		c.enqueue(func() ([]byte, error) { p, _, err := pending.Wait(); return p, err })
		c.enqueue(nil)
		return false
	case op == zkwire.OpSync:
		c.sync(hdr.Xid, record)
	case isWrite(op):
		pending := c.cl.Write(replica.Command{Class: replica.ClassWrite, Data: req.encode()})
		c.enqueue(func() ([]byte, error) { p, _, err := pending.Wait(); return p, err })
	case isRead(op) || op == zkwire.OpSetWatches:
		c.keepAlive()
		ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
		p, err := c.cl.Read(ctx, replica.Command{Class: replica.ClassRead, Data: req.encode(), Pinned: pinned(op, record)})
		cancel()
		if err != nil {
			return false // the client reconnects, to this agent or another
		}
		c.enqueue(ready(p))
	case op == zkwire.OpSetAuth:
		// Writes run as the adapter's own sessions, which hold no client's
		// credentials: refused rather than let an ACL check pass or fail
		// for the wrong identity.
		c.enqueue(ready(packet(zkwire.ReplyHeader{Xid: zkwire.XidAuth, Err: zkwire.ErrAuthFailed}, nil)))
		c.enqueue(nil)
		return false
	default:
		c.enqueue(ready(packet(zkwire.ReplyHeader{Xid: hdr.Xid, Err: zkwire.ErrUnimplemented}, nil)))
	}
	return true
}

func isRead(op int32) bool {
	switch op {
	case zkwire.OpExists, zkwire.OpGetData, zkwire.OpGetChildren, zkwire.OpGetChildren2, zkwire.OpGetACL:
		return true
	}
	return false
}

// pinned says whether a read sets a watch (or re-sets them), which only
// this agent's server may serve: the watch fires where it was set.
func pinned(op int32, record []byte) bool {
	switch op {
	case zkwire.OpSetWatches:
		return true
	case zkwire.OpGetACL:
		return false
	}
	var r zkwire.PathWatchRequest
	_, err := zkwire.Decode(record, &r)
	return err == nil && r.Watch
}

// keepAlive tells the log the session's client is alive, at most three
// times per session timeout: the session expires, on every replica at the
// same entry, once the log's clock passes its last keep-alive by its timeout.
func (c *clientConn) keepAlive() {
	if time.Since(c.touched) < c.timeout/3 {
		return
	}
	c.touched = time.Now()
	c.cl.Write(replica.Command{Class: replica.ClassWrite, Data: command{kind: kindTouch, session: c.session}.encode()})
}

// sync is write-all-duplicate (the thesis's §5.2.2): a no-op through the
// log, answered once every replica applied it, so a read after it sees
// every write acknowledged before it, on any replica.
func (c *clientConn) sync(xid int32, record []byte) {
	var path zkwire.PathRequest
	if _, err := zkwire.Decode(record, &path); err != nil {
		c.enqueue(ready(packet(zkwire.ReplyHeader{Xid: xid, Err: zkwire.ErrMarshallingError}, nil)))
		return
	}
	pending := c.cl.Write(replica.Command{Class: replica.ClassWrite, Data: []byte{kindTick}})
	c.enqueue(func() ([]byte, error) {
		_, index, err := pending.Wait()
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
		defer cancel()
		if _, err := c.cl.WaitAll(ctx); err != nil {
			return nil, err
		}
		return packet(zkwire.ReplyHeader{Xid: xid, Zxid: int64(index)}, &zkwire.PathResponse{Path: path.Path}), nil
	})
}

var _ replica.Adapter = (*Adapter)(nil)

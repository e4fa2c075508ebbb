package zookeeper

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/gait-dev/gait/third_party/zkwire"
)

// maxPacket bounds one packet read from a client or a server: ZooKeeper's
// own jute.maxbuffer default (1 MiB) with room for a header.
const maxPacket = 1<<20 + 1<<10

// readPacket reads one length-prefixed packet.
func readPacket(r io.Reader, buf []byte) ([]byte, error) {
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(l[:])))
	if n < 0 || n > maxPacket {
		return nil, fmt.Errorf("packet of %d bytes: want 0 to %d", n, maxPacket)
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// frame prefixes records with their length, as one packet.
func frame(records ...any) ([]byte, error) {
	b, err := zkwire.Append(make([]byte, 4, 64), records...)
	if err != nil {
		return nil, err
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b, nil
}

// reply is one answer from the server: its header and its body's bytes.
type reply struct {
	hdr  zkwire.ReplyHeader
	body []byte
	err  error
}

// zkConn is one session of the adapter's own on the local ZooKeeper
// server: requests go out in order and ZooKeeper answers a session's
// requests in order, so replies are matched first in, first out; watch
// notifications go to events; pings keep the session alive while idle.
type zkConn struct {
	c       net.Conn
	session int64
	timeout time.Duration
	events  func(zkwire.WatcherEvent) // nil: notifications are dropped

	mu      sync.Mutex // guards w, xid, waiting, closed, last
	w       *bufio.Writer
	xid     int32
	waiting []chan reply
	closed  error
	last    time.Time // when a request last went out
	done    chan struct{}
}

// dialZK opens a new session on the server at addr.
func dialZK(addr string, timeout time.Duration, events func(zkwire.WatcherEvent)) (*zkConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("zookeeper at %s: %w", addr, err)
	}
	req, err := frame(&zkwire.ConnectRequest{TimeOut: int32(timeout.Milliseconds()), Passwd: make([]byte, 16)}, &struct{ ReadOnly bool }{})
	if err == nil {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = c.Write(req)
	}
	var resp zkwire.ConnectResponse
	if err == nil {
		var p []byte
		if p, err = readPacket(c, nil); err == nil {
			_, err = zkwire.Decode(p, &resp)
		}
	}
	if err == nil && resp.SessionID == 0 {
		err = errors.New("refused the session")
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("zookeeper at %s: connect: %w", addr, err)
	}
	_ = c.SetDeadline(time.Time{})
	z := &zkConn{c: c, session: resp.SessionID, timeout: time.Duration(resp.TimeOut) * time.Millisecond,
		events: events, w: bufio.NewWriter(c), last: time.Now(), done: make(chan struct{})}
	go z.readLoop()
	go z.pingLoop()
	return z, nil
}

// send writes one request and returns where its reply will come.
func (z *zkConn) send(opcode int32, body []byte) <-chan reply {
	ch := make(chan reply, 1)
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.closed != nil {
		ch <- reply{err: z.closed}
		return ch
	}
	z.xid++
	var l [12]byte
	binary.BigEndian.PutUint32(l[0:], uint32(8+len(body)))
	binary.BigEndian.PutUint32(l[4:], uint32(z.xid))
	binary.BigEndian.PutUint32(l[8:], uint32(opcode))
	z.w.Write(l[:])
	z.w.Write(body)
	if err := z.w.Flush(); err != nil {
		z.failLocked(err)
		ch <- reply{err: z.closed}
		return ch
	}
	z.waiting = append(z.waiting, ch)
	z.last = time.Now()
	return ch
}

// call sends one request and waits for its reply.
func (z *zkConn) call(opcode int32, body []byte) (zkwire.ReplyHeader, []byte, error) {
	r := <-z.send(opcode, body)
	return r.hdr, r.body, r.err
}

// callRecord encodes req and calls.
func (z *zkConn) callRecord(opcode int32, req any) (zkwire.ReplyHeader, []byte, error) {
	body, err := zkwire.Append(nil, req)
	if err != nil {
		return zkwire.ReplyHeader{}, nil, err
	}
	return z.call(opcode, body)
}

func (z *zkConn) readLoop() {
	r := bufio.NewReader(z.c)
	for {
		p, err := readPacket(r, nil)
		if err != nil {
			z.fail(fmt.Errorf("zookeeper session %#x: %w", z.session, err))
			return
		}
		var hdr zkwire.ReplyHeader
		n, err := zkwire.Decode(p, &hdr)
		if err != nil {
			z.fail(fmt.Errorf("zookeeper session %#x: reply header: %w", z.session, err))
			return
		}
		switch hdr.Xid {
		case zkwire.XidNotification:
			var ev zkwire.WatcherEvent
			if _, err := zkwire.Decode(p[n:], &ev); err == nil && z.events != nil {
				z.events(ev)
			}
			continue
		case zkwire.XidPing:
			continue
		}
		z.mu.Lock()
		if len(z.waiting) == 0 {
			z.mu.Unlock()
			z.fail(fmt.Errorf("zookeeper session %#x: a reply (xid %d) nobody asked for", z.session, hdr.Xid))
			return
		}
		ch := z.waiting[0]
		z.waiting = z.waiting[1:]
		z.mu.Unlock()
		ch <- reply{hdr: hdr, body: p[n:]}
	}
}

// pingLoop pings while the session is idle, every third of its timeout.
func (z *zkConn) pingLoop() {
	every := max(z.timeout/3, 100*time.Millisecond)
	t := time.NewTicker(every / 2)
	defer t.Stop()
	for {
		select {
		case <-z.done:
			return
		case <-t.C:
		}
		z.mu.Lock()
		idle := time.Since(z.last) >= every && z.closed == nil
		if idle {
			var p [12]byte
			binary.BigEndian.PutUint32(p[0:], 8)
			xid, op := int32(zkwire.XidPing), int32(zkwire.OpPing)
			binary.BigEndian.PutUint32(p[4:], uint32(xid))
			binary.BigEndian.PutUint32(p[8:], uint32(op))
			z.w.Write(p[:])
			if err := z.w.Flush(); err != nil {
				z.failLocked(err)
			}
			z.last = time.Now()
		}
		z.mu.Unlock()
	}
}

func (z *zkConn) fail(err error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.failLocked(err)
}

func (z *zkConn) failLocked(err error) {
	if z.closed != nil {
		return
	}
	z.closed = err
	close(z.done)
	z.c.Close()
	for _, ch := range z.waiting {
		ch <- reply{err: err}
	}
	z.waiting = nil
}

// alive says why the session failed, or nil.
func (z *zkConn) alive() error {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.closed
}

// closeSession ends the session on the server, which deletes its
// ephemeral nodes, and closes the connection.
func (z *zkConn) closeSession() error {
	_, _, err := z.call(zkwire.OpClose, nil)
	z.fail(errors.New("closed"))
	return err
}

// drop closes the connection without ending the session.
func (z *zkConn) drop() { z.fail(errors.New("closed")) }

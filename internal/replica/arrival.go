package replica

import (
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Commands of different connections reach the log in the order their
// goroutines call raft, which need not be the order their bytes reached
// the agent: Go's scheduler may run the goroutine of a connection that
// became readable later first, and on a busy machine one is preempted
// between parsing and proposing. Redis's suite sends two BRPOPLPUSH on two
// connections back to back, and the client redis would serve first then
// waits for ever. So every request carries the time the kernel received
// its bytes (SO_TIMESTAMPNS), and writes and blocking commands take a
// ticket in that order: a blocking command waits for every earlier write
// or blocking command still being handled (they decide what it finds and
// its place among the waiters), a write only for earlier blocking
// commands (they must be queued before the write gives them data). A
// blocking command also waits until arrivalGrace after its bytes arrived,
// so a connection whose bytes came earlier but whose goroutine has not
// read them yet takes its ticket first; so does a write that names a key
// a client of this replica is blocked on, and it waits for every earlier
// write too (serving the blocked client may change a key an earlier EXEC
// watches). Other writes go in whatever order they did: a workload
// without blocking commands never waits here. What stays unordered: a
// plain write read before a blocking command sent earlier on another
// connection (nothing holds the write back for a command not read yet),
// two plain writes, and two connections of different agents.
type arrivals struct {
	mu   sync.Mutex
	next uint64
	// held are the tickets not yet given up, by arrival (then take order).
	held     []*ticket
	blocking int // how many of held are blocking commands
	// patience is arrivalWait, or another bound a test sets.
	patience time.Duration

	// A ticket's order covers the requests the agent has read; one that
	// arrived earlier on another connection whose goroutine has not read
	// it yet (a new connection not yet accepted or scheduled, on a busy
	// machine) would be overtaken: Redis's suite sends a blocking
	// XREADGROUP on a new connection and a DEL on its old one right
	// after, and the DEL went first. So once the agent has seen a
	// blocking command, a ticket first waits (up to its patience) while
	// the listener's accept queue is not empty or a watched connection
	// holds a request that arrived before it and has no place yet.
	// Watched are the connections accepted in the last youngFor (Redis's
	// suite opens a connection, PINGs, and sends the blocking command) and
	// those that sent a blocking command: a workload without blocking
	// commands never looks, and one with them pays a getsockopt per
	// proposal and a peek per watched connection. (A blocking command sent
	// first on an older connection, a write right after it on another,
	// is left unordered.)
	blockingSeen atomic.Bool
	listener     syscall.RawConn // nil: no accept queue to look at
	listenerFile *os.File        // the copy of the listener's socket listener reads
	accepting    atomic.Int64    // connections taken off it and not yet watched
	watchMu      sync.Mutex
	watched      map[*stampedConn]struct{}
}

// unreadPoll is how often a ticket looks again for the unread requests it
// waits for; youngFor how long a new connection is watched.
const (
	unreadPoll = 100 * time.Microsecond
	youngFor   = time.Second
)

// watch adds c to the connections whose unread requests tickets wait for.
func (q *arrivals) watch(c *stampedConn) {
	q.watchMu.Lock()
	defer q.watchMu.Unlock()
	if q.watched == nil {
		q.watched = map[*stampedConn]struct{}{}
	}
	q.watched[c] = struct{}{}
}

// unwatch ends watch.
func (q *arrivals) unwatch(c *stampedConn) {
	q.watchMu.Lock()
	defer q.watchMu.Unlock()
	delete(q.watched, c)
}

// sawBlocking records that a blocking command came, from c, which is
// watched from then on; called by c's own goroutine.
func (q *arrivals) sawBlocking(c *stampedConn) {
	q.blockingSeen.Store(true)
	if !c.blocker.Swap(true) {
		q.watch(c)
	}
}

// unreadBefore waits until no request that arrived before t has no place
// yet (see arrivals), or until deadline.
func (q *arrivals) unreadBefore(t *ticket, deadline time.Time) {
	if !q.blockingSeen.Load() {
		return
	}
	for q.acceptQueued() || q.watchedUnread(t) {
		if !time.Now().Before(deadline) {
			return
		}
		time.Sleep(unreadPoll)
	}
}

// accept takes the next connection off ln, counted as being accepted
// (acceptQueued) from before the kernel hands it over until accepted is
// called: in between it is neither in the accept queue nor watched. It
// waits for a connection in Go's network poller, on the listener's copy
// (setListener): a wait in poll(2) instead, a blocking system call, held
// the agent's only thread (--procs 1) until Go's sysmon took it back, up
// to 10 ms later, and every request that arrived meanwhile waited for it
// (GETs at 400/s on gait-redis: p99 13 ms, where redis-server alone has
// 0.4 ms).
func (q *arrivals) accept(ln net.Listener) (net.Conn, error) {
	if q.listener == nil {
		return ln.Accept()
	}
	nfd, aerr := -1, error(nil)
	err := q.listener.Read(func(fd uintptr) bool {
		q.accepting.Add(1)
		for {
			nfd, _, aerr = syscall.Accept4(int(fd), syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
			if aerr != syscall.EINTR && aerr != syscall.ECONNABORTED {
				break
			}
		}
		if aerr != nil {
			q.accepting.Add(-1)
		}
		return aerr != syscall.EAGAIN
	})
	if err == nil {
		err = aerr
	}
	if err != nil {
		return nil, fmt.Errorf("accept a client: %w", err)
	}
	f := os.NewFile(uintptr(nfd), "client")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		q.accepting.Add(-1)
		return nil, fmt.Errorf("accept a client: %w", err)
	}
	return c, nil
}

// setListener has accept take connections off f, a copy of the client
// listener's socket (stampListener); nil leaves accept to the listener.
func (q *arrivals) setListener(f *os.File) error {
	if f == nil {
		return nil
	}
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return fmt.Errorf("client listener: %w", err)
	}
	q.listener, q.listenerFile = raw, f
	return nil
}

// closeListener closes the listener's copy, which ends a waiting accept;
// the socket stops listening once the listener is closed too.
func (q *arrivals) closeListener() {
	if q.listenerFile != nil {
		q.listenerFile.Close()
	}
}

// accepted ends accept's count of a connection, once it is watched.
func (q *arrivals) accepted() {
	if q.listener != nil {
		q.accepting.Add(-1)
	}
}

// acceptQueued says connections wait in the listener's accept queue (TCP_INFO
// of a listening socket counts them in tcpi_unacked) or are being accepted.
func (q *arrivals) acceptQueued() bool {
	if q.listener == nil {
		return false
	}
	if q.accepting.Load() > 0 {
		return true
	}
	var queued bool
	q.listener.Control(func(fd uintptr) {
		info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		queued = err == nil && info.Unacked > 0
	})
	return queued
}

// watchedUnread says a watched connection other than t's holds a request
// that arrived before t and has no place yet. It stops watching the
// connections grown old that never blocked.
func (q *arrivals) watchedUnread(t *ticket) bool {
	q.watchMu.Lock()
	defer q.watchMu.Unlock()
	old := time.Now().Add(-youngFor).UnixNano()
	for c := range q.watched {
		if c.born < old && !c.blocker.Load() {
			delete(q.watched, c)
			continue
		}
		if c != t.conn && c.unreadBefore(t.at) {
			return true
		}
	}
	return false
}

// ticket is one request's place in arrival order.
type ticket struct {
	n        uint64
	at       int64 // when its bytes arrived, Unix ns
	conn     *stampedConn
	blocking bool
	// feeds marks a write that names a key a blocked client waits on: it
	// waits like a blocking command (grace, every earlier write), since
	// serving the client may change what an earlier write (an EXEC under
	// WATCH) finds.
	feeds bool
	done  bool
	wake  chan struct{} // closed when an earlier ticket is given up, while its owner waits
}

const (
	// arrivalWait bounds how long a proposal waits for an earlier
	// request: one whose goroutine stalls (a partial request, no raft
	// leader) delays the others at most this long, and is then overtaken.
	arrivalWait = 100 * time.Millisecond
	// arrivalGrace is how long after its bytes arrived a blocking command
	// waits for other connections' goroutines to read what came before.
	arrivalGrace = 3 * time.Millisecond
)

// before orders tickets by arrival, then by take.
func (t *ticket) before(u *ticket) bool { return t.at < u.at || (t.at == u.at && t.n < u.n) }

// take hands out a ticket for a request of conn whose bytes arrived at
// (Unix ns): a blocking command, a write that feeds one, or another write.
func (q *arrivals) take(conn *stampedConn, blocking, feeds bool, at int64) *ticket {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := &ticket{n: q.next, at: at, conn: conn, blocking: blocking, feeds: feeds}
	q.next++
	i := len(q.held)
	for i > 0 && t.before(q.held[i-1]) {
		i--
	}
	q.held = append(q.held, nil)
	copy(q.held[i+1:], q.held[i:])
	q.held[i] = t
	if blocking {
		q.blocking++
	}
	return t
}

// waitsFor says whether t must wait for an earlier ticket still held.
// Called with q.mu held.
func (q *arrivals) waitsFor(t *ticket) bool {
	all := t.blocking || t.feeds
	if !all && q.blocking == 0 {
		return false
	}
	for _, h := range q.held {
		if !h.before(t) {
			return false
		}
		if all || h.blocking {
			return true
		}
	}
	return false
}

// turn waits until every earlier ticket t must follow is given up, or
// arrivalWait passed; a blocking command or a write that feeds one first
// waits out its grace. A nil ticket (a request outside the order) goes at
// once.
func (q *arrivals) turn(t *ticket) {
	if t == nil {
		return
	}
	if t.blocking || t.feeds {
		time.Sleep(time.Until(time.Unix(0, t.at+int64(arrivalGrace))))
	}
	patience := q.patience
	if patience == 0 {
		patience = arrivalWait
	}
	q.unreadBefore(t, time.Now().Add(patience))
	var timeout <-chan time.Time
	for {
		q.mu.Lock()
		if t.done || !q.waitsFor(t) {
			q.mu.Unlock()
			return
		}
		t.wake = make(chan struct{})
		wake := t.wake
		q.mu.Unlock()
		if timeout == nil {
			timer := time.NewTimer(patience)
			defer timer.Stop()
			timeout = timer.C
		}
		select {
		case <-wake:
		case <-timeout:
			return
		}
	}
}

// release gives t up; later tickets waiting for it look again. Releasing
// a nil or released ticket does nothing.
func (q *arrivals) release(t *ticket) {
	if t == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if t.done {
		return
	}
	t.done = true
	if t.blocking {
		q.blocking--
	}
	for i, h := range q.held {
		if h == t {
			q.held = append(q.held[:i], q.held[i+1:]...)
			break
		}
	}
	for _, h := range q.held {
		if h.wake != nil && t.before(h) {
			close(h.wake)
			h.wake = nil
		}
	}
}

// stampListener asks the kernel to stamp the incoming bytes of every
// connection ln accepts (SO_TIMESTAMPNS; accepted sockets inherit it from
// the listener): from the first byte, although a client's first command
// often arrives before the agent accepts its connection, and the kernel
// stamps only what arrives after the option is set. Without it (not a TCP
// listener) each connection asks for itself once accepted.
// It returns a copy of the listener's socket (nil if not a socket), for
// setListener: a listener's own raw connection cannot wait to read, and
// the copy, non-blocking as the listener is, joins Go's network poller.
func stampListener(ln net.Listener) *os.File {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	dup := -1
	raw.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
		dup, _ = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	})
	if dup < 0 {
		return nil
	}
	return os.NewFile(uintptr(dup), "client listener")
}

// stampedConn reads a client connection with recvmsg, keeping the time the
// kernel received the bytes of the latest read (SO_TIMESTAMPNS). Without a
// stamp (another kind of connection, an old kernel, bytes that came before
// the option was set) the time of the read stands in. Only the reading
// goroutine uses it.
type stampedConn struct {
	net.Conn
	raw syscall.RawConn // nil: not a socket, read plainly
	oob []byte
	at  int64 // Unix ns of the latest read's bytes
	// unhandled is, for other connections' tickets (unreadBefore), at
	// while what the latest read brought is not handled yet; 0 once it is
	// (its later bytes are then in the socket, to peek at); blockedHere
	// while a blocking command of it waits, which what it sends after
	// waits behind anyway.
	unhandled atomic.Int64
	// blocker says it has sent a blocking command: its arrivals are
	// watched from then on; born is when it was accepted, Unix ns.
	blocker atomic.Bool
	born    int64
	// recv is Read's recvmsg, made once, and what it reads into and sets:
	// a closure per Read was four allocations.
	recv      func(fd uintptr) bool
	rp        []byte
	rn, roobn int
	rerr      error
}

// blockedHere marks a connection whose blocking command took its place.
const blockedHere = -1

// Handled says the commands the latest read brought have their place.
func (s *stampedConn) Handled() { s.unhandled.Store(0) }

// Arrived is when the bytes of the latest read arrived, Unix ns.
func (s *stampedConn) Arrived() int64 { return s.at }

// Accepted is when the agent accepted the connection.
func (s *stampedConn) Accepted() time.Time { return time.Unix(0, s.born) }

// SyscallConn is the socket's, for what an adapter asks of it (its
// descriptor, for CLIENT LIST).
func (s *stampedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := s.Conn.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("%T is not a socket", s.Conn)
	}
	return sc.SyscallConn()
}

// unreadBefore tells whether the connection holds a request that arrived
// before at (Unix ns) and has no place yet: read and not handled, or in
// the socket still (a peek at the kernel's stamp of its first byte; a
// byte without a stamp counts as earlier).
func (s *stampedConn) unreadBefore(at int64) bool {
	if u := s.unhandled.Load(); u != 0 {
		return u != blockedHere && u < at
	}
	if s.raw == nil {
		return false
	}
	var b [1]byte
	var oob [64]byte
	var n, oobn int
	s.raw.Control(func(fd uintptr) {
		n, oobn, _ = rawRecvmsg(fd, b[:], oob[:syscall.CmsgSpace(16)], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	})
	if n <= 0 {
		// Read between the two looks: its stamp is unhandled's now.
		u := s.unhandled.Load()
		return u != 0 && u != blockedHere && u < at
	}
	first, ok := stampOf(oob[:oobn])
	return !ok || first < at
}

// stampArrivals reads c with its arrival stamps, asking the kernel for
// them if the listener did not.
func stampArrivals(c net.Conn) *stampedConn {
	s := &stampedConn{Conn: c}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return s
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return s
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return s
	}
	s.raw, s.oob = raw, make([]byte, syscall.CmsgSpace(16))
	s.recv = func(fd uintptr) bool {
		s.rn, s.roobn, s.rerr = rawRecvmsg(fd, s.rp, s.oob, 0)
		return s.rerr != syscall.EAGAIN
	}
	return s
}

func (s *stampedConn) Read(p []byte) (int, error) {
	if s.raw == nil {
		n, err := s.Conn.Read(p)
		s.at = time.Now().UnixNano()
		s.unhandled.Store(s.at)
		return n, err
	}
	s.rp = p
	err := s.raw.Read(s.recv)
	n, oobn, rerr := s.rn, s.roobn, s.rerr
	s.rp = nil // the caller's buffer, not kept
	if err == nil {
		err = rerr
	}
	if err != nil {
		return 0, err
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	if at, ok := stampOf(s.oob[:oobn]); ok {
		s.at = at
	} else {
		s.at = time.Now().UnixNano()
	}
	s.unhandled.Store(s.at)
	return n, nil
}

// WaitRead waits until the connection has bytes to read (or has ended),
// reading none: a peek of one byte, which parks on the poller while there
// is none.
func (s *stampedConn) WaitRead() error {
	if s.raw == nil {
		return nil
	}
	var b [1]byte
	return s.raw.Read(func(fd uintptr) bool {
		for {
			_, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
				syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
			if e != syscall.EINTR {
				return e != syscall.EAGAIN
			}
		}
	})
}

// stampOf finds SCM_TIMESTAMPNS's time in a control message buffer.
func stampOf(oob []byte) (int64, bool) {
	hdr := syscall.CmsgLen(0)
	for len(oob) >= hdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return 0, false
		}
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS && l >= hdr+16 {
			ts := (*syscall.Timespec)(unsafe.Pointer(&oob[hdr]))
			return ts.Nano(), true
		}
		next := syscall.CmsgSpace(l - hdr)
		if next >= len(oob) {
			return 0, false
		}
		oob = oob[next:]
	}
	return 0, false
}

// arrivedAt is when the bytes of c's latest request arrived; now for no
// connection.
func arrivedAt(c *stampedConn) int64 {
	if c == nil {
		return time.Now().UnixNano()
	}
	return c.at
}

package replica

import (
	"bytes"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
	"unsafe"
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
	// waited counts, per key, this agent's blocked commands that wait on
	// it: a client counts as blocked (INFO) before its first attempt is in
	// the replicated queues, and a write to its key must wait for it
	// from then on.
	waited map[string]int
}

// blockOn registers keys a blocked command of this agent waits on, until
// the returned func is called.
func (q *arrivals) blockOn(keys [][]byte) (done func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.waited == nil {
		q.waited = map[string]int{}
	}
	for _, k := range keys {
		q.waited[string(k)]++
	}
	return func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		for _, k := range keys {
			if q.waited[string(k)]--; q.waited[string(k)] <= 0 {
				delete(q.waited, string(k))
			}
		}
	}
}

// waitedOn says whether payload names a key a blocked command of this
// agent waits on (by name, as blockQueues.mentioned).
func (q *arrivals) waitedOn(payload []byte) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for k := range q.waited {
		if bytes.Contains(payload, []byte(k)) {
			return true
		}
	}
	return false
}

// ticket is one request's place in arrival order.
type ticket struct {
	n        uint64
	at       int64 // when its bytes arrived, Unix ns
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

// take hands out a ticket for a request whose bytes arrived at (Unix ns):
// a blocking command, a write that feeds one, or another write.
func (q *arrivals) take(blocking, feeds bool, at int64) *ticket {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := &ticket{n: q.next, at: at, blocking: blocking, feeds: feeds}
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
			patience := q.patience
			if patience == 0 {
				patience = arrivalWait
			}
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
func stampListener(ln net.Listener) {
	if sc, ok := ln.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			raw.Control(func(fd uintptr) {
				syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
			})
		}
	}
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
	return s
}

func (s *stampedConn) Read(p []byte) (int, error) {
	if s.raw == nil {
		n, err := s.Conn.Read(p)
		s.at = time.Now().UnixNano()
		return n, err
	}
	var n, oobn int
	var rerr error
	err := s.raw.Read(func(fd uintptr) bool {
		n, oobn, rerr = rawRecvmsg(fd, p, s.oob)
		return rerr != syscall.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return 0, err
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	s.at = time.Now().UnixNano()
	if at, ok := stampOf(s.oob[:oobn]); ok {
		s.at = at
	}
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

// arrivedAt is when the bytes of the connection's latest request arrived.
func (st *clientState) arrivedAt() int64 {
	if st.stamped == nil {
		return time.Now().UnixNano()
	}
	return st.stamped.at
}

package replica

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// rawTCP reads and writes a TCP connection with system calls the Go
// scheduler is not told of (RawSyscall), waiting on the network poller
// only when the socket has nothing to read or no room to write.
//
// Why: the agent runs on one P (--procs 1, its share of 2 cores). Every
// system call through package syscall hands the P back to the scheduler,
// and one that still runs at the next tick of Go's sysmon thread (20 µs
// to 10 ms) has its P taken and given to another thread: a write to a
// socket runs the receiver's network stack in the writer's thread (veth,
// bridge, the peer's TCP, waking it) and often takes that long. Every such
// retake also keeps sysmon polling every 20 µs. sysmon was 8 % of the
// leader's CPU in GET c=8 and 14 % in SET c=8, beside the thread hand-offs
// (perf record, the tree before). These sockets are non-blocking, so no
// call here blocks; a blocking one (fdatasync) still goes through syscall.
// Deadlines hold as for net.Conn: the waits are the poller's.
type rawTCP struct {
	*net.TCPConn
	rc     syscall.RawConn
	rd, wr rawOp
}

// rawOp is one direction's system call, its function and the variables
// it sets made once per connection: a closure per call, with the
// variables it sets moved to the heap, was three allocations per read or
// write, about a dozen per GET with the client's reads. mu keeps
// concurrent calls (net.Conn allows them) from sharing the variables.
type rawOp struct {
	mu    sync.Mutex
	p     []byte
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

// RawIO returns c reading and writing with raw system calls when it is a
// TCP connection, else c.
func RawIO(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	r := &rawTCP{TCPConn: tc, rc: rc}
	r.rd.fn, r.wr.fn = r.rd.read, r.wr.write
	return r
}

// read is a RawConn.Read function: it reads into p.
func (o *rawOp) read(fd uintptr) bool {
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&o.p[0])), uintptr(len(o.p)))
		if e == syscall.EINTR {
			continue
		}
		o.n, o.errno = int(r), e
		return e != syscall.EAGAIN
	}
}

// write is a RawConn.Write function: it writes p, from n on.
func (o *rawOp) write(fd uintptr) bool {
	for o.n < len(o.p) {
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&o.p[o.n])), uintptr(len(o.p)-o.n))
		switch e {
		case 0:
			o.n += int(r)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			o.errno = e
			return true
		}
	}
	return true
}

// do runs fn (a RawConn's Read or Write) with o's function on p, and
// returns the bytes done and the system call's error.
func (o *rawOp) do(fn func(func(uintptr) bool) error, p []byte) (int, syscall.Errno, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.p, o.n, o.errno = p, 0, 0
	err := fn(o.fn)
	o.p = nil // the caller's buffer, not kept
	return o.n, o.errno, err
}

func (c *rawTCP) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, errno, err := c.rd.do(c.rc.Read, p)
	switch {
	case err != nil:
		return 0, netOp(err, "read")
	case errno != 0:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", errno)}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *rawTCP) Write(p []byte) (int, error) {
	n, errno, err := c.wr.do(c.rc.Write, p)
	if err == nil && errno != 0 {
		err = &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("write", errno)}
	}
	return n, netOp(err, "write")
}

// netOp names a RawConn error (a timeout, a closed connection) as
// net.Conn's own Read or Write would, "read tcp …" rather than
// "raw-read tcp …", so logs and messages read as before raw I/O.
func netOp(err error, op string) error {
	if oe, ok := err.(*net.OpError); ok {
		oe.Op = op
	}
	return err
}

// rawRecvmsg is recvmsg(2) on a non-blocking socket as a raw system call
// (see rawTCP) with flags: the bytes read into p, the control bytes into
// oob.
func rawRecvmsg(fd uintptr, p, oob []byte, flags int) (n, oobn int, err error) {
	var iov syscall.Iovec
	if len(p) > 0 {
		iov.Base = &p[0]
		iov.SetLen(len(p))
	}
	var msg syscall.Msghdr
	msg.Iov, msg.Iovlen = &iov, 1
	if len(oob) > 0 {
		msg.Control = &oob[0]
		msg.SetControllen(len(oob))
	}
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&msg)), uintptr(flags))
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return 0, 0, e
		}
		return int(r), int(msg.Controllen), nil
	}
}

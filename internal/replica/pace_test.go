package replica

import (
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPacer: a rate set before a connection is dialled applies to it, a
// new rate applies to the live connection, 0 lifts the cap, and a closed
// connection is forgotten. The kernel's own SO_MAX_PACING_RATE is read back.
func TestPacer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
			c.Read(make([]byte, 1)) // until the dialled side closes
		}
	}()
	addr := ln.Addr().String()
	p := newPacer()
	if err := p.set(addr, 1<<20); err != nil {
		t.Fatal(err)
	}
	c, err := p.dial(addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rate := func() uint64 {
		raw, err := c.(*pacedConn).Conn.(syscall.Conn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var v uint64
		var gerr error
		raw.Control(func(fd uintptr) {
			var n int
			n, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE)
			v = uint64(uint32(n))
		})
		if gerr != nil {
			t.Fatal(gerr)
		}
		return v
	}
	if r := rate(); r != 1<<20 {
		t.Errorf("dialled after set(1 MiB/s): rate %d", r)
	}
	if err := p.set(addr, 2<<20); err != nil || rate() != 2<<20 {
		t.Errorf("set(2 MiB/s) on a live connection: rate %d, err %v", rate(), err)
	}
	if err := p.set(addr, 0); err != nil || rate() != uint64(^uint32(0)) {
		t.Errorf("set(0): rate %d, err %v; want unlimited", rate(), err)
	}
	c.Close()
	if n := len(p.conns); n != 0 {
		t.Errorf("%d addresses still known after the only connection closed", n)
	}
}

package replica

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// TestRawTCP: a connection read and written with raw system calls moves
// every byte of a write much larger than the socket's buffers (so it
// waits for room on the poller), ends with io.EOF when the peer closes,
// and keeps net.Conn's deadlines.
func TestRawTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- rawIO(c)
	}()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := rawIO(d)
	if _, ok := c.(*rawTCP); !ok {
		t.Fatalf("rawIO(%T) = %T, want *rawTCP", d, c)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	defer s.Close()

	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB
	wrote := make(chan error, 1)
	go func() {
		n, err := c.Write(want)
		if err == nil && n != len(want) {
			err = io.ErrShortWrite
		}
		wrote <- err
		c.Close()
	}()
	got, err := io.ReadAll(s) // ends at the writer's close: io.EOF
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("write: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want the %d written", len(got), len(want))
	}

	s.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := s.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("read after the peer closed: %v, want io.EOF", err)
	}
}

// TestRawTCPDeadline: a raw read with nothing to read waits on the
// poller until its deadline.
func TestRawTCPDeadline(t *testing.T) {
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
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := rawIO(d)
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	start := time.Now()
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read with nothing sent: %v, want a deadline error", err)
	}
	if waited := time.Since(start); waited < 40*time.Millisecond {
		t.Fatalf("read returned after %v, before its 50ms deadline", waited)
	}
}

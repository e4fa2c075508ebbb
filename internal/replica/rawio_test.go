package replica

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRawTCP: a connection read and written with raw system calls moves
// every byte of a write much larger than the socket's buffers (so it
// waits for room on the poller), ends with io.EOF when the peer closes,
// and keeps net.Conn's deadlines.
func TestRawTCP(t *testing.T) {
	d, a := tcpPair(t)
	c, s := RawIO(d), RawIO(a)
	if _, ok := c.(*rawTCP); !ok {
		t.Fatalf("RawIO(%T) = %T, want *rawTCP", d, c)
	}

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
// poller until its deadline, and its error reads as net.Conn's.
func TestRawTCPDeadline(t *testing.T) {
	d, _ := tcpPair(t)
	c := RawIO(d)
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	start := time.Now()
	_, err := c.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read with nothing sent: %v, want a deadline error", err)
	}
	if want := "read tcp "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("deadline error %q, want it to start %q as net.Conn's does", err, want)
	}
	if waited := time.Since(start); waited < 40*time.Millisecond {
		t.Fatalf("read returned after %v, before its 50ms deadline", waited)
	}
}

// TestRawTCPStalledPeer: against a peer that stops reading, a raw write
// waits on the poller, not in a system call, so its deadline ends it with
// the bytes the socket took counted; a read parked on the poller ends
// when another goroutine closes the connection; and a write to a peer
// that has gone fails with an error instead of killing the process
// (SIGPIPE) or spinning.
func TestRawTCPStalledPeer(t *testing.T) {
	d, _ := tcpPair(t) // the accepted end never reads
	c := RawIO(d)
	big := make([]byte, 64<<20) // far beyond both sockets' buffers
	c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	type result struct {
		n   int
		err error
	}
	wrote := make(chan result, 1)
	go func() {
		n, err := c.Write(big)
		wrote <- result{n, err}
	}()
	select {
	case r := <-wrote:
		if !errors.Is(r.err, os.ErrDeadlineExceeded) {
			t.Fatalf("write to a peer that does not read: %d bytes, %v; want a deadline error", r.n, r.err)
		}
		if r.n <= 0 || r.n >= len(big) {
			t.Errorf("write stopped by its deadline reports %d bytes, want the part the sockets took (0 < n < %d)", r.n, len(big))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a write with a 100ms deadline to a peer that does not read still runs after 5s")
	}

	read := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1)) // the peer sends nothing
		read <- err
	}()
	time.Sleep(50 * time.Millisecond)
	c.Close()
	select {
	case err := <-read:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("read parked when its connection closed: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a parked read did not end when its connection was closed")
	}

	// The other direction: the peer closes, and this side's writes fail.
	d2, a2 := tcpPair(t)
	a2.Close()
	w := RawIO(d2)
	w.SetWriteDeadline(time.Now().Add(5 * time.Second))
	var werr error
	for i := 0; i < 100 && werr == nil; i++ {
		_, werr = w.Write([]byte("after the peer closed\r\n"))
		time.Sleep(10 * time.Millisecond)
	}
	if werr == nil || errors.Is(werr, os.ErrDeadlineExceeded) {
		t.Fatalf("writes to a closed peer: %v, want a broken connection error", werr)
	}
}

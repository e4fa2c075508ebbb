package replica

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestArrivals: a blocking command's proposal waits for every write or
// blocking command that arrived earlier and is still being handled, a
// write only for earlier blocking commands, whatever order they were read
// in, and nobody longer than arrivalWait.
func TestArrivals(t *testing.T) {
	q := arrivals{patience: time.Minute}          // the order, not the bound, first
	at := time.Now().Add(-time.Second).UnixNano() // graces passed
	// Read in another order than they arrived: b1 came first.
	w1 := q.take(nil, false, false, at+10)
	b2 := q.take(nil, true, false, at+40)
	w2 := q.take(nil, false, false, at+30)
	b1 := q.take(nil, true, false, at+20)
	went := func(tk *ticket) chan struct{} {
		c := make(chan struct{})
		go func() { q.turn(tk); close(c) }()
		return c
	}
	wait := func(c chan struct{}, want bool, what string) {
		t.Helper()
		select {
		case <-c:
			if !want {
				t.Fatalf("%s went before its turn", what)
			}
		case <-time.After(20 * time.Millisecond):
			if want {
				t.Fatalf("%s still waits", what)
			}
		}
	}
	wait(went(w1), true, "a write that arrived first")
	g2, g1, gw2 := went(b2), went(b1), went(w2)
	wait(g1, false, "a blocking command behind an earlier write")
	wait(gw2, false, "a write behind an earlier blocking command")
	q.release(w1)
	wait(g1, true, "a blocking command once the earlier write was proposed")
	wait(g2, false, "a blocking command behind an earlier one")
	q.release(b1)
	wait(gw2, true, "a write once the earlier blocking command was proposed")
	wait(g2, false, "a blocking command behind an earlier write")
	q.release(w2)
	wait(g2, true, "the last blocking command")
	q.release(b2)
	q.release(b2) // twice does nothing
	if len(q.held) != 0 || q.blocking != 0 {
		t.Fatalf("tickets left held: %d, %d blocking", len(q.held), q.blocking)
	}

	// A write that feeds a blocked client waits for an earlier write.
	w3 := q.take(nil, false, false, at+50)
	f := q.take(nil, false, true, at+60)
	gf := went(f)
	wait(gf, false, "a write that feeds a blocked client, behind an earlier write")
	q.release(w3)
	wait(gf, true, "a write that feeds a blocked client, once the earlier write was proposed")
	q.release(f)

	// A ticket never given up delays the next at most arrivalWait.
	q.patience = 0
	stuck := q.take(nil, true, false, at)
	start := time.Now()
	late := q.take(nil, true, false, at+1)
	q.turn(late)
	if d := time.Since(start); d < arrivalWait || d > 20*arrivalWait {
		t.Errorf("a blocking command behind a stuck one went after %v, want about %v", d, arrivalWait)
	}
	q.release(stuck)
	q.release(late)

	// A blocking command that just arrived waits out its grace.
	start = time.Now()
	fresh := q.take(nil, true, false, start.UnixNano())
	q.turn(fresh)
	if d := time.Since(start); d < arrivalGrace {
		t.Errorf("a blocking command went %v after its bytes arrived, before its grace of %v", d, arrivalGrace)
	}
	q.release(fresh)
}

// TestStampOf reads SCM_TIMESTAMPNS out of a control message buffer, and
// nothing out of a truncated one.
func TestStampOf(t *testing.T) {
	c, s := tcpPair(t)
	stamped := stampArrivals(s)
	if stamped.raw == nil {
		t.Skip("no SO_TIMESTAMPNS on this socket")
	}
	before := time.Now().UnixNano()
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, err := stamped.Read(buf)
	if err != nil || string(buf[:n]) != "PING\r\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if stamped.at < before || stamped.at > time.Now().UnixNano() {
		t.Errorf("arrival stamp %d outside the write's %d..now", stamped.at, before)
	}
	if _, ok := stampOf(stamped.oob[:8]); ok {
		t.Error("a stamp out of a truncated control message")
	}
	c.Close()
	if n, err := stamped.Read(buf); n != 0 || err == nil {
		t.Errorf("read after the peer closed: %d, %v", n, err)
	}
}

// tcpPair is a connected pair of loopback TCP connections: client, server.
func tcpPair(t testing.TB) (net.Conn, net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

// BenchmarkArrivalRead: a 64-byte request read through stampedConn (recvmsg
// and its stamp) against the same read straight from the connection.
func BenchmarkArrivalRead(b *testing.B) {
	req := make([]byte, 64)
	buf := make([]byte, 4096)
	for _, stamped := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "stamped"}[stamped]
		b.Run(name, func(b *testing.B) {
			c, s := tcpPair(b)
			var r net.Conn = s
			if stamped {
				r = stampArrivals(s)
			}
			for b.Loop() {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(r, buf[:len(req)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkArrivalTicket: what a write pays for its place in arrival order
// when no blocking command is in flight, from 8 goroutines at once.
func BenchmarkArrivalTicket(b *testing.B) {
	var q arrivals
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t := q.take(nil, false, false, time.Now().UnixNano())
			q.turn(t)
			q.release(t)
		}
	})
}

// TestAcceptFromThePoller: accept hands over the listener's connections,
// counted as being accepted until accepted is called, and a waiting accept
// ends once the listener's copy is closed (it waits in Go's network poller,
// which nothing else would wake).
func TestAcceptFromThePoller(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var q arrivals
	if err := q.setListener(stampListener(ln)); err != nil {
		t.Fatal(err)
	}
	dialed := make(chan error, 1)
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			defer c.Close()
			_, err = c.Write([]byte("PING\r\n"))
		}
		dialed <- err
	}()
	c, err := q.accept(ln)
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	defer c.Close()
	if err := <-dialed; err != nil {
		t.Fatal(err)
	}
	if n := q.accepting.Load(); n != 1 {
		t.Errorf("%d connections counted as being accepted before accepted, want 1", n)
	}
	q.accepted()
	buf := make([]byte, 6)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "PING\r\n" {
		t.Errorf("read %q, %v from the accepted connection, want PING", buf, err)
	}

	done := make(chan error, 1)
	go func() {
		_, err := q.accept(ln)
		done <- err
	}()
	ln.Close()
	q.closeListener()
	select {
	case err := <-done:
		if err == nil {
			t.Error("accept on a closed listener returned a connection")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("accept still waits 10s after its listener closed")
	}
	if n := q.accepting.Load(); n != 0 {
		t.Errorf("%d connections counted as being accepted after the listener closed, want 0", n)
	}
}

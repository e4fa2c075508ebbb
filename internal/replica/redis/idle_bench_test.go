package redis

import (
	"bufio"
	"net"
	"runtime"
	rtmetrics "runtime/metrics"
	"testing"
	"time"
)

// BenchmarkIdleConnections opens b.N client connections to one agent (of
// 3 voters), each sending one PING, and reports the live heap per
// connection with every connection open, once right after the PINGs
// (busy-B/conn) and once after they idled past the query buffer's idle
// time and the reply buffer's peak reset (idle-B/conn), and the goroutine
// stacks per connection then (stack-B/conn). Run it with -benchtime
// 1000x: its time is mostly the idling.
func BenchmarkIdleConnections(b *testing.B) {
	agent := startCluster(b, 3, 0, nil).nodes[0].agent
	base, baseStacks := liveHeap(), stacks()
	conns := make([]net.Conn, 0, b.N)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range b.N {
		c, err := net.Dial("tcp", agent.ClientAddr())
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			b.Fatal(err)
		}
		if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "+PONG\r\n" {
			b.Fatalf("PING: %q, %v", line, err)
		}
	}
	busy := liveHeap()
	time.Sleep(queryIdle + 5*time.Second + 3*buffersEvery)
	idle := liveHeap()
	b.ReportMetric(float64(busy-base)/float64(b.N), "busy-B/conn")
	b.ReportMetric(float64(idle-base)/float64(b.N), "idle-B/conn")
	b.ReportMetric(float64(stacks()-baseStacks)/float64(b.N), "stack-B/conn")
}

// stacks is the bytes of goroutine stacks in use.
func stacks() int64 {
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	rtmetrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// liveHeap is the heap's live bytes after a collection.
func liveHeap() int64 {
	runtime.GC()
	s := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(s)
	return int64(s[0].Value.Uint64())
}

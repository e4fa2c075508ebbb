package load

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
)

// BenchmarkClosedLoop is the engine's own cost per request: a client that
// does nothing, 4 clients, every request recorded.
func BenchmarkClosedLoop(b *testing.B) {
	var dialed, closed atomic.Int64
	sys := &nopSystem{}
	cfg := Config{Workload: Workload{Mix: Mix{{Kind: 0, Name: "get", Weight: 1}}, Keys: 1000, ValueSize: 64},
		Clients: 4, Requests: b.N}
	b.ResetTimer()
	if _, err := Run(context.Background(), cfg, sys.dialer(&dialed, &closed), discard{}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkOpenLoop is the same through the dispatcher and the worker pool,
// with arrivals far faster than the engine can issue them.
func BenchmarkOpenLoop(b *testing.B) {
	var dialed, closed atomic.Int64
	sys := &nopSystem{}
	cfg := Config{Workload: Workload{Mix: Mix{{Kind: 0, Name: "get", Weight: 1}}, Keys: 1000, ValueSize: 64},
		Rate: 1e9, Requests: b.N, MaxInFlight: 4}
	b.ResetTimer()
	if _, err := Run(context.Background(), cfg, sys.dialer(&dialed, &closed), discard{}); err != nil {
		b.Fatal(err)
	}
}

// cpuTime is the process's user and system CPU time so far, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

type nopSystem struct{}

type nopClient struct{ closed *atomic.Int64 }

func (nopClient) Do(context.Context, Op) error { return nil }
func (c nopClient) Close() error               { c.closed.Add(1); return nil }

func (s *nopSystem) dialer(dialed, closed *atomic.Int64) Dialer {
	return func(int) (Client, uint8, error) { dialed.Add(1); return nopClient{closed}, 0, nil }
}

// BenchmarkAccesses is the engine's cost per access, single accesses
// against Inner-Join Olio's fan-out requests (30 then 20 parallel
// accesses) in the same run: each sub-benchmark issues b.N accesses to a
// client that does nothing, open loop, every access (and request)
// recorded. "saturated" arrivals come far faster than the engine issues
// them, so single accesses queue and their workers never wait for one;
// "paced" arrivals come at 10,000 accesses/s (200 Olio requests/s), as a
// run against a real server has them, so every worker and lane waits for
// its next access.
func BenchmarkAccesses(b *testing.B) {
	get := Workload{Mix: Mix{{Kind: 0, Name: "get", Weight: 1}}, Keys: 1000, ValueSize: 64}
	for _, pace := range []struct {
		name string
		rate float64 // accesses per second
	}{{"saturated", 1e9}, {"paced", 1e4}} {
		for _, c := range []struct {
			name  string
			shape Shape
		}{{"single", Shape{}}, {"olio-30,20", Shape{Phases: []Phase{{Count: 30}, {Count: 20}}}}} {
			b.Run(pace.name+"/"+c.name, func(b *testing.B) {
				var dialed, closed atomic.Int64
				sys := &nopSystem{}
				per := c.shape.Accesses()
				cfg := Config{Workload: get, Rate: pace.rate / float64(per), Requests: max(1, b.N/per), MaxInFlight: 4, Shape: c.shape}
				if c.shape.FanOut() {
					cfg.RequestRecorder = discard{}
				}
				cpu0 := cpuTime()
				b.ResetTimer()
				if _, err := Run(context.Background(), cfg, sys.dialer(&dialed, &closed), discard{}); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(cfg.Requests*per), "ns/access")
				// The process's CPU time (user and system) per access: what the
				// generator costs, apart from waiting for a core on a busy machine.
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(cfg.Requests*per), "cpu-ns/access")
			})
		}
	}
}

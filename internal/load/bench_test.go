package load

import (
	"context"
	"sync/atomic"
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

type nopSystem struct{}

type nopClient struct{ closed *atomic.Int64 }

func (nopClient) Do(context.Context, Op) error { return nil }
func (c nopClient) Close() error               { c.closed.Add(1); return nil }

func (s *nopSystem) dialer(dialed, closed *atomic.Int64) Dialer {
	return func(int) (Client, uint8, error) { dialed.Add(1); return nopClient{closed}, 0, nil }
}

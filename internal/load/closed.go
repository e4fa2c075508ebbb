package load

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/rundir"
)

// closedLoop runs cfg.Clients workers, each issuing its next request as soon
// as the previous one returns. A request's start is when it was issued: in a
// closed loop there is no schedule it could fall behind.
func (r *run) closedLoop(ctx context.Context, begin func()) error {
	if r.cfg.Shape.FanOut() {
		return r.closedRequests(ctx, begin)
	}
	clients := make([]Client, r.cfg.Clients)
	hosts := make([]uint8, r.cfg.Clients)
	for i := range clients {
		c, h, err := r.dial(i)
		if err != nil {
			closeAll(clients[:i])
			return fmt.Errorf("load: dial client %d: %w", i, err)
		}
		clients[i], hosts[i] = c, h
	}
	defer closeAll(clients)
	begin()
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() { r.closedWorker(ctx, i, c, hosts[i]) })
	}
	wg.Wait()
	return nil
}

func (r *run) closedWorker(ctx context.Context, id int, c Client, host uint8) {
	gen := r.cfg.Workload.generator(r.cfg.Seed, id, r.value)
	buf := make([]rundir.Sample, 0, batchSize)
	defer func() { r.flush(buf) }()
	for ctx.Err() == nil && r.claim() {
		op := gen.next()
		t0 := time.Now()
		start := t0.Sub(r.start)
		if r.cfg.Duration > 0 && start >= r.cfg.Duration {
			return
		}
		outcome := r.do(ctx, c, op)
		lat := time.Since(t0)
		if ctx.Err() != nil {
			return // cut short by the end of the run, not a measurement
		}
		buf = r.add(buf, rundir.Sample{Start: start, Latency: lat, Op: op.Kind, Host: host, Outcome: outcome,
			Involved: r.involved(c)})
	}
}

// closedRequests is the closed loop of requests of several accesses: each
// client a request worker issuing its next request when the last ends.
func (r *run) closedRequests(ctx context.Context, begin func()) error {
	qs := make([]*requester, r.cfg.Clients)
	for i := range qs {
		q, err := r.newRequester(ctx, i)
		if err != nil {
			for _, q := range qs[:i] {
				q.close()
			}
			return err
		}
		qs[i] = q
	}
	begin()
	var wg sync.WaitGroup
	for _, q := range qs {
		wg.Go(func() {
			defer q.close()
			for ctx.Err() == nil && r.claim() {
				start := time.Since(r.start)
				if r.cfg.Duration > 0 && start >= r.cfg.Duration || !q.request(start) {
					return
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// claim takes one of cfg.Requests; without a request limit it always succeeds.
func (r *run) claim() bool {
	return r.cfg.Requests == 0 || r.claims.Add(1) <= int64(r.cfg.Requests)
}

// closeAll closes clients after the run. Their errors cannot change what was
// measured, so they are dropped.
func closeAll(clients []Client) {
	for _, c := range clients {
		if c != nil {
			c.Close()
		}
	}
}

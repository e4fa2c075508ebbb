package load

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gait-dev/gait/internal/rundir"
)

// initialWorkers are dialed before an open-loop run starts; more are added
// while arrivals find every worker busy, up to cfg.MaxInFlight.
const initialWorkers = 16

// openLoop runs a dispatcher that fixes each request's intended start from the
// arrival schedule and queues it for a pool of workers. Neither a busy pool nor
// a full queue moves an intended start: a dispatcher that fell behind hands out
// the overdue arrivals at once, so every wait counts in their latency.
func (r *run) openLoop(ctx context.Context, begin func()) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p := &pool{run: r, ctx: ctx, fail: cancel, queue: make(chan time.Duration, r.queueSize())}
	for range min(initialWorkers, r.cfg.MaxInFlight) {
		c, h, err := r.dial(p.workers)
		if err != nil {
			close(p.queue)
			p.wg.Wait()
			return fmt.Errorf("load: dial client %d: %w", p.workers, err)
		}
		p.spawn(func() (Client, uint8, error) { return c, h, nil })
	}
	begin()
	// The dispatcher takes a thread of its own (ownThread), so not the caller's.
	dispatched := make(chan struct{})
	go func() { p.dispatch(); close(dispatched) }()
	<-dispatched
	close(p.queue)
	p.wg.Wait()
	r.workers = p.workers
	if err := context.Cause(ctx); err != ctx.Err() {
		return err // a worker's dial failed
	}
	return nil
}

// queueSize holds about ten seconds of arrivals, within sane bounds; beyond
// it the dispatcher blocks, which delays issuing but not intended starts.
func (r *run) queueSize() int {
	return int(min(max(r.cfg.Rate*10, 1024), 1<<20))
}

type pool struct {
	run     *run
	ctx     context.Context
	fail    context.CancelCauseFunc
	queue   chan time.Duration // intended starts since r.start
	idle    atomic.Int64       // workers waiting for work, or about to
	workers int                // only the dispatcher touches it
	wg      sync.WaitGroup
}

func (p *pool) dispatch() {
	ownThread()
	r := p.run
	rng := rand.New(rand.NewPCG(r.cfg.Seed, math.MaxUint32))
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var at time.Duration
	for i := 0; r.cfg.Requests == 0 || i < r.cfg.Requests; i++ {
		at = r.arrival(i, at, rng)
		if r.cfg.Duration > 0 && at >= r.cfg.Duration {
			return
		}
		if !sleepUntil(p.ctx, timer, r.start.Add(at)) {
			return
		}
		if p.idle.Load() == 0 {
			if p.workers < r.cfg.MaxInFlight {
				// The new worker dials on its own goroutine: the schedule
				// must not wait for a connection.
				id := p.workers
				p.spawn(func() (Client, uint8, error) { return r.dial(id) })
			} else {
				r.heldBack.Add(1)
			}
		}
		select {
		case p.queue <- at:
		case <-p.ctx.Done():
			return
		}
	}
}

// arrival is the intended start of request i, given that of request i-1.
func (r *run) arrival(i int, prev time.Duration, rng *rand.Rand) time.Duration {
	switch {
	case i == 0:
		return 0
	case r.cfg.Poisson:
		return prev + time.Duration(rng.ExpFloat64()/r.cfg.Rate*1e9)
	default:
		// From i rather than prev plus a gap, so rounding never accumulates.
		return time.Duration(math.Round(float64(i) * 1e9 / r.cfg.Rate))
	}
}

// spawn starts worker number p.workers with the client dial returns.
func (p *pool) spawn(dial func() (Client, uint8, error)) {
	id := p.workers
	p.workers++
	p.idle.Add(1)
	p.wg.Go(func() {
		c, host, err := dial()
		if err != nil {
			p.fail(fmt.Errorf("load: dial client %d: %w", id, err))
			return
		}
		defer c.Close()
		p.work(id, c, host)
	})
}

func (p *pool) work(id int, c Client, host uint8) {
	r := p.run
	gen := r.cfg.Workload.generator(r.cfg.Seed, id, r.value)
	buf := make([]rundir.Sample, 0, batchSize)
	late := make([]time.Duration, 0, batchSize)
	defer func() { r.flush(buf); r.flushLate(late) }()
	for at := range p.queue {
		p.idle.Add(-1)
		op := gen.next()
		// The generator's own lag, measured apart from the latency it is
		// also part of: the dispatcher's delay plus the wait in the queue.
		late = r.addLate(late, time.Since(r.start)-at)
		outcome := r.do(p.ctx, c, op)
		end := time.Since(r.start)
		if p.ctx.Err() != nil {
			return // cut short by the end of the run, not a measurement
		}
		buf = r.add(buf, rundir.Sample{Start: at, Latency: end - at, Op: op.Kind, Host: host, Outcome: outcome,
			Involved: r.involved(c)})
		p.idle.Add(1)
	}
}

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

// initialRequesters are the request workers of requests of several
// accesses dialed before the run (a connection per access of the widest
// phase each), or the batch's size if larger: a batch's requests arrive
// together, and a requester dialed when the first batch came would make
// it late by its dials (a ZooKeeper session each, tens of ms on a busy
// JVM). Later batches find theirs dialed ahead (dialAhead).
const initialRequesters = 4

// openLoop runs a dispatcher that fixes each request's intended start from the
// arrival schedule and queues it for a pool of workers. Neither a busy pool nor
// a full queue moves an intended start: a dispatcher that fell behind hands out
// the overdue arrivals at once, so every wait counts in their latency.
func (r *run) openLoop(ctx context.Context, begin func()) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p := &pool{run: r, ctx: ctx, fail: cancel, queue: make(chan time.Duration, r.queueSize())}
	for p.workers < min(max(initialRequesters, r.cfg.Shape.batch()), r.cfg.MaxInFlight) && r.cfg.Shape.FanOut() {
		// A request worker dials a client per access of the widest phase.
		q, err := r.newRequester(ctx, p.workers)
		if err != nil {
			close(p.queue)
			p.wg.Wait()
			return err
		}
		p.spawnRequester(func() (*requester, error) { return q, nil })
	}
	for p.workers < min(initialWorkers, r.cfg.MaxInFlight) && !r.cfg.Shape.FanOut() {
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
	run   *run
	ctx   context.Context
	fail  context.CancelCauseFunc
	queue chan time.Duration // intended starts since r.start
	// free counts the workers no arrival has claimed. The dispatcher claims
	// one as it queues an arrival and a worker frees itself once done, so
	// a batch queued faster than workers wake still counts as claimed.
	free    atomic.Int64
	workers int // only the dispatcher touches it
	wg      sync.WaitGroup
}

func (p *pool) dispatch() {
	defer ownThread()()
	r := p.run
	rng := rand.New(rand.NewPCG(r.cfg.Seed, math.MaxUint32))
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var at time.Duration
	batch := r.cfg.Shape.batch()
	for i := 0; r.cfg.Requests == 0 || i < r.cfg.Requests; i++ {
		if i%batch == 0 {
			// A new arrival instant: the batch's requests share it.
			var more bool
			if at, more = r.arrival(i/batch, at, rng); !more {
				return
			}
			if r.cfg.Duration > 0 && at >= r.cfg.Duration {
				return
			}
			if i > 0 {
				p.dialAhead(batch)
			}
			if !sleepUntil(p.ctx, timer, r.start.Add(at)) {
				return
			}
		}
		if p.free.Add(-1) < 0 && !p.grow() {
			r.heldBack.Add(1)
		}
		select {
		case p.queue <- at:
		case <-p.ctx.Done():
			return
		}
	}
}

// grow adds a worker unless the pool is at its limit. The worker dials
// on its own goroutine: the schedule must not wait for a connection.
func (p *pool) grow() bool {
	r := p.run
	if p.workers >= r.cfg.MaxInFlight {
		return false
	}
	id := p.workers
	if r.cfg.Shape.FanOut() {
		p.spawnRequester(func() (*requester, error) { return r.newRequester(p.ctx, id) })
	} else {
		p.spawn(func() (Client, uint8, error) { return r.dial(id) })
	}
	return true
}

// dialAhead grows the pool until a batch of arrivals finds a worker each
// unclaimed. It runs while the schedule waits for the next instant, so
// that the next batch does not wait for the dials of the workers it needs
// (a requester dials a connection per access of its widest phase, a
// ZooKeeper session each on gait-zookeeper).
func (p *pool) dialAhead(batch int) {
	for p.free.Load() < int64(batch) && p.grow() {
	}
}

// arrival is the intended start of arrival instant i, given that of
// instant i-1; false once a trace has no more. An instant brings a batch
// of requests, so instants come at the rate over the batch size.
func (r *run) arrival(i int, prev time.Duration, rng *rand.Rand) (time.Duration, bool) {
	rate := r.cfg.Rate / float64(r.cfg.Shape.batch())
	switch {
	case r.cfg.Shape.Trace != nil:
		if i >= len(r.cfg.Shape.Trace) {
			return 0, false
		}
		return r.cfg.Shape.Trace[i], true
	case i == 0:
		return 0, true
	case r.cfg.Poisson:
		return prev + time.Duration(rng.ExpFloat64()/rate*1e9), true
	default:
		// From i rather than prev plus a gap, so rounding never accumulates.
		return time.Duration(math.Round(float64(i) * 1e9 / rate)), true
	}
}

// spawn starts worker number p.workers with the client dial returns.
func (p *pool) spawn(dial func() (Client, uint8, error)) {
	id := p.workers
	p.workers++
	p.free.Add(1)
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

// spawnRequester starts worker number p.workers as a request worker.
func (p *pool) spawnRequester(open func() (*requester, error)) {
	p.workers++
	p.free.Add(1)
	p.wg.Go(func() {
		q, err := open()
		if err != nil {
			p.fail(err)
			return
		}
		defer q.close()
		r := p.run
		late := make([]time.Duration, 0, batchSize)
		defer func() { r.flushLate(late) }()
		for at := range p.queue {
			late = r.addLate(late, time.Since(r.start)-at)
			if !q.request(at) {
				return
			}
			p.free.Add(1)
		}
	})
}

func (p *pool) work(id int, c Client, host uint8) {
	r := p.run
	gen := r.cfg.Workload.generator(r.cfg.Seed, id, r.value)
	buf := make([]rundir.Sample, 0, batchSize)
	late := make([]time.Duration, 0, batchSize)
	defer func() { r.flush(buf); r.flushLate(late) }()
	for at := range p.queue {
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
		p.free.Add(1)
	}
}

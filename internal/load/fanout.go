package load

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gait-dev/gait/internal/rundir"
)

// requester runs requests of several accesses, one at a time: a lane (a
// client) per access of the widest phase. It sends a phase's accesses at
// once, the first on its own goroutine and each other on its lane's
// goroutine, which lives as long as the requester and is handed each job
// over a channel of its own (a hand-off as cheap as the open loop's to a
// worker, where a goroutine per access cost half as much again: its start
// and its exit), and starts the next phase when the last answers.
type requester struct {
	r       *run
	ctx     context.Context
	gen     *generator
	rng     *rand.Rand // which accesses are delayed
	lanes   []lane
	jobs    []job           // each lane's next access
	wake    []chan struct{} // lane i's signal that jobs[i] is set; lane 0 runs on the requester's goroutine
	lanesWG sync.WaitGroup
	got     []access // this phase's answers, by lane
	pending atomic.Int32
	last    chan struct{} // the phase's last answer came
	buf     []rundir.Sample
	reqs    []rundir.Sample
}

type lane struct {
	c    Client
	host uint8
}

type job struct {
	op    Op
	delay time.Duration
	sent  time.Duration // the phase's start, since r.start
}

// access is one answered access.
type access struct {
	sample rundir.Sample
}

// newRequester dials the lanes of worker id (clients id*width to
// id*width+width-1) and starts their goroutines.
func (r *run) newRequester(ctx context.Context, id int) (*requester, error) {
	width := r.cfg.Shape.Width()
	q := &requester{r: r, ctx: ctx, gen: r.cfg.Workload.generator(r.cfg.Seed, id, r.value),
		rng: rand.New(rand.NewPCG(r.cfg.Seed, uint64(id)+1<<32)), got: make([]access, width),
		last: make(chan struct{}, 1), buf: make([]rundir.Sample, 0, batchSize)}
	for j := range width {
		c, host, err := r.dial(id*width + j)
		if err != nil {
			q.close()
			return nil, fmt.Errorf("load: dial client %d of request worker %d: %w", j, id, err)
		}
		q.lanes = append(q.lanes, lane{c: c, host: host})
	}
	q.jobs, q.wake = make([]job, width), make([]chan struct{}, width)
	for i := 1; i < width; i++ {
		q.wake[i] = make(chan struct{}, 1)
		q.lanesWG.Go(func() { q.lane(i) })
	}
	return q, nil
}

func (q *requester) do(l lane, j job) access {
	if j.delay > 0 {
		t := time.NewTimer(j.delay)
		select {
		case <-t.C:
		case <-q.ctx.Done():
			t.Stop()
		}
	}
	outcome := q.r.do(q.ctx, l.c, j.op)
	end := time.Since(q.r.start)
	return access{rundir.Sample{Start: j.sent, Latency: end - j.sent, Op: j.op.Kind, Host: l.host, Outcome: outcome,
		Involved: q.r.involved(l.c)}}
}

// request runs one request whose intended start is at (since r.start) and
// records its accesses and itself; false when the run was cut short.
func (q *requester) request(at time.Duration) bool {
	r := q.r
	sent := at
	worst := rundir.OK
	var involved rundir.HostSet
	for _, ph := range r.cfg.Shape.phases() {
		q.pending.Store(int32(ph.Count))
		for i := 1; i < ph.Count; i++ {
			q.jobs[i] = q.job(ph, sent)
			q.wake[i] <- struct{}{}
		}
		q.got[0] = q.do(q.lanes[0], q.job(ph, sent))
		if q.pending.Add(-1) != 0 {
			<-q.last
		}
		if q.ctx.Err() != nil {
			return false // cut short by the end of the run, not a measurement
		}
		end := sent
		for _, a := range q.got[:ph.Count] {
			q.buf = r.add(q.buf, a.sample)
			end = max(end, a.sample.Start+a.sample.Latency)
			worst = max(worst, a.sample.Outcome)
			for w, word := range a.sample.Involved {
				involved[w] |= word
			}
			involved.Add(a.sample.Host)
		}
		sent = end
	}
	q.reqs = r.addRequest(q.reqs, rundir.Sample{Start: at, Latency: sent - at, Host: q.lanes[0].host, Outcome: worst, Involved: involved})
	return true
}

// lane runs lane i's accesses as they are handed to it, until its wake
// channel is closed.
func (q *requester) lane(i int) {
	for range q.wake[i] {
		q.got[i] = q.do(q.lanes[i], q.jobs[i])
		if q.pending.Add(-1) == 0 {
			q.last <- struct{}{}
		}
	}
}

// job draws one access of a phase.
func (q *requester) job(ph Phase, sent time.Duration) job {
	op := q.gen.next()
	if ph.Op != "" {
		op.Kind = ph.Kind
	}
	j := job{op: op, sent: sent}
	if d := q.r.cfg.Shape.Delay; d.Share > 0 && q.rng.Float64() < d.Share {
		j.delay = d.Delay
	}
	return j
}

// close flushes what the requester recorded and closes its lanes.
func (q *requester) close() {
	q.r.flush(q.buf)
	q.r.flushRequests(q.reqs)
	q.buf, q.reqs = nil, nil
	for _, c := range q.wake[min(1, len(q.wake)):] {
		close(c)
	}
	q.lanesWG.Wait()
	for _, l := range q.lanes {
		l.c.Close()
	}
}

package replica

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/replica/limp"
	"github.com/gait-dev/gait/internal/resp"
)

// indexBatcher shares one read-index round among all the reads that arrive
// while the previous round runs: the leader confirms its leadership once
// per round, not once per read.
type indexBatcher struct {
	fetch   func(context.Context) (uint64, error)
	timeout time.Duration

	mu      sync.Mutex
	running bool
	next    []chan result // reads waiting for the next round
}

// get returns a read index taken after the call began.
func (b *indexBatcher) get(ctx context.Context) (uint64, error) {
	ch := make(chan result, 1)
	b.mu.Lock()
	b.next = append(b.next, ch)
	if !b.running {
		b.running = true
		go b.loop()
	}
	b.mu.Unlock()
	select {
	case r := <-ch:
		return r.index, r.err
	case <-ctx.Done():
		return 0, fmt.Errorf("read index: %w", ctx.Err())
	}
}

// loop runs rounds while reads wait. A read that arrives during a round
// waits for the next one: the index of a round that began before the read
// could miss a write acknowledged just before the read.
func (b *indexBatcher) loop() {
	for {
		b.mu.Lock()
		batch := b.next
		b.next = nil
		if len(batch) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		n, err := b.fetch(ctx)
		cancel()
		for _, ch := range batch {
			ch <- result{index: n, err: err}
		}
	}
}

// fetchReadIndex runs one read-index round: on the leader itself, or by
// asking the leader (whose own batcher serves all followers' rounds). A
// round that failed because leadership moved is asked of the new leader.
func (a *Agent) fetchReadIndex(ctx context.Context) (uint64, error) {
	for {
		leader, err := a.waitLeader(ctx)
		if err != nil {
			return 0, err
		}
		index, err := a.readIndexFrom(ctx, leader)
		if err == nil || ctx.Err() != nil || a.leaderAddr() == leader {
			return index, err
		}
	}
}

func (a *Agent) readIndexFrom(ctx context.Context, leader string) (uint64, error) {
	if leader == a.raftAddr {
		return a.readIndexLocal()
	}
	deadline, _ := ctx.Deadline()
	r := a.request(leader, func(id string) [][]byte { return [][]byte{[]byte("READINDEX"), []byte(id)} },
		time.Until(deadline))
	return r.index, r.err
}

// readIndexLocal is the leader's half of a linearizable read: every write
// acknowledged so far is at or below the last log index, and confirming
// leadership afterwards (by the lease, or else a round of messages) rules
// out a newer leader with newer writes.
func (a *Agent) readIndexLocal() (uint64, error) {
	if index, _, ok := a.leaseIndex(); ok {
		return index, nil
	}
	a.m.indexRounds.Inc()
	index := a.raft.LastIndex()
	if err := a.raft.VerifyLeader().Error(); err != nil {
		return 0, fmt.Errorf("confirm raft leadership: %w", err)
	}
	return index, nil
}

// leaseIndex is the leader's last log index, and true when the lease
// covers the moment it was read: no other leader exists then. now is the
// clock read after the index, for a caller to time the read from.
func (a *Agent) leaseIndex() (index uint64, now time.Time, ok bool) {
	start := time.Now()
	if !a.IsLeader() {
		return 0, start, false
	}
	index = a.raft.LastIndex()
	if now = time.Now(); !a.lease.covers(start, now) {
		return 0, now, false
	}
	a.m.leaseReads.Inc()
	return index, now, true
}

// minIndex is the log index a replica must have applied to answer a read
// in the deployment's read mode, of a connection whose acknowledged writes
// go up to own.
func (a *Agent) minIndex(ctx context.Context, own uint64) (uint64, error) {
	switch a.cfg.Read {
	case Linearizable:
		if index, _, ok := a.leaseIndex(); ok {
			return index, nil
		}
		return a.indexes.get(ctx)
	case Session:
		return own, nil
	}
	return 0, nil
}

// fastRead starts a read on the local redis-server at once, with no
// goroutine of its own and no wait, when nothing is to be waited for: the
// connection has no write in flight, one replica answers a read (Fanout 1)
// and this one is the first to ask, and it has already applied the index
// the read mode asks for (under the lease that takes no message). Reads
// under a lease with no write in flight, most reads, then cost one round
// trip to the local redis. The slot's fill waits for the answer; one that
// fails, or takes longer than hedgeAfter, is served again the full way
// (other replicas, hedging). false: serve the read the full way.
func (a *Agent) fastRead(st *clientState, payload []byte, pinned bool) (slot, bool) {
	if a.cfg.Fanout != 1 || !closed(st.lastWriteDone) || a.fsm.failure() != nil {
		return slot{}, false
	}
	// One clock read times the read, its hedge wait and the limp
	// tracker's choice: a read of the clock costs 0.1 to 0.3 µs on this
	// machine's VM, and a GET read it about a dozen times.
	var index uint64
	var start time.Time
	switch a.cfg.Read {
	case Linearizable:
		var ok bool
		if index, start, ok = a.leaseIndex(); !ok {
			return slot{}, false
		}
	case Session:
		index, start = st.lastIndex.Load(), time.Now()
	default:
		start = time.Now()
	}
	if a.fsm.appliedIndex() < index {
		return slot{}, false
	}
	if ts := a.health.readTargets(1, nil, start); len(ts) == 0 || !ts[0].Local {
		return slot{}, false
	}
	md := st.mode()
	p, n, after := md.frame(payload, 1)
	call := a.reads.start(p, n, n-1-after)
	done := make(chan struct{})
	st.lastRead = done // closed once fill, fallback included, ran
	return slot{done: done, direct: true, fill: func() []byte {
		if answered(call.done, start.Add(a.hedgeAfter())) && call.err == nil {
			a.m.read.Observe(time.Since(start).Seconds())
			return call.raw
		}
		raw, err := a.redisRead(st, md, payload, pinned)
		if err != nil {
			return resp.Error("ERR gait replica: " + strings.TrimSpace(err.Error()))
		}
		return raw
	}}, true
}

// hedgeTimers are the timers answered waits with, kept for the next
// read: every fast read waits on one, and a new timer (its channel and
// runtime timer) per read was 1.2 % of the leader's CPU at GET c=8. A
// stopped timer delivers nothing stale once reset (Go 1.23 and later).
var hedgeTimers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// answered tells whether done closes by deadline; one closed already wins
// even when the deadline has passed, and reads no clock.
func answered(done chan struct{}, deadline time.Time) bool {
	if closed(done) {
		return true
	}
	t := hedgeTimers.Get().(*time.Timer)
	t.Reset(time.Until(deadline))
	defer func() { t.Stop(); hedgeTimers.Put(t) }()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// closed tells whether ch is nil or closed.
func closed(ch chan struct{}) bool {
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// hedgeAfter is how long a read waits for its replicas before it asks one
// more: a tenth of the limping threshold.
func (a *Agent) hedgeAfter() time.Duration { return max(a.cfg.LimpFloor/10, time.Millisecond) }

// read answers a read (Backend.Read's data) of a connection whose
// acknowledged writes go up to own: from the first of Fanout replicas that
// has applied the read's index. A replica that fails, or is slower than
// hedgeAfter, is replaced by one not yet tried, never the one that just
// limped.
func (a *Agent) read(ctx context.Context, own uint64, data []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.WriteTimeout)
	defer cancel()
	start := time.Now()
	index, err := a.minIndex(ctx, own)
	if err != nil {
		return nil, err
	}
	f := &fanout{a: a, ctx: ctx, data: data, index: index, tried: map[string]bool{},
		answers: make(chan result, a.health.size()+1), sentAt: map[string]time.Time{}}
	raw, err := f.run()
	if err == nil {
		a.m.read.Observe(time.Since(start).Seconds())
	}
	return raw, err
}

// fanout is one read sent to several replicas.
type fanout struct {
	a       *Agent
	ctx     context.Context
	data    []byte // the read, as the backend takes it
	index   uint64
	tried   map[string]bool
	sentAt  map[string]time.Time // replicas asked and not yet answered
	answers chan result          // from is the replica ID; room for every replica
}

func (f *fanout) run() ([]byte, error) {
	a := f.a
	targets := a.health.readTargets(a.cfg.Fanout, f.tried, time.Now())
	if len(targets) == 0 {
		return nil, errors.New("no replica may answer reads: every one limps, is quarantined or is busy")
	}
	for _, t := range targets {
		f.launch(t)
	}
	hedge := time.NewTimer(a.hedgeAfter())
	defer hedge.Stop()
	var last error
	for {
		select {
		case r := <-f.answers:
			delete(f.sentAt, r.from)
			if r.err == nil {
				return r.raw, nil
			}
			last = r.err
			if len(f.sentAt) == 0 && !f.more() {
				return nil, last
			}
		case <-hedge.C:
			for id, at := range f.sentAt {
				if id != a.cfg.ID {
					a.health.readLimp(id, time.Since(at))
				}
			}
			f.more()
			hedge.Reset(a.hedgeAfter())
		case <-f.ctx.Done():
			if last == nil {
				last = f.ctx.Err()
			}
			return nil, fmt.Errorf("read at log index %d: %w", f.index, last)
		}
	}
}

// more asks one replica not yet tried; false when none is left.
func (f *fanout) more() bool {
	ts := f.a.health.readTargets(1, f.tried, time.Now())
	if len(ts) == 0 {
		return false
	}
	f.launch(ts[0])
	return true
}

func (f *fanout) launch(t limp.Target) {
	a := f.a
	f.tried[t.ID] = true
	f.sentAt[t.ID] = time.Now()
	if t.Local {
		go func() {
			raw, err := a.localRead(f.ctx, f.data, f.index)
			select {
			case f.answers <- result{raw: raw, err: err, from: t.ID}:
			default: // a member that joined mid-read filled the room; the read has other answers
			}
		}()
		return
	}
	a.health.readSent(t.ID)
	sent := time.Now()
	id := a.registerFunc(t.Addr, time.Now().Add(a.cfg.WriteTimeout), func(r result) {
		a.health.readDone(t.ID, time.Since(sent), r.err == nil)
		r.from = t.ID
		select {
		case f.answers <- r:
		default: // the read is long over
		}
	})
	msg := resp.AppendCommand(nil, []byte("READ"), strconv.AppendUint(nil, id, 10),
		strconv.AppendUint(nil, f.index, 10), f.data)
	a.peer(t.Addr).send(peerMsg{data: msg, id: id})
}

// readHere answers a read from this replica's own server only, at the index
// the read mode asks: a SCAN cursor means something only to the server that
// returned it (each server hashes with a seed of its own).
func (a *Agent) readHere(ctx context.Context, own uint64, data []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.WriteTimeout)
	defer cancel()
	index, err := a.minIndex(ctx, own)
	if err != nil {
		return nil, err
	}
	return a.localRead(ctx, data, index)
}

// localRead answers a read (Backend.Read's data) from the local server
// once it has applied index.
func (a *Agent) localRead(ctx context.Context, data []byte, index uint64) ([]byte, error) {
	if a.health.selfQuarantined() {
		return nil, errors.New("replica quarantined")
	}
	if err := a.fsm.waitApplied(ctx, index); err != nil {
		return nil, err
	}
	return a.fsm.backend.Read(ctx, data)
}

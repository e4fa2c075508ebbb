package replica

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/replica/limp"
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
	msg := appendFrame(nil, []byte("READ"), strconv.AppendUint(nil, id, 10),
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

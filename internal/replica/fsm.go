package replica

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

const snapshotMagic = "GAITSNAP5"

// applyQueueBytes bounds the committed bytes waiting for the local
// server. raft hands entries over without waiting for the server, so a slow
// server never stalls raft's own loop (and with it heartbeats and leadership
// transfer); past this bound the hand-over blocks, so the backlog stays bounded.
const applyQueueBytes = 64 << 20

// maxSpare is the longest batch whose array the applier keeps for the next
// queue: a backlog's long one is left to the collector.
const maxSpare = 4096

// applied is one entry the local server has run, as the proposer learns it.
type applied struct {
	entry  entry
	index  uint64
	raw    []byte // the client's reply (Result.Reply)
	digest uint64 // chained digest of every reply up to this entry
	// When raft handed the entry over as committed, and when the batch it
	// was applied in went to the server: the write's stages, on this clock.
	committed, sent time.Time
	// appended is when the leader's raft loop took the entry into its log,
	// on the leader's clock.
	appended time.Time
}

// queued is one committed entry (or a bare index to mark applied: raft
// configuration changes, undecodable entries) waiting for the applier.
type queued struct {
	index     uint64
	entry     entry
	ok        bool      // entry decoded and has data to apply
	committed time.Time // when raft handed it over
	appended  time.Time // raft.Log.AppendedAt: when the leader took it into its log
	// more marks a write of a group entry that is not the group's last:
	// the applied index moves past the entry only with its last write.
	more bool
}

// fsm is raft's state machine: it queues committed entries and one applier
// goroutine hands them to the adapter's Backend in log order, in batches,
// skipping duplicates, and chains the replies into the digest.
type fsm struct {
	backend Backend
	// report hands a run's replies to their waiting proposers; it keeps
	// nothing of the slice, which the next run reuses.
	report  func([]applied)
	reports []applied // account's, emptied between runs
	logger  *log.Logger
	// observe, when set, learns how long each batch took on the server.
	observe func(d time.Duration, entries int)
	// onConfig, when set, runs when a configuration entry is committed.
	onConfig func()

	qmu      sync.Mutex
	qcond    *sync.Cond // signals queue changes, both ways
	queue    []queued
	spare    []queued      // the applier's last batch, emptied: the next queue
	nils     []interface{} // ApplyBatch's responses, all nil
	qbytes   int
	enqueued uint64 // last index handed over by raft
	closed   bool

	// run is held while the applier talks to the server, so a snapshot or
	// a restore sees no half-applied batch. It guards sessions too.
	run      sync.Mutex
	sessions *sessions

	mu      sync.Mutex
	applied uint64        // last log index whose effect the server holds
	digest  uint64        // chained digest of every reply up to applied
	changed chan struct{} // closed and replaced whenever applied moves
	failed  error         // set once the server failed mid-apply; applying stops until reattach
}

func newFSM(backend Backend, report func([]applied), logger *log.Logger) *fsm {
	f := &fsm{backend: backend, report: report, logger: logger, changed: make(chan struct{}), sessions: newSessions()}
	f.qcond = sync.NewCond(&f.qmu)
	return f
}

// Apply and ApplyBatch hand committed entries to the applier.
func (f *fsm) Apply(l *raft.Log) interface{} {
	f.ApplyBatch([]*raft.Log{l})
	return nil
}

func (f *fsm) ApplyBatch(logs []*raft.Log) []interface{} {
	for _, l := range logs {
		if l.Type == raft.LogConfiguration && f.onConfig != nil {
			f.onConfig()
			break
		}
	}
	now := time.Now()
	f.qmu.Lock()
	defer f.qmu.Unlock()
	for _, l := range logs {
		for f.qbytes > applyQueueBytes && !f.closed {
			f.qcond.Wait()
		}
		f.queue = f.appendQueued(f.queue, l, now)
		f.qbytes += len(l.Data)
		f.enqueued = l.Index
	}
	f.qcond.Broadcast()
	if len(f.nils) < len(logs) {
		f.nils = make([]interface{}, len(logs))
	}
	return f.nils[:len(logs)] // raft reads the responses, never writes them
}

// appendQueued decodes a committed log entry for the applier: one queued
// write, or one per write of a group entry, in the group's order.
func (f *fsm) appendQueued(qs []queued, l *raft.Log, committed time.Time) []queued {
	q := queued{index: l.Index, committed: committed, appended: l.AppendedAt}
	if l.Type != raft.LogCommand {
		return append(qs, q)
	}
	e, err := decodeEntry(l.Data)
	if err != nil {
		// Every replica decodes the same bytes the same way, so skipping keeps them equal.
		f.logger.Printf("log index %d: %v; skipped", l.Index, err)
		return append(qs, q)
	}
	if len(e.group) == 0 {
		q.entry, q.ok = e, len(e.data) > 0
		return append(qs, q)
	}
	for i, m := range e.group {
		q.entry = entry{proposer: e.proposer, seq: m.seq, floor: e.floor, data: m.data}
		q.ok, q.more = len(m.data) > 0, i < len(e.group)-1
		qs = append(qs, q)
	}
	return qs
}

// StoreConfiguration is raft's path for configuration entries when it does
// not batch; they only move the applied index, in log order.
func (f *fsm) StoreConfiguration(index uint64, _ raft.Configuration) {
	f.ApplyBatch([]*raft.Log{{Index: index, Type: raft.LogConfiguration}})
}

// runApplier applies queued entries until close.
func (f *fsm) runApplier() {
	for {
		f.qmu.Lock()
		for len(f.queue) == 0 && !f.closed {
			f.qcond.Wait()
		}
		if f.closed {
			f.qmu.Unlock()
			return
		}
		batch := f.queue
		f.queue, f.spare, f.qbytes = f.spare, nil, 0
		f.qcond.Broadcast()
		f.qmu.Unlock()
		f.run.Lock()
		f.applyBatch(batch)
		f.run.Unlock()
		// Nothing holds on to the batch's elements now (applied copies
		// what it reports): it becomes the queue after next.
		if cap(batch) <= maxSpare {
			clear(batch)
			f.qmu.Lock()
			f.spare = batch[:0]
			f.qmu.Unlock()
		}
	}
}

// applyBatch hands the batch's new entries, each first copy once, to the
// backend, which applies them in one or more runs. A replica whose server
// fails stops applying rather than skip an entry and diverge silently.
func (f *fsm) applyBatch(batch []queued) {
	if f.failure() != nil {
		return
	}
	f.mu.Lock()
	from := f.applied
	f.mu.Unlock()
	cmds := make([]Committed, 0, len(batch))
	run := make([]bool, len(batch)) // entries to apply: new, decoded, first copies
	for i, q := range batch {
		if q.ok && q.index > from && f.sessions.admit(q.entry.proposer, q.entry.seq, q.entry.floor, q.index) {
			run[i] = true
			cmds = append(cmds, Committed{Index: q.index, Time: q.appended, Proposer: q.entry.proposer, Seq: q.entry.seq, Data: q.entry.data})
		}
	}
	i := 0 // batch[:i] are accounted for
	for len(cmds) > 0 {
		start := time.Now()
		results, err := f.backend.Apply(cmds)
		if err == nil && len(results) == 0 {
			err = errors.New("the adapter applied nothing")
		}
		f.account(batch, run, &i, from, results, start)
		if err != nil {
			f.fail(fmt.Errorf("apply log index %d: %w", cmds[len(results)].Index, err))
			return
		}
		if f.observe != nil {
			f.observe(time.Since(start), len(results))
		}
		cmds = cmds[len(results):]
	}
	f.account(batch, run, &i, from, nil, time.Time{})
}

// account moves the applied index past batch[*i:], entry by entry, up to
// and including the entry of the last of results (with none: to the end),
// folds each result into the digest, and reports the replies to their
// proposers and the new index to its waiters. sent is when the results'
// run went to the server.
func (f *fsm) account(batch []queued, run []bool, i *int, from uint64, results []Result, sent time.Time) {
	// The replies go out once per run, not once per entry: one message to
	// each other proposer.
	reports := f.reports[:0]
	first := *i
	defer func() {
		if *i > first {
			f.notifyApplied()
		}
		if len(reports) > 0 {
			f.report(reports)
		}
		clear(reports)
		if cap(reports) <= maxSpare {
			f.reports = reports[:0]
		}
	}()
	for ; *i < len(batch); *i++ {
		q := batch[*i]
		if q.index <= from {
			continue // already in a restored snapshot
		}
		if !run[*i] {
			f.setApplied(q, nil)
			continue
		}
		if len(results) == 0 {
			break
		}
		r := results[0]
		results = results[1:]
		d := f.setApplied(q, r.Digest)
		if q.entry.proposer != "" {
			reports = append(reports, applied{entry: q.entry, index: q.index, raw: r.Reply, digest: d, committed: q.committed,
				sent: sent, appended: q.appended})
		}
	}
}

// chain folds one reply into the running digest: replicas that applied the
// same log to the same state hold the same digest at every index.
// It is 64-bit FNV-1a over prev (8 bytes, big-endian) and then raw, as
// hash/fnv computes it, written out so that it allocates nothing.
func chain(prev uint64, raw []byte) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for shift := 56; shift >= 0; shift -= 8 {
		h = (h ^ (prev >> shift & 0xff)) * prime
	}
	for _, c := range raw {
		h = (h ^ uint64(c)) * prime
	}
	return h
}

// setApplied moves the applied index to q's, unless more of q's group
// is to come; raw, when the write had replies, extends the digest. It
// returns the digest after q. Waiters learn of it at notifyApplied.
func (f *fsm) setApplied(q queued, raw []byte) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if raw != nil {
		f.digest = chain(f.digest, raw)
	}
	if !q.more {
		f.applied = max(f.applied, q.index)
	}
	return f.digest
}

// notifyApplied wakes whoever waits for the applied index to move.
func (f *fsm) notifyApplied() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fsm) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed == nil {
		f.failed = err
		f.logger.Printf("replica stopped applying: %v", err)
		close(f.changed)
		f.changed = make(chan struct{})
	}
}

func (f *fsm) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

func (f *fsm) appliedIndex() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

// queueLen is how many committed entries wait for the local server.
func (f *fsm) queueLen() int {
	f.qmu.Lock()
	defer f.qmu.Unlock()
	return len(f.queue)
}

func (f *fsm) close() {
	f.qmu.Lock()
	f.closed = true
	f.qcond.Broadcast()
	f.qmu.Unlock()
}

// waitApplied returns once the local server holds the effect of every entry up to index.
func (f *fsm) waitApplied(ctx context.Context, index uint64) error {
	for {
		f.mu.Lock()
		applied, failed, changed := f.applied, f.failed, f.changed
		f.mu.Unlock()
		if failed != nil {
			return failed
		}
		if applied >= index {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("replica at log index %d, read needs %d: %w", applied, index, ctx.Err())
		}
	}
}

// drained waits until the applier has run everything raft handed over, so
// that the local server holds exactly the state at raft's last applied index.
func (f *fsm) drained(limit time.Duration) error {
	f.qmu.Lock()
	target := f.enqueued
	f.qmu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	return f.waitApplied(ctx, target)
}

// snapshotWait bounds how long a snapshot waits for the applier to catch up.
const snapshotWait = 30 * time.Second

// Snapshot holds the applied index, the digest and the sessions, then the
// backend's copy of the server's state. raft calls it between two
// hand-overs; it waits for the applier to catch up so the copy is the
// state at raft's index.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	if err := f.drained(snapshotWait); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	f.run.Lock()
	defer f.run.Unlock()
	f.mu.Lock()
	buf := binary.AppendUvarint([]byte(snapshotMagic), f.applied)
	buf = binary.BigEndian.AppendUint64(buf, f.digest)
	f.mu.Unlock()
	w := bytes.NewBuffer(f.sessions.appendTo(buf))
	if err := f.backend.Snapshot(w); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return &snapshot{data: w.Bytes()}, nil
}

// Restore replaces the server's state with a snapshot's; queued entries
// the snapshot already covers are skipped by the applier.
func (f *fsm) Restore(rc io.ReadCloser) error {
	f.run.Lock()
	defer f.run.Unlock()
	return f.restore(rc)
}

// restore is Restore with run held.
func (f *fsm) restore(rc io.ReadCloser) error {
	defer rc.Close()
	r := bufio.NewReader(rc)
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != snapshotMagic {
		return fmt.Errorf("restore snapshot: not a gait replica snapshot")
	}
	index, err := binary.ReadUvarint(r)
	if err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	var d [8]byte
	if _, err := io.ReadFull(r, d[:]); err != nil {
		return fmt.Errorf("restore snapshot: %w", noEOF(err))
	}
	sessions, err := readSessions(r)
	if err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	if err := f.backend.Restore(r); err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied, f.digest, f.sessions = index, binary.BigEndian.Uint64(d[:]), sessions
	close(f.changed)
	f.changed = make(chan struct{})
	return nil
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

type snapshot struct{ data []byte }

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s.data); err != nil {
		sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *snapshot) Release() {}

// reattach brings a replica whose server failed back, once the backend
// answers again (Backend.Alive: restarted, empty or not): it rebuilds the
// state at raft's last handed-over index from the newest local snapshot
// (none: from empty) and the log after it, then applies again. raft keeps
// every entry after its newest snapshot, so the log holds what the
// snapshot lacks. The applier waits meanwhile; entries it dropped while
// failed are replayed here.
func (f *fsm) reattach(snaps raft.SnapshotStore, logs raft.LogStore) error {
	f.run.Lock()
	defer f.run.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), snapshotWait)
	defer cancel()
	if err := f.backend.Alive(ctx); err != nil {
		return err
	}
	metas, err := snaps.List()
	if err != nil {
		return fmt.Errorf("reattach: list snapshots: %w", err)
	}
	if len(metas) > 0 {
		_, rc, err := snaps.Open(metas[0].ID)
		if err != nil {
			return fmt.Errorf("reattach: open snapshot %s: %w", metas[0].ID, err)
		}
		if err := f.restore(rc); err != nil {
			return fmt.Errorf("reattach: %w", err)
		}
	} else {
		if err := f.backend.Reset(); err != nil {
			return fmt.Errorf("reattach: %w", err)
		}
		f.mu.Lock()
		f.applied, f.digest, f.sessions = 0, 0, newSessions()
		f.mu.Unlock()
	}
	f.qmu.Lock()
	target := f.enqueued
	f.qmu.Unlock()
	f.mu.Lock()
	from, failed := f.applied, f.failed
	f.failed = nil
	f.mu.Unlock()
	const batch = 256
	var qs []queued
	now := time.Now()
	for i := from + 1; i <= target; i++ {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil {
			f.fail(fmt.Errorf("reattach: log index %d: %w", i, err))
			return f.failure()
		}
		qs = f.appendQueued(qs, &l, now)
		if len(qs) >= batch || i == target {
			f.applyBatch(qs)
			qs = nil
			if err := f.failure(); err != nil {
				return err
			}
		}
	}
	f.logger.Printf("replica applying again: server rebuilt to log index %d (snapshot at %d) after: %v", target, from, failed)
	return nil
}

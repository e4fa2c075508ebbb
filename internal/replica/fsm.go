package replica

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gait-dev/gait/internal/resp"
	"github.com/hashicorp/raft"
)

const snapshotMagic = "GAITSNAP5"

// applyQueueBytes bounds the committed payload bytes waiting for the local
// redis-server. raft hands entries over without waiting for redis, so a slow
// redis never stalls raft's own loop (and with it heartbeats and leadership
// transfer); past this bound the hand-over blocks, so the backlog stays bounded.
const applyQueueBytes = 64 << 20

// applied is one entry the local redis has run, as the proposer learns it.
type applied struct {
	entry  entry
	index  uint64
	raw    []byte // the last reply (EXEC's for a transaction)
	digest uint64 // chained digest of every reply up to this entry
	// When raft handed the entry over as committed, and when the batch it
	// was applied in went to redis: the write's stages, on this clock.
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
	ok        bool      // entry decoded and has replies to run
	counted   bool      // a script whose commands this agent counts (scriptstats.go)
	committed time.Time // when raft handed it over
	appended  time.Time // raft.Log.AppendedAt: when the leader took it into its log
}

// fsm is raft's state machine: it queues committed entries and one applier
// goroutine runs them on the local redis-server in log order, in batches,
// over one connection only it uses.
type fsm struct {
	// conn is the applier's connection to redis, replaced when it
	// re-attaches (under run and connMu; the applier reads it under run).
	conn   *redisConn
	connMu sync.Mutex
	report func([]applied) // hands a batch's replies to their waiting proposers
	logger *log.Logger
	// observe, when set, learns how long each batch took on redis.
	observe func(d time.Duration, entries int)
	// onConfig, when set, runs when a configuration entry is committed.
	onConfig func()
	// scripts, when set, counts the commands of this agent's clients' scripts.
	scripts *scriptCounting

	qmu      sync.Mutex
	qcond    *sync.Cond // signals queue changes, both ways
	queue    []queued
	qbytes   int
	enqueued uint64 // last index handed over by raft
	closed   bool

	// run is held while the applier talks to redis, so a snapshot or a
	// restore sees no half-applied batch. It guards sessions too.
	run      sync.Mutex
	sessions *sessions
	// blocked orders blocked clients; the applier changes it, in log order.
	blocked *blockQueues

	mu      sync.Mutex
	applied uint64        // last log index whose effect redis holds
	digest  uint64        // chained digest of every reply up to applied
	changed chan struct{} // closed and replaced whenever applied moves
	failed  error         // set once redis failed mid-apply; applying stops until reattach

	// busySince is when the batch now on redis was sent (Unix ns), 0 while
	// none is: a long one is a script redis may be answering BUSY for.
	busySince atomic.Int64
}

func newFSM(conn *redisConn, report func([]applied), logger *log.Logger) *fsm {
	f := &fsm{conn: conn, report: report, logger: logger, changed: make(chan struct{}), sessions: newSessions(), blocked: newBlockQueues()}
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
		q := f.toQueued(l, now)
		for f.qbytes > applyQueueBytes && !f.closed {
			f.qcond.Wait()
		}
		f.queue = append(f.queue, q)
		f.qbytes += len(q.entry.payload)
		f.enqueued = l.Index
	}
	f.qcond.Broadcast()
	return make([]interface{}, len(logs))
}

// toQueued decodes a committed log entry for the applier.
func (f *fsm) toQueued(l *raft.Log, committed time.Time) queued {
	q := queued{index: l.Index, committed: committed, appended: l.AppendedAt}
	if l.Type == raft.LogCommand {
		e, err := decodeEntry(l.Data)
		if err != nil {
			// Every replica decodes the same bytes the same way, so skipping keeps them equal.
			f.logger.Printf("log index %d: %v; skipped", l.Index, err)
		}
		q.entry, q.ok = e, err == nil && e.replies > 0
	}
	return q
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
		f.queue, f.qbytes = nil, 0
		f.qcond.Broadcast()
		f.qmu.Unlock()
		f.run.Lock()
		f.applyBatch(batch)
		f.run.Unlock()
	}
}

// applyBatch sends every payload of the batch to redis in one write and
// reads the replies. A replica whose redis fails stops applying for good
// rather than skip an entry and diverge silently.
func (f *fsm) applyBatch(batch []queued) {
	for len(batch) > 0 {
		n := f.countRun(batch[:f.blocked.runLength(batch)])
		f.applyRun(batch[:n])
		batch = batch[n:]
	}
}

// applyRun applies entries that go to redis together (blockQueues.runLength).
func (f *fsm) applyRun(batch []queued) {
	if f.failure() != nil {
		return
	}
	start := time.Now()
	f.mu.Lock()
	from := f.applied
	f.mu.Unlock()
	defer f.notifyApplied() // once per batch, not per entry
	// The replies go out once per batch too: one message to each other
	// proposer, not one per entry (reported also when the batch fails
	// part way: those before the failure were applied).
	var reports []applied
	defer func() {
		if len(reports) > 0 {
			f.report(reports)
		}
	}()
	var payload []byte
	n := 0
	run := make([]bool, len(batch)) // entries to send to redis: new, decoded, first copies
	var g gated                     // the attempt's, when batch[0] is one
	for i, q := range batch {
		if q.ok && q.index > from && f.sessions.admit(q.entry.proposer, q.entry.seq, q.entry.floor, q.index) {
			run[i] = true
			if q.entry.block != nil {
				if err := f.lastIDs(q.entry.block); err != nil {
					f.fail(fmt.Errorf("apply log index %d: %w", q.index, err))
					return
				}
				if g = f.blocked.gate(q.entry.proposer, q.entry.seq, q.entry.block); g.skip {
					continue
				}
				q.entry.payload = g.payload
			}
			if q.counted {
				payload = appendCounted(payload, q.entry)
			} else {
				payload = append(payload, q.entry.payload...)
			}
			n++
		}
	}
	if n > 0 {
		f.busySince.Store(start.UnixNano())
		defer f.busySince.Store(0)
		if err := f.conn.send(payload); err != nil {
			f.fail(fmt.Errorf("apply log index %d: %w", batch[0].index, err))
			return
		}
	}
	for i, q := range batch {
		if q.index <= from {
			continue // already in a restored snapshot
		}
		if !run[i] {
			f.setApplied(q.index, nil)
			continue
		}
		var raw, digested []byte
		var err error
		serve := false // the waiters are served before the entry counts as applied
		switch {
		case q.entry.block == nil:
			raw, digested, err = f.entryReplies(q, start)
			f.blocked.touched(q.index, q.entry.payload)
			serve = i == len(batch)-1 && f.blocked.mentioned(q.entry.payload)
		case g.skip:
			// Nothing ran: the digest stays as it was.
			if raw = g.served; raw == nil {
				raw = skippedReply
			}
			serve = f.blocked.settle(q.index, g, nil)
		default:
			raw, digested, err = f.entryReplies(q, start)
			serve = f.blocked.settle(q.index, g, raw)
		}
		if err == nil && serve {
			err = f.serveWaiters(q.index)
		}
		if err != nil {
			f.fail(fmt.Errorf("apply log index %d: %w", q.index, err))
			return
		}
		d := f.setApplied(q.index, digested)
		if q.entry.proposer != "" {
			reports = append(reports, applied{entry: q.entry, index: q.index, raw: raw, digest: d, committed: q.committed,
				sent: start, appended: q.appended})
		}
	}
	if f.observe != nil && n > 0 {
		f.observe(time.Since(start), n)
	}
}

// busyFor is how long the batch now on redis has run (0 while none is).
func (f *fsm) busyFor() time.Duration {
	if t := f.busySince.Load(); t != 0 {
		return time.Since(time.Unix(0, t))
	}
	return 0
}

// entryReplies reads an entry's replies: what its client gets, and what
// goes into the digest. sent is when its run went to redis.
func (f *fsm) entryReplies(q queued, sent time.Time) (raw, digested []byte, err error) {
	e := q.entry
	switch {
	case e.batch:
		return f.conn.batchReplies(e.replies, e.after, e.reads) // reads only: the digest stays as it was
	case q.counted:
		raw, err = f.countedReplies(e, sent)
	default:
		raw, err = f.conn.replies(e.replies, e.after)
	}
	if e.volatile {
		return raw, []byte{}, err // the same on every replica
	}
	return raw, raw, err
}

// chain folds one reply into the running digest: replicas that applied the
// same log to the same state hold the same digest at every index.
func chain(prev uint64, raw []byte) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], prev)
	h.Write(b[:])
	h.Write(raw)
	return h.Sum64()
}

// setApplied moves the applied index; raw, when the entry had replies,
// extends the digest. It returns the digest at index. Waiters learn of it
// at notifyApplied.
func (f *fsm) setApplied(index uint64, raw []byte) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if raw != nil {
		f.digest = chain(f.digest, raw)
	}
	f.applied = max(f.applied, index)
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

// queueLen is how many committed entries wait for the local redis.
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

// waitApplied returns once redis holds the effect of every entry up to index.
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
// that redis holds exactly the state at raft's last applied index.
func (f *fsm) drained(limit time.Duration) error {
	f.qmu.Lock()
	target := f.enqueued
	f.qmu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	return f.waitApplied(ctx, target)
}

// Snapshot copies every key of every database with DUMP and its absolute
// expiry, plus the applied index, digest and sessions. raft calls it between two hand-overs; it waits
// for the applier to catch up so the copy is the state at raft's index.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	if err := f.drained(redisTimeout); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	f.run.Lock()
	defer f.run.Unlock()
	defer f.conn.onlyReads()() // a paused server stays paused (redisConn.pause)
	f.mu.Lock()
	buf := binary.AppendUvarint([]byte(snapshotMagic), f.applied)
	buf = binary.BigEndian.AppendUint64(buf, f.digest)
	f.mu.Unlock()
	buf = f.sessions.appendTo(buf)
	buf = f.blocked.appendTo(buf)
	dbs, err := f.databases()
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	// The applier's connection is in database 0 between entries; it is
	// again when this returns.
	defer f.conn.command("SELECT", "0")
	for _, db := range dbs {
		if _, err := f.conn.command("SELECT", strconv.Itoa(db)); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		cursor := "0"
		for {
			v, err := f.conn.command("SCAN", cursor, "COUNT", "1000")
			if err != nil {
				return nil, fmt.Errorf("snapshot: %w", err)
			}
			if len(v.Arr) != 2 {
				return nil, errors.New("snapshot: malformed SCAN reply")
			}
			if buf, err = f.dumpKeys(buf, db, v.Arr[1].Arr); err != nil {
				return nil, err
			}
			if cursor = string(v.Arr[0].Str); cursor == "0" {
				break
			}
		}
	}
	return &snapshot{data: buf}, nil
}

// databases lists the databases that hold keys, from INFO keyspace
// ("db3:keys=1,..." lines).
func (f *fsm) databases() ([]int, error) {
	v, err := f.conn.command("INFO", "keyspace")
	if err != nil {
		return nil, err
	}
	var dbs []int
	for _, line := range strings.Split(string(v.Str), "\n") {
		name, _, ok := strings.Cut(line, ":")
		if n, err := strconv.Atoi(strings.TrimPrefix(name, "db")); ok && strings.HasPrefix(name, "db") && err == nil {
			dbs = append(dbs, n)
		}
	}
	return dbs, nil
}

func (f *fsm) dumpKeys(buf []byte, db int, keys []resp.Value) ([]byte, error) {
	var payload []byte
	for _, k := range keys {
		payload = resp.AppendCommand(payload, []byte("PEXPIRETIME"), k.Str)
		payload = resp.AppendCommand(payload, []byte("DUMP"), k.Str)
	}
	if err := f.conn.send(payload); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	for _, k := range keys {
		at, err1 := f.conn.value()
		dump, err2 := f.conn.value()
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		if dump.Null || dump.Kind != '$' { // expired between SCAN and DUMP
			continue
		}
		buf = binary.AppendUvarint(buf, uint64(db))
		buf = binary.AppendUvarint(buf, uint64(len(k.Str)))
		buf = append(buf, k.Str...)
		buf = binary.AppendVarint(buf, at.Num)
		buf = binary.AppendUvarint(buf, uint64(len(dump.Str)))
		buf = append(buf, dump.Str...)
	}
	return buf, nil
}

// Restore replaces redis's contents with a snapshot; queued entries the
// snapshot already covers are skipped by the applier.
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
	if err := f.blocked.load(r); err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	if _, err := f.conn.command("FLUSHALL"); err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	db := 0
	defer f.conn.command("SELECT", "0")
	for {
		kdb, key, at, dump, err := readRecord(r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("restore snapshot: %w", err)
		}
		if kdb != db {
			if _, err := f.conn.command("SELECT", strconv.Itoa(kdb)); err != nil {
				return fmt.Errorf("restore snapshot: %w", err)
			}
			db = kdb
		}
		ttl := "0"
		if at > 0 {
			ttl = strconv.FormatInt(at, 10)
		}
		if _, err := f.conn.command("RESTORE", key, ttl, dump, "ABSTTL", "REPLACE"); err != nil {
			return fmt.Errorf("restore snapshot key %q: %w", key, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied, f.digest, f.sessions = index, binary.BigEndian.Uint64(d[:]), sessions
	close(f.changed)
	f.changed = make(chan struct{})
	return nil
}

// readRecord reads one key: its database, name, absolute expiry (0: none) and DUMP.
func readRecord(r *bufio.Reader) (db int, key string, at int64, dump string, err error) {
	d, err := binary.ReadUvarint(r)
	if err != nil {
		return 0, "", 0, "", err // io.EOF here is the clean end
	}
	if d >= databases {
		return 0, "", 0, "", fmt.Errorf("database %d out of range", d)
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return 0, "", 0, "", noEOF(err)
	}
	k, err := readN(r, n)
	if err != nil {
		return 0, "", 0, "", err
	}
	if at, err = binary.ReadVarint(r); err != nil {
		return 0, "", 0, "", noEOF(err)
	}
	if n, err = binary.ReadUvarint(r); err != nil {
		return 0, "", 0, "", noEOF(err)
	}
	dump, err = readN(r, n)
	return int(d), k, at, dump, err
}

func readN(r *bufio.Reader, n uint64) (string, error) {
	if n > 1<<32 {
		return "", errors.New("record length out of range")
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return string(b), noEOF(err)
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

// reattach brings a replica whose redis-server failed back: on conn, a
// connection to the redis-server now at its address (restarted, empty or
// not), it rebuilds the state at raft's last handed-over index from the
// newest local snapshot (none: from empty) and the log after it, then
// applies again. raft keeps every entry after its newest snapshot, so the
// log holds what the snapshot lacks. The applier waits meanwhile; entries
// it dropped while failed are replayed here.
func (f *fsm) reattach(conn *redisConn, snaps raft.SnapshotStore, logs raft.LogStore) error {
	f.run.Lock()
	defer f.run.Unlock()
	f.connMu.Lock()
	old := f.conn
	f.conn = conn
	f.connMu.Unlock()
	old.close()
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
		if _, err := f.conn.command("FLUSHALL"); err != nil {
			return fmt.Errorf("reattach: %w", err)
		}
		f.mu.Lock()
		f.applied, f.digest, f.sessions = 0, 0, newSessions()
		f.mu.Unlock()
		f.blocked.reset()
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
		qs = append(qs, f.toQueued(&l, now))
		if len(qs) == batch || i == target {
			f.applyBatch(qs)
			qs = nil
			if err := f.failure(); err != nil {
				return err
			}
		}
	}
	f.logger.Printf("replica applying again: redis rebuilt to log index %d (snapshot at %d) after: %v", target, from, failed)
	return nil
}

// closeConn closes the applier's connection, unblocking it.
func (f *fsm) closeConn() {
	f.connMu.Lock()
	defer f.connMu.Unlock()
	f.conn.close()
}

package redis

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gait-dev/gait/internal/replica"
	"github.com/gait-dev/gait/internal/resp"
)

// redisBackend is the Redis adapter's replica.Backend: it applies committed
// records (record.go) to the local redis-server over one connection only
// it uses, keeps the replicated queue of blocked clients (blockorder.go)
// and, when asked, counts what this agent's clients' scripts call
// (scriptstats.go).
type redisBackend struct {
	addr string
	// conn is the applier's connection, replaced when Alive reconnects
	// (under connMu; Apply reads it without, as the core never runs the
	// two at once).
	conn   *redisConn
	connMu sync.Mutex
	// pause is the agent's CLIENT PAUSE for the local server (redisConn.pause).
	pause *atomic.Int64
	// blocked orders blocked clients; Apply changes it, in log order.
	blocked *blockQueues
	// scripts, when set, counts the commands of this agent's clients' scripts.
	scripts *scriptCounting
	// busySince is when the run now on redis was sent (Unix ns), 0 while
	// none is: a long one is a script redis may be answering BUSY for.
	busySince atomic.Int64
	logger    *log.Logger
	reads     *redisMux
	// payload is applyRun's buffer, kept between runs (only the applier
	// calls Apply) unless a large run grew it; applying Apply's, emptied
	// between calls.
	payload  []byte
	applying []applying
}

// maxKeptPayload is the largest run buffer applyRun keeps for the next.
const maxKeptPayload = 1 << 20

func openRedis(addr string, pause *atomic.Int64, reads *redisMux, logger *log.Logger) (*redisBackend, error) {
	conn, err := dialRedis(addr)
	if err != nil {
		return nil, err
	}
	conn.pause = pause
	return &redisBackend{addr: addr, conn: conn, pause: pause, blocked: newBlockQueues(), logger: logger, reads: reads}, nil
}

// applying is one committed record on its way to redis.
type applying struct {
	replica.Committed
	rec     redisRecord
	err     error // the record did not decode
	counted bool  // a script whose commands this agent counts (scriptstats.go)
}

// ok says the record decoded and has replies to run.
func (q *applying) ok() bool { return q.err == nil && q.rec.replies > 0 }

// Apply runs the first run of batch that may go to redis at once (ends)
// and returns its results; the core calls it again with the rest. It
// decodes no record past the run: after a restart or a link at 1000x the
// core hands over a backlog of 20,000 entries whose runs are a few entries
// long (every blocking attempt is one), and decoding the whole backlog for
// each run applied about 800 entries a second (docs/results/replica-catch-up.md).
func (b *redisBackend) Apply(batch []replica.Committed) ([]replica.Result, error) {
	qs := b.firstRun(b.applying[:0], batch)
	defer func() {
		clear(qs)
		if cap(qs) <= maxKeptApplying {
			b.applying = qs[:0]
		}
	}()
	return b.applyRun(qs)
}

// firstRun appends to qs the records of batch's first run, decoded.
func (b *redisBackend) firstRun(qs []applying, batch []replica.Committed) []applying {
	for i, c := range batch {
		q := applying{Committed: c}
		q.rec, q.err = decodeRedisRecord(c.Data)
		stop, with := b.ends(&q, i == 0)
		if !stop || with {
			qs = append(qs, q)
		}
		if stop {
			break
		}
	}
	return qs
}

// ends tells whether the run q would join (first: q starts it) ends at
// q, and whether q is in it. A blocking attempt goes alone, since its gate
// reads the table the entries before it left; so does a script whose
// commands this agent counts (marked counted, scriptstats.go). An entry
// that names a waited key ends the run with it, since the waiters are
// served right after it.
func (b *redisBackend) ends(q *applying, first bool) (stop, with bool) {
	if q.rec.block != nil {
		return true, first
	}
	if b.scripts != nil && q.ok() && b.countable(q.Proposer, q.rec) {
		q.counted = first
		return true, first
	}
	if q.ok() && b.blocked.mentioned(q.rec.payload) {
		return true, true
	}
	return false, false
}

// maxKeptApplying is the longest batch whose records Apply keeps room for.
const maxKeptApplying = 4096

// applyRun sends every payload of the run to redis in one write and reads
// the replies.
func (b *redisBackend) applyRun(run []applying) ([]replica.Result, error) {
	start := time.Now()
	payload := b.payload[:0]
	n := 0
	var g gated // the attempt's, when run[0] is one
	for i := range run {
		q := &run[i]
		if !q.ok() {
			continue
		}
		if q.rec.block != nil {
			if err := b.lastIDs(q.rec.block); err != nil {
				return nil, err
			}
			if g = b.blocked.gate(q.Proposer, q.Seq, q.rec.block); g.skip {
				continue
			}
			q.rec.payload = g.payload
		}
		if q.counted {
			payload = appendCounted(payload, q.rec)
		} else {
			payload = append(payload, q.rec.payload...)
		}
		n++
	}
	if n > 0 {
		b.busySince.Store(start.UnixNano())
		defer b.busySince.Store(0)
		if err := b.conn.send(payload); err != nil {
			return nil, err
		}
		if cap(payload) <= maxKeptPayload {
			b.payload = payload
		}
	}
	out := make([]replica.Result, 0, len(run))
	for i, q := range run {
		if !q.ok() {
			var reply []byte
			if q.err != nil {
				// Every replica decodes the same bytes the same way, so skipping keeps them equal.
				b.logger.Printf("log index %d: %v; skipped", q.Index, q.err)
				reply = resp.Error("ERR gait replica: log index " + strconv.FormatUint(q.Index, 10) + ": " + q.err.Error())
			}
			out = append(out, replica.Result{Reply: reply})
			continue
		}
		var raw, digested []byte
		var err error
		serve := false // the waiters are served before the entry counts as applied
		switch {
		case q.rec.block == nil:
			raw, digested, err = b.replies(q, start)
			b.blocked.touched(q.Index, q.rec.payload)
			serve = i == len(run)-1 && b.blocked.mentioned(q.rec.payload)
		case g.skip:
			// Nothing ran: the digest stays as it was.
			if raw = g.served; raw == nil {
				raw = skippedReply
			}
			serve = b.blocked.settle(q.Index, g, nil)
		default:
			raw, digested, err = b.replies(q, start)
			serve = b.blocked.settle(q.Index, g, raw)
		}
		if err == nil && serve {
			err = b.serveWaiters(q.Index)
		}
		if err != nil {
			return out, fmt.Errorf("log index %d: %w", q.Index, err)
		}
		out = append(out, replica.Result{Reply: raw, Digest: digested})
	}
	return out, nil
}

// replies reads a record's replies: what its client gets, and what goes
// into the digest. sent is when its run went to redis.
func (b *redisBackend) replies(q applying, sent time.Time) (raw, digested []byte, err error) {
	r := q.rec
	switch {
	case r.batch:
		return b.conn.batchReplies(r.replies, r.after, r.reads) // reads only: the digest stays as it was
	case q.counted:
		raw, err = b.countedReplies(q, sent)
	default:
		raw, err = b.conn.replies(r.replies, r.after)
	}
	if r.volatile {
		return raw, []byte{}, err // the same on every replica
	}
	return raw, raw, err
}

// busyFor is how long the run now on redis has run (0 while none is).
func (b *redisBackend) busyFor() time.Duration {
	if t := b.busySince.Load(); t != 0 {
		return time.Since(time.Unix(0, t))
	}
	return 0
}

// Read serves a read record (readRecord) from the local redis-server.
func (b *redisBackend) Read(ctx context.Context, data []byte) ([]byte, error) {
	md, payload, err := decodeRead(data)
	if err != nil {
		return nil, err
	}
	return b.reads.do(md, payload)
}

// Snapshot copies every key of every database with DUMP and its absolute
// expiry, after the queue of blocked clients.
func (b *redisBackend) Snapshot(w io.Writer) error {
	defer b.conn.onlyReads()() // a paused server stays paused (redisConn.pause)
	buf := b.blocked.appendTo(nil)
	dbs, err := b.databases()
	if err != nil {
		return err
	}
	// The applier's connection is in database 0 between entries; it is
	// again when this returns.
	defer b.conn.command("SELECT", "0")
	for _, db := range dbs {
		if _, err := b.conn.command("SELECT", strconv.Itoa(db)); err != nil {
			return err
		}
		cursor := "0"
		for {
			v, err := b.conn.command("SCAN", cursor, "COUNT", "1000")
			if err != nil {
				return err
			}
			if len(v.Arr) != 2 {
				return errors.New("malformed SCAN reply")
			}
			if buf, err = b.dumpKeys(buf, db, v.Arr[1].Arr); err != nil {
				return err
			}
			if cursor = string(v.Arr[0].Str); cursor == "0" {
				break
			}
		}
	}
	_, err = w.Write(buf)
	return err
}

// databases lists the databases that hold keys, from INFO keyspace
// ("db3:keys=1,..." lines).
func (b *redisBackend) databases() ([]int, error) {
	v, err := b.conn.command("INFO", "keyspace")
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

func (b *redisBackend) dumpKeys(buf []byte, db int, keys []resp.Value) ([]byte, error) {
	var payload []byte
	for _, k := range keys {
		payload = resp.AppendCommand(payload, []byte("PEXPIRETIME"), k.Str)
		payload = resp.AppendCommand(payload, []byte("DUMP"), k.Str)
	}
	if err := b.conn.send(payload); err != nil {
		return nil, err
	}
	for _, k := range keys {
		at, err1 := b.conn.value()
		dump, err2 := b.conn.value()
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
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

// Restore replaces redis's contents, and the queue of blocked clients,
// with what Snapshot wrote.
func (b *redisBackend) Restore(rd io.Reader) error {
	r := bufio.NewReader(rd) // rd itself when it is a bufio.Reader already
	if err := b.blocked.load(r); err != nil {
		return err
	}
	if _, err := b.conn.command("FLUSHALL"); err != nil {
		return err
	}
	db := 0
	defer b.conn.command("SELECT", "0")
	for {
		kdb, key, at, dump, err := readKey(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if kdb != db {
			if _, err := b.conn.command("SELECT", strconv.Itoa(kdb)); err != nil {
				return err
			}
			db = kdb
		}
		ttl := "0"
		if at > 0 {
			ttl = strconv.FormatInt(at, 10)
		}
		if _, err := b.conn.command("RESTORE", key, ttl, dump, "ABSTTL", "REPLACE"); err != nil {
			return fmt.Errorf("key %q: %w", key, err)
		}
	}
}

// readKey reads one key: its database, name, absolute expiry (0: none) and DUMP.
func readKey(r *bufio.Reader) (db int, key string, at int64, dump string, err error) {
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

// noEOF says a record that ended early was cut short.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func readN(r *bufio.Reader, n uint64) (string, error) {
	if n > 1<<32 {
		return "", errors.New("record length out of range")
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return string(b), noEOF(err)
}

// Reset empties redis and forgets every blocked client.
func (b *redisBackend) Reset() error {
	if _, err := b.conn.command("FLUSHALL"); err != nil {
		return err
	}
	b.blocked.reset()
	return nil
}

// Alive connects to the redis-server now at the address (restarted, empty
// or not) and, once it answers, makes that the applier's connection.
func (b *redisBackend) Alive(ctx context.Context) error {
	conn, err := dialRedis(b.addr)
	if err != nil {
		return err
	}
	conn.pause = b.pause
	if _, err = conn.command("PING"); err != nil {
		conn.close()
		return err
	}
	b.connMu.Lock()
	old := b.conn
	b.conn = conn
	b.connMu.Unlock()
	old.close()
	return nil
}

// Close closes the applier's connection, unblocking it.
func (b *redisBackend) Close() error {
	b.connMu.Lock()
	defer b.connMu.Unlock()
	return b.conn.close()
}

// encodeRead is a read for replica.Backend.Read: the client's mode, then its
// RESP commands.
func encodeRead(md mode, payload []byte) []byte {
	b := binary.AppendUvarint(make([]byte, 0, 4+len(payload)), uint64(md.proto))
	b = binary.AppendUvarint(b, uint64(md.db))
	return append(b, payload...)
}

func decodeRead(b []byte) (mode, []byte, error) {
	proto, err1 := uvarint(&b)
	db, err2 := uvarint(&b)
	if errors.Join(err1, err2) != nil || (proto != 2 && proto != 3) || db >= databases {
		return mode{}, nil, errors.New("redis read: bad mode")
	}
	return mode{proto: int(proto), db: int(db)}, b, nil
}

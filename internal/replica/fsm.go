package replica

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"strconv"
	"sync"

	"github.com/hashicorp/raft"
)

const snapshotMagic = "GAITSNAP1"

// fsm applies committed log entries to the local redis-server, in log order,
// on one connection only it uses.
type fsm struct {
	conn   *redisConn
	report func(e entry, reply []byte) // hands the reply to the waiting proposer
	logger *log.Logger

	mu      sync.Mutex
	applied uint64        // last log index whose effect redis holds
	changed chan struct{} // closed and replaced whenever applied moves
	failed  error         // set once redis failed mid-apply; applying stops
}

func newFSM(conn *redisConn, report func(entry, []byte), logger *log.Logger) *fsm {
	return &fsm{conn: conn, report: report, logger: logger, changed: make(chan struct{})}
}

// Apply runs one entry on redis. A replica whose redis fails stops applying
// for good rather than skip an entry and diverge silently.
func (f *fsm) Apply(l *raft.Log) interface{} {
	if f.failure() != nil {
		return nil
	}
	e, err := decodeEntry(l.Data)
	if err != nil {
		// Every replica decodes the same bytes the same way, so skipping keeps them equal.
		f.logger.Printf("log index %d: %v; skipped", l.Index, err)
		f.setApplied(l.Index)
		return nil
	}
	if e.replies == 0 {
		f.setApplied(l.Index)
		return nil
	}
	raw, _, err := f.conn.do(e.payload, e.replies)
	if err != nil {
		f.fail(fmt.Errorf("apply log index %d: %w", l.Index, err))
		return nil
	}
	f.setApplied(l.Index)
	if e.proposer != "" {
		f.report(e, raw)
	}
	return nil
}

// StoreConfiguration counts configuration entries as applied, so a read
// index that lands on one is reached.
func (f *fsm) StoreConfiguration(index uint64, _ raft.Configuration) { f.setApplied(index) }

func (f *fsm) setApplied(index uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if index > f.applied {
		f.applied = index
		close(f.changed)
		f.changed = make(chan struct{})
	}
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

// Snapshot copies every key with DUMP and its absolute expiry. raft calls it
// between two Applies, so the copy is exactly the state at the applied index.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	if err := f.failure(); err != nil {
		return nil, err
	}
	buf := binary.AppendUvarint([]byte(snapshotMagic), f.appliedIndex())
	cursor := "0"
	for {
		v, err := f.conn.command("SCAN", cursor, "COUNT", "1000")
		if err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		if len(v.arr) != 2 {
			return nil, errors.New("snapshot: malformed SCAN reply")
		}
		if buf, err = f.dumpKeys(buf, v.arr[1].arr); err != nil {
			return nil, err
		}
		if cursor = string(v.arr[0].str); cursor == "0" {
			return &snapshot{data: buf}, nil
		}
	}
}

func (f *fsm) dumpKeys(buf []byte, keys []value) ([]byte, error) {
	var payload []byte
	for _, k := range keys {
		payload = appendCommand(payload, []byte("PEXPIRETIME"), k.str)
		payload = appendCommand(payload, []byte("DUMP"), k.str)
	}
	if _, err := f.conn.w.Write(payload); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if err := f.conn.w.Flush(); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	for _, k := range keys {
		_, at, err1 := readReply(f.conn.r)
		_, dump, err2 := readReply(f.conn.r)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		if dump.null || dump.kind != '$' { // expired between SCAN and DUMP
			continue
		}
		buf = binary.AppendUvarint(buf, uint64(len(k.str)))
		buf = append(buf, k.str...)
		buf = binary.AppendVarint(buf, at.num)
		buf = binary.AppendUvarint(buf, uint64(len(dump.str)))
		buf = append(buf, dump.str...)
	}
	return buf, nil
}

// Restore replaces redis's contents with a snapshot.
func (f *fsm) Restore(rc io.ReadCloser) error {
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
	if _, err := f.conn.command("FLUSHALL"); err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	for {
		key, at, dump, err := readRecord(r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("restore snapshot: %w", err)
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
	f.applied = index
	close(f.changed)
	f.changed = make(chan struct{})
	return nil
}

func readRecord(r *bufio.Reader) (key string, at int64, dump string, err error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return "", 0, "", err // io.EOF here is the clean end
	}
	k, err := readN(r, n)
	if err != nil {
		return "", 0, "", err
	}
	if at, err = binary.ReadVarint(r); err != nil {
		return "", 0, "", noEOF(err)
	}
	if n, err = binary.ReadUvarint(r); err != nil {
		return "", 0, "", noEOF(err)
	}
	d, err := readN(r, n)
	return k, at, d, err
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

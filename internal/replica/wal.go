package replica

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/hashicorp/raft"
)

// walLog is raft's log as append-only segment files: one append is one
// write of every entry of the batch and, with sync, one fdatasync. It
// replaces BoltDB, whose commit writes B+tree pages and a meta page with
// two fsyncs, and spent a quarter of the agents' CPU per write (profiled
// with BenchmarkWriteReplicated). Each record carries a CRC: a torn or
// half-written tail, which only a power loss leaves (the kernel keeps what
// a killed process wrote), is cut off on open. Only record offsets stay in
// memory; raft's LogCache keeps the recent entries themselves.
//
// The segment being appended to is kept zero-filled ahead of its records
// (preallocBytes at a time): an append then overwrites blocks the file
// already has, and its fdatasync flushes data only, where an append that
// grows the file also commits the file system's journal (the new size and
// blocks). On this machine's ext4 an append of one entry took a third less
// time and about half the CPU (BenchmarkWALAppend). A segment is cut back
// to its records when the next one begins and on Close; one a crash left
// zero-filled is cut on open.
// On FUSE (limpfs) there is no journal to spare, and the zeros would double
// the bytes a bandwidth-limited disk has to take: no preallocation there.
type walLog struct {
	dir  string
	sync bool // fdatasync every append (DurableDisk)
	// fuse is set when the log is on a FUSE file system (limpfs: a disk
	// made to limp): it is then written through package os and not
	// preallocated (below).
	fuse     bool
	segBytes int64 // segmentBytes; tests make it small

	mu sync.Mutex
	// syncMu is held by a Sync across its write and fdatasync, which run
	// without mu so that appends go on meanwhile (raft's leader hands over
	// its next batch while its sync goroutine writes and syncs the last),
	// and by whatever else writes pend or closes a segment, taken after mu.
	syncMu sync.Mutex
	// pend holds the records WriteLogs appended to the last segment and no
	// Sync wrote yet, from offset pendAt: raft's leader loop hands its
	// entries over without waiting for the disk (on a limping one, a write
	// takes as long as a sync), and GetLog reads them from here.
	pend   []byte
	pendAt int64
	// pendEpoch counts the times pend's head moved (written out, dropped
	// or trimmed by a Sync), so that a Sync can tell whether what it wrote
	// is still pend's head when it is done (offsets alone can repeat once
	// a truncation cut the segment back).
	pendEpoch   uint64
	segs        []*segment // ascending; the last one is appended to
	first, last uint64     // 0, 0 when empty
	buf         []byte
	dirty       bool  // written since the last fdatasync
	broken      error // set by a failed SyncLogs: every later append and read fails
}

// segment is one file: records of consecutive indexes from first.
type segment struct {
	first uint64
	f     *os.File
	size  int64   // end of the last record
	alloc int64   // the file's size: zeros from size to alloc
	offs  []int64 // offset of the record of index first+i
}

// segmentBytes is the size past which appends go to a new segment, so that
// compaction can remove whole files.
const segmentBytes = 64 << 20

// preallocBytes is how far ahead of its records the last segment is
// zero-filled. The zeros reach the disk with the next append's fdatasync:
// one append in this many bytes of log writes that much more.
const preallocBytes = 1 << 20

// pendBytes bounds what WriteLogs keeps in memory for the leader's sync
// goroutine. A leader whose disk limped at 1000x (80 KB/s) handed over
// 2.1 s into the fault at about 3,000 SETs of 1 KiB a second
// (docs/replica.md, round 10): some 7 MB pending, which it writes before
// it serves as a follower. Past the bound the disk holds the leader up.
const pendBytes = 16 << 20

// zeros is what preallocation writes.
var zeros = make([]byte, preallocBytes)

// walHeader is a record's length and CRC-32C of its body.
const walHeader = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// openWAL opens, or creates, the log in dir and cuts off a torn tail.
func openWAL(dir string, sync bool) (*walLog, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("raft log %s: %w", dir, err)
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil {
		return nil, fmt.Errorf("raft log %s: %w", dir, err)
	}
	sort.Strings(names) // zero-padded first indexes sort as numbers
	w := &walLog{dir: dir, sync: sync, segBytes: segmentBytes, fuse: onFUSE(dir)}
	for i, name := range names {
		first, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(name), ".wal"), 10, 64)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("raft log: segment %s: not named by its first index", name)
		}
		if w.last != 0 && first != w.last+1 {
			// A gap: raft stored entries after a snapshot it installed and
			// the older segments were not yet removed. They are covered by
			// the snapshot.
			if err := w.dropSegments(0, len(w.segs)); err != nil {
				w.Close()
				return nil, err
			}
			w.first, w.last = 0, 0
		}
		s, torn, err := readSegment(name, first)
		if err != nil {
			w.Close()
			return nil, err
		}
		w.segs = append(w.segs, s)
		if len(s.offs) > 0 {
			if w.first == 0 {
				w.first = s.first
			}
			w.last = s.first + uint64(len(s.offs)) - 1
		}
		if torn {
			for _, later := range names[i+1:] {
				os.Remove(later)
			}
			break
		}
	}
	return w, nil
}

// readSegment reads the record offsets of one segment and truncates it
// after its last whole record; torn tells whether it had to.
func readSegment(name string, first uint64) (*segment, bool, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, false, fmt.Errorf("raft log: %w", err)
	}
	s := &segment{first: first, f: f}
	r := bufio.NewReaderSize(f, 1<<20)
	var hdr [walHeader]byte
	var body []byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			break
		}
		n := binary.LittleEndian.Uint32(hdr[:4])
		if n > 1<<31 {
			break
		}
		if uint32(cap(body)) < n {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(r, body); err != nil || crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(hdr[4:]) ||
			len(body) < 8 || binary.LittleEndian.Uint64(body) != first+uint64(len(s.offs)) {
			break
		}
		s.offs = append(s.offs, s.size)
		s.size += walHeader + int64(n)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("raft log: %w", err)
	}
	s.alloc = s.size
	if fi.Size() == s.size {
		return s, false, nil
	}
	if err := f.Truncate(s.size); err != nil {
		f.Close()
		return nil, false, fmt.Errorf("raft log: cut torn tail of %s: %w", name, err)
	}
	// Zeros after the last record are the preallocation a crash left in
	// place; they are cut like a torn tail. Only the last segment can have
	// them (tail cuts a segment before the next one begins), so the later
	// segments dropped for a torn one are none.
	return s, true, nil
}

func (w *walLog) FirstIndex() (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first, nil
}

func (w *walLog) LastIndex() (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last, nil
}

func (w *walLog) GetLog(index uint64, l *raft.Log) error {
	w.mu.Lock()
	if w.broken != nil {
		w.mu.Unlock()
		return w.broken
	}
	if index < w.first || index > w.last || w.first == 0 {
		w.mu.Unlock()
		return raft.ErrLogNotFound
	}
	i := sort.Search(len(w.segs), func(i int) bool { return w.segs[i].first > index }) - 1
	s := w.segs[i]
	off := s.offs[index-s.first]
	end := s.size
	if k := index - s.first + 1; k < uint64(len(s.offs)) {
		end = s.offs[k]
	}
	if s == w.segs[len(w.segs)-1] && len(w.pend) > 0 && off >= w.pendAt {
		rec := append([]byte(nil), w.pend[off-w.pendAt:end-w.pendAt]...)
		w.mu.Unlock()
		return decodeRecord(rec[walHeader:], l)
	}
	w.mu.Unlock()
	rec := make([]byte, end-off)
	if _, err := s.f.ReadAt(rec, off); err != nil {
		return fmt.Errorf("raft log: read index %d: %w", index, err)
	}
	return decodeRecord(rec[walHeader:], l)
}

func (w *walLog) StoreLog(l *raft.Log) error { return w.StoreLogs([]*raft.Log{l}) }

func (w *walLog) StoreLogs(logs []*raft.Log) error { return w.append(logs, true, w.sync) }

// DeferredSync tells raft's leader to write its new entries, send them, and
// sync them while they travel (raft.DeferredSyncLogStore): with sync every
// append is fdatasynced, and this takes that wait off the followers' path.
// Without sync a background fdatasync makes appends durable anyway.
func (w *walLog) DeferredSync() bool { return w.sync }

// WriteLogs appends logs in memory (pend); SyncLogs writes and syncs them.
func (w *walLog) WriteLogs(logs []*raft.Log) error { return w.append(logs, false, false) }

// SyncLogs writes and fdatasyncs what WriteLogs appended. A failed one breaks the log for
// good: raft has counted the entries as written and would let this replica
// acknowledge them to a later leader without storing them again, and after
// a failed fdatasync the kernel may have dropped the pages it could not
// write. A restart reads what the disk holds.
func (w *walLog) SyncLogs() error {
	if err := w.Sync(); err != nil {
		w.mu.Lock()
		w.broken = fmt.Errorf("raft log: an fsync failed, restart the agent: %w", err)
		w.mu.Unlock()
		return err
	}
	return nil
}

// append writes logs, fdatasynced when sync is set, or with write unset
// keeps them in pend for the next Sync.
func (w *walLog) append(logs []*raft.Log, write, sync bool) error {
	if len(logs) == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken != nil {
		return w.broken
	}
	if w.last != 0 && logs[0].Index != w.last+1 {
		if logs[0].Index <= w.last {
			return fmt.Errorf("raft log: append at index %d after %d; delete the conflicting suffix first", logs[0].Index, w.last)
		}
		// raft installed a snapshot past the end of the log: what the log
		// holds is covered by it.
		if err := w.dropSegments(0, len(w.segs)); err != nil {
			return err
		}
		w.first, w.last = 0, 0
	}
	s, err := w.tail(logs[0].Index)
	if err != nil {
		return err
	}
	w.buf = w.buf[:0]
	offs := make([]int64, 0, len(logs))
	for _, l := range logs {
		offs = append(offs, s.size+int64(len(w.buf)))
		w.buf = appendRecord(w.buf, l)
	}
	if end := s.size + int64(len(w.buf)); end > s.alloc && !w.fuse {
		if err := w.preallocate(s, end); err != nil {
			return err
		}
	}
	if write {
		if err := w.flushLocked(); err != nil {
			return err
		}
		if err := w.pwrite(s.f, w.buf, s.size); err != nil {
			return fmt.Errorf("raft log: append: %w", err)
		}
		if sync {
			if err := fdatasync(s.f); err != nil {
				return fmt.Errorf("raft log: fsync: %w", err)
			}
		}
	} else {
		if len(w.pend) >= pendBytes {
			// A disk that cannot keep up holds the appends up here, not
			// the agent's memory.
			if err := w.flushLocked(); err != nil {
				return err
			}
		}
		if len(w.pend) == 0 {
			w.pendAt = s.size
		}
		w.pend = append(w.pend, w.buf...)
	}
	s.size += int64(len(w.buf))
	s.alloc = max(s.alloc, s.size) // not preallocated on FUSE
	s.offs = append(s.offs, offs...)
	w.dirty = !sync
	if w.first == 0 {
		w.first = logs[0].Index
	}
	w.last = logs[len(logs)-1].Index
	return nil
}

// preallocate zero-fills s from its allocated end to past end, by whole
// preallocBytes (no further than a segment holds). Called with mu held.
func (w *walLog) preallocate(s *segment, end int64) error {
	chunk := int64(min(preallocBytes, w.segBytes))
	to := (end/chunk + 1) * chunk
	for s.alloc < to {
		n := min(int64(len(zeros)), to-s.alloc)
		if err := w.pwrite(s.f, zeros[:n], s.alloc); err != nil {
			return fmt.Errorf("raft log: preallocate: %w", err)
		}
		s.alloc += n
	}
	return nil
}

// cut truncates s to its records, dropping its preallocated zeros.
func (s *segment) cut() error {
	if s.alloc == s.size {
		return nil
	}
	if err := s.f.Truncate(s.size); err != nil {
		return fmt.Errorf("raft log: truncate %s: %w", s.f.Name(), err)
	}
	s.alloc = s.size
	return nil
}

// tail is the segment to append index to: a new one when there is none or
// the last is full. Called with mu held.
func (w *walLog) tail(index uint64) (*segment, error) {
	if n := len(w.segs); n > 0 && w.segs[n-1].size < w.segBytes {
		if s := w.segs[n-1]; s.first+uint64(len(s.offs)) == index {
			return s, nil
		}
	}
	if n := len(w.segs); n > 0 {
		// Whatever the next segment holds must not reach the disk before
		// this one's last records, nor this one's preallocated zeros,
		// which on open would read as a torn tail and drop what follows.
		if err := w.flushLocked(); err != nil {
			return nil, err
		}
		if err := w.segs[n-1].cut(); err != nil {
			return nil, err
		}
		if err := fdatasync(w.segs[n-1].f); err != nil {
			return nil, fmt.Errorf("raft log: fsync: %w", err)
		}
	}
	name := filepath.Join(w.dir, fmt.Sprintf("%020d.wal", index))
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("raft log: %w", err)
	}
	if err := syncDir(w.dir); err != nil {
		f.Close()
		return nil, err
	}
	s := &segment{first: index, f: f}
	w.segs = append(w.segs, s)
	return s, nil
}

// DeleteRange removes a prefix (compaction after a snapshot) or a suffix
// (entries a new leader overwrites); raft removes nothing else.
func (w *walLog) DeleteRange(min, max uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.first == 0 || max < w.first || min > w.last {
		return nil
	}
	switch {
	case min <= w.first && max >= w.last:
		w.first, w.last = 0, 0
		return w.dropSegments(0, len(w.segs))
	case min <= w.first:
		w.first = max + 1
		// Whole segments below the new first go; the rest of a segment
		// stays on disk and comes back on open, harmlessly: raft ignores
		// entries its snapshot covers.
		n := 0
		for n+1 < len(w.segs) && w.segs[n+1].first <= w.first {
			n++
		}
		return w.dropSegments(0, n)
	case max >= w.last:
		if err := w.flushLocked(); err != nil {
			return err
		}
		i := sort.Search(len(w.segs), func(i int) bool { return w.segs[i].first > min }) - 1
		s := w.segs[i]
		k := min - s.first
		if k == 0 && i > 0 {
			if err := w.dropSegments(i, len(w.segs)); err != nil {
				return err
			}
		} else {
			if err := w.dropSegments(i+1, len(w.segs)); err != nil {
				return err
			}
			if err := s.f.Truncate(s.offs[k]); err != nil {
				return fmt.Errorf("raft log: truncate: %w", err)
			}
			s.size, s.alloc, s.offs = s.offs[k], s.offs[k], s.offs[:k]
			if w.sync {
				if err := fdatasync(s.f); err != nil {
					return fmt.Errorf("raft log: fsync: %w", err)
				}
			}
			w.dirty = !w.sync
		}
		w.last = min - 1
		if w.last < w.first {
			w.first, w.last = 0, 0
		}
		return nil
	}
	return fmt.Errorf("raft log: delete %d..%d from the middle of %d..%d", min, max, w.first, w.last)
}

// dropSegments closes and removes segments [from, to). Called with mu held.
func (w *walLog) dropSegments(from, to int) error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	if to == len(w.segs) {
		w.pend = nil // the last segment's, gone with it
		w.pendEpoch++
	}
	var errs []error
	for _, s := range w.segs[from:to] {
		errs = append(errs, s.f.Close(), os.Remove(s.f.Name()))
	}
	w.segs = append(w.segs[:from], w.segs[to:]...)
	return errors.Join(errs...)
}

// Sync makes every append so far durable (DurableReplicated's background
// fsync, and SyncLogs); earlier segments were synced when the next one
// began. With nothing appended since the last Sync it does nothing: an idle
// agent made 100 fdatasyncs a second for nothing, each a system call that
// wakes Go's sysmon, and one that ext4 may answer with a flush of the
// device's cache. Appends go on while it syncs, and are left for the next
// Sync; a failed one leaves the log to sync again.
func (w *walLog) Sync() error {
	w.mu.Lock()
	n := len(w.segs)
	if n == 0 || !w.dirty {
		w.dirty = false
		w.mu.Unlock()
		return nil
	}
	s, data, at, epoch := w.segs[n-1], w.pend, w.pendAt, w.pendEpoch
	w.dirty = false
	w.syncMu.Lock()
	w.mu.Unlock()
	var err error
	if len(data) > 0 {
		if err = w.pwrite(s.f, data, at); err != nil {
			err = fmt.Errorf("raft log: append: %w", err)
		}
	}
	if err == nil {
		err = fdatasync(s.f)
	}
	w.syncMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err != nil:
		w.dirty = true
	case len(data) > 0 && w.pendEpoch == epoch:
		// Nothing else wrote pend meanwhile: what was appended since
		// stays for the next Sync.
		w.pend, w.pendAt = w.pend[len(data):], at+int64(len(data))
		w.pendEpoch++
	}
	return err
}

// flushLocked writes pend to the last segment, for an append, a new
// segment or a truncation that must follow it. Called with mu held. A
// failure breaks the log: raft holds those entries as written.
func (w *walLog) flushLocked() error {
	if len(w.pend) == 0 {
		return nil
	}
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	if err := w.pwrite(w.segs[len(w.segs)-1].f, w.pend, w.pendAt); err != nil {
		w.broken = fmt.Errorf("raft log: a write failed, restart the agent: %w", err)
		return w.broken
	}
	w.pendAt += int64(len(w.pend))
	w.pend = nil
	w.pendEpoch++
	return nil
}

// unsynced tells whether anything was appended since the last Sync.
func (w *walLog) unsynced() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dirty
}

func (w *walLog) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	errs := []error{w.flushLocked()}
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	if n := len(w.segs); n > 0 {
		errs = append(errs, w.segs[n-1].cut())
	}
	for _, s := range w.segs {
		errs = append(errs, s.f.Close())
	}
	w.segs = nil
	return errors.Join(errs...)
}

// appendRecord encodes a log entry: length, CRC, then index, term, type,
// append time, data and extensions.
func appendRecord(b []byte, l *raft.Log) []byte {
	start := len(b)
	b = append(b, make([]byte, walHeader)...)
	b = binary.LittleEndian.AppendUint64(b, l.Index)
	b = binary.LittleEndian.AppendUint64(b, l.Term)
	b = append(b, byte(l.Type))
	b = binary.AppendVarint(b, l.AppendedAt.UnixNano())
	b = binary.AppendUvarint(b, uint64(len(l.Data)))
	b = append(b, l.Data...)
	b = binary.AppendUvarint(b, uint64(len(l.Extensions)))
	b = append(b, l.Extensions...)
	body := b[start+walHeader:]
	binary.LittleEndian.PutUint32(b[start:], uint32(len(body)))
	binary.LittleEndian.PutUint32(b[start+4:], crc32.Checksum(body, castagnoli))
	return b
}

func decodeRecord(b []byte, l *raft.Log) error {
	bad := errors.New("raft log: malformed record")
	if len(b) < 17 {
		return bad
	}
	l.Index, l.Term, l.Type = binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:]), raft.LogType(b[16])
	b = b[17:]
	at, n := binary.Varint(b)
	if n <= 0 {
		return bad
	}
	l.AppendedAt, b = time.Unix(0, at), b[n:]
	field := func() ([]byte, bool) {
		m, n := binary.Uvarint(b)
		if n <= 0 || m > uint64(len(b)-n) {
			return nil, false
		}
		f := b[n : n+int(m)]
		b = b[n+int(m):]
		return f, true
	}
	var ok1, ok2 bool
	l.Data, ok1 = field()
	l.Extensions, ok2 = field()
	if !ok1 || !ok2 {
		return bad
	}
	return nil
}

// pwrite writes all of b at off: with rawPwrite, or through package os on
// FUSE.
func (w *walLog) pwrite(f *os.File, b []byte, off int64) error {
	if w.fuse {
		_, err := f.WriteAt(b, off)
		return err
	}
	c, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var werr error
	if err := c.Control(func(fd uintptr) { werr = rawPwrite(fd, b, off) }); err != nil {
		return err
	}
	return werr
}

// rawPwrite writes b at off with system calls the Go scheduler is not told
// of, as rawTCP does for sockets (rawio.go): an append to the page cache
// takes microseconds, but a call through package syscall wakes Go's sysmon
// thread whenever the agent was idle, and sysmon then polls every 20 µs for
// a while. That was 10 to 17 % of an agent's CPU in SET c=8 with
// --durability replicated (perf record of the leader and a follower), one
// pwrite per batch. On a FUSE file system (limpfs, a disk made to limp) a
// write waits for the file system's server, and the agent's one P must go
// on serving meanwhile: the log there writes through package os.
func rawPwrite(fd uintptr, b []byte, off int64) error {
	for len(b) > 0 {
		n, _, e := syscall.RawSyscall6(syscall.SYS_PWRITE64, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(off), 0, 0)
		switch {
		case e == syscall.EINTR:
			continue
		case e != 0:
			return e
		case n == 0:
			return io.ErrShortWrite
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// fuseMagic is a FUSE file system's f_type (linux/magic.h).
const fuseMagic = 0x65735546

// onFUSE tells whether dir is on a FUSE file system; false when statfs fails.
func onFUSE(dir string) bool {
	var st syscall.Statfs_t
	return syscall.Statfs(dir, &st) == nil && st.Type == fuseMagic
}

func fdatasync(f *os.File) error {
	c, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := c.Control(func(fd uintptr) { serr = syscall.Fdatasync(int(fd)) }); err != nil {
		return err
	}
	return serr
}

// syncDir makes a new or removed file's name durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("raft log: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("raft log: fsync %s: %w", dir, err)
	}
	return nil
}

package limpfs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/gait-dev/gait/internal/tardis"
	"golang.org/x/sys/unix"
)

// The metadata log makes an fsync cost one write to a block the disk
// already holds and one flush of the disk's cache. A file's metadata
// lives in STORE/meta/INO, written whole and renamed over the old one on
// every commit; making that durable takes an fsync of the new file and
// one of its directory, and making the tree file's new size durable a
// third: three flushes of the disk's cache, and on a file system with a
// journal a commit of it each, which waits for whatever else the file
// system has to commit. Instead, once a mount has been asked to fsync, every commit
// also appends its metadata (the extents and the file's size) to
// STORE/log, a file of logSize bytes written with zeros when it is made,
// so that a record is an overwrite in place: fsync then is an fdatasync
// of the tree file only if literal bytes went into it, and an fdatasync
// of the log, which writes the log's block and changes no file system
// metadata (no inode to write, no journal commit on ext4 or xfs).
//
// The meta/ files are still written on every commit (without a sync), so
// reading a store needs no log. The log says what they and the tree files'
// sizes are after a crash: the next mount replays it, file by file the
// last record (written meta/INO, the tree file cut or extended to the
// recorded size), syncs the store's file system and removes the log. A
// full log is checkpointed the same way (syncfs, then the log starts
// again under a new epoch), and so is a clean unmount.

const (
	storeLog  = "log"
	logSize   = 64 << 10 // about 850 records of a file with one extent
	logHeader = 16       // logMagic, then the epoch
)

var logMagic = []byte("gaitlog1")

// metaLog is a mount's metadata log.
type metaLog struct {
	store string

	mu      sync.Mutex
	f       *os.File // nil until the mount's first fsync
	epoch   uint64   // records of another epoch are stale
	off     int64    // where the next record goes
	written uint64   // records written since the mount's first fsync

	// syncMu lets one fdatasync of the log run at a time, outside mu, so
	// that commits go on being recorded meanwhile and the fsyncs waiting
	// share the next one (group commit): writers fsyncing at once cost
	// two flushes of the disk's cache, not one each in turn.
	syncMu  sync.Mutex
	synced  uint64 // records durable: written before the last fdatasync began
	flushes int    // fdatasyncs of records
	// failed is the error of a failed fdatasync, returned by every later
	// one: the kernel reports a failed write-back once, so a later
	// fdatasync may succeed over records that were lost.
	failed error
}

// record notes a commit of id's metadata; with sync, durably. Before the
// mount's first sync there is no log, and a commit needs none: nothing
// was promised durable.
func (l *metaLog) record(id identity, exts []tardis.FileExtent, size int64, sync bool) error {
	n, err := l.append(id, exts, size, sync)
	if err != nil || !sync || n == 0 {
		return err
	}
	return l.sync(n)
}

// append writes a record of id's metadata to the log (making the log if
// sync asks for it first) and returns its number, 0 if it needs no sync:
// no log, or the checkpoint made it durable.
func (l *metaLog) append(id identity, exts []tardis.FileExtent, size int64, sync bool) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		if !sync {
			return 0, nil
		}
		if err := l.create(); err != nil {
			return 0, err
		}
	}
	m := encodeMeta(id, exts, size)
	if l.off+8+int64(len(m)) > logSize {
		// The checkpoint makes the meta/ file just written durable
		// too, so a record too large for any log needs no log.
		if err := l.checkpoint(); err != nil || logHeader+8+len(m) > logSize {
			return 0, err
		}
	}
	rec := make([]byte, 8, 8+len(m))
	binary.LittleEndian.PutUint32(rec, uint32(len(m)))
	binary.LittleEndian.PutUint32(rec[4:], recordSum(l.epoch, m))
	rec = append(rec, m...)
	if _, err := l.f.WriteAt(rec, l.off); err != nil {
		return 0, fmt.Errorf("write %s: %w", l.f.Name(), err)
	}
	l.off += int64(len(rec))
	l.written++
	return l.written, nil
}

// sync makes the first n records durable, by an fdatasync of the log
// unless one that began after they were written has returned already.
func (l *metaLog) sync(n uint64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.failed != nil {
		return l.failed
	}
	if l.synced >= n {
		return nil
	}
	l.mu.Lock()
	f, upTo := l.f, l.written
	l.mu.Unlock()
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		l.failed = fmt.Errorf("fsync %s: %w", f.Name(), err)
		return l.failed
	}
	l.synced = upTo
	l.flushes++
	return nil
}

// recordSum binds a record to its log's epoch.
func recordSum(epoch uint64, m []byte) uint32 {
	return crc32.Update(crc32.Checksum(binary.LittleEndian.AppendUint64(nil, epoch), castagnoli), castagnoli, m)
}

// create makes the log: logSize bytes, zero but for the header, durable
// with its name, so that records overwrite blocks the file already has.
func (l *metaLog) create() error {
	path := filepath.Join(l.store, storeLog)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("create metadata log: %w", err)
	}
	b := make([]byte, logSize)
	copy(b, logMagic)
	binary.LittleEndian.PutUint64(b[len(logMagic):], 1)
	if _, err := f.Write(b); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = syncDir(l.store)
	}
	if err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("create metadata log %s: %w", path, err)
	}
	l.f, l.epoch, l.off = f, 1, logHeader
	return nil
}

// checkpoint makes what the log holds durable where it belongs (the
// meta/ files and tree files, by a sync of the store's file system) and
// starts the log again under the next epoch.
func (l *metaLog) checkpoint() error {
	if err := unix.Syncfs(int(l.f.Fd())); err != nil {
		return fmt.Errorf("sync store %s: %w", l.store, err)
	}
	h := make([]byte, logHeader)
	copy(h, logMagic)
	binary.LittleEndian.PutUint64(h[len(logMagic):], l.epoch+1)
	if _, err := l.f.WriteAt(h, 0); err != nil {
		return fmt.Errorf("write %s: %w", l.f.Name(), err)
	}
	if err := unix.Fdatasync(int(l.f.Fd())); err != nil {
		return fmt.Errorf("fsync %s: %w", l.f.Name(), err)
	}
	l.epoch++
	l.off = logHeader
	return nil
}

// close checkpoints and removes the log (a clean unmount's last step);
// on an error the log stays for the next mount to replay.
func (l *metaLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := unix.Syncfs(int(l.f.Fd()))
	l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("sync store %s: %w", l.store, err)
	}
	if err := os.Remove(filepath.Join(l.store, storeLog)); err != nil {
		return fmt.Errorf("remove metadata log: %w", err)
	}
	return syncDir(l.store)
}

// readLog returns the last record of each inode number in the store's
// log (none without a log), in the log's current epoch, up to the first
// record that is torn or stale.
func readLog(store string) (map[uint64]meta, error) {
	path := filepath.Join(store, storeLog)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read metadata log: %w", err)
	}
	if len(b) < logHeader || !bytes.Equal(b[:len(logMagic)], logMagic) {
		// Torn while being made: it never held a record.
		return nil, nil
	}
	epoch := binary.LittleEndian.Uint64(b[len(logMagic):])
	last := map[uint64]meta{}
	for off := logHeader; off+8 <= len(b); {
		n := int(binary.LittleEndian.Uint32(b[off:]))
		if n == 0 || off+8+n > len(b) {
			break
		}
		m := b[off+8 : off+8+n]
		if recordSum(epoch, m) != binary.LittleEndian.Uint32(b[off+4:]) {
			break
		}
		rec, err := decodeMeta(path, m)
		if err != nil {
			return nil, err // the checksum held: not a torn write
		}
		last[rec.id.ino] = rec
		off += 8 + n
	}
	return last, nil
}

// replayLog brings a store left by a server that did not unmount (killed,
// or the machine crashed) to its last commits as its log recorded them,
// makes that durable, and removes the log. The store's lock is held.
func replayLog(store string) error {
	last, err := readLog(store)
	if err != nil || last == nil {
		return err
	}
	if len(last) > 0 {
		err := walkTree(store, os.O_RDWR, func(path string, f *os.File, id identity, _ syscall.Stat_t) error {
			m, ok := last[id.ino]
			if !ok || m.id.btime != id.btime {
				return nil // not recorded, or an earlier file's number
			}
			delete(last, id.ino) // a hard link's other names
			if err := writeMeta(store, id, m.exts, m.size, false); err != nil {
				return err
			}
			return f.Truncate(m.size)
		})
		if err != nil {
			return fmt.Errorf("replay the metadata log of store %s: %w", store, err)
		}
	}
	d, err := os.Open(store)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return fmt.Errorf("sync store %s: %w", store, err)
	}
	if err := os.Remove(filepath.Join(store, storeLog)); err != nil {
		return fmt.Errorf("remove metadata log: %w", err)
	}
	return syncDir(store)
}

package limpfs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/gait-dev/gait/internal/atomicfile"
	"github.com/gait-dev/gait/internal/tardis"
	"github.com/gait-dev/gait/internal/units"
	"golang.org/x/sys/unix"
)

// A store is the directory an emulating limpfs keeps its files in:
//
//	STORE/GAIT-STORE   marker: what the directory is, and its format
//	STORE/tree/        the file tree as the mount shows it; a regular
//	                   file here is sparse, as long as the emulated file,
//	                   and holds only its literal (unrecognised) bytes,
//	                   at their offsets
//	STORE/meta/INO     the synthetic extents of the tree file with inode
//	                   number INO (see metaHeader)
//	STORE/lock         flock'ed by the process serving the store
//	STORE/log          the metadata log, from a mount's first fsync to
//	                   its unmount (metalog.go)
//
// Keying metadata by inode number makes renames and hard links free and
// keeps it right across them; a number reused after a delete is told
// apart by the file's birth time, which the metadata records.
const (
	storeMarker = "GAIT-STORE"
	storeTree   = "tree"
	storeMeta   = "meta"
	storeLock   = "lock"
)

var storeMagic = []byte("gait emulating store, format 1\n")

// ErrNotStore is wrapped by the error for a directory that holds files
// but is not a store.
var ErrNotStore = errors.New("not a gait store")

// openStore checks that dir is a store, making one in dir when it is
// empty or missing and create is set, and returns its absolute path.
func openStore(dir string, create bool) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("store %s: %w", dir, err)
	}
	marker, err := os.ReadFile(filepath.Join(abs, storeMarker))
	switch {
	case err == nil:
		if !bytes.Equal(marker, storeMagic) {
			return "", fmt.Errorf("store %s: %w: %s holds %q, want %q", dir, ErrNotStore, storeMarker, clipped(marker), storeMagic)
		}
		for _, sub := range []string{storeTree, storeMeta} {
			if st, err := os.Stat(filepath.Join(abs, sub)); err != nil || !st.IsDir() {
				return "", fmt.Errorf("store %s: its %s directory is missing: the store is damaged", dir, sub)
			}
		}
		return abs, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("store %s: %w", dir, err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("store %s: %w", dir, err)
	}
	if len(entries) > 0 {
		// The advice is for a mount, which can start a store there; a
		// reader of an existing store is told what a store is instead.
		advice := "give an empty or new directory"
		if !create {
			advice = "give the --store directory of a gait emulate mount"
		}
		return "", fmt.Errorf("store %s: %w: it holds %s (%s, ...) but no %s file; %s", dir, ErrNotStore, units.Count(len(entries), "file"), entries[0].Name(), storeMarker, advice)
	}
	if !create {
		return "", fmt.Errorf("store %s: %w: it is empty or missing", dir, ErrNotStore)
	}
	for _, sub := range []string{storeTree, storeMeta} {
		if err := os.MkdirAll(filepath.Join(abs, sub), 0o755); err != nil {
			return "", fmt.Errorf("create store %s: %w", dir, err)
		}
	}
	// The marker last: a store whose creation was interrupted is an
	// unmarked directory with empty subdirectories, not a store.
	if err := os.WriteFile(filepath.Join(abs, storeMarker), storeMagic, 0o644); err != nil {
		return "", fmt.Errorf("create store %s: %w", dir, err)
	}
	return abs, nil
}

func clipped(b []byte) []byte { return b[:min(len(b), 40)] }

// lockStore takes the store's lock for this process: one server per store.
// The kernel drops it when the process dies, however it dies.
func lockStore(store string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(store, storeLock), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock store %s: %w", store, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("store %s is in use: another process serves it", store)
		}
		return nil, fmt.Errorf("lock store %s: %w", store, err)
	}
	return f, nil
}

// metaHeader heads every metadata file:
//
//	"gaitmeta1\n"  magic
//	ino      u64   the tree file's inode number (also the file's name)
//	btime    i64   its birth time, ns (0 where the file system has none)
//	length   u64   of the payload
//	crc      u32   CRC-32C of the payload
//	payload        tardis.MarshalExtents of the synthetic extents
var metaMagic = []byte("gaitmeta1\n")

const metaHeaderSize = 10 + 8 + 8 + 8 + 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// identity is what names a tree file's metadata.
type identity struct {
	ino   uint64
	btime int64
}

func identify(fd int) (identity, syscall.Stat_t, error) {
	var x unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &x); err != nil {
		return identity{}, syscall.Stat_t{}, err
	}
	id := identity{ino: x.Ino}
	if x.Mask&unix.STATX_BTIME != 0 {
		id.btime = x.Btime.Sec*1e9 + int64(x.Btime.Nsec)
	}
	st := syscall.Stat_t{Ino: x.Ino, Nlink: uint64(x.Nlink), Size: int64(x.Size), Blocks: int64(x.Blocks), Mode: uint32(x.Mode)}
	return id, st, nil
}

func metaPath(store string, ino uint64) string {
	return filepath.Join(store, storeMeta, strconv.FormatUint(ino, 10))
}

func encodeMeta(id identity, exts []tardis.FileExtent, size int64) []byte {
	payload := tardis.MarshalExtents(nil, exts, size)
	b := make([]byte, 0, metaHeaderSize+len(payload))
	b = append(b, metaMagic...)
	b = binary.LittleEndian.AppendUint64(b, id.ino)
	b = binary.LittleEndian.AppendUint64(b, uint64(id.btime))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(payload)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
	return append(b, payload...)
}

// CorruptError says which metadata file is damaged and where.
type CorruptError struct {
	Path   string
	Offset int64
	What   string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("metadata file %s is corrupt at byte %d: %s", e.Path, e.Offset, e.What)
}

// readMeta reads the synthetic extents of the tree file id. A missing
// file, or one left by an earlier file with the same inode number, means
// no synthetic extents (ok false).
func readMeta(store string, id identity) (exts []tardis.FileExtent, ok bool, err error) {
	path := metaPath(store, id.ino)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read metadata: %w", err)
	}
	m, err := decodeMeta(path, b)
	if err != nil {
		return nil, false, err
	}
	if m.id.ino != id.ino {
		return nil, false, &CorruptError{Path: path, Offset: int64(len(metaMagic)), What: fmt.Sprintf("names inode %d, but the file is named for %d", m.id.ino, id.ino)}
	}
	if m.id.btime != id.btime {
		return nil, false, nil // an earlier file's, whose inode number was reused
	}
	return m.exts, true, nil
}

// meta is one file's metadata as encodeMeta wrote it.
type meta struct {
	id   identity
	exts []tardis.FileExtent
	size int64
}

// decodeMeta reads what encodeMeta wrote; path names where b is from in
// the error.
func decodeMeta(path string, b []byte) (meta, error) {
	bad := func(off int, what string, args ...any) error {
		return &CorruptError{Path: path, Offset: int64(off), What: fmt.Sprintf(what, args...)}
	}
	if len(b) < metaHeaderSize {
		return meta{}, bad(len(b), "%d bytes, shorter than the %d-byte header", len(b), metaHeaderSize)
	}
	if !bytes.Equal(b[:len(metaMagic)], metaMagic) {
		return meta{}, bad(0, "starts %q, not %q", clipped(b[:len(metaMagic)]), metaMagic)
	}
	h := b[len(metaMagic):]
	id := identity{ino: binary.LittleEndian.Uint64(h), btime: int64(binary.LittleEndian.Uint64(h[8:]))}
	n := binary.LittleEndian.Uint64(h[16:])
	sum := binary.LittleEndian.Uint32(h[24:])
	payload := b[metaHeaderSize:]
	if uint64(len(payload)) != n {
		return meta{}, bad(len(b), "the header says %d payload bytes, the file has %d", n, len(payload))
	}
	if got := crc32.Checksum(payload, castagnoli); got != sum {
		return meta{}, bad(metaHeaderSize, "checksum %08x of the payload, the header says %08x", got, sum)
	}
	exts, size, rest, err := tardis.UnmarshalExtents(payload)
	if err != nil {
		return meta{}, bad(metaHeaderSize+len(payload)-len(rest), "%v", err)
	}
	return meta{id: id, exts: exts, size: size}, nil
}

// writeMeta replaces the metadata of id atomically (a temporary file
// renamed over it); with sync, durably (the file and the directory
// fsynced). A file with no synthetic extents has none.
func writeMeta(store string, id identity, exts []tardis.FileExtent, size int64, sync bool) error {
	path := metaPath(store, id.ino)
	if len(exts) == 0 {
		return removeMeta(store, id.ino, sync)
	}
	err := atomicfile.Write(path, func(w io.Writer) error {
		if _, err := w.Write(encodeMeta(id, exts, size)); err != nil {
			return fmt.Errorf("write metadata %s: %w", path, err)
		}
		if f, ok := w.(*os.File); ok && sync {
			if err := f.Sync(); err != nil {
				return fmt.Errorf("write metadata %s: %w", path, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if sync {
		return syncDir(filepath.Dir(path))
	}
	return nil
}

func removeMeta(store string, ino uint64, sync bool) error {
	path := metaPath(store, ino)
	if err := os.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("remove metadata: %w", err)
	}
	if sync {
		return syncDir(filepath.Dir(path))
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// StoreStats is what a store holds.
type StoreStats struct {
	Files int64 `json:"files"`
	// LogicalBytes is the sum of the files' sizes: what the mount shows.
	LogicalBytes int64 `json:"logical_bytes"`
	// PhysicalBytes is what they take on the store's file system: the
	// blocks of the tree files (literal bytes), the metadata files'
	// sizes and the metadata log's blocks.
	PhysicalBytes int64 `json:"physical_bytes"`
	// LogBytes is the metadata log's part of PhysicalBytes: a fixed
	// 64 KiB while a mount has one, whatever the store holds.
	LogBytes int64 `json:"log_bytes"`
	// Ratio is LogicalBytes / PhysicalBytes (0 for an empty store).
	Ratio float64 `json:"ratio"`
}

// ReadStoreStats walks a store and adds up its files, checking every
// metadata file on the way. It reads what was last committed (on close,
// fsync or truncate), also while the store is mounted.
func ReadStoreStats(dir string) (StoreStats, error) {
	store, err := openStore(dir, false)
	if err != nil {
		return StoreStats{}, err
	}
	var s StoreStats
	seen := map[uint64]bool{}
	err = walkTree(store, os.O_RDONLY, func(path string, f *os.File, id identity, st syscall.Stat_t) error {
		if seen[id.ino] { // a hard link
			return nil
		}
		seen[id.ino] = true
		s.Files++
		s.LogicalBytes += st.Size
		s.PhysicalBytes += st.Blocks * 512
		if _, ok, err := readMeta(store, id); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		} else if ok {
			mst, err := os.Stat(metaPath(store, id.ino))
			if err != nil {
				return err
			}
			s.PhysicalBytes += mst.Size()
		}
		return nil
	})
	if err != nil {
		return StoreStats{}, fmt.Errorf("store %s: %w", dir, err)
	}
	var st syscall.Stat_t
	if syscall.Stat(filepath.Join(store, storeLog), &st) == nil {
		s.LogBytes = st.Blocks * 512 // a mount's metadata log, while it has one
		s.PhysicalBytes += s.LogBytes
	}
	if s.PhysicalBytes > 0 {
		s.Ratio = float64(s.LogicalBytes) / float64(s.PhysicalBytes)
	}
	return s, nil
}

// walkTree calls fn for every regular file of the store's tree, opened
// with flag.
func walkTree(store string, flag int, fn func(path string, f *os.File, id identity, st syscall.Stat_t) error) error {
	return filepath.WalkDir(filepath.Join(store, storeTree), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.OpenFile(path, flag, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		id, st, err := identify(int(f.Fd()))
		if err != nil {
			return fmt.Errorf("stat %s: %w", path, err)
		}
		return fn(path, f, id, st)
	})
}

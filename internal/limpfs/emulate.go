package limpfs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/tardis"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// The emulating mode: every write is handed to tardis, which recognises
// the synthetic stream in it; the recognised runs are kept as extents
// (seed, stream offset, length) in the file's metadata, and only the
// other bytes are written to the tree file, at their offsets, which stays
// sparse everywhere else. A read generates the synthetic parts and reads
// the rest from the tree file. The tree file is kept as long as the
// emulated file, so the loopback's directory operations and attributes
// (sizes included) are right without translation.
//
// Durability: metadata is committed (written to a temporary file and
// renamed over the old) on every close, truncate and fsync; fsync first
// fdatasyncs the tree file and then syncs the metadata and its directory.
// After the server is killed, a file reads back as of its last commit,
// with the literal bytes and size of its tree file, so everything fsynced
// (and closed) is there. Overwriting literal bytes with synthetic ones
// leaves the old literal bytes in the tree file (space, not correctness:
// they are not read), because punching them before the metadata is
// committed could lose committed data in a crash.

// emuNode is a loopback node in an emulating limpfs; for a regular file,
// it holds the file's contents while the file is open.
type emuNode struct {
	*fs.LoopbackNode
	em *emulator

	mu    sync.RWMutex
	opens int
	c     *contents // while opens > 0 (or during a truncate by path)
}

// emulator is what all nodes of one emulating mount share.
type emulator struct {
	dev    *device
	store  string
	report func(error)
	// sums remembers checksums of the stream written recently through the
	// mount, so that a file of checksums of it (an HDFS .meta file beside
	// its block file) is recognised as well; see tardis.SumIndex for its
	// bound (at most about 7 MB of memory per mount, once 512 MiB of
	// the stream went through it).
	sums *tardis.SumIndex
	late *late // literal ranges to look at again (late.go)
	log  *metaLog
	// openFlags is what opening a regular file answers: direct I/O
	// unless the mount uses the write-back cache (Options.WriteBack).
	openFlags uint32

	openMu sync.Mutex
	open   map[uint64]*emuNode // the nodes whose contents are loaded, by inode number
	// unsyncedLit are the inode numbers of closed files whose tree
	// file took literal bytes (or a punch) since its last fdatasync, up
	// to unsyncedMax; past that, unsyncedAll: every file is taken to
	// have some (an fsync then syncs its tree file, as it always did).
	unsyncedLit map[uint64]bool
	unsyncedAll bool
}

// unsyncedMax bounds the closed files a mount remembers as having
// unsynced literal bytes: 64 Ki of them, a few MB.
const unsyncedMax = 1 << 16

// opened is the node of inode ino if its contents are loaded.
func (em *emulator) opened(ino uint64) *emuNode {
	em.openMu.Lock()
	defer em.openMu.Unlock()
	return em.open[ino]
}

// setOpened records that n's contents are loaded (or, with nil, no longer).
func (em *emulator) setOpened(ino uint64, n *emuNode) {
	em.openMu.Lock()
	defer em.openMu.Unlock()
	if n == nil {
		delete(em.open, ino)
	} else { // an unlinked file's inode is not reused while we hold it open
		em.open[ino] = n
	}
}

// litUnsynced says whether the closed file ino's tree file took literal
// bytes since its last fdatasync, and forgets it; setLitUnsynced notes it
// at the last close.
func (em *emulator) litUnsynced(ino uint64) bool {
	em.openMu.Lock()
	defer em.openMu.Unlock()
	u := em.unsyncedLit[ino]
	delete(em.unsyncedLit, ino)
	return u || em.unsyncedAll
}

func (em *emulator) setLitUnsynced(ino uint64) {
	em.openMu.Lock()
	defer em.openMu.Unlock()
	if len(em.unsyncedLit) >= unsyncedMax {
		clear(em.unsyncedLit)
		em.unsyncedAll = true
	}
	em.unsyncedLit[ino] = true
}

// contents is an open regular file.
type contents struct {
	f    *os.File // the tree file, read-write
	id   identity
	data tardis.File // synthetic extents only; holes are in f
	size int64       // the file's size
	// treeSize is f's size: size once committed, less while writes
	// past f's end wait for the next commit to extend it (an ftruncate
	// per write cost an eighth of the write's time on the server).
	treeSize int64
	dirty    bool // data differs from the metadata file
	unsynced bool // the metadata file was written without fsync
	// litUnsynced: the tree file took literal bytes (or a punch) since
	// its last fdatasync; an fsync that finds it unset syncs only the
	// metadata log (metalog.go), which records the size.
	litUnsynced bool
	fed         bool // synthetic bytes were written since the last commit
	// recheck: file ranges written as literal bytes since the last
	// commit, looked at again at the commit (see recognise), at most
	// recheckMax bytes.
	recheck      [][2]int64
	recheckBytes int64
	// late: ranges an earlier commit left literal, kept by the mount
	// (late.go) and taken back on a load, looked at again too; lateBorn
	// is when the index had learnt the fewest checksums among them.
	late     [][2]int64
	lateBorn uint64
}

// recheckMax bounds the literal bytes a commit looks at again: enough
// for the checksum file of a 128 MiB HDFS block (1 MiB) several times.
const recheckMax = 8 << 20

var (
	_ fs.NodeWrapChilder = (*emuNode)(nil)
	_ fs.NodeLookuper    = (*emuNode)(nil)
	_ fs.NodeLinker      = (*emuNode)(nil)
	_ fs.NodeOpener      = (*emuNode)(nil)
	_ fs.NodeCreater     = (*emuNode)(nil)
	_ fs.NodeSetattrer   = (*emuNode)(nil)
	_ fs.NodeUnlinker    = (*emuNode)(nil)
	_ fs.NodeRenamer     = (*emuNode)(nil)
	_ fs.NodeTmpfiler    = (*emuNode)(nil)
	_ fs.NodeMknoder     = (*emuNode)(nil)
)

func (n *emuNode) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	if lb, ok := ops.(*fs.LoopbackNode); ok {
		return &emuNode{LoopbackNode: lb, em: n.em}
	}
	return ops
}

func (n *emuNode) path() string {
	return filepath.Join(n.RootData.Path, n.Path(n.Root()))
}

func (n *emuNode) regular() bool { return n.StableAttr().Mode&syscall.S_IFMT == syscall.S_IFREG }

// fail reports an error that reaches the caller only as an errno.
func (n *emuNode) fail(err error) syscall.Errno {
	if n.em.report != nil {
		n.em.report(err)
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return syscall.EIO
}

func (n *emuNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if !n.regular() {
		return n.LoopbackNode.Open(ctx, flags)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if errno := n.acquire(n.path()); errno != 0 {
		return nil, 0, errno
	}
	if flags&syscall.O_TRUNC != 0 {
		if err := n.truncate(0); err != nil {
			n.release()
			return nil, 0, n.fail(err)
		}
	}
	return &emuFile{n: n}, n.em.openFlags, 0
}

func (n *emuNode) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	ino, fh, _, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if r, ok := fh.(fs.FileReleaser); ok {
		r.Release(ctx)
	}
	child, ok := ino.Operations().(*emuNode)
	if !ok {
		return nil, nil, 0, n.fail(fmt.Errorf("create %s: not an emulating node", name))
	}
	// A new file: metadata under its inode number is an earlier file's.
	if err := removeMeta(n.em.store, out.Attr.Ino, false); err != nil {
		return nil, nil, 0, n.fail(err)
	}
	child.mu.Lock()
	defer child.mu.Unlock()
	// Not n.path(): the child is not linked into the tree yet.
	if errno := child.acquire(filepath.Join(n.path(), name)); errno != 0 {
		return nil, nil, 0, errno
	}
	return ino, &emuFile{n: child}, n.em.openFlags, 0
}

// Lookup, Link and Setattr answer with the tree file's attributes, but
// with the size of an open file whose tree file awaits its extension
// (see contents.treeSize): the kernel would take the shorter size as the
// file's.
func (n *emuNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ino, errno := n.LoopbackNode.Lookup(ctx, name, out)
	if errno == 0 {
		n.em.openSize(&out.Attr)
	}
	return ino, errno
}

func (n *emuNode) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ino, errno := n.LoopbackNode.Link(ctx, target, name, out)
	if errno == 0 {
		n.em.openSize(&out.Attr)
	}
	return ino, errno
}

// openSize sets a's size to its file's if the file is open. (By inode
// number: the Inode a lookup returns may be a new one that go-fuse drops
// for the one it knows.)
func (em *emulator) openSize(a *fuse.Attr) {
	if open := em.opened(a.Ino); open != nil {
		open.mu.RLock()
		if open.c != nil {
			a.Size = uint64(open.c.size)
		}
		open.mu.RUnlock()
	}
}

func (n *emuNode) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ino, errno := n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
	if errno == 0 && mode&syscall.S_IFMT == syscall.S_IFREG {
		if err := removeMeta(n.em.store, out.Attr.Ino, false); err != nil {
			return ino, n.fail(err)
		}
	}
	return ino, errno
}

// Tmpfile is refused: an O_TMPFILE file would bypass the emulation.
// Programs fall back to a named temporary file.
func (n *emuNode) Tmpfile(ctx context.Context, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EOPNOTSUPP
}

// Getxattr says extended attributes are not supported (ENOSYS), which the
// kernel remembers: otherwise it asks for security.capability before every
// write, a second round trip to the server per write.
func (n *emuNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

// Setxattr, Listxattr and Removexattr: as Getxattr.
func (n *emuNode) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return syscall.ENOSYS
}

func (n *emuNode) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

func (n *emuNode) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return syscall.ENOSYS
}

// acquire loads the file's contents, from the tree file at path, on its
// first open. n.mu is held.
func (n *emuNode) acquire(path string) syscall.Errno {
	if n.opens == 0 && n.c == nil {
		c, err := n.load(path)
		if err != nil {
			return n.fail(err)
		}
		n.c = c
		n.em.setOpened(c.id.ino, n)
	}
	n.opens++
	n.c.takeLate(n)
	return 0
}

// takeLate takes back the ranges the mount kept for the file to look at
// again at its next commit.
func (c *contents) takeLate(n *emuNode) {
	r, born := n.em.late.take(n, c.id)
	if len(r) == 0 {
		return
	}
	if len(c.late) == 0 || born < c.lateBorn {
		c.lateBorn = born
	}
	c.late = append(c.late, r...)
}

func (n *emuNode) load(p string) (*contents, error) {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	id, st, err := identify(int(f.Fd()))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat %s: %w", p, err)
	}
	exts, ok, err := readMeta(n.em.store, id)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	c := &contents{f: f, id: id, size: st.Size, treeSize: st.Size, litUnsynced: n.em.litUnsynced(id.ino)}
	c.data.Sums = n.em.sums
	if ok && len(exts) > 0 {
		c.data.SetExtents(exts, exts[len(exts)-1].End())
	}
	// The tree file's size is the file's: it is what was last made
	// durable with the literal bytes, and what stat shows.
	c.data.Truncate(st.Size)
	return c, nil
}

// release drops one open; the last commits and unloads. n.mu is held.
func (n *emuNode) release() error {
	n.opens--
	if n.opens > 0 {
		return nil
	}
	err := n.commit(false)
	// A file unlinked while open: its last close may come after a
	// commit that found nothing changed (close's flush ran before the
	// unlink), so the metadata goes here.
	if _, st, serr := identify(int(n.c.f.Fd())); serr == nil && st.Nlink == 0 && err == nil {
		err = removeMeta(n.em.store, n.c.id.ino, false)
	}
	if n.c.litUnsynced {
		n.em.setLitUnsynced(n.c.id.ino)
	}
	if cerr := n.c.f.Close(); err == nil {
		err = cerr
	}
	n.em.setOpened(n.c.id.ino, nil)
	n.c = nil
	return err
}

// commit writes the metadata if it changed; with sync, makes the literal
// bytes, the size and the metadata durable: the tree file's literal
// bytes by its fdatasync (if it took any since the last), the size and
// extents by the metadata log's. n.mu is held.
func (n *emuNode) commit(sync bool) error {
	c := n.c
	if c.treeSize < c.size {
		if err := c.f.Truncate(c.size); err != nil {
			return err
		}
		c.treeSize = c.size
	}
	if sync && c.litUnsynced {
		if err := unix.Fdatasync(int(c.f.Fd())); err != nil {
			return fmt.Errorf("fsync %s: %w", c.f.Name(), err)
		}
		c.litUnsynced = false
	}
	if !c.dirty && !(sync && c.unsynced) && len(c.late) == 0 {
		return nil
	}
	_, st, err := identify(int(c.f.Fd()))
	if err != nil {
		return fmt.Errorf("stat %s: %w", c.f.Name(), err)
	}
	var punch, left [][2]int64
	born := n.em.sums.Learnt()
	if len(c.late) > 0 {
		born = min(born, c.lateBorn)
	}
	wrote := true
	if st.Nlink == 0 { // deleted while open: nothing to keep
		err = removeMeta(n.em.store, c.id.ino, false)
	} else {
		var old, inlined bool
		if punch, left, old, err = c.recognise(); err != nil {
			return err
		}
		if inlined, err = c.inline(); err != nil {
			return err
		}
		if inlined {
			// The tree file holds nothing the metadata does not.
			punch, left, old = [][2]int64{{0, c.data.Size()}}, nil, true
		}
		// Bytes an earlier commit kept literal, now extents: the
		// metadata saying so must be durable before they are punched,
		// as they may have been fsynced.
		sync = sync || old
		if wrote = c.dirty || len(punch) > 0 || (sync && c.unsynced); wrote {
			err = n.em.writeMeta(c.id, c.data.Extents(), c.data.Size(), sync)
		}
	}
	if err != nil {
		return err
	}
	if wrote {
		c.dirty, c.unsynced = false, !sync
	}
	c.recheck, c.recheckBytes, c.late = nil, 0, nil
	n.em.late.keep(n, c.id, left, born)
	if c.fed {
		c.fed = false
		n.em.late.poke()
	}
	// Only now, with the extents that replace them in the metadata, free
	// the literal bytes recognised late: those written since the last
	// commit were never committed, so a crash in between loses nothing
	// committed; the metadata for older ones is durable already.
	for _, r := range punch {
		if r[1] >= c.size {
			// Up to the end of the file's last block, or the block
			// is zeroed but kept.
			r[1] = (c.size + blockSize - 1) / blockSize * blockSize
		}
		if err := unix.Fallocate(int(c.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, r[0], r[1]-r[0]); err != nil {
			return fmt.Errorf("punch %s: %w", c.f.Name(), err)
		}
	}
	return nil
}

// writeMeta commits a file's metadata: its meta/ file, and a record in
// the metadata log, durably with sync.
func (em *emulator) writeMeta(id identity, exts []tardis.FileExtent, size int64, sync bool) error {
	if err := writeMeta(em.store, id, exts, size, false); err != nil {
		return err
	}
	return em.log.record(id, exts, size, sync)
}

// blockSize is the block of the store's file system that punching
// rounds to (4 KiB on ext4, xfs, btrfs and tmpfs; a larger one only
// leaves a block allocated).
const blockSize = 4096

// inlineMax bounds the literal bytes a file with synthetic extents keeps
// in its metadata rather than in its tree file, where even a few bytes
// take a whole block: an HDFS .meta file's 7-byte header would cost 4 KiB
// beside a 1 MiB block described in 64 bytes, capping the ratio at 250.
const inlineMax = 256

// inline moves the file's literal bytes into its metadata (as literal
// extents of c.data) if it has synthetic extents and at most inlineMax
// literal bytes in its tree file, and says whether it did; the caller
// punches the tree file once the metadata is durable.
func (c *contents) inline() (bool, error) {
	holes := c.data.Holes(0, c.data.Size())
	var total int64
	for _, h := range holes {
		total += h[1] - h[0]
	}
	if total == 0 || total > inlineMax || len(c.data.Extents()) == 0 {
		return false, nil
	}
	for _, h := range holes {
		buf := make([]byte, h[1]-h[0])
		if _, err := c.f.ReadAt(buf, h[0]); err != nil && err != io.EOF {
			return false, fmt.Errorf("read %s: %w", c.f.Name(), err)
		}
		c.data.WriteAt(buf, h[0])
	}
	return true, nil
}

// noteLiteral records that [lo, hi) was written as literal bytes.
func (c *contents) noteLiteral(lo, hi int64) {
	if hi-lo < minLookAgain || c.recheckBytes+hi-lo > recheckMax {
		return
	}
	if k := len(c.recheck); k > 0 && c.recheck[k-1][1] == lo {
		c.recheck[k-1][1] = hi
	} else {
		c.recheck = append(c.recheck, [2]int64{lo, hi})
	}
	c.recheckBytes += hi - lo
}

// recognise looks again at the literal bytes written since the last
// commit and at those earlier commits left literal (c.late), for what
// the mount's checksum index has learnt since they were written: a
// checksum may reach the server before the data it sums, even after the
// checksum file was committed (with the write-back cache the kernel
// writes back a checksum file's pages and its data file's pages in no
// set order; in direct I/O a system may write its checksums first). It returns the
// ranges that became synthetic, whose literal bytes the caller punches
// out of the tree file, those that stay literal, and whether any that
// became synthetic was committed before (old).
func (c *contents) recognise() (became, left [][2]int64, old bool, err error) {
	lookAt := func(ranges [][2]int64, committed bool) error {
		for _, r := range mergeRanges(ranges) {
			for _, h := range c.data.Holes(r[0], r[1]) {
				if c.data.Sums.Len() == 0 { // nothing learnt: it would stay literal
					left = append(left, h)
					continue
				}
				buf := make([]byte, h[1]-h[0])
				if _, err := c.f.ReadAt(buf, h[0]); err != nil && err != io.EOF {
					return fmt.Errorf("read %s: %w", c.f.Name(), err)
				}
				// The bytes the file holds there, so the write changes
				// nothing but how they are kept.
				lits := c.data.WriteAtSplit(buf, h[0])
				at := h[0]
				for _, l := range append(lits, tardis.FileExtent{Off: h[1]}) {
					if l.Off > at {
						became = append(became, [2]int64{at, l.Off})
						old = old || committed
					}
					if l.Len >= minLookAgain {
						left = append(left, [2]int64{l.Off, l.End()})
					}
					at = l.End()
				}
			}
		}
		return nil
	}
	if err := lookAt(c.recheck, false); err != nil {
		return nil, nil, false, err
	}
	if err := lookAt(c.late, true); err != nil {
		return nil, nil, false, err
	}
	return became, left, old, nil
}

// minLookAgain is the shortest literal range worth looking at again: two
// checksum words (a file's header, a few bytes, is not).
const minLookAgain = 8

// mergeRanges sorts ranges and joins those that overlap or touch.
func mergeRanges(rs [][2]int64) [][2]int64 {
	if len(rs) < 2 {
		return rs
	}
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	out := rs[:1]
	for _, r := range rs[1:] {
		if last := &out[len(out)-1]; r[0] <= last[1] {
			last[1] = max(last[1], r[1])
			continue
		}
		out = append(out, r)
	}
	return out
}

// truncate sets the size of an open file. n.mu is held.
func (n *emuNode) truncate(size int64) error {
	c := n.c
	if err := c.f.Truncate(size); err != nil {
		return err
	}
	c.data.Truncate(size)
	c.size, c.treeSize = size, size
	c.dirty = true
	return nil
}

// write stores p at off: synthetic runs as extents, the rest in the tree
// file. n.mu is held.
func (n *emuNode) write(p []byte, off int64) error {
	c := n.c
	old := c.data.Size()
	lits := c.data.WriteAtSplit(p, off)
	litBytes := 0
	for _, e := range lits {
		litBytes += e.Len
	}
	c.fed = c.fed || litBytes < len(p)
	for _, e := range lits {
		c.noteLiteral(e.Off, e.End())
		if _, err := c.f.WriteAt(e.Lit, e.Off); err != nil {
			// The write failed: its range reads as before or partly
			// written, as on any file system, but the size stays.
			if c.data.Size() > old {
				c.data.Truncate(old)
			}
			c.dirty = true
			return err
		}
		c.size = max(c.size, e.End())
		c.treeSize = max(c.treeSize, e.End())
		c.litUnsynced = true
	}
	c.dirty = true
	c.size = max(c.size, off+int64(len(p))) // the tree file follows at the commit
	return nil
}

func (n *emuNode) read(p []byte, off int64) (int, error) {
	c := n.c
	return c.data.ReadAtFill(p, off, func(q []byte, at int64) error {
		k, err := c.f.ReadAt(q, at)
		if err == io.EOF {
			// Past the tree file's end after a failed write: zeros.
			clear(q[k:])
			return nil
		}
		return err
	})
}

func (n *emuNode) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok && n.regular() {
		n.mu.Lock()
		errno := n.acquire(n.path())
		if errno == 0 {
			err := n.truncate(int64(size))
			if rerr := n.release(); err == nil {
				err = rerr
			}
			if err != nil {
				errno = n.fail(err)
			}
		}
		n.mu.Unlock()
		if errno != 0 {
			return errno
		}
		rest := *in
		rest.Valid &^= fuse.FATTR_SIZE
		in = &rest
	}
	errno := n.LoopbackNode.Setattr(ctx, f, in, out)
	if errno == 0 {
		n.em.openSize(&out.Attr)
	}
	return errno
}

func (n *emuNode) Unlink(ctx context.Context, name string) syscall.Errno {
	after := n.forgetIfLast(name)
	errno := n.LoopbackNode.Unlink(ctx, name)
	if errno == 0 {
		after()
	}
	return errno
}

func (n *emuNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	after := func() {}
	if p, ok := newParent.(*emuNode); ok && flags&unix.RENAME_EXCHANGE == 0 {
		after = p.forgetIfLast(newName)
	}
	errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
	if errno == 0 {
		after()
	}
	return errno
}

// forgetIfLast returns what to do once name, about to be unlinked or
// replaced, is gone: remove its metadata if it was the file's last link
// and the file is not open (an open file's last release does it).
func (n *emuNode) forgetIfLast(name string) func() {
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(n.path(), name), &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Nlink != 1 {
		return func() {}
	}
	return func() {
		if ch := n.GetChild(name); ch != nil {
			// Still listed under name for a moment; the kernel forgets it.
			if c, ok := ch.Operations().(*emuNode); ok {
				c.mu.Lock()
				defer c.mu.Unlock()
				if c.opens > 0 {
					return
				}
			}
		}
		if err := removeMeta(n.em.store, st.Ino, false); err != nil {
			n.fail(err)
		}
	}
}

// emuFile is an open regular file of an emulating limpfs.
type emuFile struct {
	n *emuNode
}

var (
	_ fs.FileReader    = (*emuFile)(nil)
	_ fs.FileWriter    = (*emuFile)(nil)
	_ fs.FileFlusher   = (*emuFile)(nil)
	_ fs.FileFsyncer   = (*emuFile)(nil)
	_ fs.FileReleaser  = (*emuFile)(nil)
	_ fs.FileGetattrer = (*emuFile)(nil)
	_ fs.FileAllocater = (*emuFile)(nil)
)

func (h *emuFile) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	began := time.Now()
	h.n.mu.RLock()
	k, err := h.n.read(buf, off)
	h.n.mu.RUnlock()
	if err != nil {
		return nil, h.n.fail(err) // names the tree file
	}
	dev := h.n.em.dev
	until := dev.reserve(k, began)
	dev.count(func(s *Stats) { s.Reads++; s.ReadBytes += int64(k) })
	dev.complete(until)
	return fuse.ReadResultData(buf[:k]), 0
}

func (h *emuFile) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	dev := h.n.em.dev
	until := dev.reserve(len(data), time.Now())
	h.n.mu.Lock()
	err := h.n.write(data, off)
	h.n.mu.Unlock()
	if err != nil {
		// ENOSPC and EIO reach the writer as they are; the error names
		// the tree file.
		return 0, h.n.fail(err)
	}
	dev.count(func(s *Stats) { s.Writes++; s.WriteBytes += int64(len(data)) })
	dev.complete(until)
	return uint32(len(data)), 0
}

// Flush (every close) commits the metadata, so an error such as ENOSPC
// reaches close.
func (h *emuFile) Flush(ctx context.Context) syscall.Errno {
	h.n.mu.Lock()
	defer h.n.mu.Unlock()
	if err := h.n.commit(false); err != nil {
		return h.n.fail(err)
	}
	return 0
}

func (h *emuFile) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	dev := h.n.em.dev
	until := dev.reserve(syncBytes, time.Now())
	h.n.mu.Lock()
	err := h.n.commit(true)
	h.n.mu.Unlock()
	dev.count(func(s *Stats) { s.Fsyncs++ })
	dev.complete(until)
	if err != nil {
		return h.n.fail(err)
	}
	return 0
}

func (h *emuFile) Release(ctx context.Context) syscall.Errno {
	h.n.mu.Lock()
	defer h.n.mu.Unlock()
	if err := h.n.release(); err != nil {
		return h.n.fail(err)
	}
	return 0
}

// Getattr answers fstat from the tree file (also once the file is
// deleted), with the file's size, which the tree file has only from the
// next commit on. go-fuse hands an open file's getattr here even when
// the kernel names no file handle.
func (h *emuFile) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	h.n.mu.RLock()
	defer h.n.mu.RUnlock()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(h.n.c.f.Fd()), &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	out.Size = uint64(h.n.c.size)
	return 0
}

// Allocate grows the file (mode 0), does nothing for
// FALLOC_FL_KEEP_SIZE alone, and punches holes; it refuses other modes.
func (h *emuFile) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	n := h.n
	n.mu.Lock()
	defer n.mu.Unlock()
	c := n.c
	var err error
	switch mode {
	case 0:
		if end := int64(off + size); end > c.size {
			err = n.truncate(end)
		}
	case unix.FALLOC_FL_KEEP_SIZE:
	case unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE:
		if err = unix.Fallocate(int(c.f.Fd()), mode, int64(off), int64(size)); err == nil {
			c.data.Punch(int64(off), int64(size))
			c.dirty, c.litUnsynced = true, true
		}
	default:
		return syscall.EOPNOTSUPP
	}
	if err != nil {
		return n.fail(fmt.Errorf("fallocate %s: %w", n.path(), err))
	}
	return 0
}

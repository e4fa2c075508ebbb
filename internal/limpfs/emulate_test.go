package limpfs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/gait-dev/gait/internal/tardis"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

func needFUSE(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root to mount FUSE")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("skipped: /dev/fuse is missing")
	}
}

// mountStore mounts an emulating limpfs of store (made if empty) with no
// bandwidth limit; the returned function unmounts it (also at cleanup).
func mountStore(t *testing.T, store string) (*FS, func()) {
	t.Helper()
	mnt := t.TempDir()
	f, err := MountStore(store, mnt, Options{Bandwidth: math.Inf(1), Report: func(err error) { t.Log("reported:", err) }})
	if err != nil {
		t.Fatal(err)
	}
	done := false
	unmount := func() {
		if done {
			return
		}
		done = true
		if err := f.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	}
	t.Cleanup(unmount)
	return f, unmount
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func sameFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: %d bytes read back, %d written; first difference at byte %d", path, len(got), len(want), i)
	}
}

// hdfsLike is what an HDFS DataNode writes for a block of data: the block
// file holds the data, the .meta file a 7-byte header and a CRC32C for
// every 512-byte chunk.
func hdfsLike(data []byte) (block, meta []byte) {
	meta = []byte{0, 1, 2, 0, 0, 2, 0} // version, checksum type, bytes per checksum
	tab := crc32.MakeTable(crc32.Castagnoli)
	for c := 0; c < len(data); c += 512 {
		meta = binary.BigEndian.AppendUint32(meta, crc32.Checksum(data[c:min(c+512, len(data))], tab))
	}
	return data, meta
}

// TestEmulateRoundTrip writes synthetic and foreign bytes through the
// mount with real tools and with every kind of write, and reads them back
// byte for byte, before and after a remount.
func TestEmulateRoundTrip(t *testing.T) {
	needFUSE(t)
	store := filepath.Join(t.TempDir(), "store")
	f, unmount := mountStore(t, store)
	src := t.TempDir()
	syn := tardis.AppendGenerate(nil, 11, 0, 8<<20)
	foreign := make([]byte, 3<<20+17)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range foreign {
		foreign[i] = byte(r.Uint32())
	}
	os.WriteFile(filepath.Join(src, "syn"), syn, 0o644)
	os.WriteFile(filepath.Join(src, "foreign"), foreign, 0o644)
	m := f.Mountpoint
	want := map[string][]byte{}

	run(t, "dd", "if="+filepath.Join(src, "syn"), "of="+filepath.Join(m, "dd-syn"), "bs=64K", "status=none")
	want["dd-syn"] = syn
	run(t, "cp", filepath.Join(src, "foreign"), filepath.Join(m, "cp-foreign"))
	want["cp-foreign"] = foreign
	os.Mkdir(filepath.Join(m, "dir"), 0o755)
	run(t, "cp", filepath.Join(src, "syn"), filepath.Join(m, "dir", "cp-syn"))
	want["dir/cp-syn"] = syn

	// HDFS-like: a block file and its checksum file, in 64 KiB packets.
	block, meta := hdfsLike(syn)
	bf, _ := os.Create(filepath.Join(m, "blk_1"))
	mf, _ := os.Create(filepath.Join(m, "blk_1.meta"))
	mf.Write(meta[:7])
	for p := 0; p < len(block); p += 64 << 10 {
		bf.Write(block[p : p+64<<10])
		mf.Write(meta[7+p/512*4 : 7+(p+64<<10)/512*4])
	}
	bf.Close()
	mf.Close()
	want["blk_1"], want["blk_1.meta"] = block, meta

	// Mixed: overwrites, a hole, a truncate, synthetic bytes at the wrong
	// offset, foreign bytes over synthetic ones and back.
	mixed := bytes.Clone(syn[:1<<20])
	mx, _ := os.Create(filepath.Join(m, "mixed"))
	mx.WriteAt(mixed, 0)
	mx.WriteAt(foreign[:5000], 100_000)
	copy(mixed[100_000:], foreign[:5000])
	mx.WriteAt(syn[102_000:103_000], 102_000)
	copy(mixed[102_000:], syn[102_000:103_000])
	mx.WriteAt(syn[:4096], 500_000) // the stream, elsewhere
	copy(mixed[500_000:], syn[:4096])
	mx.WriteAt([]byte("tail"), 2<<20) // a hole before it
	mixed = append(mixed, make([]byte, 1<<20)...)
	mixed = append(mixed, "tail"...)
	mx.Truncate(int64(len(mixed) - 2))
	mixed = mixed[:len(mixed)-2]
	mx.Close()
	want["mixed"] = mixed

	// Renames and hard links keep contents (metadata is per inode).
	if err := os.Rename(filepath.Join(m, "dd-syn"), filepath.Join(m, "dir", "renamed")); err != nil {
		t.Fatal(err)
	}
	want["dir/renamed"] = want["dd-syn"]
	delete(want, "dd-syn")
	if err := os.Link(filepath.Join(m, "dir", "renamed"), filepath.Join(m, "link")); err != nil {
		t.Fatal(err)
	}
	want["link"] = syn

	check := func() {
		for name, w := range want {
			sameFile(t, filepath.Join(f.Mountpoint, name), w)
			st, err := os.Stat(filepath.Join(f.Mountpoint, name))
			if err != nil || st.Size() != int64(len(w)) {
				t.Errorf("%s: stat %v, size want %d", name, err, len(w))
			}
		}
	}
	check()
	// A file removed takes its metadata with it.
	os.WriteFile(filepath.Join(m, "gone"), syn[:1<<20], 0o644)
	os.Remove(filepath.Join(m, "gone"))
	// So does one unlinked after a close's flush committed it but before
	// its last release (the order the kernel's asynchronous release
	// can take): a dup's close flushes, the unlink, then the last close.
	g, err := os.Create(filepath.Join(m, "gone-open"))
	if err != nil {
		t.Fatal(err)
	}
	g.Write(syn[:1<<20])
	dup, err := syscall.Dup(int(g.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	syscall.Close(dup)
	os.Remove(filepath.Join(m, "gone-open"))
	g.Close()

	unmount()
	metas, _ := os.ReadDir(filepath.Join(store, storeMeta))
	// dir/renamed (= link), dir/cp-syn, blk_1, blk_1.meta (its
	// checksums), mixed: five inodes with synthetic extents.
	if len(metas) != 5 {
		var names []string
		for _, e := range metas {
			names = append(names, e.Name())
		}
		t.Errorf("metadata files %v, want 5", names)
	}
	f, _ = mountStore(t, store)
	check()

	st, err := ReadStoreStats(store)
	if err != nil {
		t.Fatal(err)
	}
	var logical int64
	for name, w := range want {
		if name != "link" {
			logical += int64(len(w))
		}
	}
	t.Logf("store: %+v", st)
	if st.Files != int64(len(want)-1) || st.LogicalBytes != logical {
		t.Errorf("stats %+v: want %d files, %d logical bytes", st, len(want)-1, logical)
	}
	// Physical: the foreign file in full, the checksum file's header
	// (a block), a few blocks of literal bytes in mixed, metadata: well
	// under 4 MB.
	if lit := int64(len(foreign)); st.PhysicalBytes < lit || st.PhysicalBytes > lit+1<<20 {
		t.Errorf("physical %d bytes, want about the %d literal bytes", st.PhysicalBytes, lit)
	}
}

// TestEmulateMmap: a file written with pwrite and through a shared mmap
// at once stays coherent, in direct I/O (the default: writes bypass the
// page cache the mapping uses) and with the write-back cache, and reads
// back after a remount. The writer is another process, as it is in use:
// a page fault on a mapping served by its own process can wait on a FUSE
// request that the Go runtime, stopping the world for the collector
// around the faulting thread, never lets the server read.
// TestEmulateSizeWhileOpen: a file written past its end shows its size
// to stat, by path and through its descriptor, after a chmod and through
// a new hard link, after the kernel's
// attribute and entry caches expired (so the mount is asked), though the
// tree file is extended only at the commit; and after the commit and a
// remount.
func TestEmulateSizeWhileOpen(t *testing.T) {
	needFUSE(t)
	store := filepath.Join(t.TempDir(), "store")
	f, unmount := mountStore(t, store)
	p := filepath.Join(f.Mountpoint, "grow")
	w, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	data := tardis.AppendGenerate(nil, 5, 0, 1<<20)
	for off := 0; off < len(data); off += 64 << 10 {
		if _, err := w.Write(data[off : off+64<<10]); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1100 * time.Millisecond) // past the 1 s entry and attribute timeouts
	// A chmod and a hard link answer with the file's attributes too.
	chmod := func() (os.FileInfo, error) {
		if err := os.Chmod(p, 0o600); err != nil {
			return nil, err
		}
		return w.Stat()
	}
	link := func() (os.FileInfo, error) {
		if err := os.Link(p, p+".link"); err != nil {
			return nil, err
		}
		return os.Stat(p + ".link")
	}
	for i, stat := range []func() (os.FileInfo, error){func() (os.FileInfo, error) { return os.Stat(p) }, w.Stat, chmod, link} {
		st, err := stat()
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() != int64(len(data)) {
			t.Errorf("open file, stat %d: size %d, want %d", i, st.Size(), len(data))
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	unmount()
	f, _ = mountStore(t, store)
	sameFile(t, filepath.Join(f.Mountpoint, "grow"), data)
}

func TestEmulateMmap(t *testing.T) {
	needFUSE(t)
	for _, wb := range []bool{false, true} {
		t.Run(fmt.Sprintf("writeback=%v", wb), func(t *testing.T) {
			store, mnt := filepath.Join(t.TempDir(), "store"), t.TempDir()
			f, err := MountStore(store, mnt, Options{Bandwidth: math.Inf(1), WriteBack: wb})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { f.Unmount() }() // the last mount
			path := filepath.Join(mnt, "m")
			cmd := exec.Command(os.Args[0], "-test.run=^TestMmapWriter$", "-test.v")
			cmd.Env = append(os.Environ(), "GAIT_MMAP_FILE="+path)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("the mmap writer: %v\n%s", err, out)
			}
			if err := f.Unmount(); err != nil {
				t.Fatal(err)
			}
			if f, err = MountStore(store, mnt, Options{Bandwidth: math.Inf(1), WriteBack: wb}); err != nil {
				t.Fatal(err)
			}
			sameFile(t, path, mmapWritten())
		})
	}
}

// mmapWritten is what TestMmapWriter leaves in its file.
func mmapWritten() []byte {
	want := tardis.AppendGenerate(nil, 5, 0, 1<<20)
	copy(want[4096:], "pwrite")
	copy(want[9000:], "mapped")
	copy(want, tardis.AppendGenerate(nil, 5, 0, 10000))
	return want
}

// TestMmapWriter is TestEmulateMmap's writer process, run only by it: it
// writes the file named by GAIT_MMAP_FILE with pwrite and through a shared
// mapping, checking after each step that both views agree.
func TestMmapWriter(t *testing.T) {
	path := os.Getenv("GAIT_MMAP_FILE")
	if path == "" {
		t.Skip("run by TestEmulateMmap")
	}
	want := tardis.AppendGenerate(nil, 5, 0, 1<<20)
	out, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	for p := 0; p < len(want); p += 64 << 10 {
		if _, err := out.WriteAt(want[p:p+64<<10], int64(p)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := unix.Mmap(int(out.Fd()), 0, len(want), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	defer unix.Munmap(m)
	check := func(what string) {
		t.Helper()
		if !bytes.Equal(m, want) {
			t.Fatalf("%s: the mapping differs from what was written", what)
		}
		got := make([]byte, len(want))
		if _, err := out.ReadAt(got, 0); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: pread differs from what was written (%v)", what, err)
		}
	}
	check("written")
	out.WriteAt([]byte("pwrite"), 4096)
	copy(want[4096:], "pwrite")
	check("pwrite into the mapping")
	copy(m[9000:], "mapped")
	copy(want[9000:], "mapped")
	if err := unix.Msync(m, unix.MS_SYNC); err != nil {
		t.Fatal(err)
	}
	check("store through the mapping")
	copy(want, tardis.AppendGenerate(nil, 5, 0, 10000)) // the stream again where it was
	out.WriteAt(want[:10000], 0)
	check("stream over both")
	if !bytes.Equal(want, mmapWritten()) {
		t.Fatal("mmapWritten does not match the steps")
	}
}

// TestEmulateHDFSRatio writes what a DataNode writes for two 64 MiB
// blocks of the synthetic stream, in 64 KiB packets: the block files
// compress to almost nothing, and so do the checksum files, recognised
// as checksums of the stream just written (tardis.SumIndex); without
// that, the checksums would cap the ratio over both at 512/4.
func TestEmulateHDFSRatio(t *testing.T) {
	needFUSE(t)
	store := filepath.Join(t.TempDir(), "store")
	f, unmount := mountStore(t, store)
	const blockSize, packet = 64 << 20, 64 << 10
	var metaBytes int64
	for b := range 2 {
		data := tardis.AppendGenerate(nil, 77, uint64(b*blockSize), blockSize)
		block, meta := hdfsLike(data)
		bf, err := os.Create(filepath.Join(f.Mountpoint, fmt.Sprintf("blk_%d", b)))
		if err != nil {
			t.Fatal(err)
		}
		mf, _ := os.Create(filepath.Join(f.Mountpoint, fmt.Sprintf("blk_%d_1001.meta", b)))
		mf.Write(meta[:7])
		for p := 0; p < len(block); p += packet {
			bf.Write(block[p : p+packet])
			mf.Write(meta[7+p/512*4 : 7+(p+packet)/512*4])
		}
		// A DataNode closes the checksum file first (BlockReceiver.close),
		// while the block's last pages may still be in the kernel's cache.
		if err := errors.Join(mf.Close(), bf.Close()); err != nil {
			t.Fatal(err)
		}
		metaBytes += int64(len(meta))
	}
	unmount()
	st, err := ReadStoreStats(store)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("HDFS-like, 2 x 64 MiB in 64 KiB packets: %d logical bytes (%d in checksum files), %d physical, ratio %.1f",
		st.LogicalBytes, metaBytes, st.PhysicalBytes, st.Ratio)
	if st.Ratio < 500 {
		t.Errorf("ratio over blocks and checksums %.1f, want at least 500", st.Ratio)
	}
}

// TestEmulateChecksumLate: checksums that reach the server before the
// data they sum are recognised when their file is committed, and their
// literal bytes freed; so are those of a checksum file committed before
// its data is written (as a DataNode closes a block's .meta file before
// the block file), when the data's commit teaches the index. Both read
// back byte for byte after a remount.
func TestEmulateChecksumLate(t *testing.T) {
	needFUSE(t)
	store := filepath.Join(t.TempDir(), "store")
	f, unmount := mountStore(t, store)
	m := f.Mountpoint
	data := tardis.AppendGenerate(nil, 21, 0, 8<<20)
	_, meta := hdfsLike(data)
	// Late: the whole checksum file written back to the server
	// (sync_file_range: no fsync, so no commit) before the block is
	// written, and closed after it.
	mf, err := os.Create(filepath.Join(m, "late.meta"))
	if err != nil {
		t.Fatal(err)
	}
	mf.Write(meta)
	if err := unix.SyncFileRange(int(mf.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m, "late"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := mf.Close(); err != nil {
		t.Fatal(err)
	}
	// Committed before its data existed.
	other := tardis.AppendGenerate(nil, 22, 0, 1<<20)
	_, meta2 := hdfsLike(other)
	os.WriteFile(filepath.Join(m, "early.meta"), meta2, 0o644)
	os.WriteFile(filepath.Join(m, "early"), other, 0o644)
	unmount()
	var st syscall.Stat_t
	syscall.Stat(filepath.Join(store, storeTree, "late.meta"), &st)
	if st.Blocks != 0 {
		t.Errorf("late.meta takes %d bytes in the tree, want none (its 7-byte header is kept in its metadata)", st.Blocks*512)
	}
	syscall.Stat(filepath.Join(store, storeTree, "early.meta"), &st)
	if st.Blocks != 0 {
		t.Errorf("early.meta takes %d bytes in the tree (%d literal bytes written), want none", st.Blocks*512, len(meta2))
	}
	f, _ = mountStore(t, store)
	sameFile(t, filepath.Join(f.Mountpoint, "late.meta"), meta)
	sameFile(t, filepath.Join(f.Mountpoint, "early.meta"), meta2)
	sameFile(t, filepath.Join(f.Mountpoint, "late"), data)
	// The header kept in the metadata overwritten, the file extended.
	lm := filepath.Join(f.Mountpoint, "late.meta")
	h, err := os.OpenFile(lm, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	h.WriteAt([]byte("HDR"), 2)
	h.WriteAt([]byte("tail"), int64(len(meta)))
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	want := append(bytes.Clone(meta), "tail"...)
	copy(want[2:], "HDR")
	sameFile(t, lm, want)
}

// TestEmulateSlowDisk: an emulating mount is a slow disk too. Writing and
// closing 8 MB at 40 MB/s slowed by 2 must take at least the 0.4 s the
// disk needs (the writes go through the page cache; close waits for them).
func TestEmulateSlowDisk(t *testing.T) {
	needFUSE(t)
	mnt := t.TempDir()
	f, err := MountStore(filepath.Join(t.TempDir(), "store"), mnt, Options{Bandwidth: 40e6})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Unmount()
	if err := f.SetFactor(2); err != nil {
		t.Fatal(err)
	}
	syn := tardis.AppendGenerate(nil, 8, 0, 8e6)
	start := time.Now()
	if err := os.WriteFile(filepath.Join(mnt, "f"), syn, 0o644); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("8 MB at 40 MB/s / 2: %v", took)
	if took < 320*time.Millisecond { // 0.4 s less 20%
		t.Errorf("8 MB written in %v on a 20 MB/s disk", took)
	}
	if st := f.Stats(); st.WriteBytes != 8e6 {
		t.Errorf("the disk saw %d bytes written, want 8e6", st.WriteBytes)
	}
}

// TestEmulateBadInput: a directory that is not a store, a store in use, a
// mount point in use, corrupt metadata, a full disk.
func TestEmulateBadInput(t *testing.T) {
	needFUSE(t)
	notStore := t.TempDir()
	os.WriteFile(filepath.Join(notStore, "data"), []byte("x"), 0o644)
	if _, err := MountStore(notStore, t.TempDir(), Options{}); !errors.Is(err, ErrNotStore) || !strings.Contains(err.Error(), "GAIT-STORE") {
		t.Errorf("mount of a non-store: %v", err)
	}
	if _, err := ReadStoreStats(t.TempDir()); !errors.Is(err, ErrNotStore) {
		t.Errorf("stats of an empty directory: %v", err)
	}

	store := filepath.Join(t.TempDir(), "store")
	f, unmount := mountStore(t, store)
	if _, err := MountStore(store, t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("second server of a store: %v", err)
	}
	if _, err := MountStore(filepath.Join(t.TempDir(), "other"), f.Mountpoint, Options{}); err == nil || !strings.Contains(err.Error(), "is in use") {
		t.Errorf("mount over a mount: %v", err)
	}
	syn := tardis.AppendGenerate(nil, 3, 0, 1<<20)
	if err := os.WriteFile(filepath.Join(f.Mountpoint, "f"), syn, 0o644); err != nil {
		t.Fatal(err)
	}
	unmount()

	// Flip a byte of the metadata's payload.
	metas, _ := filepath.Glob(filepath.Join(store, storeMeta, "*"))
	if len(metas) != 1 {
		t.Fatalf("metadata files %v", metas)
	}
	b, _ := os.ReadFile(metas[0])
	b[metaHeaderSize+3] ^= 1
	os.WriteFile(metas[0], b, 0o644)
	_, err := ReadStoreStats(store)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Path != metas[0] || ce.Offset != metaHeaderSize || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("stats of a corrupt store: %v", err)
	}
	f, _ = mountStore(t, store)
	if _, err := os.ReadFile(filepath.Join(f.Mountpoint, "f")); !errors.Is(err, syscall.EIO) {
		t.Errorf("read of a file with corrupt metadata: %v, want EIO", err)
	}
	// Truncated payload: named with where it ends.
	os.WriteFile(metas[0], b[:len(b)-3], 0o644)
	if _, err := ReadStoreStats(store); !errors.As(err, &ce) || ce.Offset != int64(len(b)-3) {
		t.Errorf("stats of a truncated metadata file: %v", err)
	}
}

// TestEmulateFullDisk puts a store on a 1 MiB tmpfs: foreign bytes that do
// not fit fail the write or the close with ENOSPC, and synthetic bytes,
// which take no room, still fit.
func TestEmulateFullDisk(t *testing.T) {
	needFUSE(t)
	small := t.TempDir()
	if err := syscall.Mount("tmpfs", small, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("skipped: cannot mount a small tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(small, syscall.MNT_DETACH) })
	f, _ := mountStore(t, filepath.Join(small, "store"))
	foreign := make([]byte, 2<<20)
	for i := range foreign {
		foreign[i] = byte(i*7 + i>>9)
	}
	out, err := os.Create(filepath.Join(f.Mountpoint, "big"))
	if err != nil {
		t.Fatal(err)
	}
	_, werr := out.Write(foreign)
	cerr := out.Close()
	if !errors.Is(werr, syscall.ENOSPC) && !errors.Is(cerr, syscall.ENOSPC) {
		t.Errorf("2 MiB of foreign bytes on a 1 MiB disk: write %v, close %v; want ENOSPC", werr, cerr)
	}
	os.Remove(filepath.Join(f.Mountpoint, "big"))
	syn := tardis.AppendGenerate(nil, 5, 0, 64<<20)
	if err := os.WriteFile(filepath.Join(f.Mountpoint, "syn"), syn, 0o644); err != nil {
		t.Fatalf("64 MiB of synthetic bytes on a 1 MiB disk: %v", err)
	}
	sameFile(t, filepath.Join(f.Mountpoint, "syn"), syn)
}

// BenchmarkEmulateWrite writes the synthetic stream through an
// emulating mount, in direct I/O (the default) and with the write-back
// cache, and, as peers in the same run, straight to the disk the store is
// on with O_DIRECT (the raw disk, as scripts/emulate-bench.sh measures it),
// through a plain limpfs over a tmpfs directory (FUSE and a loopback),
// and through a FUSE mount whose writes do nothing (the ceiling of any
// FUSE file system here: the writer's generation, the kernel's copy to the
// server and the round trip), and into memory (memcpy: the same bytes
// generated and copied into a 64 MiB buffer, the cost of moving them with
// no kernel at all). Writes of 64 KiB, of 1 MiB, and HDFS-like
// (a 64 KiB packet into a block file, then its 128 CRC32C words into a
// checksum file), by one writer and by four at once (a file each, "x4");
// every 64 MiB and at the end the files are fsynced, inside the timing.
// The writer generates every byte in every case. Run as root:
//
//	go test -run '^$' -bench EmulateWrite ./internal/limpfs/
func BenchmarkEmulateWrite(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("skipped: needs root to mount FUSE")
	}
	disk := b.TempDir()
	emu, err := MountStore(filepath.Join(disk, "store"), b.TempDir(), Options{Bandwidth: math.Inf(1)})
	if err != nil {
		b.Fatal(err)
	}
	defer emu.Unmount()
	wb, err := MountStore(filepath.Join(disk, "store-wb"), b.TempDir(), Options{Bandwidth: math.Inf(1), WriteBack: true})
	if err != nil {
		b.Fatal(err)
	}
	defer wb.Unmount()
	backing, err := os.MkdirTemp("/dev/shm", "limpfs-bench-")
	if err != nil {
		b.Skip("skipped: no /dev/shm for the plain peer")
	}
	defer os.RemoveAll(backing)
	plain, err := Mount(backing, b.TempDir(), Options{Bandwidth: math.Inf(1)})
	if err != nil {
		b.Fatal(err)
	}
	defer plain.Unmount()
	null := b.TempDir()
	nullServer, err := fs.Mount(null, &nullDir{}, &fs.Options{MountOptions: fuse.MountOptions{MaxWrite: maxWrite}})
	if err != nil {
		b.Fatal(err)
	}
	defer nullServer.Unmount()
	targets := []struct {
		name string
		dir  string
		f    *FS
		flag int
	}{
		{"memcpy", "", nil, 0},
		{"raw-disk-odirect", disk, nil, syscall.O_DIRECT},
		{"null-fuse", null, nil, 0},
		{"emulating", emu.Mountpoint, emu, 0},
		{"emulating-writeback", wb.Mountpoint, wb, 0},
		{"plain-tmpfs", plain.Mountpoint, plain, 0},
	}
	// The peers of one write size and number of writers run one after
	// the other, so that a ratio between them is of the same moment of
	// a shared machine.
	for _, size := range []int{64 << 10, 1 << 20, -(64 << 10)} {
		name := fmt.Sprintf("%dKiB", size>>10)
		if size < 0 {
			name, size = "hdfs", -size
		}
		for _, writers := range []int{1, 4} {
			for _, target := range targets {
				sub := target.name + "/" + name
				if writers > 1 {
					sub += fmt.Sprintf("-x%d", writers)
				}
				b.Run(sub, func(b *testing.B) {
					benchWriters(b, writers, target.dir, target.f, target.flag, size, name == "hdfs")
				})
			}
		}
	}
}

// nullDir is a FUSE directory whose files take every write and keep
// nothing, in direct I/O like an emulating mount.
type nullDir struct{ fs.Inode }

func (d *nullDir) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	ch := d.NewInode(ctx, &nullFile{}, fs.StableAttr{Mode: syscall.S_IFREG})
	d.AddChild(name, ch, true)
	return ch, nil, fuse.FOPEN_DIRECT_IO, 0
}

func (d *nullDir) Unlink(context.Context, string) syscall.Errno { return 0 }

type nullFile struct{ fs.Inode }

func (*nullFile) Open(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

func (*nullFile) Write(_ context.Context, _ fs.FileHandle, data []byte, _ int64) (uint32, syscall.Errno) {
	return uint32(len(data)), 0
}

func (*nullFile) Setattr(context.Context, fs.FileHandle, *fuse.SetAttrIn, *fuse.AttrOut) syscall.Errno {
	return 0
}

func (*nullFile) Fsync(context.Context, fs.FileHandle, uint32) syscall.Errno { return 0 }

// benchWriters runs benchWrite in n goroutines at once, a file each, for
// b.N operations in all.
func benchWriters(b *testing.B, n int, dir string, f *FS, flag, size int, hdfs bool) {
	b.SetBytes(int64(size))
	var before Stats
	if f != nil {
		before = f.Stats()
	}
	var fsyncs syncTimes
	cpu0 := cpuTime(b)
	if n == 1 {
		benchWrite(b, b.N, dir, "f", flag, size, hdfs, &fsyncs)
	} else {
		var wg sync.WaitGroup
		for w := range n {
			wg.Go(func() { benchWrite(b, (b.N+n-1-w)/n, dir, fmt.Sprintf("f%d", w), flag, size, hdfs, &fsyncs) })
		}
		wg.Wait()
	}
	// The CPU time of the process per GiB written (the writers and, for
	// the FUSE peers, their servers, which run in it): what a peer
	// costs where the cores are shared, as the bandwidth cannot tell.
	b.ReportMetric((cpuTime(b)-cpu0).Seconds()*1e3/(float64(b.N)*float64(size)/(1<<30)), "cpu-ms/GiB")
	if dir != "" {
		// What the writers' fsyncs (every 64 MiB) cost: the part of
		// the time a file system spends making data durable, per fsync
		// and as a share of the writers' time.
		b.ReportMetric(float64(fsyncs.total.Load())/1e6/float64(max(fsyncs.n.Load(), 1)), "ms/fsync")
		b.ReportMetric(100*float64(fsyncs.total.Load())/float64(n)/float64(max(b.Elapsed(), 1)), "%fsync")
	}
	if f != nil {
		st := f.Stats()
		b.ReportMetric(float64(st.WriteBytes-before.WriteBytes)/float64(max(st.Writes-before.Writes, 1)), "B/request")
	}
}

// cpuTime is the user and system time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// memcpyBuffer is how much memory the memcpy peer copies into, round and
// round: more than the caches hold, as a disk's pages would be.
const memcpyBuffer = 64 << 20

// syncTimes adds up the writers' fsyncs.
type syncTimes struct{ total, n atomic.Int64 }

// benchWrite writes ops writes of size into dir/name, or copies them into
// memory when dir is "", and adds its fsyncs' time to fsyncs.
func benchWrite(b *testing.B, ops int, dir, name string, flag, size int, hdfs bool, fsyncs *syncTimes) {
	// O_DIRECT wants an aligned buffer.
	raw := make([]byte, size+4096)
	buf := raw[4096-int(uintptr(unsafe.Pointer(&raw[0]))%4096):][:size]
	if dir == "" {
		mem := make([]byte, memcpyBuffer)
		var sums []byte
		for i := range ops {
			off := uint64(i) * uint64(size)
			tardis.Generate(1, off%(1<<30), buf)
			at := int(off % memcpyBuffer)
			copy(mem[at:], buf)
			if hdfs {
				sums = sums[:0]
				for c := 0; c < size; c += 512 {
					sums = binary.BigEndian.AppendUint32(sums, crc32.Checksum(buf[c:c+512], castagnoli))
				}
				copy(mem[(at+size)%memcpyBuffer:], sums)
			}
		}
		return
	}
	open := func(name string, flag int) *os.File {
		out, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_TRUNC|os.O_WRONLY|flag, 0o644)
		if err != nil {
			b.Error(err) // not Fatal: other writers may run beside
			return nil
		}
		b.Cleanup(func() { out.Close(); os.Remove(out.Name()) })
		return out
	}
	out := open(name, flag)
	var meta *os.File
	var sums []byte
	if hdfs {
		meta = open(name+".meta", 0)
	}
	if out == nil || hdfs && meta == nil {
		return
	}
	sync := func() {
		t0 := time.Now()
		defer func() { fsyncs.total.Add(int64(time.Since(t0))); fsyncs.n.Add(1) }()
		for _, g := range []*os.File{out, meta} {
			if g != nil {
				if err := g.Sync(); err != nil {
					b.Error(err)
				}
			}
		}
	}
	var off uint64
	for range ops {
		tardis.Generate(1, off, buf)
		if _, err := out.Write(buf); err != nil {
			b.Error(err)
			return
		}
		if hdfs {
			sums = sums[:0]
			for c := 0; c < size; c += 512 {
				sums = binary.BigEndian.AppendUint32(sums, crc32.Checksum(buf[c:c+512], castagnoli))
			}
			if _, err := meta.Write(sums); err != nil {
				b.Error(err)
				return
			}
		}
		off += uint64(size)
		if off%(64<<20) == 0 {
			sync()
		}
		if off >= 1<<30 { // the plain peer keeps its bytes in memory
			off = 0
			out.Seek(0, 0)
			if meta != nil {
				meta.Seek(0, 0)
			}
		}
	}
	sync()
}

// TestEmulateLogReplay plays a machine crash that lost everything not
// fsynced: an fsync writes the file's extents and size to the metadata
// log only (the tree file's new size and the meta/ file are written
// without a sync), so the test keeps the log as it was after the fsync,
// unmounts, takes away the meta/ files and the tree file's size, puts the
// log back, and mounts again: the file reads back whole from the log.
// A second log, of a stale epoch, changes nothing.
func TestEmulateLogReplay(t *testing.T) {
	needFUSE(t)
	store := t.TempDir()
	f, unmount := mountStore(t, store)
	data := tardis.AppendGenerate(nil, 9, 0, 3<<20+12345)
	out, err := os.Create(filepath.Join(f.Mountpoint, "f"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := out.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := out.Sync(); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(filepath.Join(store, storeLog))
	if err != nil {
		t.Fatalf("no metadata log after an fsync: %v", err)
	}
	out.Close()
	unmount()
	if _, err := os.Stat(filepath.Join(store, storeLog)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the log is still there after a clean unmount: %v", err)
	}
	crash := func(log []byte) {
		metas, _ := filepath.Glob(filepath.Join(store, storeMeta, "*"))
		for _, m := range metas {
			os.Remove(m)
		}
		if err := os.Truncate(filepath.Join(store, storeTree, "f"), 0); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(store, storeLog), log, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	crash(log)
	f, unmount = mountStore(t, store)
	sameFile(t, filepath.Join(f.Mountpoint, "f"), data)
	if _, err := os.Stat(filepath.Join(store, storeLog)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the log is still there after its replay: %v", err)
	}
	unmount()
	stale := bytes.Clone(log)
	binary.LittleEndian.PutUint64(stale[len(logMagic):], 2)
	crash(stale)
	f, unmount = mountStore(t, store)
	if st, err := os.Stat(filepath.Join(f.Mountpoint, "f")); err != nil || st.Size() != 0 {
		t.Fatalf("after a stale log: %v, %v; want the file as the crash left it, empty", st, err)
	}
	unmount()
}

// TestMetaLogGroupCommit records and syncs from many goroutines at once:
// every record is in the log, and the fsyncs that waited for one another
// shared fdatasyncs rather than each making its own in turn.
func TestMetaLogGroupCommit(t *testing.T) {
	l := &metaLog{store: t.TempDir()}
	const files, syncs = 8, 25
	exts := []tardis.FileExtent{{Off: 0, Extent: tardis.Extent{Seed: 1, Len: 1 << 20}}}
	var wg sync.WaitGroup
	for i := range files {
		wg.Go(func() {
			for k := 1; k <= syncs; k++ {
				if err := l.record(identity{ino: uint64(i + 1)}, exts, 1<<20+int64(k), true); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	last, err := readLog(l.store)
	if err != nil {
		t.Fatal(err)
	}
	for i := range files {
		if m, ok := last[uint64(i+1)]; !ok || m.size != 1<<20+syncs {
			t.Errorf("file %d: last record %+v (%v), want size %d", i+1, m, ok, 1<<20+syncs)
		}
	}
	if l.flushes >= files*syncs {
		t.Errorf("%d fdatasyncs for %d fsyncs from %d goroutines at once: none shared", l.flushes, files*syncs, files)
	}
	t.Logf("%d fdatasyncs for %d fsyncs", l.flushes, files*syncs)
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
}

// TestEmulateLogCheckpoint fsyncs more often than the metadata log
// holds records, so the log is checkpointed (syncfs, a new epoch) while
// the file grows, and a crash after the last fsync still reads the file
// back whole from what the log holds since.
func TestEmulateLogCheckpoint(t *testing.T) {
	needFUSE(t)
	store := t.TempDir()
	f, unmount := mountStore(t, store)
	out, err := os.Create(filepath.Join(f.Mountpoint, "f"))
	if err != nil {
		t.Fatal(err)
	}
	data := tardis.AppendGenerate(nil, 5, 0, 1000*4096)
	for off := 0; off < len(data); off += 4096 {
		if _, err := out.Write(data[off : off+4096]); err != nil {
			t.Fatal(err)
		}
		if err := out.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	log, err := os.ReadFile(filepath.Join(store, storeLog))
	if err != nil {
		t.Fatal(err)
	}
	if epoch := binary.LittleEndian.Uint64(log[len(logMagic):]); epoch < 2 {
		t.Fatalf("the log's epoch is %d after 1,000 fsyncs: it was never checkpointed", epoch)
	}
	out.Close()
	unmount()
	metas, _ := filepath.Glob(filepath.Join(store, storeMeta, "*"))
	for _, m := range metas {
		os.Remove(m)
	}
	os.Truncate(filepath.Join(store, storeTree, "f"), 0)
	os.WriteFile(filepath.Join(store, storeLog), log, 0o644)
	f, _ = mountStore(t, store)
	sameFile(t, filepath.Join(f.Mountpoint, "f"), data)
}

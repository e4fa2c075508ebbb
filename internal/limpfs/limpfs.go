// Package limpfs is a pass-through FUSE file system that behaves like a
// disk of a given bandwidth: reads, writes and fsyncs take at least as
// long as the bytes they move need at that bandwidth, divided by a
// slowdown factor that can change while the file system is mounted.
//
// In its emulating mode (MountStore, emulate.go, store.go) it also stores
// gait's synthetic data as descriptions (tardis extents) rather than
// bytes, in a store directory that survives unmounts and crashes.
package limpfs

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/tardis"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// DefaultBandwidth is the baseline disk of the Limplock paper, 80 MB/s.
const DefaultBandwidth = 80e6

// syncBytes is what an fsync costs on the device: one 4 KiB block, as a
// journal commit writes.
const syncBytes = 4096

// ParseBandwidth reads a disk bandwidth such as 80MB/s or 100MiB/s.
func ParseBandwidth(s string) (float64, error) {
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "/s")
	if ok {
		if n, err := load.ParseSize(num); err == nil && n > 0 {
			return float64(n), nil
		}
	}
	return 0, fmt.Errorf("%q is not a positive disk bandwidth like 80MB/s", s)
}

// Options describe the emulated disk.
type Options struct {
	Bandwidth float64       // bytes per second at factor 1; 0 means DefaultBandwidth, +Inf no limit
	Latency   time.Duration // added to every read, write and fsync, whatever the factor
	// Report, if set, hears the errors an emulating mount can tell the
	// process that met them only as an errno (corrupt metadata: EIO).
	Report func(error)
	// WriteBack makes an emulating mount use the kernel's write-back
	// cache: writes are copied into the page cache and reach the server
	// later, gathered into 1 MiB requests. Without it (the default) each
	// write(2) goes straight from the writer's buffer to the server
	// (direct I/O, one copy instead of two, no dirty-page throttling):
	// 1.1 to 11 times write-back's bandwidth in the runs of
	// docs/emulate.md ("Goals, measured"), the most with 1 MiB writes
	// on a loaded machine; write-back only gathers small writes. Shared
	// mmap works either way (kernel 6.6 or later for direct I/O). A
	// plain limpfs ignores it.
	WriteBack bool
}

// FS is a mounted limpfs.
type FS struct {
	Mountpoint string
	Backing    string
	server     *fuse.Server
	dev        *device
	lock       *os.File // an emulating mount's store lock
	late       *late    // an emulating mount's literal ranges to look at again
	log        *metaLog // an emulating mount's metadata log
}

// Mount makes mountpoint show backing's files through the emulated
// disk, at factor 1. Both directories must exist.
func Mount(backing, mountpoint string, opts Options) (*FS, error) {
	dev, err := newDevice(mountpoint, opts)
	if err != nil {
		return nil, err
	}
	backing, err = filepath.Abs(backing)
	if err != nil {
		return nil, fmt.Errorf("mount limpfs on %s: %w", mountpoint, err)
	}
	lroot, err := fs.NewLoopbackRoot(backing)
	if err != nil {
		return nil, fmt.Errorf("mount limpfs on %s: %w", mountpoint, err)
	}
	root := &node{LoopbackNode: lroot.(*fs.LoopbackNode), dev: dev}
	return serve(root, backing, "limpfs", mountpoint, dev, fuse.MountOptions{})
}

// MountStore makes mountpoint an emulating limpfs (see emulate.go) whose
// files live in the store directory, which must be a store or empty (it
// is then made one). One process at a time may serve a store.
func MountStore(store, mountpoint string, opts Options) (*FS, error) {
	dev, err := newDevice(mountpoint, opts)
	if err != nil {
		return nil, err
	}
	if store, err = openStore(store, true); err != nil {
		return nil, err
	}
	lock, err := lockStore(store)
	if err != nil {
		return nil, err
	}
	if err := replayLog(store); err != nil {
		lock.Close()
		return nil, err
	}
	tree := filepath.Join(store, storeTree)
	lroot, err := fs.NewLoopbackRoot(tree)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("mount emulating limpfs on %s: %w", mountpoint, err)
	}
	sums := tardis.NewSumIndex(0)
	em := &emulator{dev: dev, store: store, report: opts.Report, sums: sums, late: newLate(sums),
		log: &metaLog{store: store}, open: map[uint64]*emuNode{}, unsyncedLit: map[uint64]bool{}}
	root := &emuNode{LoopbackNode: lroot.(*fs.LoopbackNode), em: em}
	caps := uint64(fuse.CAP_DIRECT_IO_ALLOW_MMAP)
	if opts.WriteBack {
		caps = fuse.CAP_WRITEBACK_CACHE
	} else {
		em.openFlags = fuse.FOPEN_DIRECT_IO
	}
	// No splice: reads are answered from memory (generated), and
	// go-fuse's splice of a 1 MiB read's reply needs a pipe larger than
	// the 1 MiB pipes may have, failing (and logging) on every such read.
	f, err := serve(root, store, "limpfs-emulate", mountpoint, dev, fuse.MountOptions{ExtraCapabilities: caps, DisableSplice: true})
	if err != nil {
		em.late.close()
		lock.Close()
		return nil, err
	}
	f.lock, f.late, f.log = lock, em.late, em.log
	return f, nil
}

func newDevice(mountpoint string, opts Options) (*device, error) {
	if opts.Bandwidth == 0 {
		opts.Bandwidth = DefaultBandwidth
	}
	if opts.Bandwidth < 0 || math.IsNaN(opts.Bandwidth) || math.IsInf(opts.Bandwidth, -1) || opts.Latency < 0 {
		return nil, fmt.Errorf("mount limpfs on %s: bandwidth %g B/s and latency %s must not be negative", mountpoint, opts.Bandwidth, opts.Latency)
	}
	return &device{bandwidth: opts.Bandwidth, factor: 1, latency: opts.Latency}, nil
}

// maxWrite is the largest write request limpfs asks the kernel for: 1
// MiB, the most the kernel allows by default (fs.fuse.max_pages_limit,
// 256 pages). Larger requests, with that sysctl raised, gained nothing
// measurable: 8 MiB writes through 8 MiB requests ran at 1.6 to 1.8
// GB/s, through 1 MiB requests at 1.6 to 1.9 GB/s, alternating in one
// run (docs/emulate.md); the time goes per byte, not per request.
const maxWrite = 1 << 20

// serve mounts root; extra carries the options that differ between the
// plain and the emulating mount.
func serve(root fs.InodeEmbedder, backing, name, mountpoint string, dev *device, extra fuse.MountOptions) (*FS, error) {
	if err := checkMountpoint(mountpoint); err != nil {
		return nil, err
	}
	ttl := time.Second
	server, err := fs.Mount(mountpoint, root, &fs.Options{
		EntryTimeout: &ttl,
		AttrTimeout:  &ttl,
		MountOptions: fuse.MountOptions{
			// The hosts' processes may run as any user.
			AllowOther: true,
			// No DirectMount: go-fuse then leaves /dev/fuse open across
			// exec, every process started later inherits it, and a
			// crashed gait's mounts stay alive with nobody serving them.
			// Through fusermount3 the descriptor is close-on-exec.
			FsName:            backing,
			Name:              name,
			MaxWrite:          maxWrite,
			ExtraCapabilities: extra.ExtraCapabilities,
			DisableSplice:     extra.DisableSplice,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("mount limpfs on %s: %w", mountpoint, err)
	}
	return &FS{Mountpoint: mountpoint, Backing: backing, server: server, dev: dev}, nil
}

// checkMountpoint refuses a mount point that is not a directory or has a
// file system mounted on it already.
func checkMountpoint(path string) error {
	st, err := os.Stat(path)
	if errors.Is(err, syscall.ENOTCONN) {
		return fmt.Errorf("mount point %s is in use by a FUSE file system whose server died; `gait clean` unmounts a killed gait's", path)
	}
	if err != nil {
		return fmt.Errorf("mount point %s: %w", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("mount point %s is not a directory", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("mount point %s: %w", path, err)
	}
	m, ok, err := mountAt(abs)
	if err != nil {
		return err
	}
	if ok {
		return fmt.Errorf("mount point %s is in use: %s (from %s) is mounted there; unmount it first (`gait clean` unmounts a crashed gait's)", path, m.fstype, m.source)
	}
	return nil
}

// SetFactor slows the disk to bandwidth/factor from the next operation
// on. factor must be at least 1.
func (f *FS) SetFactor(factor float64) error {
	if !(factor >= 1) || math.IsInf(factor, 0) {
		return fmt.Errorf("disk factor %g on %s: must be a number >= 1", factor, f.Mountpoint)
	}
	f.dev.setFactor(factor)
	return nil
}

// Factor returns the slowdown in force.
func (f *FS) Factor() float64 { return f.dev.getFactor() }

// Stats returns what went through the file system since it was mounted.
func (f *FS) Stats() Stats { return f.dev.stats() }

// Unmount detaches the file system and waits for its server to end.
func (f *FS) Unmount() error {
	if f.late != nil {
		f.late.close()
	}
	if err := f.releaseCopies(); err != nil {
		return fmt.Errorf("unmount %s: %w", f.Mountpoint, err)
	}
	if err := f.unmountServer(); err != nil {
		// Busy (a process still has a file open): detach lazily, as
		// the kernel then lets the server go.
		if lerr := Unmount(f.Mountpoint); lerr != nil {
			return fmt.Errorf("unmount %s: %w", f.Mountpoint, errors.Join(err, lerr))
		}
	}
	f.server.Wait()
	if f.log != nil {
		if err := f.log.close(); err != nil {
			f.lock.Close()
			return fmt.Errorf("unmount %s: %w", f.Mountpoint, err)
		}
	}
	if f.lock != nil {
		f.lock.Close()
	}
	return nil
}

// Unmount removes whatever is mounted on path, also a FUSE mount whose
// server died or hangs: it aborts the FUSE connection first, so that no
// process stays blocked on it, then detaches the mount lazily. A path
// with nothing mounted is left alone.
func Unmount(path string) error {
	if err := abort(path); err != nil {
		return err
	}
	err := syscall.Unmount(path, syscall.MNT_DETACH)
	if err == nil || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT) {
		return nil
	}
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("unmount %s: %w (needs root)", path, err)
	}
	return fmt.Errorf("unmount %s: %w", path, err)
}

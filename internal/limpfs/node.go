package limpfs

import (
	"context"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is a loopback node whose files go through the device.
type node struct {
	*fs.LoopbackNode
	dev *device
}

var (
	_ fs.NodeWrapChilder = (*node)(nil)
	_ fs.NodeOpener      = (*node)(nil)
	_ fs.NodeCreater     = (*node)(nil)
)

// WrapChild makes every node below the root a limpfs node too.
func (n *node) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	if lb, ok := ops.(*fs.LoopbackNode); ok {
		return &node{LoopbackNode: lb, dev: n.dev}
	}
	return ops
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	return n.wrap(fh), fuseFlags, errno
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	ino, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	return ino, n.wrap(fh), fuseFlags, errno
}

func (n *node) wrap(fh fs.FileHandle) fs.FileHandle {
	if lf, ok := fh.(*fs.LoopbackFile); ok {
		return &file{LoopbackFile: lf, dev: n.dev}
	}
	return fh
}

// file is a loopback file whose data operations wait for the device.
type file struct {
	*fs.LoopbackFile
	dev *device
}

// PassthroughFd refuses kernel passthrough, which would let reads and
// writes bypass the device.
func (f *file) PassthroughFd() (int, bool) { return 0, false }

func (f *file) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	began := time.Now()
	res, errno := f.LoopbackFile.Read(ctx, buf, off)
	if errno != 0 {
		return nil, errno
	}
	// Read now, to charge the bytes actually read (less than asked at
	// the end of a file); the loopback result would read lazily.
	data, status := res.Bytes(buf)
	res.Done()
	if !status.Ok() {
		return nil, syscall.Errno(status)
	}
	until := f.dev.reserve(len(data), began)
	f.dev.count(func(s *Stats) { s.Reads++; s.ReadBytes += int64(len(data)) })
	f.dev.complete(until)
	return fuse.ReadResultData(data), 0
}

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	until := f.dev.reserve(len(data), time.Now())
	n, errno := f.LoopbackFile.Write(ctx, data, off)
	f.dev.count(func(s *Stats) { s.Writes++; s.WriteBytes += int64(n) })
	f.dev.complete(until)
	return n, errno
}

func (f *file) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	size := 0
	for _, d := range data {
		size += len(d)
	}
	until := f.dev.reserve(size, time.Now())
	n, errno := f.LoopbackFile.Writev(ctx, data, off)
	f.dev.count(func(s *Stats) { s.Writes++; s.WriteBytes += int64(n) })
	f.dev.complete(until)
	return n, errno
}

func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	until := f.dev.reserve(syncBytes, time.Now())
	errno := f.LoopbackFile.Fsync(ctx, flags)
	f.dev.count(func(s *Stats) { s.Fsyncs++ })
	f.dev.complete(until)
	return errno
}

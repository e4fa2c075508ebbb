// Package emulate is `gait emulate`: serving an emulating limpfs on a
// directory for as long as a command runs (and a record of it, so that
// `gait clean` can unmount it after the command was killed), the
// synthetic stream workloads write, and a store's statistics.
package emulate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gait-dev/gait/internal/atomicfile"
	"github.com/gait-dev/gait/internal/limpfs"
	"github.com/gait-dev/gait/internal/procstat"
	"github.com/gait-dev/gait/internal/tardis"
)

// recordDir is the subdirectory of gait's state directory (/run/gait,
// testbed.DefaultStateDir) with one record per serving mount.
const recordDir = "emulate"

// Mount is what `gait emulate mount` serves.
type Mount struct {
	Dir, Store string
	// Bandwidth and Latency describe the emulated disk (limpfs.Options);
	// Bandwidth 0 means no limit.
	Bandwidth float64
	Latency   time.Duration
	StateDir  string // gait's state directory: the mount is recorded in its emulate/
	// Report hears errors a process on the mount met only as an errno.
	Report func(error)
	// WriteBack: the kernel's write-back cache instead of direct I/O
	// (limpfs.Options.WriteBack).
	WriteBack bool
}

// record is what a serving mount leaves for `gait clean`.
type record struct {
	PID        int    `json:"pid"`
	Start      uint64 `json:"start"`
	Mountpoint string `json:"mountpoint"`
	Store      string `json:"store"`
}

// Serve mounts m, calls ready, serves until ctx is done, and unmounts.
func Serve(ctx context.Context, m Mount, ready func(*limpfs.FS)) error {
	dir, err := filepath.Abs(m.Dir)
	if err != nil {
		return fmt.Errorf("mount point %s: %w", m.Dir, err)
	}
	stateDir := filepath.Join(m.StateDir, recordDir)
	// The record first: a kill between the mount and the record would
	// leave a mount nobody knows of.
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return fmt.Errorf("record the mount: %w", err)
	}
	rec := record{PID: os.Getpid(), Start: procstat.Identify(os.Getpid()).Start, Mountpoint: dir, Store: m.Store}
	path := filepath.Join(stateDir, strconv.Itoa(rec.PID)+".json")
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("record the mount: %w", err)
	}
	if err := atomicfile.WriteBytes(path, b); err != nil {
		return fmt.Errorf("record the mount: %w", err)
	}
	defer os.Remove(path)
	bw := m.Bandwidth
	if bw == 0 {
		bw = math.Inf(1)
	}
	f, err := limpfs.MountStore(m.Store, dir, limpfs.Options{Bandwidth: bw, Latency: m.Latency, Report: m.Report, WriteBack: m.WriteBack})
	if err != nil {
		return err
	}
	if ready != nil {
		ready(f)
	}
	<-ctx.Done()
	return f.Unmount()
}

// Clean unmounts what killed `gait emulate mount` commands left mounted
// and returns their mount points. A mount whose command still runs is
// left alone.
func Clean(stateDir string) ([]string, error) {
	stateDir = filepath.Join(stateDir, recordDir)
	entries, err := os.ReadDir(stateDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("emulate mounts: %w", err)
	}
	var cleaned []string
	var errs []error
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".json" {
			continue
		}
		path := filepath.Join(stateDir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var rec record
		if err := json.Unmarshal(b, &rec); err != nil {
			errs = append(errs, fmt.Errorf("emulate mount record %s: %w", path, err))
			continue
		}
		if (procstat.Identity{PID: rec.PID, Start: rec.Start}).Alive() {
			continue
		}
		if err := limpfs.Unmount(rec.Mountpoint); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.Remove(path); err != nil {
			errs = append(errs, err)
			continue
		}
		cleaned = append(cleaned, rec.Mountpoint)
	}
	return cleaned, errors.Join(errs...)
}

// MaxWriteSize bounds Gen's writes (its buffers).
const MaxWriteSize = 1 << 30

// genChunk is how much of the stream Gen generates at a time, at least:
// small writes then cost a write each, not a hand-over between
// goroutines each.
const genChunk = 1 << 20

// Gen writes n bytes of the synthetic stream seed from offset off to w,
// in writes of writeSize bytes (1 to MaxWriteSize; the last may be
// shorter): the size of the writes a file system sees, if w is a file.
//
// A goroutine generates the stream one chunk ahead of the writes, so
// generating and writing overlap: a write to an emulating mount in direct
// I/O sleeps while the mount's server takes the bytes, and the next
// chunk is generated meanwhile instead of after it.
func Gen(w io.Writer, seed, off uint64, n int64, writeSize int) error {
	if writeSize < 1 || writeSize > MaxWriteSize {
		return fmt.Errorf("write size %d: must be from 1 byte to 1 GiB", writeSize)
	}
	chunk := min(int64(writeSize*max(1, genChunk/writeSize)), max(n, 1))
	free := make(chan []byte, 2)
	for range 2 {
		free <- make([]byte, chunk)
	}
	full := make(chan []byte)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(full)
		for pos := int64(0); pos < n; {
			var buf []byte
			select {
			case buf = <-free:
			case <-stop:
				return
			}
			c := min(n-pos, chunk)
			tardis.Generate(seed, off+uint64(pos), buf[:c])
			select {
			case full <- buf[:c]:
			case <-stop:
				return
			}
			pos += c
		}
	}()
	for buf := range full {
		for p := buf; len(p) > 0; {
			c := min(len(p), writeSize)
			if _, err := w.Write(p[:c]); err != nil {
				return fmt.Errorf("write the stream: %w", err)
			}
			p = p[c:]
		}
		free <- buf[:cap(buf)]
	}
	return nil
}

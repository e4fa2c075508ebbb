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
	_, statErr := os.Stat(m.Store)
	f, err := limpfs.MountStore(m.Store, dir, limpfs.Options{Bandwidth: bw, Latency: m.Latency, Report: m.Report, WriteBack: m.WriteBack})
	if err != nil {
		if errors.Is(statErr, fs.ErrNotExist) {
			os.RemoveAll(m.Store) // the store this failed mount made
		}
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

// MaxWriteSize bounds Gen's writes (its buffer).
const MaxWriteSize = 1 << 30

// Gen writes n bytes of the synthetic stream seed from offset off to w,
// in writes of writeSize bytes (1 to MaxWriteSize; the last may be
// shorter): the size of the writes a file system sees, if w is a file.
// (Generating the next write in a goroutine while one is written gained
// nothing measurable through an emulating mount on 2 busy cores, so it
// generates and writes in turn.)
func Gen(w io.Writer, seed, off uint64, n int64, writeSize int) error {
	if writeSize < 1 || writeSize > MaxWriteSize {
		return fmt.Errorf("write size %d: must be from 1 byte to 1 GiB", writeSize)
	}
	buf := make([]byte, min(int64(writeSize), max(n, 1)))
	for n > 0 {
		c := int(min(n, int64(len(buf))))
		tardis.Generate(seed, off, buf[:c])
		if _, err := w.Write(buf[:c]); err != nil {
			return fmt.Errorf("write the stream: %w", err)
		}
		off += uint64(c)
		n -= int64(c)
	}
	return nil
}

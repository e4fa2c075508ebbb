package replica

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestWAL stores, reads, compacts, truncates and reopens the raft log, and
// cuts off a torn tail as a power loss would leave it.
func TestWAL(t *testing.T) {
	dir := t.TempDir()
	w, err := openWAL(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	w.segBytes = 200 // a few records per segment
	store := func(from, to uint64, term uint64) {
		t.Helper()
		var logs []*raft.Log
		for i := from; i <= to; i++ {
			logs = append(logs, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry %d", i))})
		}
		if err := w.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
	}
	check := func(first, last uint64, term uint64) {
		t.Helper()
		if f, _ := w.FirstIndex(); f != first {
			t.Errorf("first index %d, want %d", f, first)
		}
		if l, _ := w.LastIndex(); l != last {
			t.Errorf("last index %d, want %d", l, last)
		}
		var l raft.Log
		if err := w.GetLog(last, &l); err != nil || l.Index != last || l.Term != term || string(l.Data) != fmt.Sprintf("entry %d", last) {
			t.Errorf("index %d: %+v, %v", last, l, err)
		}
		if err := w.GetLog(last+1, &l); err != raft.ErrLogNotFound {
			t.Errorf("past the end: %v", err)
		}
	}
	reopen := func() {
		t.Helper()
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if w, err = openWAL(dir, true); err != nil {
			t.Fatal(err)
		}
		w.segBytes = 200
	}
	store(1, 10, 1)
	store(11, 20, 1)
	check(1, 20, 1)
	if segs, _ := filepath.Glob(filepath.Join(dir, "*.wal")); len(segs) < 2 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	if err := w.DeleteRange(1, 12); err != nil { // compaction
		t.Fatal(err)
	}
	check(13, 20, 1)
	if err := w.DeleteRange(17, 20); err != nil { // a new leader's conflict
		t.Fatal(err)
	}
	store(17, 25, 2)
	check(13, 25, 2)
	if err := w.StoreLogs([]*raft.Log{{Index: 3}}); err == nil {
		t.Error("an append behind the end was taken")
	}
	reopen()
	if l, _ := w.LastIndex(); l != 25 {
		t.Fatalf("reopened: last index %d, want 25", l)
	}
	var l raft.Log
	if err := w.GetLog(17, &l); err != nil || l.Term != 2 {
		t.Errorf("reopened, index 17: %+v, %v", l, err)
	}
	// A torn tail: half of the last record reached the disk.
	segs, _ := filepath.Glob(filepath.Join(dir, "*.wal"))
	last := segs[len(segs)-1]
	fi, _ := os.Stat(last)
	w.Close()
	if err := os.Truncate(last, fi.Size()-3); err != nil {
		t.Fatal(err)
	}
	if w, err = openWAL(dir, true); err != nil {
		t.Fatal(err)
	}
	check(w.first, 24, 2)
	store(25, 30, 3)
	check(w.first, 30, 3)
	// A snapshot installed past the end: the log starts again after it.
	store(100, 101, 4)
	check(100, 101, 4)
	reopen()
	check(100, 101, 4)
	if err := w.DeleteRange(100, 101); err != nil {
		t.Fatal(err)
	}
	if f, _ := w.FirstIndex(); f != 0 {
		t.Errorf("emptied: first index %d", f)
	}
	if l, _ := w.LastIndex(); l != 0 {
		t.Errorf("emptied: last index %d", l)
	}
	w.Close()
}

// TestWALConcurrent appends, as raft's loop does, while replication reads
// the entries stored so far, the background Sync runs and compaction drops
// the prefix: every read sees a whole entry, and nothing is lost (go test
// -race checks the locking).
func TestWALConcurrent(t *testing.T) {
	w, err := openWAL(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.segBytes = 4 << 10
	const last = 600
	done := make(chan struct{})
	errs := make(chan error, 2)
	// repeat runs step until done is closed or step fails.
	repeat := func(step func() error) {
		for {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			if err := step(); err != nil {
				errs <- err
				return
			}
		}
	}
	go repeat(func() error { // replication
		end, _ := w.LastIndex()
		var l raft.Log
		err := w.GetLog(end, &l)
		switch {
		case err == raft.ErrLogNotFound: // empty, or compacted meanwhile
			return nil
		case err != nil:
			return fmt.Errorf("read %d: %w", end, err)
		case string(l.Data) != fmt.Sprintf("entry %d", end):
			return fmt.Errorf("read %d: %q", end, l.Data)
		}
		return nil
	})
	go repeat(func() error { // the background fsync and compaction
		if err := w.Sync(); err != nil {
			return err
		}
		if end, _ := w.LastIndex(); end > 100 {
			return w.DeleteRange(1, end-100)
		}
		return nil
	})
	for i := uint64(1); i <= last; i += 3 {
		var logs []*raft.Log
		for j := i; j < i+3; j++ {
			logs = append(logs, &raft.Log{Index: j, Term: 1, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry %d", j))})
		}
		if err := w.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var l raft.Log
	if err := w.GetLog(last, &l); err != nil || string(l.Data) != fmt.Sprintf("entry %d", last) {
		t.Fatalf("last entry: %+v, %v", l, err)
	}
}

// TestWALPreallocated: the segment appended to is zero-filled ahead of its
// records; a segment is cut back to its records when the next begins and on
// Close; zeros a crash left are not read as records, and appends go on after
// the last record.
func TestWALPreallocated(t *testing.T) {
	dir := t.TempDir()
	w, err := openWAL(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	w.segBytes = 4 << 10
	store := func(w *walLog, from, to uint64) {
		t.Helper()
		var logs []*raft.Log
		for i := from; i <= to; i++ {
			logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry %d", i))})
		}
		if err := w.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
	}
	sizes := func() (sizes []int64) {
		segs, _ := filepath.Glob(filepath.Join(dir, "*.wal"))
		for _, s := range segs {
			fi, err := os.Stat(s)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, fi.Size())
		}
		return sizes
	}
	store(w, 1, 10)
	if got := sizes(); len(got) != 1 || got[0] != w.segBytes {
		t.Errorf("one segment of ten records: file sizes %v, want one zero-filled to %d", got, w.segBytes)
	}
	for i := uint64(11); i < 200; i += 10 { // past a segment
		store(w, i, i+9)
	}
	got := sizes()
	if len(got) < 2 {
		t.Fatalf("file sizes %v, want several segments", got)
	}
	for i, s := range w.segs[:len(w.segs)-1] {
		if got[i] != s.size {
			t.Errorf("segment %d before the last: file size %d, want its records' %d", i, got[i], s.size)
		}
	}
	// A crash: the log is opened again while the last segment still has its zeros.
	crashed, err := openWAL(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	crashed.segBytes = w.segBytes
	if l, _ := crashed.LastIndex(); l != 200 {
		t.Fatalf("after a crash: last index %d, want 200", l)
	}
	if got := sizes(); got[len(got)-1] != crashed.segs[len(crashed.segs)-1].size {
		t.Errorf("after a crash: last segment's file size %d, want it cut to its records' %d", got[len(got)-1], crashed.segs[len(crashed.segs)-1].size)
	}
	store(crashed, 201, 210)
	var l raft.Log
	if err := crashed.GetLog(210, &l); err != nil || string(l.Data) != "entry 210" {
		t.Errorf("appended after a crash: %+v, %v", l, err)
	}
	w.segs = nil // its files are the crashed log's now
	if err := crashed.Close(); err != nil {
		t.Fatal(err)
	}
	got = sizes()
	if last := crashed.segs; last != nil {
		t.Errorf("closed log keeps %d segments", len(last))
	}
	again, err := openWAL(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if l, _ := again.LastIndex(); l != 210 {
		t.Errorf("reopened: last index %d, want 210", l)
	}
	if s := again.segs[len(again.segs)-1]; got[len(got)-1] != s.size {
		t.Errorf("closed: last segment's file size %d, want its records' %d", got[len(got)-1], s.size)
	}
}

// TestWALUnsynced: a log appended to without fsync says so until Sync,
// which then has nothing to do until the next append; one fsynced on every
// append never does.
func TestWALUnsynced(t *testing.T) {
	for _, sync := range []bool{false, true} {
		w, err := openWAL(t.TempDir(), sync)
		if err != nil {
			t.Fatal(err)
		}
		if w.unsynced() {
			t.Errorf("sync %v: a new log is unsynced", sync)
		}
		if err := w.StoreLogs([]*raft.Log{{Index: 1, Term: 1, Data: []byte("x")}}); err != nil {
			t.Fatal(err)
		}
		if w.unsynced() != !sync {
			t.Errorf("sync %v: after an append, unsynced is %v", sync, w.unsynced())
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
		if w.unsynced() {
			t.Errorf("sync %v: unsynced after Sync", sync)
		}
		w.Close()
	}
}

// TestWALOnFUSE: a log on FUSE (limpfs) is written through package os and
// not preallocated: its file holds its records and nothing more.
func TestWALOnFUSE(t *testing.T) {
	dir := t.TempDir()
	w, err := openWAL(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	w.fuse = true
	for i := uint64(1); i <= 20; i += 5 {
		var logs []*raft.Log
		for j := i; j < i+5; j++ {
			logs = append(logs, &raft.Log{Index: j, Term: 1, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("entry %d", j))})
		}
		if err := w.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
	}
	s := w.segs[0]
	if fi, err := os.Stat(s.f.Name()); err != nil || fi.Size() != s.size {
		t.Errorf("file size %v (%v), want its records' %d", fi.Size(), err, s.size)
	}
	w.Close()
	if w, err = openWAL(dir, true); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var l raft.Log
	if err := w.GetLog(20, &l); err != nil || string(l.Data) != "entry 20" {
		t.Errorf("reopened, index 20: %+v, %v", l, err)
	}
}

// BenchmarkWALAppend appends one 100-byte entry per fdatasync, as a leader
// at c=1 does, to a preallocated segment (the log as it runs on a local
// disk) and to a growing one (as on FUSE): time and CPU (user + system)
// per append.
func BenchmarkWALAppend(b *testing.B) {
	for _, c := range []struct {
		name string
		fuse bool
	}{{"preallocated", false}, {"growing", true}} {
		b.Run(c.name, func(b *testing.B) {
			w, err := openWAL(b.TempDir(), true)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			w.fuse = c.fuse
			data := make([]byte, 100)
			var before, after syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			b.ResetTimer()
			for i := range b.N {
				if err := w.StoreLogs([]*raft.Log{{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: data}}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

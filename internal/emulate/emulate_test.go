package emulate

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/gaitbin"
	"github.com/gait-dev/gait/internal/limpfs"
	"github.com/gait-dev/gait/internal/tardis"
)

// sizes records the size of every write.
type sizes struct {
	bytes.Buffer
	writes []int
}

func (s *sizes) Write(p []byte) (int, error) {
	s.writes = append(s.writes, len(p))
	return s.Buffer.Write(p)
}

func TestGen(t *testing.T) {
	const n = 3<<20 + 5
	want := tardis.AppendGenerate(nil, 9, 1000, n)
	for _, ws := range []int{1 << 20, 64 << 10, 4 << 20, 1000} {
		var b sizes
		if err := Gen(&b, 9, 1000, n, ws); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Fatalf("write size %d: gen differs from the stream", ws)
		}
		for i, w := range b.writes {
			if w != min(ws, n) && i != len(b.writes)-1 {
				t.Fatalf("write size %d: write %d is %d bytes", ws, i, w)
			}
		}
	}
	fail := failAfter(2)
	if err := Gen(&fail, 9, 0, 8<<20, 64<<10); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("a writer failing at its third write: %v, want its error", err)
	}
	for _, ws := range []int{0, -1, MaxWriteSize + 1} {
		if err := Gen(io.Discard, 9, 0, 10, ws); err == nil {
			t.Errorf("write size %d: no error", ws)
		}
	}
}

// failAfter is a writer whose writes fail after n succeeded.
type failAfter int

func (f *failAfter) Write(p []byte) (int, error) {
	if *f == 0 {
		return 0, errors.New("disk full")
	}
	*f--
	return len(p), nil
}

// BenchmarkGen is the writer's own cost: Gen into /dev/null in 1 MiB
// writes, against, in the same run, a plain copy of the same bytes from a
// buffer into /dev/null's writes (memcpy, the least any writer of them
// pays).
func BenchmarkGen(b *testing.B) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer null.Close()
	const n, ws = 64 << 20, 1 << 20
	b.Run("gen", func(b *testing.B) {
		b.SetBytes(n)
		for b.Loop() {
			if err := Gen(null, 1, 0, n, ws); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("memcpy", func(b *testing.B) {
		b.SetBytes(n)
		src := tardis.AppendGenerate(nil, 1, 0, n)
		dst := make([]byte, ws)
		for b.Loop() {
			for off := 0; off < n; off += ws {
				copy(dst, src[off:off+ws])
				if _, err := null.Write(dst); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// mountCmd starts `gait emulate mount` and waits until it says it is
// mounted.
func mountCmd(t *testing.T, gait, mnt, store, state string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(gait, "emulate", "mount", mnt, "--store", store, "--state-dir", state)
	cmd.Stderr = os.Stderr
	if _, err := gaitbin.StartReady(cmd, "mounted "); err != nil {
		t.Fatalf("gait emulate mount: %v", err)
	}
	return cmd
}

// TestKillDurability kills the serving `gait emulate mount` with SIGKILL
// while a file is open, has `gait clean` unmount what it left, remounts
// the store, and reads back every byte that was fsynced or closed.
func TestKillDurability(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root to mount FUSE")
	}
	gait, cleanup, err := gaitbin.Build()
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	dir := t.TempDir()
	mnt, store, state := filepath.Join(dir, "mnt"), filepath.Join(dir, "store"), filepath.Join(dir, "state")
	os.Mkdir(mnt, 0o755)
	cmd := mountCmd(t, gait, mnt, store, state)

	syn := tardis.AppendGenerate(nil, 21, 0, 4<<20)
	foreign := bytes.Repeat([]byte("foreign bytes, not the stream. "), 4000)
	// closed: written and closed, never fsynced.
	closed := append(bytes.Clone(syn[:1<<20]), foreign...)
	if err := os.WriteFile(filepath.Join(mnt, "closed"), closed, 0o644); err != nil {
		t.Fatal(err)
	}
	// sums: checksums fsynced before the data they sum is written, so
	// recognised only after their commit (limpfs's late.go): their
	// metadata must be durable before their literal bytes are freed.
	data := tardis.AppendGenerate(nil, 23, 0, 1<<20)
	var sums []byte
	for c := 0; c < len(data); c += 512 {
		sums = binary.BigEndian.AppendUint32(sums, crc32.Checksum(data[c:c+512], crc32.MakeTable(crc32.Castagnoli)))
	}
	sf, err := os.Create(filepath.Join(mnt, "sums"))
	if err != nil {
		t.Fatal(err)
	}
	sf.Write(sums)
	if err := errors.Join(sf.Sync(), sf.Close(), os.WriteFile(filepath.Join(mnt, "data"), data, 0o644)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var st syscall.Stat_t
		syscall.Stat(filepath.Join(store, "tree", "sums"), &st)
		if st.Blocks == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the checksum file still takes %d bytes in the store 10 s after its data was written", st.Blocks*512)
		}
	}
	// synced: fsynced, then more written, still open at the kill.
	f, err := os.Create(filepath.Join(mnt, "synced"))
	if err != nil {
		t.Fatal(err)
	}
	synced := append(append(bytes.Clone(syn), foreign...), syn[:100_000]...)
	f.Write(synced)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.WriteAt(syn[:1<<20], int64(len(synced))) // not fsynced
	f.WriteAt(foreign, 5000)                   // not fsynced either

	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	f.Close() // fails: nobody serves the mount
	if _, err := os.Stat(filepath.Join(mnt, "closed")); err == nil {
		t.Fatal("the mount still serves after its server was killed")
	}
	recs, _ := filepath.Glob(filepath.Join(state, recordDir, "*.json"))
	if len(recs) != 1 {
		t.Fatalf("records of the killed mount: %v", recs)
	}
	var rec record
	b, _ := os.ReadFile(recs[0])
	if err := json.Unmarshal(b, &rec); err != nil || rec.PID != cmd.Process.Pid {
		t.Fatalf("record %s: %+v, %v", b, rec, err)
	}
	out, err := exec.Command(gait, "clean", "--state-dir", state).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "unmounted "+mnt) {
		t.Fatalf("gait clean: %v\n%s", err, out)
	}

	cmd = mountCmd(t, gait, mnt, store, state)
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("gait emulate mount after SIGTERM: %v", err)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Error("gait emulate mount did not end on SIGTERM")
		}
		if recs, _ := filepath.Glob(filepath.Join(state, recordDir, "*.json")); len(recs) != 0 {
			t.Errorf("records left after a clean unmount: %v", recs)
		}
	}()
	got, err := os.ReadFile(filepath.Join(mnt, "closed"))
	if err != nil || !bytes.Equal(got, closed) {
		t.Errorf("closed file: %d bytes (%v), want its %d bytes back", len(got), err, len(closed))
	}
	got, err = os.ReadFile(filepath.Join(mnt, "synced"))
	// The fsynced bytes are there, but for the range overwritten later,
	// which may read as either.
	if err != nil || len(got) < len(synced) {
		t.Fatalf("fsynced file: %d bytes (%v), want at least %d", len(got), err, len(synced))
	}
	for _, r := range [][2]int{{0, 5000}, {5000 + len(foreign), len(synced)}} {
		if !bytes.Equal(got[r[0]:r[1]], synced[r[0]:r[1]]) {
			t.Errorf("fsynced bytes %d to %d differ after the kill", r[0], r[1])
		}
	}
	mid := got[5000 : 5000+len(foreign)]
	if !bytes.Equal(mid, synced[5000:5000+len(foreign)]) && !bytes.Equal(mid, foreign) {
		t.Error("the range overwritten after the fsync reads as neither version")
	}
	got, err = os.ReadFile(filepath.Join(mnt, "sums"))
	if err != nil || !bytes.Equal(got, sums) {
		t.Errorf("checksum file: %d bytes (%v), want its %d bytes back", len(got), err, len(sums))
	}
	st, err := limpfs.ReadStoreStats(store)
	if err != nil || st.Files != 4 {
		t.Errorf("stats after the kill: %+v, %v", st, err)
	}
}

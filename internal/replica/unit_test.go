package replica

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"hash/fnv"
	"io"
	"log"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/resp"
	"github.com/hashicorp/raft"
	"github.com/klauspost/compress/s2"
)

func TestEntry(t *testing.T) {
	data := []byte("an adapter's command")
	e := entry{proposer: "127.0.0.1:1#ab", seq: 1 << 40, floor: 7, data: data}
	got, err := decodeEntry(e.encode())
	if err != nil || got.proposer != e.proposer || got.seq != e.seq || got.floor != 7 || !bytes.Equal(got.data, e.data) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if got, err := decodeEntry(entry{}.encode()); err != nil || len(got.data) != 0 {
		t.Errorf("no-op entry: %+v, %v", got, err)
	}
	// An entry of the format before the adapter seam (versions 4 to 6: the
	// header, then the Redis record without its kind, which was the
	// version) decodes as the record with its kind in front.
	old := []byte{4, 3, 'p', '#', 'i', 9, 2, 3, 0}
	if got, err := decodeEntry(old); err != nil || got.proposer != "p#i" || got.seq != 9 || got.floor != 2 || !bytes.Equal(got.data, []byte{4, 3, 0}) {
		t.Errorf("entry of the old format: %+v, %v", got, err)
	}
	// A large entry of repeated commands is stored compressed, a random
	// one of the same size as it is; both come back whole.
	sets := bytes.Repeat([]byte("SET k v\n"), 2000)
	random := make([]byte, len(sets))
	rand.NewChaCha8([32]byte{1}).Read(random)
	for _, p := range [][]byte{sets, random} {
		enc := entry{proposer: "p#i", seq: 8, data: p}.encode()
		compressed := enc[0] == compressedVersion
		if compressed != bytes.Equal(p, sets) || compressed && len(enc) > len(p)/3 {
			t.Errorf("entry of %d bytes encoded in %d, compressed %v", len(p), len(enc), compressed)
		}
		if got, err := decodeEntry(enc); err != nil || !bytes.Equal(got.data, p) {
			t.Errorf("large entry round trip: %d bytes, %v", len(got.data), err)
		}
	}
	// A batch's replies to another agent go compressed, a short one as it is.
	oks := bytes.Repeat([]byte("+OK\r\n"), 1000)
	if c, ok := compressReply(oks); !ok || len(c) > len(oks)/10 {
		t.Errorf("a batch's replies compressed to %d bytes of %d (%v)", len(c), len(oks), ok)
	} else if plain, err := s2.Decode(nil, c); err != nil || !bytes.Equal(plain, oks) {
		t.Errorf("a batch's replies came back as %d bytes, %v", len(plain), err)
	}
	if _, ok := compressReply(oks[:50]); ok {
		t.Error("a short reply compressed")
	}
	for _, bad := range [][]byte{nil, {9}, {1, 200}, {1, 5, 'a'}, {1, 0, 1, 9}, {3, 0, 1, 0, 2, 3}, {3, 0, 1, 0, 2, 1, 2}, {compressedVersion, 1, 2, 3}} {
		if _, err := decodeEntry(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// TestGroupEntry: a group entry comes back write for write, in order,
// compressed when large; one cut short, empty, or with bytes to spare is
// an error.
func TestGroupEntry(t *testing.T) {
	e := entry{proposer: "127.0.0.1:1#ab", floor: 3, group: []member{{seq: 3, data: []byte("SET a 1")}, {seq: 5, data: []byte("INCR b")}}}
	enc := e.encode()
	got, err := decodeEntry(enc)
	if err != nil || got.proposer != e.proposer || got.floor != 3 || len(got.group) != 2 ||
		got.group[0].seq != 3 || string(got.group[0].data) != "SET a 1" || got.group[1].seq != 5 || string(got.group[1].data) != "INCR b" {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for n := range len(enc) {
		if _, err := decodeEntry(enc[:n]); err == nil {
			t.Errorf("a group entry cut to %d of %d bytes decoded", n, len(enc))
		}
	}
	for _, bad := range [][]byte{append(enc[:len(enc):len(enc)], 0), {groupVersion, 0, 0, 0}} {
		if _, err := decodeEntry(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	big := entry{proposer: "p#i", floor: 1}
	for i := range 2000 {
		big.group = append(big.group, member{seq: uint64(i + 1), data: []byte("SET k v")})
	}
	enc = big.encode()
	if enc[0] != compressedVersion {
		t.Errorf("a group of %d bytes went uncompressed", len(enc))
	}
	if got, err := decodeEntry(enc); err != nil || len(got.group) != 2000 || got.group[1999].seq != 2000 {
		t.Errorf("large group round trip: %d writes, %v", len(got.group), err)
	}
}

// TestGroupApplied: the applier runs a group entry's writes in order, each
// reported to its proposer with its own reply and the digest chained up
// to it, skips a member committed again on its own, and moves the applied
// index past the group only with its last write.
func TestGroupApplied(t *testing.T) {
	srv := &memServer{data: map[string]string{}}
	var reports []applied
	f := newFSM(srv, func(r []applied) { reports = append(reports, r...) }, log.New(io.Discard, "", 0))
	group := entry{proposer: "p#1", floor: 1, group: []member{{seq: 1, data: []byte("INCR n")}, {seq: 2, data: []byte("INCR n")}, {seq: 3, data: []byte("SET k v")}}}
	again := entry{proposer: "p#1", seq: 2, floor: 1, data: []byte("INCR n")} // re-sent after the group committed
	logs := []*raft.Log{{Index: 1, Type: raft.LogCommand, Data: group.encode()}, {Index: 2, Type: raft.LogCommand, Data: again.encode()}}
	f.ApplyBatch(logs)
	var batch []queued
	f.qmu.Lock()
	batch, f.queue = f.queue, nil
	f.qmu.Unlock()
	if len(batch) != 4 || !batch[0].more || !batch[1].more || batch[2].more || batch[3].more {
		t.Fatalf("queued %d writes: %+v", len(batch), batch)
	}
	f.applyBatch(batch)
	if got := srv.keys(); got["n"] != "2" || got["k"] != "v" {
		t.Fatalf("server holds %v", got)
	}
	if len(reports) != 3 {
		t.Fatalf("%d replies reported, want 3", len(reports))
	}
	d := uint64(0)
	for i, want := range []string{"1", "2", "OK"} {
		d = chain(d, []byte(want))
		r := reports[i]
		if r.entry.seq != uint64(i+1) || string(r.raw) != want || r.index != 1 || r.digest != d {
			t.Errorf("report %d: seq %d, reply %q, index %d, digest %x; want seq %d, %q, index 1, %x", i, r.entry.seq, r.raw, r.index, r.digest, i+1, want, d)
		}
	}
	if f.appliedIndex() != 2 {
		t.Errorf("applied index %d, want 2", f.appliedIndex())
	}
	// Cut short after the group's first write, the index stays before it.
	g := newFSM(srv, func([]applied) {}, log.New(io.Discard, "", 0))
	g.account(batch[:3], []bool{true, true, true}, new(int), 0, []Result{{Reply: []byte("1"), Digest: []byte("1")}}, time.Now())
	if g.appliedIndex() != 0 {
		t.Errorf("a group applied in part moved the applied index to %d", g.appliedIndex())
	}
}

// FuzzEntry checks that decoding any bytes as a log entry fails cleanly,
// and that what decodes encodes back to the same entry.
func FuzzEntry(f *testing.F) {
	f.Add(entry{proposer: "a#b", seq: 3, data: []byte("x")}.encode())
	f.Fuzz(func(t *testing.T, in []byte) {
		e, err := decodeEntry(in)
		if err != nil {
			return
		}
		if got, err := decodeEntry(e.encode()); err != nil || got.proposer != e.proposer || got.seq != e.seq || !bytes.Equal(got.data, e.data) {
			t.Fatalf("%+v came back as %+v, %v", e, got, err)
		}
	})
}

func TestVote(t *testing.T) {
	w := &write{expected: map[string]bool{"a": true, "b": true, "c": true, "d": true}}
	reply := func(id string, digest uint64) {
		w.replies = append(w.replies, replyOf{id: id, inc: id + "#1", digest: digest})
	}
	reply("a", 1)
	reply("d", 2)
	if out := w.vote(); out != nil || w.agreed {
		t.Fatalf("two of four replies decided: %v", out)
	}
	reply("b", 1)
	if out := w.vote(); len(out) != 0 {
		t.Fatalf("two of four agreeing is no majority, yet %v outvoted", out)
	}
	if w.complete() {
		t.Error("c has not replied, yet complete")
	}
	reply("c", 1)
	if out := w.vote(); len(out) != 1 || out[0].id != "d" || out[0].inc != "d#1" {
		t.Fatalf("three of four agree on 1: outvoted %v, want [d]", out)
	}
	if out := w.vote(); len(out) != 0 {
		t.Errorf("d reported twice: %v", out)
	}
	if !w.complete() {
		t.Error("every expected replica replied, yet incomplete")
	}
}

func TestChainDigest(t *testing.T) {
	a := chain(chain(0, []byte("+OK\r\n")), []byte(":2\r\n"))
	b := chain(chain(0, []byte("+OK\r\n")), []byte(":2\r\n"))
	c := chain(chain(0, []byte("+OK\r\n")), []byte(":8\r\n"))
	d := chain(chain(0, []byte(":2\r\n")), []byte("+OK\r\n"))
	if a != b || a == c || a == d {
		t.Errorf("digests %x %x %x %x: want equal logs equal, any other differ", a, b, c, d)
	}
	// Replicas of older builds chain with hash/fnv: the digests must stay theirs.
	for _, prev := range []uint64{0, 1, 0x0123456789abcdef, ^uint64(0)} {
		h := fnv.New64a()
		h.Write(binary.BigEndian.AppendUint64(nil, prev))
		h.Write([]byte("*2\r\n$3\r\nfoo\r\n"))
		if got, want := chain(prev, []byte("*2\r\n$3\r\nfoo\r\n")), h.Sum64(); got != want {
			t.Errorf("chain(%x, ...) = %x, hash/fnv says %x", prev, got, want)
		}
	}
}

// TestIndexBatcher: reads that arrive while a round runs share the next one.
func TestIndexBatcher(t *testing.T) {
	release := make(chan struct{})
	var rounds atomic.Int64
	b := &indexBatcher{timeout: time.Minute, fetch: func(context.Context) (uint64, error) {
		n := rounds.Add(1)
		<-release
		return uint64(n * 10), nil
	}}
	first := make(chan uint64)
	go func() { n, _ := b.get(context.Background()); first <- n }()
	for rounds.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	var wg sync.WaitGroup
	got := make([]uint64, 20)
	for i := range got {
		wg.Go(func() { got[i], _ = b.get(context.Background()) })
	}
	for { // every read is queued behind the running round
		b.mu.Lock()
		n := len(b.next)
		b.mu.Unlock()
		if n == len(got) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if n := <-first; n != 10 {
		t.Errorf("first read index %d, want 10", n)
	}
	for i, n := range got {
		if n != 20 {
			t.Errorf("read %d: index %d, want 20 from the second round", i, n)
		}
	}
	if r := rounds.Load(); r != 2 {
		t.Errorf("%d rounds for 21 reads, want 2", r)
	}
}

// TestLagAndLimping drives the health tracker with made-up progress reports.

// TestLeaseCovers drives the read lease with explicit times: a majority of
// promises asked before the read and lasting past it, and nothing else.
func TestLeaseCovers(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	l := newLease()
	if l.covers(at(0), at(0)) {
		t.Fatal("a lease before anyone was asked")
	}
	l.voters = []string{"b", "c", "d", "e"} // five voters: this one and two more make a majority
	l.promises["b"] = promise{sent: at(0), until: at(400)}
	if l.covers(at(10), at(20)) {
		t.Error("two of five voters cover a read")
	}
	l.promises["c"] = promise{sent: at(5), until: at(300)}
	for _, c := range []struct {
		start, now int
		want       bool
	}{{10, 20, true}, {10, 299, true}, {10, 300, false}, {4, 20, false}, {10, 500, false}} {
		if got := l.covers(at(c.start), at(c.now)); got != c.want {
			t.Errorf("read from %d ms to %d ms: covered %v, want %v", c.start, c.now, got, c.want)
		}
	}
	l.revoke(at(50))
	if l.covers(at(10), at(20)) {
		t.Error("covered after revoke")
	}
	l.voters = []string{"b", "c"}
	l.promises["b"] = promise{sent: at(40), until: at(400)}
	if l.covers(at(60), at(70)) {
		t.Error("a promise asked before the block counts")
	}
	l.promises["b"] = promise{sent: at(60), until: at(400)}
	if !l.covers(at(60), at(70)) {
		t.Error("a promise asked after the block does not count")
	}
	single := newLease()
	single.voters = []string{}
	if !single.covers(at(0), at(1)) {
		t.Error("a single voter is its own majority")
	}
}

// FuzzFrame checks that reading any bytes as agents' frames fails
// cleanly, and that a frame of fields reads back as those fields.
func FuzzFrame(f *testing.F) {
	f.Add(appendFrame(nil, []byte("REPLY"), []byte("7"), nil, []byte("+OK\r\n")), []byte("x"))
	f.Fuzz(func(t *testing.T, in, field []byte) {
		r := bufio.NewReader(bytes.NewReader(in))
		for {
			if _, err := readFrame(r, 1<<16); err != nil {
				break
			}
		}
		got, err := readFrame(bufio.NewReader(bytes.NewReader(appendFrame(nil, field, nil, field))), 1<<20)
		if err != nil || len(got) != 3 || !bytes.Equal(got[0], field) || len(got[1]) != 0 || !bytes.Equal(got[2], field) {
			t.Fatalf("frame of %q read back as %q, %v", field, got, err)
		}
	})
}

// BenchmarkPeerFrame writes and reads a replica's REPLY to a proposer in
// the agents' frames, beside RESP, which carried them before: a REPLY
// goes from every replica to the proposer for every write.
func BenchmarkPeerFrame(b *testing.B) {
	fields := [][]byte{[]byte("REPLY"), []byte("123456"), []byte("0123456789abcdef"), []byte("98765"),
		[]byte("9f86d081884c7d65"), []byte("r2"), []byte("fedcba9876543210"), []byte("+OK\r\n")}
	var stream bytes.Reader
	b.Run("frame", func(b *testing.B) {
		var buf []byte
		for range 64 {
			buf = appendFrame(buf, fields...)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i += 64 {
			buf = buf[:0]
			for range 64 {
				buf = appendFrame(buf, fields...)
			}
			stream.Reset(buf)
			r := bufio.NewReaderSize(&stream, 64<<10)
			for range 64 {
				if _, err := readFrame(r, peerMaxMessage); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("resp", func(b *testing.B) {
		var buf []byte
		for i := 0; i < b.N; i += 64 {
			buf = buf[:0]
			for range 64 {
				buf = resp.AppendCommand(buf, fields...)
			}
			stream.Reset(buf)
			rd := resp.NewReader(bufio.NewReaderSize(&stream, 64<<10), peerMaxMessage, 1<<16)
			for range 64 {
				if _, err := rd.ReadCommand(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

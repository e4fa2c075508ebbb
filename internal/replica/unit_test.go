package replica

import (
	"bufio"
	"bytes"
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/rediscmd"
	"github.com/gait-dev/gait/internal/resp"
	"github.com/klauspost/compress/s2"
)

func TestEntry(t *testing.T) {
	r := redisRecord{replies: 3, payload: []byte("*1\r\n$4\r\nPING\r\n")}
	e := entry{proposer: "127.0.0.1:1#ab", seq: 1 << 40, floor: 7, data: r.encode()}
	got, err := decodeEntry(e.encode())
	if err != nil || got.proposer != e.proposer || got.seq != e.seq || got.floor != 7 || !bytes.Equal(got.data, e.data) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if rec, err := decodeRedisRecord(got.data); err != nil || rec.replies != 3 || !bytes.Equal(rec.payload, r.payload) {
		t.Fatalf("record round trip: %+v, %v", rec, err)
	}
	if got, err := decodeEntry(entry{}.encode()); err != nil || len(got.data) != 0 {
		t.Errorf("no-op entry: %+v, %v", got, err)
	}
	// An entry of the format before the adapter seam (version 4: the
	// header, then the record without its kind) decodes as the same record.
	old := append([]byte{commandRecord, 3, 'p', '#', 'i', 9, 2}, r.encode()[1:]...)
	if got, err := decodeEntry(old); err != nil || got.proposer != "p#i" || got.seq != 9 || got.floor != 2 || !bytes.Equal(got.data, r.encode()) {
		t.Errorf("entry of the old format: %+v, %v", got, err)
	}
	b := redisRecord{replies: 4, batch: true, reads: []int{1, 3}, payload: []byte("x")}
	if got, err := decodeRedisRecord(b.encode()); err != nil || !got.batch || len(got.reads) != 2 || got.reads[1] != 3 || string(got.payload) != "x" {
		t.Errorf("batch round trip: %+v, %v", got, err)
	}
	// A pipelined batch of a thousand SETs is stored compressed, a random
	// value of the same size as it is; both come back whole.
	var sets []byte
	for i := range 1000 {
		sets = resp.AppendCommand(sets, []byte("SET"), []byte("k"+strconv.Itoa(i)), []byte("v"))
	}
	random := make([]byte, len(sets))
	rand.NewChaCha8([32]byte{1}).Read(random)
	for _, p := range [][]byte{sets, random} {
		r := redisRecord{replies: 1000, batch: true, reads: []int{999}, payload: p}
		enc := entry{proposer: "p#i", seq: 8, data: r.encode()}.encode()
		compressed := enc[0] == compressedVersion
		if compressed != bytes.Equal(p, sets) || compressed && len(enc) > len(p)/3 {
			t.Errorf("entry of %d bytes encoded in %d, compressed %v", len(p), len(enc), compressed)
		}
		got, err := decodeEntry(enc)
		if err != nil {
			t.Fatalf("large batch: %v", err)
		}
		if rec, err := decodeRedisRecord(got.data); err != nil || !rec.batch || rec.replies != 1000 || rec.reads[0] != 999 || !bytes.Equal(rec.payload, p) {
			t.Errorf("large batch round trip: %d bytes, %v", len(rec.payload), err)
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
	for _, bad := range [][]byte{nil, {9}, {commandRecord, 200}, {commandRecord, 1, 1, 0}, {commandRecord, 1, 0, 2}, {batchRecord, 2, 0, 0, 3}, {batchRecord, 2, 0, 0, 1, 2}} {
		if _, err := decodeRedisRecord(bad); err == nil {
			t.Errorf("record %v: no error", bad)
		}
	}
}

// FuzzRequest feeds arbitrary bytes to the request parser and the command
// table: neither may panic, and every parsed command gets a table answer.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "PING\r\n", "*1\r\n$-1\r\n", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n",
		"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nEX\r\n$2\r\n10\r\n", "SETEX k 1 v\r\nEXPIRE k 99999999999999999999\r\n",
		"*-5\r\n", "*1\r\n$99999999999999999999\r\n", "GETEX k PX\r\n", "\x00\xff*\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		rd := resp.NewReader(bytes.NewReader(in), 1<<16, 64)
		for {
			args, err := rd.ReadCommand()
			if err != nil {
				return
			}
			if len(args) == 0 {
				t.Fatal("empty command returned")
			}
			_, sp, msg := rediscmd.Lookup(args)
			if msg == "" && sp.Rewrite != nil {
				if out := sp.Rewrite(args, time.Now()); len(out) == 0 {
					t.Fatal("rewrite returned no command")
				}
			}
		}
	})
}

// FuzzEntry checks that decoding any bytes as a log entry, and its data as
// a Redis record, fails cleanly.
func FuzzEntry(f *testing.F) {
	f.Add(entry{proposer: "a#b", seq: 3, data: redisRecord{replies: 1, payload: []byte("x")}.encode()}.encode())
	f.Fuzz(func(t *testing.T, in []byte) {
		e, err := decodeEntry(in)
		if err != nil {
			return
		}
		if r, err := decodeRedisRecord(e.data); err == nil && r.replies > len(in) {
			t.Fatalf("reply count %d from %d bytes", r.replies, len(in))
		}
	})
}

func TestVote(t *testing.T) {
	w := &write{expected: map[string]bool{"a": true, "b": true, "c": true, "d": true}, digests: map[string]uint64{}}
	w.digests["a"], w.digests["d"] = 1, 2
	if out := w.vote(); out != nil || w.agreed {
		t.Fatalf("two of four replies decided: %v", out)
	}
	w.digests["b"] = 1
	if out := w.vote(); len(out) != 0 {
		t.Fatalf("two of four agreeing is no majority, yet %v outvoted", out)
	}
	w.digests["c"] = 1
	if out := w.vote(); len(out) != 1 || out[0] != "d" {
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

// TestBatchReplies reads a batch's replies as the applier does: one-line
// replies from the buffer, others through resp.ReadReply; the client gets
// all but the frame, the digest all but the reads.
func TestBatchReplies(t *testing.T) {
	in := "+OK\r\n:5\r\n$3\r\nabc\r\n-ERR x\r\n*2\r\n:1\r\n$1\r\nz\r\n+OK\r\n"
	c := &redisConn{r: bufio.NewReader(strings.NewReader(in))}
	all, writes, err := c.batchReplies(6, 1, []int{1})
	if err != nil {
		t.Fatal(err)
	}
	if want := ":5\r\n$3\r\nabc\r\n-ERR x\r\n*2\r\n:1\r\n$1\r\nz\r\n"; string(all) != want {
		t.Errorf("client's replies %q, want %q", all, want)
	}
	if want := ":5\r\n-ERR x\r\n*2\r\n:1\r\n$1\r\nz\r\n"; string(writes) != want {
		t.Errorf("digested replies %q, want %q", writes, want)
	}
	c = &redisConn{r: bufio.NewReader(strings.NewReader("+OK\r\n:7\r\n"))}
	if raw, err := c.replies(2, 1); err != nil || string(raw) != "+OK\r\n" {
		t.Errorf("replies: %q, %v", raw, err)
	}
	c = &redisConn{r: bufio.NewReader(strings.NewReader("+OK\n"))}
	if _, err := c.reply(); err == nil {
		t.Error("a status line without CR read as a reply")
	}
}

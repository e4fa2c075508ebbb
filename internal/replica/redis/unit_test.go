package redis

import (
	"bufio"
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/rediscmd"
	"github.com/gait-dev/gait/internal/resp"
)

// TestRecord round-trips Redis's log records, among them the record of a
// log written before the adapter seam (the core hands it over with its
// kind in front, replica.TestEntry) and a pipelined batch of a thousand
// SETs, and refuses broken ones.
func TestRecord(t *testing.T) {
	r := redisRecord{replies: 3, payload: []byte("*1\r\n$4\r\nPING\r\n")}
	if rec, err := decodeRedisRecord(r.encode()); err != nil || rec.replies != 3 || !bytes.Equal(rec.payload, r.payload) {
		t.Fatalf("record round trip: %+v, %v", rec, err)
	}
	b := redisRecord{replies: 4, batch: true, reads: []int{1, 3}, payload: []byte("x")}
	if got, err := decodeRedisRecord(b.encode()); err != nil || !got.batch || len(got.reads) != 2 || got.reads[1] != 3 || string(got.payload) != "x" {
		t.Errorf("batch round trip: %+v, %v", got, err)
	}
	var sets []byte
	for i := range 1000 {
		sets = resp.AppendCommand(sets, []byte("SET"), []byte("k"+strconv.Itoa(i)), []byte("v"))
	}
	random := make([]byte, len(sets))
	rand.NewChaCha8([32]byte{1}).Read(random)
	for _, p := range [][]byte{sets, random} {
		r := redisRecord{replies: 1000, batch: true, reads: []int{999}, payload: p}
		if rec, err := decodeRedisRecord(r.encode()); err != nil || !rec.batch || rec.replies != 1000 || rec.reads[0] != 999 || !bytes.Equal(rec.payload, p) {
			t.Errorf("large batch round trip: %d bytes, %v", len(rec.payload), err)
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
				if out, _ := sp.Rewrite(args, time.Now()); len(out) == 0 {
					t.Fatal("rewrite returned no command")
				}
			}
		}
	})
}

// FuzzRecord checks that decoding any bytes as a Redis record fails
// cleanly, with no more replies than bytes.
func FuzzRecord(f *testing.F) {
	f.Add(redisRecord{replies: 1, payload: []byte("x")}.encode())
	f.Fuzz(func(t *testing.T, in []byte) {
		if r, err := decodeRedisRecord(in); err == nil && r.replies > len(in) {
			t.Fatalf("reply count %d from %d bytes", r.replies, len(in))
		}
	})
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

// TestWaitedOn: keys a blocked command of this agent waits on, until it is
// done, tell the writes that may feed it.
func TestWaitedOn(t *testing.T) {
	a := &agent{}
	done := a.blockOn([][]byte{[]byte("fa:q")})
	if !a.waitedOn([]byte("*2\r\n$5\r\nLPUSH\r\n$4\r\nfa:q\r\n")) || a.waitedOn([]byte("fa:other")) {
		t.Error("waitedOn does not tell the waited key from another")
	}
	done()
	if a.waitedOn([]byte("fa:q")) {
		t.Error("a key still waited on after its command was done")
	}
}

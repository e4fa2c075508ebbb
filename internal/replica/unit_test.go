package replica

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func parseAll(in string, limit int) ([][][]byte, error) {
	rd := newRequestReader(strings.NewReader(in), limit, 1024)
	var out [][][]byte
	for {
		args, err := rd.readCommand()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, args)
	}
}

func TestReadCommand(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", want: "GET k"},
		{in: "*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n", want: "PING"},
		{in: "PING\r\n\r\nECHO  a b\n", want: "PING|ECHO a b"},
		{in: "*1\r\n$0\r\n\r\n", want: ""},
		{in: "*2\r\n$3\r\nGET\r\n", want: "", err: "unexpected EOF"},
		{in: "*1\r\n$-1\r\n", err: "invalid bulk length"},
		{in: "*1\r\n$+1\r\nx\r\n", err: "invalid bulk length"},
		{in: "*2000\r\n", err: "invalid multibulk length"},
		{in: "*1\r\n$11\r\nhello world\r\n", err: "larger than the agent's limit of 10"},
		{in: "*2\r\n$5\r\nhello\r\n$6\r\nworld!\r\n", err: "larger than the agent's limit of 10"},
		{in: "*1\r\n$2\r\nhixx", err: "not terminated by CRLF"},
		{in: strings.Repeat("x", maxLine+1), err: "too big inline request"},
	} {
		cmds, err := parseAll(tc.in, 10)
		var words []string
		for _, c := range cmds {
			words = append(words, string(bytes.Join(c, []byte(" "))))
		}
		if got := strings.Join(words, "|"); got != tc.want {
			t.Errorf("%q: parsed %q, want %q", tc.in, got, tc.want)
		}
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
		}
	}
}

func TestReadReply(t *testing.T) {
	in := "*3\r\n$3\r\nabc\r\n:-7\r\n*2\r\n$-1\r\n+OK\r\n-ERR x\r\n"
	r := bufio.NewReader(strings.NewReader(in))
	raw, v, err := readReply(r)
	if err != nil || string(raw) != in[:len(in)-8] {
		t.Fatalf("raw %q, %v", raw, err)
	}
	if len(v.arr) != 3 || string(v.arr[0].str) != "abc" || v.arr[1].num != -7 || !v.arr[2].arr[0].null {
		t.Errorf("decoded %+v", v)
	}
	if _, v, err = readReply(r); err != nil || v.kind != '-' || string(v.str) != "ERR x" {
		t.Errorf("error reply %+v, %v", v, err)
	}
	for _, bad := range []string{"$5\r\nab\r\n", ":x\r\n", "?1\r\n", "+OK\n", strings.Repeat("*1\r\n", 40) + ":1\r\n"} {
		if _, _, err := readReply(bufio.NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func words(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

func TestRewrite(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	for in, want := range map[string]string{
		"SET k v EX 10":                "SET k v PXAT 1010000",
		"set k v px 5 NX":              "set k v PXAT 1000005 NX",
		"SET k v GET EX 1":             "SET k v GET PXAT 1001000",
		"SET k v EXAT 99":              "SET k v EXAT 99",
		"SET k v EX -1":                "SET k v EX -1",
		"SET k v EX 0":                 "SET k v EX 0",
		"SET k v EX abc":               "SET k v EX abc",
		"SET k v EX":                   "SET k v EX",
		"SET k v EX 99999999999999999": "SET k v EX 99999999999999999",
		"SETEX k 3 v":                  "SET k v PXAT 1003000",
		"PSETEX k 3 v":                 "SET k v PXAT 1000003",
		"SETEX k 0 v":                  "SETEX k 0 v",
		"EXPIRE k 2":                   "PEXPIREAT k 1002000",
		"EXPIRE k 2 NX":                "PEXPIREAT k 1002000 NX",
		"PEXPIRE k -5":                 "PEXPIREAT k 999995",
		"GETEX k EX 1":                 "GETEX k PXAT 1001000",
		"GETEX k PERSIST":              "GETEX k PERSIST",
	} {
		args := words(in)
		_, sp, msg := lookup(args)
		if msg != "" {
			t.Fatalf("%s: %s", in, msg)
		}
		got := string(bytes.Join(sp.rewrite(args, now), []byte(" ")))
		if got != want {
			t.Errorf("%s: rewritten to %q, want %q", in, got, want)
		}
	}
}

func TestLookup(t *testing.T) {
	for in, want := range map[string]string{
		"get k":             "",
		"GET":               "ERR wrong number of arguments for 'get' command",
		"SETNX a":           "ERR wrong number of arguments for 'setnx' command",
		"SPOP s":            "ERR 'SPOP' is not supported by gait replica: its result is random",
		"BLPOP l 0":         "ERR 'BLPOP' is not supported by gait replica: blocking",
		"FOO a b":           "ERR unknown command 'FOO', with args beginning with: 'a' 'b' ",
		"CONFIG SET save x": "ERR 'CONFIG SET' is not supported by gait replica",
		"config get save":   "",
		"HELLO 3":           "NOPROTO",
		"HELLO 2":           "",
	} {
		_, _, msg := lookup(words(in))
		if (want == "") != (msg == "") || !strings.HasPrefix(msg, want) {
			t.Errorf("%s: %q, want %q", in, msg, want)
		}
	}
	for name, s := range commandTable {
		if s.kind == 0 || (s.kind != kindRefused && s.arity == 0) || (s.kind == kindRefused && s.reason == "") {
			t.Errorf("%s: incomplete table row %+v", name, s)
		}
	}
}

func TestEntry(t *testing.T) {
	e := entry{proposer: "127.0.0.1:1#ab", seq: 1 << 40, replies: 3, payload: []byte("*1\r\n$4\r\nPING\r\n")}
	got, err := decodeEntry(e.encode())
	if err != nil || got.proposer != e.proposer || got.seq != e.seq || got.replies != 3 || !bytes.Equal(got.payload, e.payload) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if got, err := decodeEntry(entry{}.encode()); err != nil || got.replies != 0 {
		t.Errorf("no-op entry: %+v, %v", got, err)
	}
	for _, bad := range [][]byte{nil, {9}, {1, 200}, {1, 5, 'a'}, {1, 0, 1, 9}} {
		if _, err := decodeEntry(bad); err == nil {
			t.Errorf("%v: no error", bad)
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
		rd := newRequestReader(bytes.NewReader(in), 1<<16, 64)
		for {
			args, err := rd.readCommand()
			if err != nil {
				return
			}
			if len(args) == 0 {
				t.Fatal("empty command returned")
			}
			_, sp, msg := lookup(args)
			if msg == "" && sp.rewrite != nil {
				if out := sp.rewrite(args, time.Now()); len(out) == 0 {
					t.Fatal("rewrite returned no command")
				}
			}
		}
	})
}

// FuzzEntry checks that decoding any bytes as a log entry fails cleanly.
func FuzzEntry(f *testing.F) {
	f.Add(entry{proposer: "a#b", seq: 3, replies: 1, payload: []byte("x")}.encode())
	f.Fuzz(func(t *testing.T, in []byte) {
		e, err := decodeEntry(in)
		if err == nil && e.replies > len(in) {
			t.Fatalf("reply count %d from %d bytes", e.replies, len(in))
		}
	})
}

// TestDocListsCommands keeps docs/replica.md's command table in step with the code.
func TestDocListsCommands(t *testing.T) {
	doc, err := os.ReadFile("../../docs/replica.md")
	if err != nil {
		t.Fatal(err)
	}
	for kind, names := range SupportedCommands() {
		for _, name := range names {
			if !regexp.MustCompile(`\b` + name + `\b`).Match(doc) {
				t.Errorf("docs/replica.md does not list %s command %s", kind, name)
			}
		}
	}
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
func TestLagAndLimping(t *testing.T) {
	a := &Agent{cfg: Config{ID: "a", LimpFloor: 100 * time.Millisecond, LimpFactor: 10, StatusInterval: 10 * time.Millisecond,
		PeerInflight: 8},
		logger: log.New(io.Discard, "", 0)}
	a.m = newMetrics(a)
	h := newHealth(a)
	t0 := time.Unix(1000, 0)
	for _, id := range []string{"a", "b", "c"} {
		h.replicas[id] = &replicaState{id: id, addr: id + ":1", voter: true, seen: t0}
	}
	step := func(at time.Duration, a, b, c uint64) {
		now := t0.Add(at)
		for id, n := range map[string]uint64{"a": a, "b": b, "c": c} {
			h.replicas[id].applied, h.replicas[id].seen = n, now
		}
		h.computeLags(now, nil)
	}
	step(0, 10, 10, 10)
	step(50*time.Millisecond, 20, 20, 10)
	// The lag counts from the first report that showed a replica past c.
	if r := h.replicas["c"]; r.lag != 0 || r.limping {
		t.Fatalf("c: lag %v limping %v; want 0, not limping", r.lag, r.limping)
	}
	step(300*time.Millisecond, 30, 29, 10)
	if r := h.replicas["c"]; r.lag != 250*time.Millisecond || !r.limping {
		t.Fatalf("c: lag %v limping %v; want 250ms, limping", r.lag, r.limping)
	}
	if h.replicas["b"].limping || h.replicas["a"].limping {
		t.Error("a healthy replica marked as limping")
	}
	step(310*time.Millisecond, 30, 30, 30)
	if r := h.replicas["c"]; r.lag != 0 || r.limping {
		t.Errorf("c caught up: lag %v limping %v", r.lag, r.limping)
	}
	// Silence counts as lag.
	h.replicas["c"].seen = t0.Add(time.Second)
	h.computeLags(t0.Add(time.Second), nil)
	if r := h.replicas["b"]; !r.limping {
		t.Errorf("b silent for 1s: lag %v, not limping", r.lag)
	}
	if ts := h.readTargets(3, nil); len(ts) != 2 || !ts[0].local || ts[1].id != "c" {
		t.Errorf("read targets %+v, want a (local) then c, not the limping b", ts)
	}
}

// TestNetworkLimping drives status reports through the health tracker: the
// round trip comes from the echoed stamp, and a replica slow to reach even
// its nearest peer (its own link limps) is marked, while the peers that are
// slow only towards it are not.
func TestNetworkLimping(t *testing.T) {
	a := &Agent{cfg: Config{ID: "a", LimpFloor: 250 * time.Millisecond, LimpFactor: 10, StatusInterval: 50 * time.Millisecond},
		logger: log.New(io.Discard, "", 0), born: time.Now().Add(-time.Minute)}
	a.m = newMetrics(a)
	h := newHealth(a)
	now := time.Now()
	for _, id := range []string{"a", "b", "c"} {
		h.replicas[id] = &replicaState{id: id, addr: id + ":1", voter: true, seen: now}
	}
	// b held a's stamp for 20 ms; it was sent 120 ms ago: 100 ms in flight.
	h.onStatus(status{id: "b", stamp: 7, echo: a.stamp(now.Add(-120 * time.Millisecond)), hold: int64(20 * time.Millisecond), netSecs: 0.0004})
	if rtt := h.replicas["b"].rttSecs; rtt < 0.099 || rtt > 0.15 {
		t.Fatalf("round trip to b %.4fs, want about 0.1s", rtt)
	}
	if h.replicas["b"].echo != 7 {
		t.Errorf("b's stamp %d kept for the echo, want 7", h.replicas["b"].echo)
	}
	// a reaches b in 0.5 ms and c in 300 ms; c reports 300 ms to its nearest peer.
	h.replicas["b"].rttSecs, h.replicas["c"].rttSecs = 0.0005, 0.3
	h.replicas["c"].netSecs = 0.3
	h.replicas["a"].netSecs = h.nearestPeerLocked(now)
	if got := h.replicas["a"].netSecs; got != 0.0005 {
		t.Fatalf("a's nearest peer %.4fs, want 0.0005s (b)", got)
	}
	h.computeLags(now, nil)
	for id, want := range map[string]bool{"a": false, "b": false, "c": true} {
		if got := h.replicas[id].limping; got != want {
			t.Errorf("%s limping %v, want %v", id, got, want)
		}
	}
	h.replicas["c"].netSecs = 0.004 // under half the floor: healed
	h.computeLags(now, nil)
	if h.replicas["c"].limping {
		t.Error("c still limping after its link recovered")
	}
}

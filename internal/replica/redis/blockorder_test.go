package redis

import (
	"bufio"
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/gait-dev/gait/internal/replica"
	"github.com/gait-dev/gait/internal/resp"
)

func words(s string) [][]byte {
	var out [][]byte
	for _, w := range strings.Fields(s) {
		out = append(out, []byte(w))
	}
	return out
}

func TestAttemptEntry(t *testing.T) {
	at := &attempt{waiter: 9, cancel: true, at: 1700000000123, md: mode{proto: 3, db: 4}, args: words("BLPOP a b 0")}
	got, err := decodeRedisRecord(redisRecord{replies: 7, after: 2, block: at}.encode())
	if err != nil || got.block == nil || got.replies != 7 || got.after != 2 {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	b := got.block
	if b.waiter != 9 || !b.cancel || b.at != at.at || b.md != at.md || !slices.EqualFunc(b.args, at.args, bytes.Equal) {
		t.Errorf("attempt round trip: %+v", b)
	}
}

func TestRestrict(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		keep []int
		want string
	}{
		{"BLPOP a b c 0", []int{2}, "BLPOP b 0"},
		{"BZPOPMIN a b 1.5", []int{1, 2}, "BZPOPMIN a b 1.5"},
		{"BLMPOP 0 3 a b c LEFT COUNT 2", []int{3, 5}, "BLMPOP 0 2 a c LEFT COUNT 2"},
		{"BLMOVE s d LEFT RIGHT 0", []int{1}, "BLMOVE s d LEFT RIGHT 0"},
		{"XREAD COUNT 2 BLOCK 0 STREAMS a b c 1 2 3", []int{7}, "XREAD COUNT 2 BLOCK 0 STREAMS b 2"},
		{"XREADGROUP GROUP g c BLOCK 0 STREAMS a b > >", []int{6, 7}, "XREADGROUP GROUP g c BLOCK 0 STREAMS a b > >"},
	} {
		args := words(tc.cmd)
		if got := string(bytes.Join(restrict(string(args[0]), args, tc.keep), []byte(" "))); got != tc.want {
			t.Errorf("%s keeping %v: %s, want %s", tc.cmd, tc.keep, got, tc.want)
		}
	}
	for _, bad := range []string{"BLMPOP 0 x a LEFT", "BLMPOP 0 5 a LEFT", "BLPOP 0", "XREAD BLOCK 0 STREAMS s", "XREAD BLOCK 0 s $"} {
		args := words(bad)
		if ks := orderedKeys(string(args[0]), args); ks != nil {
			t.Errorf("%s: keys %v, want none (malformed)", bad, ks)
		}
	}
}

// TestBlockQueues: a later client does not take what an earlier one waits
// for; a client on several keys takes from those it heads; data, a cancel
// or a lapsed lease take a client out of the queues.
func TestBlockQueues(t *testing.T) {
	ws := newBlockQueues()
	now := int64(1_000_000)
	try := func(seq, waiter uint64, cmd string, cancel bool) gated {
		return ws.gate("p#i", seq, &attempt{waiter: waiter, cancel: cancel, at: now, md: defaultMode, args: words(cmd)})
	}
	ran := func(g gated) string {
		if g.skip {
			return ""
		}
		return string(g.payload)
	}
	if g := try(1, 0, "BLPOP k 0", false); !strings.Contains(ran(g), "k") {
		t.Fatalf("first client on k: %q", ran(g))
	}
	ws.settle(1, gated{id: "p#i/1", first: true}, skippedReply)
	if g := try(2, 0, "BRPOP k 0", false); !g.skip {
		t.Errorf("second client on k ran: %q", g.payload)
	}
	g := try(3, 0, "BLPOP k j 0", false)
	if p := ran(g); !strings.Contains(p, "$1\r\nj\r\n") || strings.Contains(p, "$1\r\nk\r\n") {
		t.Errorf("client on k and j, behind others on k: %q", p)
	}
	ws.settle(3, g, []byte("*1\r\n*2\r\n$1\r\nj\r\n$1\r\nx\r\n"))
	if _, waiting, _ := ws.servedTo("p#i/3"); waiting {
		t.Errorf("a client that got data is still queued")
	}
	ws.settle(4, try(4, 1, "BLPOP k 0", true), nil) // the first cancels
	hs := ws.heads()
	if len(hs) != 1 || hs[0].w.id != "p#i/2" || !strings.Contains(string(hs[0].payload), "BRPOP") {
		t.Fatalf("heads once the first cancelled: %+v", hs)
	}
	// The applier serves it after an entry that pushed to k; its next
	// attempt collects the reply.
	if !ws.serve(hs[0], []byte("*1\r\n*2\r\n$1\r\nk\r\n$1\r\ny\r\n"), 5) {
		t.Fatal("data did not serve the head")
	}
	if ok, waiting, _ := ws.servedTo("p#i/2"); !ok || waiting {
		t.Errorf("served: %v, still waiting %v", ok, waiting)
	}
	if g := try(6, 2, "BRPOP k 0", false); !g.skip || !strings.Contains(string(g.served), "y") {
		t.Errorf("collecting attempt: %+v", g)
	}
	if g := try(7, 0, "BLPOP k 0", false); g.skip {
		t.Errorf("a new client on a free key skipped")
	}
	try(8, 0, "BLPOP k 0", false)
	var snap bytes.Buffer
	snap.Write(ws.appendTo(nil))
	copied := newBlockQueues()
	if err := copied.load(bufio.NewReader(&snap)); err != nil || !bytes.Equal(copied.appendTo(nil), ws.appendTo(nil)) {
		t.Errorf("snapshot round trip: %v", err)
	}
	now += waiterLease.Milliseconds() + 1
	if g := try(9, 0, "BLPOP k 0", false); g.skip || !g.expired {
		t.Errorf("a client whose lease ran out still heads k: %+v", g)
	}
}

// An attempt whose agent never learnt its outcome may apply after the
// client's wait ended (the core re-sends it; the agent cancelled
// meanwhile). It must run nothing: run again, a BLMOVE already served
// would move a second item, as in TestRandomized's seed 19910348.
func TestLateAttemptRunsNothing(t *testing.T) {
	ws := newBlockQueues()
	now := int64(1_000_000)
	try := func(seq, waiter uint64, cancel bool) gated {
		return ws.gate("p#i", seq, &attempt{waiter: waiter, cancel: cancel, at: now, md: defaultMode,
			args: words("BLMOVE q1 q0 LEFT RIGHT 1")})
	}
	g := try(1, 0, false) // q1 is empty: the client waits
	ws.settle(1, g, skippedReply)
	hs := ws.heads()
	if len(hs) != 1 || !ws.serve(hs[0], []byte("*1\r\n$1\r\na\r\n"), 2) {
		t.Fatalf("an RPUSH to q1 did not serve the waiting BLMOVE: %+v", hs)
	}
	// Attempt 3 collects the reply but its agent's wait for it fails, so
	// the agent cancels (4), which collects it instead; then 3 applies.
	now += 100
	if g := try(4, 1, true); !g.skip || string(g.served) != "*1\r\n$1\r\na\r\n" {
		t.Fatalf("the cancel did not collect what the client was served: %+v", g)
	}
	if g := try(3, 1, false); !g.skip || !bytes.HasPrefix(execReply(g.served), []byte("-ERR")) {
		t.Errorf("a late attempt of a served client ran again: skip %v, payload %q, served %q", g.skip, g.payload, g.served)
	}
	if _, waiting, _ := ws.servedTo("p#i/1"); waiting {
		t.Errorf("a late attempt queued a client whose wait ended")
	}
	// A first attempt applied after its own cancel does not queue either.
	ws.settle(6, try(6, 5, true), nil)
	if g := try(5, 0, false); !g.skip {
		t.Errorf("a first attempt applied after its cancel ran: %q", g.payload)
	}
	// A reply nobody collected within the lease leaves the mark: the
	// agent's next attempt is told an error, not served a second item.
	ws.settle(7, try(7, 0, false), skippedReply)
	if hs := ws.heads(); len(hs) != 1 || !ws.serve(hs[0], []byte("*1\r\n$1\r\nb\r\n"), 8) {
		t.Fatal("the second client was not served")
	}
	now += waiterLease.Milliseconds() + 1
	ws.gate("other#i", 1, &attempt{at: now, md: defaultMode, args: words("BLPOP x 1")})
	if g := try(9, 7, false); !g.skip || !bytes.HasPrefix(execReply(g.served), []byte("-ERR")) {
		t.Errorf("an attempt after its reply expired: skip %v, payload %q, served %q", g.skip, g.payload, g.served)
	}
	// The marks go two leases later; a waiter whose lease ran out (its
	// agent still waits) is queued again by its next attempt.
	now += 3 * waiterLease.Milliseconds()
	ws.settle(10, try(10, 0, false), skippedReply)
	now += waiterLease.Milliseconds() + 1
	ws.gate("other#i", 2, &attempt{at: now, md: defaultMode, args: words("BLPOP x 1")})
	if g := try(11, 10, false); g.skip {
		t.Errorf("a waiter whose lease ran out was not queued again")
	}
	if n := len(ws.served); n != 0 {
		t.Errorf("%d marks left after two leases", n)
	}
}

// execReply is the one reply inside EXEC's answer.
func execReply(raw []byte) []byte {
	reply, _ := execElement(raw)
	return reply
}

// TestFirstRun: a run ends before a blocking attempt, which goes alone,
// and with an entry that names a waited key; nothing past the run is
// decoded (a backlog of 20,000 entries, whose runs are a few entries long,
// was decoded whole for each run and applied at about 800 entries a second).
func TestFirstRun(t *testing.T) {
	b := &redisBackend{blocked: newBlockQueues()}
	cmd := func(s string) replica.Committed {
		return replica.Committed{Data: redisRecord{replies: 1, payload: resp.AppendCommand(nil, words(s)...)}.encode()}
	}
	try := replica.Committed{Data: redisRecord{replies: 1, block: &attempt{at: 1, md: defaultMode, args: words("BLPOP k 0")}}.encode()}
	backlog := slices.Repeat([]replica.Committed{cmd("SET x 1")}, 20000)
	for _, tc := range []struct {
		name  string
		batch []replica.Committed
		want  int
	}{
		{"writes up to an attempt", slices.Concat([]replica.Committed{cmd("SET a 1"), cmd("SET b 1"), try}, backlog), 2},
		{"an attempt first, alone", slices.Concat([]replica.Committed{try}, backlog), 1},
		{"writes to the end", backlog[:50], 50},
	} {
		run := b.firstRun(nil, tc.batch)
		if len(run) != tc.want || cap(run) > 2*tc.want {
			t.Errorf("%s: run of %d entries (room for %d), want %d", tc.name, len(run), cap(run), tc.want)
		}
	}
	// A client waits on k: a push to k ends the run with it.
	b.blocked.settle(1, b.blocked.gate("p#i", 1, &attempt{at: 1, md: defaultMode, args: words("BLPOP k 0")}), skippedReply)
	if run := b.firstRun(nil, slices.Concat([]replica.Committed{cmd("SET a 1"), cmd("RPUSH k v")}, backlog)); len(run) != 2 {
		t.Errorf("a push to a waited key: run of %d entries, want 2", len(run))
	}
}

package linearize

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// op builds an operation from call and return times in milliseconds.
func op(client int, in Input, call, ret int64, out Output) porcupine.Operation {
	if ret != Never {
		ret *= 1e6
	}
	return porcupine.Operation{ClientId: client, Input: in, Call: call * 1e6, Output: out, Return: ret}
}

func get(k string) Input          { return Input{Kind: Get, Key: k} }
func set(k string, v int64) Input { return Input{Kind: Set, Key: k, Value: v} }
func incr(k string) Input         { return Input{Kind: Incr, Key: k} }
func val(v int64) Output          { return Output{Value: v, Exists: true} }
func ok() Output                  { return Output{} }
func missing() Output             { return Output{} }
func unknown() Output             { return Output{Unknown: true} }
func swapped() Output             { return Output{Swapped: true} }
func notSwapped() Output          { return Output{} }

func push(k string, v int64) Input { return Input{Kind: Push, Key: k, Value: v} }
func pop(k string) Input           { return Input{Kind: Pop, Key: k} }
func bpop(k string) Input          { return Input{Kind: BlockingPop, Key: k} }
func lrange(k string) Input        { return Input{Kind: Range, Key: k} }
func bmove(k, dest string) Input   { return Input{Kind: BlockingMove, Key: k, Dest: dest} }
func length(n int64) Output        { return Output{Value: n} }
func items(vs ...int64) Output     { return Output{Items: vs} }

func cas(kind Kind, k string, was, v int64) Input {
	return Input{Kind: kind, Key: k, Expect: was, Value: v}
}

func check(t *testing.T, ops []porcupine.Operation) (bool, string) {
	t.Helper()
	res, vs := Check(ops, 10*time.Second)
	if res == porcupine.Unknown {
		t.Fatal("check timed out")
	}
	var why strings.Builder
	for _, v := range vs {
		why.WriteString(v.Text)
	}
	if (res == porcupine.Illegal) != (len(vs) > 0) {
		t.Errorf("verdict %s with %d violations", Verdict(res), len(vs))
	}
	return res == porcupine.Ok, why.String()
}

func TestLinearizable(t *testing.T) {
	cases := map[string][]porcupine.Operation{
		"sequential": {
			op(0, get("a"), 0, 1, missing()),
			op(0, set("a", 5), 2, 3, ok()),
			op(0, incr("a"), 4, 5, val(6)),
			op(0, get("a"), 6, 7, val(6)),
		},
		"incr of a missing key counts from 0": {
			op(0, incr("a"), 0, 1, val(1)),
			op(1, incr("a"), 2, 3, val(2)),
		},
		// The read overlaps the write, so either answer is fine.
		"concurrent read sees the new value": {
			op(0, set("a", 1), 0, 10, ok()),
			op(1, get("a"), 1, 2, val(1)),
		},
		"concurrent read sees the old value": {
			op(0, set("a", 1), 0, 10, ok()),
			op(1, get("a"), 1, 2, missing()),
		},
		// A write of unknown outcome may take effect long after its call...
		"unknown write applied late": {
			op(0, set("a", 1), 0, 1, ok()),
			op(1, set("a", 2), 2, Never, unknown()),
			op(2, get("a"), 50, 51, val(1)),
			op(2, get("a"), 60, 61, val(2)),
		},
		// ... or never.
		"unknown write never applied": {
			op(1, incr("a"), 0, Never, unknown()),
			op(2, get("a"), 5, 6, missing()),
		},
		"keys are independent": {
			op(0, set("a", 1), 0, 1, ok()),
			op(1, set("b", 2), 0, 1, ok()),
			op(0, get("b"), 2, 3, val(2)),
			op(1, get("a"), 2, 3, val(1)),
		},
		"cas over what the key holds": {
			op(0, set("a", 1), 0, 1, ok()),
			op(0, cas(WatchCas, "a", 1, 2), 2, 3, swapped()),
			op(0, cas(ScriptCas, "a", 2, 3), 4, 5, swapped()),
			op(0, get("a"), 6, 7, val(3)),
		},
		// EXEC may abort although the key holds the value again (someone
		// touched it), a script may not.
		"watch aborts on a touched key": {
			op(0, set("a", 1), 0, 1, ok()),
			op(0, cas(WatchCas, "a", 1, 2), 2, 3, notSwapped()),
			op(0, cas(ScriptCas, "a", 2, 3), 4, 5, notSwapped()),
		},
		"queue in order": {
			op(0, push("q", 1), 0, 1, length(1)),
			op(0, push("q", 2), 2, 3, length(2)),
			op(1, pop("q"), 4, 5, val(1)),
			op(1, lrange("q"), 6, 7, items(2)),
			op(1, pop("q"), 8, 9, val(2)),
			op(1, pop("q"), 10, 11, missing()),
		},
		// A blocked pop is served by the push that overlaps it...
		"blocking pop served by a later push": {
			op(0, bpop("q"), 0, 10, val(1)),
			op(1, push("q", 1), 5, 6, length(1)),
			op(1, lrange("q"), 11, 12, items()),
		},
		// ... and times out while the list is empty, although an item came
		// and went during its wait.
		"blocking pop times out on an emptied list": {
			op(0, bpop("q"), 0, 10, missing()),
			op(1, push("q", 1), 2, 3, length(1)),
			op(2, pop("q"), 4, 5, val(1)),
		},
		// Two waiting pops may be served in either order: when each began
		// to wait is not in the history.
		"overlapping blocking pops take items in either order": {
			op(0, bpop("q"), 0, 10, val(2)),
			op(1, bpop("q"), 0, 10, val(1)),
			op(2, push("q", 1), 2, 3, length(1)),
			op(2, push("q", 2), 4, 5, length(1)),
		},
		// A pop whose client gave up may have taken the head, at any time.
		"unknown pop took an item": {
			op(0, push("q", 1), 0, 1, length(1)),
			op(0, push("q", 2), 2, 3, length(2)),
			op(1, bpop("q"), 4, Never, unknown()),
			op(2, lrange("q"), 20, 21, items(1, 2)),
			op(2, pop("q"), 22, 23, val(2)),
		},
		"unknown push counted in a length": {
			op(0, push("q", 1), 0, Never, unknown()),
			op(1, push("q", 2), 5, 6, length(2)),
		},
		// The move's push serves a pop that waits on its destination.
		"blocking move served, then serves a blocked pop": {
			op(0, bmove("q", "r"), 0, 10, val(1)),
			op(1, bpop("r"), 0, 10, val(1)),
			op(3, push("q", 1), 5, 6, length(1)),
			op(3, lrange("r"), 11, 12, items()),
			op(3, lrange("q"), 13, 14, items()),
		},
		"unknown move took an item to its destination": {
			op(0, push("q", 1), 0, 1, length(1)),
			op(1, bmove("q", "r"), 2, Never, unknown()),
			op(2, lrange("r"), 5, 6, items(1)),
		},
		"lists and registers apart": {
			op(0, push("q", 1), 0, 1, length(1)),
			op(0, set("a", 1), 0, 1, ok()),
			op(1, get("a"), 2, 3, val(1)),
			op(1, pop("q"), 2, 3, val(1)),
		},
	}
	for name, ops := range cases {
		if good, why := check(t, ops); !good {
			t.Errorf("%s: judged not linearizable:\n%s", name, why)
		}
	}
}

func TestNotLinearizable(t *testing.T) {
	cases := map[string][]porcupine.Operation{
		// The write was acknowledged before the read began.
		"stale read": {
			op(0, set("a", 1), 0, 1, ok()),
			op(0, set("a", 2), 2, 3, ok()),
			op(1, get("a"), 4, 5, val(1)),
		},
		"lost acknowledged write": {
			op(0, set("a", 7), 0, 1, ok()),
			op(1, get("a"), 2, 3, missing()),
		},
		"increment counted twice": {
			op(0, incr("a"), 0, 1, val(1)),
			op(1, incr("a"), 2, 3, val(3)),
		},
		// Once a read saw the new value, a later read may not see the old.
		"value goes back in time": {
			op(0, set("a", 1), 0, 1, ok()),
			op(0, set("a", 2), 2, 100, ok()),
			op(1, get("a"), 3, 4, val(2)),
			op(2, get("a"), 5, 6, val(1)),
		},
		"cas swapped over a value the key did not hold": {
			op(0, set("a", 1), 0, 1, ok()),
			op(0, cas(WatchCas, "a", 5, 2), 2, 3, swapped()),
		},
		"lost update: two cas over one value both swapped": {
			op(0, set("a", 1), 0, 1, ok()),
			op(1, cas(WatchCas, "a", 1, 2), 2, 5, swapped()),
			op(2, cas(WatchCas, "a", 1, 3), 2, 5, swapped()),
		},
		"script cas refused over the value it expected": {
			op(0, set("a", 1), 0, 1, ok()),
			op(0, cas(ScriptCas, "a", 1, 2), 2, 3, notSwapped()),
		},
		"unknown write cannot explain a value it never wrote": {
			op(0, set("a", 1), 0, 1, ok()),
			op(1, set("a", 2), 2, Never, unknown()),
			op(2, get("a"), 5, 6, val(3)),
		},
		"queue out of order": {
			op(0, push("a", 1), 0, 1, length(1)),
			op(0, push("a", 2), 2, 3, length(2)),
			op(1, pop("a"), 4, 5, val(2)),
		},
		"item popped twice": {
			op(0, push("a", 1), 0, 1, length(1)),
			op(1, bpop("a"), 2, 3, val(1)),
			op(2, bpop("a"), 4, 5, val(1)),
		},
		"blocking pop of an item nobody pushed": {
			op(0, bpop("a"), 0, 10, val(9)),
			op(1, push("a", 1), 2, 3, length(1)),
		},
		// Redis would have served the waiting client with the item.
		"blocking pop times out on a list that held an item all along": {
			op(0, push("a", 1), 0, 1, length(1)),
			op(1, bpop("a"), 2, 10, missing()),
			op(2, lrange("a"), 11, 12, items(1)),
		},
		"acknowledged push lost": {
			op(0, push("a", 1), 0, 1, length(1)),
			op(1, lrange("a"), 2, 3, items()),
		},
		"moved item missing from its destination": {
			op(0, push("a", 1), 0, 1, length(1)),
			op(1, bmove("a", "b"), 2, 3, val(1)),
			op(2, lrange("b"), 4, 5, items()),
		},
		"moved item still in its source": {
			op(0, push("a", 1), 0, 1, length(1)),
			op(1, bmove("a", "b"), 2, 3, val(1)),
			op(2, lrange("a"), 4, 5, items(1)),
		},
		"length counts a push twice": {
			op(0, push("a", 1), 0, 1, length(1)),
			op(0, push("a", 2), 2, 3, length(3)),
		},
	}
	for name, ops := range cases {
		good, why := check(t, ops)
		if good {
			t.Errorf("%s: judged linearizable", name)
			continue
		}
		if !strings.Contains(why, "key a:") || !strings.Contains(why, "none of these can come next") {
			t.Errorf("%s: explanation lacks the key or the candidates:\n%s", name, why)
		}
	}
}

func TestExplainNamesTheCulprit(t *testing.T) {
	_, why := check(t, []porcupine.Operation{
		op(0, set("x", 1), 0, 1, ok()),
		op(3, set("y", 9), 0, 1, ok()), // a healthy key is not mentioned
		op(0, set("x", 2), 2, 3, ok()),
		op(1, get("x"), 4, 5, val(1)),
	})
	t.Log("\n" + why)
	for _, want := range []string{"key x: 3 operations, at most 2", "SET x 2 -> OK", "leaving x = 2", "client 1", "GET x -> 1"} {
		if !strings.Contains(why, want) {
			t.Errorf("explanation lacks %q", want)
		}
	}
	if strings.Contains(why, "key y") {
		t.Error("explanation names the linearizable key y")
	}
}

func TestViolationPrefixAndPicture(t *testing.T) {
	ops := []porcupine.Operation{
		op(0, set("x", 1), 0, 1, ok()),
		op(0, set("x", 2), 2, 3, ok()),
		op(1, get("x"), 4, 5, val(1)), // stale
		op(1, set("x", 3), 10, 11, ok()),
		op(1, get("x"), 12, 13, val(3)),
	}
	_, vs := Check(ops, 10*time.Second)
	if len(vs) != 1 || vs[0].Key != "x" {
		t.Fatalf("violations %+v", vs)
	}
	if n := len(vs[0].Ops); n != 3 {
		t.Errorf("the violation keeps %d operations, want the 3 up to the stale read", n)
	}
	path := t.TempDir() + "/x.html"
	if err := Visualize(vs[0].Ops, path, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), "GET x") {
		t.Errorf("picture lacks the stale read (%d bytes, %v)", len(b), err)
	}
}

func TestHistory(t *testing.T) {
	h := NewHistory()
	c := h.Now()
	h.Done(0, set("a", 1), c, ok(), h.Now())
	h.Failed(1, get("a"), h.Now())
	h.Failed(2, incr("a"), h.Now())
	done, unk, dropped := h.Counts()
	if done != 1 || unk != 1 || dropped != 1 {
		t.Fatalf("counts %d done, %d unknown, %d dropped; want 1 each", done, unk, dropped)
	}
	ops := h.Operations()
	if len(ops) != 2 || ops[1].Return != Never || !ops[1].Output.(Output).Unknown {
		t.Fatalf("operations %+v", ops)
	}
	if ops[0].Return < ops[0].Call {
		t.Errorf("return %d before call %d", ops[0].Return, ops[0].Call)
	}
}

func TestPrune(t *testing.T) {
	v1, v2, v3 := int64(1*Spread), int64(2*Spread), int64(3*Spread)
	ops := []porcupine.Operation{
		op(0, set("a", v1), 0, 1, ok()),
		op(1, set("a", v2), 2, Never, unknown()), // seen through an INCR: stays
		op(2, set("a", v3), 2, Never, unknown()), // never seen: goes
		op(3, incr("a"), 5, 6, val(v2+1)),
		op(4, set("b", v3), 2, Never, unknown()), // v3 seen on a, not on b: goes
		op(5, get("b"), 7, 8, missing()),
	}
	got := Prune(ops)
	if len(got) != 4 {
		t.Fatalf("pruned to %d operations, want 4: %+v", len(got), got)
	}
	for _, o := range got {
		if in := o.Input.(Input); in.Kind == Set && in.Value == v3 {
			t.Errorf("kept the unobserved %s", describe(in, o.Output.(Output)))
		}
	}
	// Pruning keeps the verdict: the pruned history is still linearizable,
	// and a violation stays a violation.
	if good, why := check(t, got); !good {
		t.Errorf("pruned history judged not linearizable:\n%s", why)
	}
	bad := append(slices.Clone(ops), op(6, get("a"), 10, 11, val(v1)))
	if good, _ := check(t, Prune(bad)); good {
		t.Error("stale read after pruning judged linearizable")
	}
}

// TestPruneKeepsWhatFailsACas replays the shape of a history TestRandomized
// once judged illegal: a SET whose client gave up is re-proposed and lands
// between a read and a script CAS, which then fails; the next SET
// overwrites it before anyone reads it. Dropping that SET made a legal
// history look illegal.
func TestPruneKeepsWhatFailsACas(t *testing.T) {
	v1, v2, v3, v4 := int64(1*Spread), int64(2*Spread), int64(3*Spread), int64(4*Spread)
	ops := []porcupine.Operation{
		op(0, set("a", v1), 0, 1, ok()),
		op(1, set("a", v2), 1, Never, unknown()), // re-proposed, lands at 4
		op(0, get("a"), 2, 3, val(v1)),
		op(0, cas(ScriptCas, "a", v1, v3), 5, 6, notSwapped()),
		op(0, set("a", v4), 7, 8, ok()),
		op(0, get("a"), 9, 10, val(v4)),
	}
	if good, why := check(t, ops); !good {
		t.Fatalf("the whole history judged not linearizable:\n%s", why)
	}
	got := Prune(ops)
	if len(got) != len(ops) {
		t.Errorf("pruned to %d operations, want all %d: the unknown SET explains the failed CAS", len(got), len(ops))
	}
	if good, why := check(t, got); !good {
		t.Errorf("pruned history judged not linearizable:\n%s", why)
	}
}

// A queue filled by enqueues whose clients learn no length: a pop that
// takes an item enqueued after another still waiting is caught.
func TestEnqueueOrder(t *testing.T) {
	push := func(c int, v int64, call, ret int64) porcupine.Operation {
		return op(c, Input{Kind: Enqueue, Key: "q", Value: v}, call, ret, Output{})
	}
	pop := func(c int, v int64, call, ret int64) porcupine.Operation {
		return op(c, Input{Kind: Pop, Key: "q"}, call, ret, Output{Value: v, Exists: true})
	}
	good := []porcupine.Operation{push(0, 1, 0, 10), push(1, 2, 20, 30), pop(2, 1, 40, 50), pop(2, 2, 60, 70)}
	if res, _ := Check(good, time.Second); res != porcupine.Ok {
		t.Fatalf("FIFO pops: %v", res)
	}
	bad := []porcupine.Operation{push(0, 1, 0, 10), push(1, 2, 20, 30), pop(2, 2, 40, 50)}
	if res, _ := Check(bad, time.Second); res != porcupine.Illegal {
		t.Fatalf("a pop past the head: %v", res)
	}
}

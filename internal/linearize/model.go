// Package linearize checks histories of Redis (and ZooKeeper) operations for
// linearizability with porcupine: a model of a key-value store of integer
// registers (GET, SET, INCR, and compare-and-set by WATCH/MULTI/EXEC or by a
// script) and of queues (RPUSH, LPOP, BLPOP, BLMOVE, LRANGE), partitioned by
// key (keys a BLMOVE links go together), a concurrent history recorder, and
// a checker that explains a violation with an excerpt of the history.
// Pub/sub, which is not one object's history, has its own checker
// (pubsub.go).
package linearize

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Kind is an operation on one key.
type Kind uint8

const (
	Get Kind = iota
	Set
	Incr
	// WatchCas is WATCH k, GET k, MULTI, SET k v, EXEC: Expect is what the
	// GET read. EXEC may abort whenever (redis aborts when anyone touched
	// the key, even writing the same value); when it runs, the key held
	// Expect.
	WatchCas
	// ScriptCas is one EVAL that sets k to v when it holds Expect: it
	// swaps exactly when the key holds Expect.
	ScriptCas
	// Push is RPUSH k v: Value is v, the output's Value the list's new
	// length.
	Push
	// Pop is LPOP k: the output is the head it removed, or nothing when
	// the list was empty.
	Pop
	// BlockingPop is BLPOP k timeout, modelled as a Pop that takes effect at
	// one instant between its call and its return. Redis serves a blocked
	// client right after the command that gave its list an item, before
	// any other command, so the pop happens while the item is the head:
	// that instant is inside the call. A nil answer comes when the timeout
	// passes while the client still waits, and it still waits only if the
	// list was empty then (gait cancels the wait with a log entry, at which
	// point nobody had served it): that instant is inside the call too. What
	// the model cannot claim is the order in which blocked clients are
	// served (first blocked, first served): when a client started waiting is
	// not in its call and return times, so two overlapping pops may take
	// two items in either order. A pop whose client gave up may still be
	// served later (gait keeps a waiting client's place until its
	// connection's close reaches the log, or its agent's lease runs out),
	// so an unknown pop is a write like any other.
	BlockingPop
	// Range is LRANGE k 0 -1: the output's Items are the whole list.
	Range
	// BlockingMove is BLMOVE k Dest LEFT RIGHT timeout: a BlockingPop of k
	// that pushes what it took onto Dest in the same instant (redis then
	// serves Dest's blocked clients, as after an RPUSH).
	BlockingMove
	// Enqueue appends Value to the key's queue as Push does, but its
	// client learns no length: a ZooKeeper sequential create, whose name
	// counts the parent's children changes, not its children.
	Enqueue
)

func (k Kind) String() string {
	switch k {
	case Get:
		return "GET"
	case Set:
		return "SET"
	case Incr:
		return "INCR"
	case WatchCas:
		return "WATCH-CAS"
	case ScriptCas:
		return "EVAL-CAS"
	case Push:
		return "RPUSH"
	case Pop:
		return "LPOP"
	case BlockingPop:
		return "BLPOP"
	case Range:
		return "LRANGE"
	case BlockingMove:
		return "BLMOVE"
	case Enqueue:
		return "ENQUEUE"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Reads reports whether k changes nothing, so that a failed one can be left
// out of a history.
func (k Kind) Reads() bool { return k == Get || k == Range }

// Input is what a client asked: Value is the value a SET, a CAS or an RPUSH
// writes; a CAS writes it only over Expect (ExpectNone: over no key).
type Input struct {
	Kind       Kind
	Key        string
	Dest       string // where a BLMOVE pushes
	Value      int64
	Expect     int64
	ExpectNone bool
}

// Output is what a client was told. Exists is false when a GET found no
// key or a pop an empty list. Unknown marks a write whose outcome the
// client never learnt (an error or a timeout): it may have taken effect, at
// any time after its call, or never.
type Output struct {
	Value   int64
	Exists  bool
	Unknown bool
	Swapped bool    // a CAS wrote its value
	Items   []int64 // what LRANGE read
}

// state is one key's value, or the lists of the keys BLMOVEs link; the
// model is partitioned by key. lists holds each non-empty list as its key,
// "=", and its items, each in decimal followed by a comma, oldest first,
// then "|", in key order: a string, so that states compare with ==.
type state struct {
	Value  int64
	Exists bool
	lists  string
}

// list returns key's items as lists encodes them.
func (s state) list(key string) string {
	for rest := s.lists; rest != ""; {
		var one string
		one, rest, _ = strings.Cut(rest, "|")
		if k, items, _ := strings.Cut(one, "="); k == key {
			return items
		}
	}
	return ""
}

// withList returns s with key's items replaced.
func (s state) withList(key, items string) state {
	byKey := map[string]string{key: items}
	for rest := s.lists; rest != ""; {
		var one string
		one, rest, _ = strings.Cut(rest, "|")
		if k, its, _ := strings.Cut(one, "="); k != key {
			byKey[k] = its
		}
	}
	keys := slices.Sorted(maps.Keys(byKey))
	var b strings.Builder
	for _, k := range keys {
		if byKey[k] != "" {
			b.WriteString(k + "=" + byKey[k] + "|")
		}
	}
	s.lists = b.String()
	return s
}

// push appends v to key's list, and returns its new length too.
func (s state) push(key string, v int64) (state, int64) {
	items := string(strconv.AppendInt([]byte(s.list(key)), v, 10)) + ","
	return s.withList(key, items), int64(strings.Count(items, ","))
}

// head returns the first item of key's list and the state without it;
// false when the list is empty.
func (s state) head(key string) (int64, state, bool) {
	first, rest, ok := strings.Cut(s.list(key), ",")
	if !ok {
		return 0, s, false
	}
	v, _ := strconv.ParseInt(first, 10, 64) // push wrote it
	return v, s.withList(key, rest), true
}

func (s state) items(key string) []int64 {
	var out []int64
	for _, v := range strings.Split(strings.TrimSuffix(s.list(key), ","), ",") {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// Model is the sequential specification of one Redis database of integer
// registers: GET returns the last value set or incremented (or nothing),
// SET replaces it, INCR adds one to it (a missing key counts as 0) and
// returns the sum; a list key is a queue (RPUSH appends, LPOP and BLPOP take
// the head, BLMOVE moves it to another list's tail, LRANGE reads it whole).
// Histories are split by key, so each key (or the keys BLMOVEs link) is
// checked on its own.
var Model = porcupine.Model{
	Partition: partitionByKey,
	Init:      func() any { return state{} },
	Step:      step,
	Equal:     func(a, b any) bool { return a.(state) == b.(state) },
	DescribeOperation: func(in, out any) string {
		return describe(in.(Input), out.(Output))
	},
	DescribeState: func(s any) string {
		st := s.(state)
		if st.lists != "" {
			return strings.TrimSuffix(st.lists, "|")
		}
		if !st.Exists {
			return "(none)"
		}
		return fmt.Sprint(st.Value)
	},
}

func step(s, in, out any) (bool, any) {
	st, i, o := s.(state), in.(Input), out.(Output)
	switch i.Kind {
	case Get:
		return o.Unknown || (o.Exists == st.Exists && (!st.Exists || o.Value == st.Value)), st
	case Set:
		return true, state{Value: i.Value, Exists: true}
	case Incr:
		next := state{Value: st.Value + 1, Exists: true}
		return o.Unknown || o.Value == next.Value, next
	case WatchCas, ScriptCas:
		holds := st.Exists != i.ExpectNone && (i.ExpectNone || st.Value == i.Expect)
		next := state{Value: i.Value, Exists: true}
		switch {
		case o.Unknown:
			// It ran here, or it never did (then it goes last, where it
			// changes nothing anyone saw).
			if holds {
				return true, next
			}
			return true, st
		case o.Swapped:
			return holds, next
		}
		return i.Kind == WatchCas || !holds, st
	case Push:
		next, n := st.push(i.Key, i.Value)
		return o.Unknown || o.Value == n, next
	case Enqueue:
		next, _ := st.push(i.Key, i.Value)
		return true, next
	case Pop, BlockingPop, BlockingMove:
		v, next, ok := st.head(i.Key)
		if ok && i.Kind == BlockingMove {
			next, _ = next.push(i.Dest, v)
		}
		if o.Unknown {
			// It took the head here, or it never ran (then it goes last).
			return true, next
		}
		return o.Exists == ok && (!ok || o.Value == v), next
	case Range:
		return slices.Equal(o.Items, st.items(i.Key)), st
	}
	return false, st
}

// partitionByKey splits a history by key, keys a BLMOVE links together,
// in key order (of the least key of each part).
func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	// root names each key's part: its least linked key.
	root := map[string]string{}
	var find func(k string) string
	find = func(k string) string {
		r, ok := root[k]
		if !ok || r == k {
			return k
		}
		r = find(r)
		root[k] = r
		return r
	}
	for _, op := range history {
		in := op.Input.(Input)
		if in.Dest == "" {
			continue
		}
		a, b := find(in.Key), find(in.Dest)
		root[max(a, b)] = min(a, b)
	}
	byKey := map[string][]porcupine.Operation{}
	for _, op := range history {
		k := find(op.Input.(Input).Key)
		byKey[k] = append(byKey[k], op)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][]porcupine.Operation, len(keys))
	for i, k := range keys {
		out[i] = byKey[k]
	}
	return out
}

func describe(in Input, out Output) string {
	var call string
	switch in.Kind {
	case Set, Push, Enqueue:
		call = fmt.Sprintf("%s %s %d", in.Kind, in.Key, in.Value)
	case BlockingMove:
		call = fmt.Sprintf("BLMOVE %s %s", in.Key, in.Dest)
	case WatchCas, ScriptCas:
		was := fmt.Sprint(in.Expect)
		if in.ExpectNone {
			was = "(none)"
		}
		call = fmt.Sprintf("%s %s %s->%d", in.Kind, in.Key, was, in.Value)
	default:
		call = in.Kind.String() + " " + in.Key
	}
	switch {
	case out.Unknown:
		return call + " -> ?"
	case in.Kind == Set || in.Kind == Enqueue:
		return call + " -> OK"
	case in.Kind == Push:
		return fmt.Sprintf("%s -> %d", call, out.Value)
	case in.Kind == Range:
		return fmt.Sprintf("%s -> %v", call, out.Items)
	case in.Kind == WatchCas || in.Kind == ScriptCas:
		if out.Swapped {
			return call + " -> swapped"
		}
		return call + " -> not swapped"
	case !out.Exists:
		return call + " -> (nil)"
	}
	return fmt.Sprintf("%s -> %d", call, out.Value)
}

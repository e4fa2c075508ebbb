// Package linearize checks histories of Redis operations for
// linearizability with porcupine: a model of a key-value store of integer
// registers (GET, SET, INCR, and compare-and-set by WATCH/MULTI/EXEC or by a
// script), partitioned by key, a concurrent history
// recorder, and a checker that explains a violation with an excerpt of the
// history.
package linearize

import (
	"fmt"
	"sort"

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
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Input is what a client asked: Value is the value a SET or a CAS writes;
// a CAS writes it only over Expect (ExpectNone: over no key).
type Input struct {
	Kind       Kind
	Key        string
	Value      int64
	Expect     int64
	ExpectNone bool
}

// Output is what a client was told. Exists is false when a GET found no
// key. Unknown marks a write whose outcome the client never learnt (an
// error or a timeout): it may have taken effect, at any time after its
// call, or never.
type Output struct {
	Value   int64
	Exists  bool
	Unknown bool
	Swapped bool // a CAS wrote its value
}

// state is one key's value; the model is partitioned by key.
type state struct {
	Value  int64
	Exists bool
}

// Model is the sequential specification of one Redis database of integer
// registers: GET returns the last value set or incremented (or nothing),
// SET replaces it, INCR adds one to it (a missing key counts as 0) and
// returns the sum. Histories are split by key, so each key is checked on
// its own.
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
	}
	return false, st
}

// partitionByKey splits a history by key, in key order.
func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range history {
		k := op.Input.(Input).Key
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
	case Set:
		call = fmt.Sprintf("SET %s %d", in.Key, in.Value)
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
	case in.Kind == Set:
		return call + " -> OK"
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

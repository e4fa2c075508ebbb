package linearize

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Never is the return time of an operation whose outcome is unknown: it
// may take effect at any point after its call.
const Never = math.MaxInt64

// History records the operations of concurrent clients, with call and
// return times in nanoseconds on one monotonic clock.
type History struct {
	start time.Time

	mu      sync.Mutex
	ops     []porcupine.Operation
	unknown int
	dropped int
}

// NewHistory starts a history whose clock starts now.
func NewHistory() *History { return &History{start: time.Now()} }

// Now is the history's clock: take it just before sending a request and
// just after its answer.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// Done records an operation the client saw complete.
func (h *History) Done(client int, in Input, call int64, out Output, ret int64) {
	h.add(porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// Failed records an operation whose outcome the client did not learn. A
// read changes nothing, so it is left out; a write may have happened at
// any time from its call on, so it stays in, with an unknown output and
// no return. A client should not reuse its id after a failure: its next
// operation would overlap this one, which never returns.
func (h *History) Failed(client int, in Input, call int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if in.Kind.Reads() {
		h.dropped++
		return
	}
	h.unknown++
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call,
		Output: Output{Unknown: true}, Return: Never})
}

func (h *History) add(op porcupine.Operation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
}

// Operations returns a copy of the recorded operations.
func (h *History) Operations() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ops)
}

// Counts are how many operations completed, were writes of unknown
// outcome, and were failed reads (left out).
func (h *History) Counts() (done, unknown, droppedReads int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops) - h.unknown, h.unknown, h.dropped
}

// Verdict is porcupine's answer for a history: "ok", "illegal" or
// "unknown" (the check ran out of time).
func Verdict(r porcupine.CheckResult) string {
	switch r {
	case porcupine.Ok:
		return "ok"
	case porcupine.Illegal:
		return "illegal"
	}
	return "unknown"
}

// Violation is one key's history that is not linearizable, cut after the
// first operations that cannot be placed (the shortest prefix that still
// shows the problem, when porcupine confirms it does), with an explanation.
type Violation struct {
	Key  string
	Ops  []porcupine.Operation
	Text string
}

// Check checks ops against Model within timeout. When they are not
// linearizable, it returns a Violation for each key that is not.
func Check(ops []porcupine.Operation, timeout time.Duration) (porcupine.CheckResult, []Violation) {
	res := porcupine.CheckOperationsTimeout(Model, ops, timeout)
	if res != porcupine.Illegal {
		return res, nil
	}
	var vs []Violation
	for _, part := range partitionByKey(ops) {
		if v, bad := Explain(part, timeout); bad {
			vs = append(vs, v)
		}
	}
	return res, vs
}

// Explain checks one key's operations and, when they are not
// linearizable, describes the longest order porcupine could find (its last
// few operations and the value it leaves) and the operations none of which
// could come next: each either returned something the value does not
// allow or must have come later.
func Explain(ops []porcupine.Operation, timeout time.Duration) (Violation, bool) {
	single := Model
	single.Partition = nil
	res, info := porcupine.CheckOperationsVerbose(single, ops, timeout)
	if res != porcupine.Illegal {
		return Violation{}, false
	}
	var longest []int
	for _, p := range info.PartialLinearizations() {
		for _, l := range p {
			if len(l) > len(longest) {
				longest = l
			}
		}
	}
	key := ops[0].Input.(Input).Key
	var b strings.Builder
	fmt.Fprintf(&b, "key %s: %d operations, at most %d of them can be put in a legal order\n", key, len(ops), len(longest))
	st := Model.Init()
	done := map[int]bool{}
	for _, id := range longest {
		_, st = Model.Step(st, ops[id].Input, ops[id].Output)
		done[id] = true
	}
	fmt.Fprintf(&b, "  the longest legal order ends with:\n")
	for _, id := range longest[max(0, len(longest)-5):] {
		fmt.Fprintf(&b, "    %s\n", opLine(ops[id]))
	}
	fmt.Fprintf(&b, "  leaving %s = %s; none of these can come next:\n", key, Model.DescribeState(st))
	next := nextCandidates(ops, done)
	for _, id := range next {
		fmt.Fprintf(&b, "    %s\n", opLine(ops[id]))
	}
	return Violation{Key: key, Ops: prefix(single, ops, next, timeout), Text: b.String()}, true
}

// prefix returns the operations called no later than the last finite
// return among next, if they are not linearizable either; else all ops.
func prefix(m porcupine.Model, ops []porcupine.Operation, next []int, timeout time.Duration) []porcupine.Operation {
	var cut int64
	for _, id := range next {
		if r := ops[id].Return; r != Never && r > cut {
			cut = r
		}
	}
	var short []porcupine.Operation
	for _, op := range ops {
		if op.Call <= cut {
			short = append(short, op)
		}
	}
	if porcupine.CheckOperationsTimeout(m, short, timeout) == porcupine.Illegal {
		return short
	}
	return ops
}

// Visualize writes porcupine's interactive HTML picture of ops (best one
// key's, such as a Violation's) to path.
func Visualize(ops []porcupine.Operation, path string, timeout time.Duration) error {
	_, info := porcupine.CheckOperationsVerbose(Model, ops, timeout)
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("visualize: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := porcupine.Visualize(Model, info, tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("visualize %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("visualize %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("visualize: %w", err)
	}
	return nil
}

// nextCandidates are the operations not in done that could be linearized
// next: those called before the earliest return among them.
func nextCandidates(ops []porcupine.Operation, done map[int]bool) []int {
	first := int64(Never)
	for i, op := range ops {
		if !done[i] && op.Return < first {
			first = op.Return
		}
	}
	var out []int
	for i, op := range ops {
		if !done[i] && op.Call <= first {
			out = append(out, i)
		}
	}
	slices.SortFunc(out, func(a, b int) int { return cmp.Compare(ops[a].Call, ops[b].Call) })
	return out
}

func opLine(op porcupine.Operation) string {
	ret := "never"
	if op.Return != Never {
		ret = fmt.Sprintf("%.3fms", float64(op.Return)/1e6)
	}
	return fmt.Sprintf("client %-3d [%.3fms, %s] %s", op.ClientId, float64(op.Call)/1e6, ret,
		Model.DescribeOperation(op.Input, op.Output))
}

// Spread is how far apart the values of any two SETs must be for Prune:
// a value x a client saw (from a GET or an INCR) is taken to come from
// the SET of value v when v <= x < v+Spread, which holds while a key gets
// fewer than Spread increments.
const Spread = 1 << 20

// Prune drops the SETs of unknown outcome whose value no completed GET or
// INCR could have seen, nor any CAS expected (none in [v, v+Spread)), and
// that no script CAS which failed could have met. Such a SET never changes
// what linearizability allows: placing it last, after everything, is as
// good as its never happening, and wherever else it could go, any
// operation between it and the next write on its key would have seen its
// value, except a CAS that did not swap. A WATCH-CAS may abort anyway, but
// a script CAS fails only on another value, so an unknown SET landing just
// before it is what explains its failure (a write re-proposed after its
// client gave up, then overwritten before anyone read it): such a SET
// stays whenever a failed script CAS on its key returned after it was
// called. Every open write multiplies porcupine's search, so dropping the
// rest keeps histories with many failures checkable. Prune is sound only
// when every two SETs' values are at least Spread apart.
func Prune(ops []porcupine.Operation) []porcupine.Operation {
	seen := map[string][]int64{}
	lastFailedCas := map[string]int64{} // per key, the latest return of a script CAS that did not swap
	for _, op := range ops {
		in, out := op.Input.(Input), op.Output.(Output)
		if in.Kind != Set && !out.Unknown && out.Exists {
			seen[in.Key] = append(seen[in.Key], out.Value)
		}
		if (in.Kind == WatchCas || in.Kind == ScriptCas) && !in.ExpectNone {
			seen[in.Key] = append(seen[in.Key], in.Expect) // its GET saw it
		}
		if in.Kind == ScriptCas && !out.Unknown && !out.Swapped {
			lastFailedCas[in.Key] = max(lastFailedCas[in.Key], op.Return)
		}
	}
	for _, vs := range seen {
		slices.Sort(vs)
	}
	observed := func(key string, v int64) bool {
		vs := seen[key]
		i, _ := slices.BinarySearch(vs, v)
		return i < len(vs) && vs[i] < v+Spread
	}
	mayFailCas := func(op porcupine.Operation) bool {
		last, ok := lastFailedCas[op.Input.(Input).Key]
		return ok && last > op.Call
	}
	out := make([]porcupine.Operation, 0, len(ops))
	for _, op := range ops {
		in := op.Input.(Input)
		if in.Kind == Set && op.Output.(Output).Unknown && !observed(in.Key, in.Value) && !mayFailCas(op) {
			continue
		}
		out = append(out, op)
	}
	return out
}

package replica

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/resp"
)

// Redis serves the clients blocked on a key in the order they blocked:
// the first to block gets the first element pushed. The agents of a
// cluster wait for data apart, each for its own clients, so the order has
// to live in the replicated state: a blocking attempt is a log entry of its
// own (an attempt, not a payload), and every replica keeps the same table
// of waiters, changed only as attempts apply. A client's first attempt puts
// it at the tail of the queue of each key it waits on; an attempt runs the
// command on the keys whose queue it heads only (none: it does not run at
// all), so data pushed while an earlier client waits is left for that
// client, whichever agent proposes first; an attempt that gets data (or an
// error) takes the client out of every queue, and so does a cancel (timeout,
// CLIENT UNBLOCK, a closed connection), which runs nothing.
//
// A waiter whose agent went away without cancelling would hold its keys
// forever; every attempt therefore carries its proposer's clock, and a
// waiter whose latest attempt is waiterLease older than the attempt being
// applied is dropped (its agent renews well before). The clock travels in
// the log, so every replica drops it at the same entry.
const waiterLease = 10 * time.Second

// attempt is a blocking command's log entry: the applier builds the payload
// from it (MULTI, the command on the keys its client heads, EXEC, framed for
// the client's mode).
type attempt struct {
	// waiter is the proposer's sequence number of the client's first
	// attempt (0 in that first attempt: its own); with the proposer, it
	// names the waiter.
	waiter uint64
	cancel bool
	at     int64 // proposer's clock, Unix ms
	md     mode
	args   [][]byte
}

func (at *attempt) appendTo(b []byte) []byte {
	b = binary.AppendUvarint(b, at.waiter)
	if at.cancel {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.AppendVarint(b, at.at)
	b = binary.AppendUvarint(b, uint64(at.md.proto))
	b = binary.AppendUvarint(b, uint64(at.md.db))
	b = binary.AppendUvarint(b, uint64(len(at.args)))
	for _, x := range at.args {
		b = binary.AppendUvarint(b, uint64(len(x)))
		b = append(b, x...)
	}
	return b
}

func decodeAttempt(b *[]byte) (*attempt, error) {
	at := &attempt{}
	var err error
	if at.waiter, err = uvarint(b); err != nil {
		return nil, errors.New("attempt: bad waiter")
	}
	if len(*b) == 0 || (*b)[0] > 1 {
		return nil, errors.New("attempt: bad flags")
	}
	at.cancel, *b = (*b)[0] == 1, (*b)[1:]
	v, n := binary.Varint(*b)
	if n <= 0 {
		return nil, errors.New("attempt: bad clock")
	}
	at.at, *b = v, (*b)[n:]
	proto, err1 := uvarint(b)
	db, err2 := uvarint(b)
	if err1 != nil || err2 != nil || (proto != 2 && proto != 3) || db >= databases {
		return nil, errors.New("attempt: bad mode")
	}
	at.md = mode{proto: int(proto), db: int(db)}
	n2, err := uvarint(b)
	if err != nil || n2 == 0 || n2 > uint64(len(*b)) {
		return nil, errors.New("attempt: bad argument count")
	}
	for range n2 {
		l, err := uvarint(b)
		if err != nil || l > uint64(len(*b)) {
			return nil, errors.New("attempt: bad argument")
		}
		at.args, *b = append(at.args, (*b)[:l:l]), (*b)[l:]
	}
	return at, nil
}

// payload is the attempt's commands for the args given: MULTI, them, EXEC,
// framed for the client's mode; n and after are its reply counts.
func (at *attempt) payload(args [][]byte) (payload []byte, n, after int) {
	p := resp.AppendCommand(nil, []byte("MULTI"))
	p = resp.AppendCommand(p, args...)
	p = resp.AppendCommand(p, []byte("EXEC"))
	return at.md.frame(p, 3)
}

// orderedKeys are the positions in args of the keys a blocking command
// waits on and takes from, in the order redis tries them; nil when the
// command is served unordered: XREAD gives every waiter the same entries,
// and a malformed command gets redis's error on its first attempt.
func orderedKeys(name string, args [][]byte) []int {
	var from, to int
	switch name {
	case "BLPOP", "BRPOP", "BZPOPMIN", "BZPOPMAX":
		from, to = 1, len(args)-1
	case "BLMOVE", "BRPOPLPUSH":
		from, to = 1, min(2, len(args)-1)
	case "BLMPOP", "BZMPOP":
		if len(args) < 4 {
			return nil
		}
		n, err := strconv.Atoi(string(args[2]))
		if err != nil || n <= 0 || n > len(args)-3 {
			return nil
		}
		from, to = 3, 3+n
	default:
		return nil
	}
	if to <= from {
		return nil
	}
	var ks []int
	for i := from; i < to; i++ {
		ks = append(ks, i)
	}
	return ks
}

// restrict is the command on the keys at positions keep only (a subset of
// orderedKeys, in order).
func restrict(name string, args [][]byte, keep []int) [][]byte {
	ks := orderedKeys(name, args)
	if len(keep) == len(ks) {
		return args
	}
	out := [][]byte{args[0]}
	switch name {
	case "BLMPOP", "BZMPOP":
		out = append(out, args[1], []byte(strconv.Itoa(len(keep))))
	}
	for _, i := range keep {
		out = append(out, args[i])
	}
	return append(out, args[ks[len(ks)-1]+1:]...)
}

// blockedClient is one blocked client in the table.
type blockedClient struct {
	id   string   // proposer and first sequence number
	keys []string // database and key of each key it waits on, once each
	at   int64    // clock of its latest attempt
}

// blockQueues is the replicated table of blocked clients, per key in the order
// they blocked. The applier changes it; agents read it to learn when their
// client may have data (mu guards it for them).
type blockQueues struct {
	mu    sync.Mutex
	byKey map[string][]*blockedClient
	byID  map[string]*blockedClient
	// changed is closed and replaced after every entry that may have given
	// a waiter data or made it head of a queue: anything but an attempt
	// that took nothing. lastChange is that entry's index.
	changed    chan struct{}
	lastChange uint64
}

func newBlockQueues() *blockQueues {
	return &blockQueues{byKey: map[string][]*blockedClient{}, byID: map[string]*blockedClient{}, changed: make(chan struct{})}
}

// gated is what the applier runs for an attempt: payload, unless skip
// (cancelled, or heading no queue).
type gated struct {
	payload []byte
	skip    bool
	id      string
	first   bool // the client's first attempt
	cancel  bool
	expired bool // the attempt dropped waiters whose lease ran out
	moves   bool // BLMOVE, BRPOPLPUSH: a WRONGTYPE is the destination's, and reported
}

// skippedReply is what the proposer of an attempt that ran nothing learns:
// EXEC's answer when the command found no data.
var skippedReply = []byte("*1\r\n*-1\r\n")

// gate takes an attempt of proposer's in log order and tells what to run.
func (ws *blockQueues) gate(proposer string, seq uint64, at *attempt) gated {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w := seq
	if at.waiter != 0 {
		w = at.waiter
	}
	name := strings.ToUpper(string(at.args[0]))
	g := gated{id: proposer + "/" + strconv.FormatUint(w, 10), moves: name == "BLMOVE" || name == "BRPOPLPUSH",
		first: at.waiter == 0, cancel: at.cancel}
	keys := orderedKeys(name, at.args)
	if keys == nil { // not a command the agent sends as an attempt
		g.payload, _, _ = at.payload(at.args)
		return g
	}
	db := strconv.Itoa(at.md.db) + "\x00"
	before := len(ws.byID)
	for _, i := range keys {
		ws.expire(db+string(at.args[i]), at.at)
	}
	g.expired = len(ws.byID) < before
	if at.cancel {
		ws.remove(g.id)
		g.skip = true
		return g
	}
	me := ws.byID[g.id]
	if me == nil {
		me = &blockedClient{id: g.id}
		for _, i := range keys {
			k := db + string(at.args[i])
			if !slices.Contains(me.keys, k) {
				me.keys = append(me.keys, k)
				ws.byKey[k] = append(ws.byKey[k], me)
			}
		}
		ws.byID[g.id] = me
	}
	me.at = at.at
	var keep []int
	for _, i := range keys {
		if q := ws.byKey[db+string(at.args[i])]; q[0] == me {
			keep = append(keep, i)
		}
	}
	if len(keep) == 0 {
		g.skip = true
		return g
	}
	g.payload, _, _ = at.payload(restrict(name, at.args, keep))
	return g
}

// expire drops the waiters queued on k whose latest attempt is a lease
// older than now.
func (ws *blockQueues) expire(k string, now int64) {
	for _, w := range slices.Clone(ws.byKey[k]) {
		if w.at < now-waiterLease.Milliseconds() {
			ws.remove(w.id)
		}
	}
}

// remove takes a waiter out of the table.
func (ws *blockQueues) remove(id string) {
	w := ws.byID[id]
	if w == nil {
		return
	}
	delete(ws.byID, id)
	for _, k := range w.keys {
		q := slices.DeleteFunc(ws.byKey[k], func(x *blockedClient) bool { return x == w })
		if len(q) == 0 {
			delete(ws.byKey, k)
		} else {
			ws.byKey[k] = q
		}
	}
}

// settle takes what an attempt got (EXEC's reply, nil when it was
// skipped): data or an error ends the wait, as it ends the client's
// (blockedCall.ordered decides alike). A client past its first attempt
// keeps its place on WRONGTYPE, since redis wakes a blocked client only for
// a key of its type, unless the error is the destination's (BLMOVE).
func (ws *blockQueues) settle(index uint64, g gated, raw []byte) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	took := false
	if raw != nil {
		reply, empty := execElement(raw)
		wrongType := bytes.HasPrefix(reply, []byte("-WRONGTYPE"))
		if !empty && (g.first || g.moves || !wrongType) {
			ws.remove(g.id)
			took = true
		}
	}
	if took || g.expired || g.cancel {
		ws.change(index)
	}
}

// touched notes an entry that is not an attempt: it may have pushed data.
func (ws *blockQueues) touched(index uint64) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.change(index)
}

// change wakes the agents' waiting clients; called with mu held. With no
// client in the table nobody waits for it (a client waits only once its
// attempt is in the table), and the write path does not pay for it.
func (ws *blockQueues) change(index uint64) {
	ws.lastChange = index
	if len(ws.byID) == 0 {
		return
	}
	close(ws.changed)
	ws.changed = make(chan struct{})
}

// ready tells whether the waiter should attempt again after its attempt at
// index: something changed since and it heads a queue, or it is no longer
// in the table (a lease ran out). Otherwise changed is closed at the next
// change.
func (ws *blockQueues) ready(id string, index uint64) (ok bool, changed <-chan struct{}) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w := ws.byID[id]
	if w == nil {
		return true, ws.changed
	}
	if ws.lastChange <= index {
		return false, ws.changed
	}
	for _, k := range w.keys {
		if ws.byKey[k][0] == w {
			return true, ws.changed
		}
	}
	return false, ws.changed
}

// appendTo encodes the table for a snapshot, in a fixed order: the waiters
// by name, each with its keys, then each key's queue.
func (ws *blockQueues) appendTo(b []byte) []byte {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	appendStr := func(b []byte, s string) []byte {
		return append(binary.AppendUvarint(b, uint64(len(s))), s...)
	}
	ids := slices.Sorted(maps.Keys(ws.byID))
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		w := ws.byID[id]
		b = binary.AppendVarint(appendStr(b, id), w.at)
		b = binary.AppendUvarint(b, uint64(len(w.keys)))
		for _, k := range w.keys {
			b = appendStr(b, k)
		}
	}
	keys := slices.Sorted(maps.Keys(ws.byKey))
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = appendStr(b, k)
		b = binary.AppendUvarint(b, uint64(len(ws.byKey[k])))
		for _, w := range ws.byKey[k] {
			b = appendStr(b, w.id)
		}
	}
	return b
}

// load replaces the table by the one a snapshot holds (what appendTo wrote).
func (ws *blockQueues) load(r *bufio.Reader) error {
	readStr := func() (string, error) {
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return "", noEOF(err)
		}
		return readN(r, n)
	}
	count := func() (uint64, error) {
		n, err := binary.ReadUvarint(r)
		if err == nil && n > 1<<24 {
			err = fmt.Errorf("%d entries", n)
		}
		return n, noEOF(err)
	}
	byID, byKey := map[string]*blockedClient{}, map[string][]*blockedClient{}
	n, err := count()
	if err != nil {
		return fmt.Errorf("blocked clients: %w", err)
	}
	for range n {
		w := &blockedClient{}
		if w.id, err = readStr(); err != nil {
			return fmt.Errorf("blocked clients: %w", err)
		}
		if w.at, err = binary.ReadVarint(r); err != nil {
			return fmt.Errorf("blocked client %s: %w", w.id, noEOF(err))
		}
		nk, err := count()
		if err != nil {
			return fmt.Errorf("blocked client %s: %w", w.id, err)
		}
		for range nk {
			k, err := readStr()
			if err != nil {
				return fmt.Errorf("blocked client %s: %w", w.id, err)
			}
			w.keys = append(w.keys, k)
		}
		byID[w.id] = w
	}
	if n, err = count(); err != nil {
		return fmt.Errorf("blocked clients: %w", err)
	}
	for range n {
		k, err := readStr()
		if err != nil {
			return fmt.Errorf("blocked clients: %w", err)
		}
		nq, err := count()
		if err != nil {
			return fmt.Errorf("blocked clients of %q: %w", k, err)
		}
		for range nq {
			id, err := readStr()
			if err != nil {
				return fmt.Errorf("blocked clients of %q: %w", k, err)
			}
			if byID[id] == nil {
				return fmt.Errorf("blocked clients of %q: unknown waiter %s", k, id)
			}
			byKey[k] = append(byKey[k], byID[id])
		}
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.byID, ws.byKey = byID, byKey
	ws.change(ws.lastChange)
	return nil
}

// reset empties the table (a replica rebuilt from an empty state).
func (ws *blockQueues) reset() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.byID, ws.byKey = map[string]*blockedClient{}, map[string][]*blockedClient{}
	ws.change(ws.lastChange)
}

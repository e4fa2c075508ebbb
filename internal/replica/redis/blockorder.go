package redis

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
//
// A wait that ended (cancelled, or its reply collected or expired) leaves a
// mark under its name for two leases more: an attempt of the client's
// proposed before the end but applied after it (its agent never learnt its
// outcome, and cancelled meanwhile; the core re-sends a write until it is
// answered) then runs nothing. Without the mark the late attempt would
// queue the client anew and run its command a second time: a BLMOVE
// already served would move a second item.
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
// waits on, in the order redis tries them; nil for a malformed command
// (redis answers the error to its first attempt). XREAD takes nothing, so
// every client waiting on a stream is served in turn by the same entry.
func orderedKeys(name string, args [][]byte) []int {
	var from, to int
	switch name {
	case "BLPOP", "BRPOP", "BZPOPMIN", "BZPOPMAX":
		from, to = 1, len(args)-1
	case "BLMOVE", "BRPOPLPUSH":
		from, to = 1, min(2, len(args)-1)
	case "XREAD", "XREADGROUP":
		s := streamsAt(args)
		if s < 0 {
			return nil
		}
		from, to = s+1, s+1+(len(args)-s-1)/2
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

// streamsAt is the position of XREAD's STREAMS, whose keys and as many
// IDs end the command; -1 when they do not (redis answers the error).
func streamsAt(args [][]byte) int {
	for i := 1; i < len(args); i++ {
		if strings.EqualFold(string(args[i]), "STREAMS") {
			if n := len(args) - i - 1; n == 0 || n%2 != 0 {
				return -1
			}
			return i
		}
	}
	return -1
}

// restrict is the command on the keys at positions keep only (a subset of
// orderedKeys, in order).
func restrict(name string, args [][]byte, keep []int) [][]byte {
	ks := orderedKeys(name, args)
	if len(keep) == len(ks) {
		return args
	}
	if name == "XREAD" || name == "XREADGROUP" { // each key with its ID
		out := slices.Clone(args[:ks[0]])
		for _, i := range keep {
			out = append(out, args[i])
		}
		for _, i := range keep {
			out = append(out, args[i+len(ks)])
		}
		return out
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
	md   mode     // the command, in the client's mode
	args [][]byte
}

// served is the reply a client got while it waited, kept until its agent
// collects it with its next attempt (or the lease runs out); without a
// reply, the mark of a wait that ended.
type served struct {
	raw []byte // EXEC's reply; empty: the wait ended
	at  int64  // the client's latest attempt
}

// ended tells the mark of an ended wait from a reply.
func (sv served) ended() bool { return len(sv.raw) == 0 }

// endedReply is what an attempt of a wait that ended gets: an error, since
// what the client was served, if anything, is no longer known.
var endedReply = []byte("*1\r\n-ERR gait replica: this blocked command's wait already ended\r\n")

// blockQueues is the replicated table of blocked clients, per key in the
// order they blocked. The applier changes it; agents read it to learn that
// their client was served or may be (mu guards it for them).
type blockQueues struct {
	mu     sync.Mutex
	byKey  map[string][]*blockedClient
	byID   map[string]*blockedClient
	served map[string]served
	// changed is closed and replaced after every entry that may have given
	// a waiter data or made it head of a queue: anything but an attempt
	// that took nothing. lastChange is that entry's index.
	changed    chan struct{}
	lastChange uint64
}

func newBlockQueues() *blockQueues {
	return &blockQueues{byKey: map[string][]*blockedClient{}, byID: map[string]*blockedClient{}, served: map[string]served{},
		changed: make(chan struct{})}
}

// gated is what the applier runs for an attempt: payload, unless skip
// (cancelled, collecting what the client was served, or heading no queue).
type gated struct {
	payload []byte
	skip    bool
	served  []byte // the reply the client was served meanwhile
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
	before := len(ws.byID) + len(ws.served)
	ws.expire(at.at)
	g.expired = len(ws.byID)+len(ws.served) < before
	if sv, ok := ws.served[g.id]; ok {
		ws.served[g.id] = served{at: max(sv.at, at.at)} // collected now, or ended before
		g.skip, g.served = true, sv.raw
		if sv.ended() {
			g.served = endedReply
		}
		return g
	}
	keys := orderedKeys(name, at.args)
	if keys == nil { // not a command the agent sends as an attempt
		g.payload, _, _ = at.payload(at.args)
		return g
	}
	if at.cancel {
		ws.remove(g.id)
		ws.served[g.id] = served{at: at.at}
		g.skip = true
		return g
	}
	db := strconv.Itoa(at.md.db) + "\x00"
	me := ws.byID[g.id]
	if me == nil {
		me = &blockedClient{id: g.id, md: at.md, args: at.args}
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
	if g.payload, _, _ = ws.headPayload(me); g.payload == nil {
		g.skip = true
	}
	return g
}

// headPayload is w's command on the keys whose queue it heads (nil: none),
// and its reply counts; called with mu held.
func (ws *blockQueues) headPayload(w *blockedClient) (payload []byte, n, after int) {
	name := strings.ToUpper(string(w.args[0]))
	db := strconv.Itoa(w.md.db) + "\x00"
	var keep []int
	for _, i := range orderedKeys(name, w.args) {
		if ws.byKey[db+string(w.args[i])][0] == w {
			keep = append(keep, i)
		}
	}
	if len(keep) == 0 {
		return nil, 0, 0
	}
	return (&attempt{md: w.md}).payload(restrict(name, w.args, keep))
}

// expire drops the waiters whose latest attempt is a lease older than now,
// turns the replies nobody collected by then into marks of an ended wait,
// and drops the marks once two more leases passed; called with mu held.
func (ws *blockQueues) expire(now int64) {
	old := now - waiterLease.Milliseconds()
	for id, w := range ws.byID {
		if w.at < old {
			ws.remove(id)
		}
	}
	for id, sv := range ws.served {
		switch {
		case !sv.ended() && sv.at < old:
			ws.served[id] = served{at: now}
		case sv.ended() && sv.at < old-2*waiterLease.Milliseconds():
			delete(ws.served, id)
		}
	}
}

// remove takes a waiter out of the table; called with mu held.
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

// took tells whether an attempt's reply ends a client's wait: data, or an
// error, except that a client past its first attempt keeps waiting on
// WRONGTYPE, since redis wakes a blocked client only for a key of its type,
// unless the error is the destination's (BLMOVE). blockedCall.ordered
// decides alike.
func took(raw []byte, first, moves bool) bool {
	reply, empty := execElement(raw)
	return !empty && (first || moves || !bytes.HasPrefix(reply, []byte("-WRONGTYPE")))
}

// settle takes what an attempt got (EXEC's reply, nil when it ran
// nothing), and tells whether the waiters need serving: the attempt may
// have pushed (BLMOVE) or made another client head of a queue.
func (ws *blockQueues) settle(index uint64, g gated, raw []byte) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	done := raw != nil && took(raw, g.first, g.moves)
	if done {
		ws.remove(g.id)
	}
	if done || g.expired || g.cancel {
		ws.change(index)
		return len(ws.byID) > 0
	}
	return false
}

// touched notes an entry that is not an attempt: it may have pushed data.
func (ws *blockQueues) touched(index uint64, payload []byte) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.change(index)
}

// change wakes the agents' waiting clients; called with mu held. With no
// client in the table nobody waits for it (a client waits only once its
// attempt is in the table), and the write path does not pay for it.
func (ws *blockQueues) change(index uint64) {
	ws.lastChange = index
	if len(ws.byID) == 0 && len(ws.served) == 0 {
		return
	}
	close(ws.changed)
	ws.changed = make(chan struct{})
}

// wholeKeyspace are the commands that change keys without naming them.
var wholeKeyspace = [][]byte{[]byte("FLUSHALL"), []byte("FLUSHDB"), []byte("SWAPDB")}

// mentioned tells whether a payload names a key some client waits on (in
// any database), or changes keys without naming them: only such an entry
// can give a waiter data (or take its stream away), and the waiters are
// served right after it, before the next entry, as redis serves them
// before its next command. A key named inside a script's body counts too;
// the test errs on the side of serving.
func (ws *blockQueues) mentioned(payload []byte) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if len(ws.byKey) == 0 {
		return false
	}
	upper := bytes.ToUpper(payload)
	for _, c := range wholeKeyspace {
		if bytes.Contains(upper, c) {
			return true
		}
	}
	for k := range ws.byKey {
		_, key, _ := strings.Cut(k, "\x00")
		if bytes.Contains(payload, []byte(key)) {
			return true
		}
	}
	return false
}

// head is one client heading a queue, and its command on the keys it heads.
type head struct {
	w              *blockedClient
	payload        []byte
	replies, after int
	moves          bool
	group          bool // XREADGROUP
}

// heads are the clients heading a queue, each once, in the order of their
// keys' names.
func (ws *blockQueues) heads() []head {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	var hs []head
	for _, k := range slices.Sorted(maps.Keys(ws.byKey)) {
		w := ws.byKey[k][0]
		if slices.ContainsFunc(hs, func(h head) bool { return h.w == w }) {
			continue
		}
		h := head{w: w}
		h.payload, h.replies, h.after = ws.headPayload(w)
		name := strings.ToUpper(string(w.args[0]))
		h.moves, h.group = name == "BLMOVE" || name == "BRPOPLPUSH", name == "XREADGROUP"
		hs = append(hs, h)
	}
	return hs
}

// unblockedStream is what redis answers a client blocked in XREADGROUP
// whose stream was deleted or replaced meanwhile.
var unblockedStream = []byte("*1\r\n-UNBLOCKED the stream key no longer exists\r\n")

// serve records what a head got, if it ends its wait, for its agent to
// collect; it tells whether it did. An XREADGROUP client is served any
// error (see groupError).
func (ws *blockQueues) serve(h head, raw []byte, index uint64) bool {
	if reply, _ := execElement(raw); !(h.group && len(reply) > 0 && reply[0] == '-') && !took(raw, false, h.moves) {
		return false
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.remove(h.w.id)
	ws.served[h.w.id] = served{raw: raw, at: h.w.at}
	ws.change(index)
	return true
}

// serveWaiters runs, after the entry at index, the command of every client
// heading a queue, in one round trip, until a round serves nobody: as
// redis, right after a command that pushed, serves the clients blocked on
// what it pushed (a BLMOVE's push serves the next).
func (b *redisBackend) serveWaiters(index uint64) error {
	for {
		hs := b.blocked.heads()
		if len(hs) == 0 {
			return nil
		}
		var payload []byte
		for _, h := range hs {
			payload = append(payload, h.payload...)
		}
		if err := b.conn.send(payload); err != nil {
			return fmt.Errorf("serve blocked clients: %w", err)
		}
		raws := make([][]byte, len(hs))
		for i, h := range hs {
			raw, err := b.conn.replies(h.replies, h.after)
			if err != nil {
				return fmt.Errorf("serve blocked clients: %w", err)
			}
			raws[i] = raw
		}
		progress := false
		for i, h := range hs {
			raw := raws[i]
			if h.group {
				var err error
				if raw, err = b.groupError(h, raw); err != nil {
					return fmt.Errorf("serve blocked clients: %w", err)
				}
			}
			progress = b.blocked.serve(h, raw, index) || progress
		}
		if !progress {
			return nil
		}
	}
}

// lastIDs replaces the "$" (entries after the newest) of a client's first
// XREAD attempt by each stream's newest ID as the attempt applies, read on
// the applying connection: every replica then waits for the same entries,
// and later runs still mean "after the call began". A stream that does
// not exist yet has 0-0; a key of another type keeps "$" (XREAD answers
// WRONGTYPE). The attempt is alone in its run: the connection is idle.
func (b *redisBackend) lastIDs(at *attempt) error {
	if at.waiter != 0 || at.cancel || !strings.EqualFold(string(at.args[0]), "XREAD") {
		return nil
	}
	ks := orderedKeys("XREAD", at.args)
	var payload []byte
	var dollars []int // positions of the "$" IDs
	n, after := 0, 0
	for _, i := range ks {
		if string(at.args[i+len(ks)]) == "$" {
			var p []byte
			p, n, after = at.md.frame(resp.AppendCommand(nil, []byte("XREVRANGE"), at.args[i], []byte("+"), []byte("-"),
				[]byte("COUNT"), []byte("1")), 1)
			payload = append(payload, p...)
			dollars = append(dollars, i+len(ks))
		}
	}
	if len(dollars) == 0 {
		return nil
	}
	if err := b.conn.send(payload); err != nil {
		return fmt.Errorf("read XREAD's last IDs: %w", err)
	}
	args := slices.Clone(at.args)
	for _, i := range dollars {
		raw, err := b.conn.replies(n, after)
		if err != nil {
			return fmt.Errorf("read XREAD's last IDs: %w", err)
		}
		_, v, err := resp.ReadReply(bufio.NewReader(bytes.NewReader(raw)))
		switch {
		case err != nil || v.Kind == '-':
		case len(v.Arr) == 1 && len(v.Arr[0].Arr) > 0:
			args[i] = v.Arr[0].Arr[0].Str
		default:
			args[i] = []byte("0-0")
		}
	}
	at.args = args
	return nil
}

// groupError words an XREADGROUP client's error as redis does when the
// stream under it changed: WRONGTYPE, or NOGROUP for a stream that no
// longer exists, is "no longer exists"; NOGROUP for a stream whose group
// went (XGROUP DESTROY, a RENAME over it) stays NOGROUP.
func (b *redisBackend) groupError(h head, raw []byte) ([]byte, error) {
	reply, _ := execElement(raw)
	if bytes.HasPrefix(reply, []byte("-WRONGTYPE")) {
		return unblockedStream, nil
	}
	_, key, ok := bytes.Cut(reply, []byte("-NOGROUP No such key '"))
	key, _, ok2 := bytes.Cut(key, []byte("' or consumer group"))
	if !ok || !ok2 {
		return raw, nil
	}
	p, n, after := h.w.md.frame(resp.AppendCommand(nil, []byte("EXISTS"), key), 1)
	if err := b.conn.send(p); err != nil {
		return nil, err
	}
	exists, err := b.conn.replies(n, after)
	if err != nil {
		return nil, err
	}
	if string(exists) == ":0\r\n" {
		return unblockedStream, nil
	}
	return raw, nil
}

// servedTo tells whether the client was served while it waited, and
// whether it still is in a queue; changed is closed at the next change.
func (ws *blockQueues) servedTo(id string) (served, waiting bool, changed <-chan struct{}) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	_, served = ws.served[id]
	return served, ws.byID[id] != nil, ws.changed
}

// appendTo encodes the table for a snapshot, in a fixed order: the waiters
// by name, each with its command and keys, then each key's queue, then the
// replies not yet collected.
func (ws *blockQueues) appendTo(b []byte) []byte {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	appendStr := func(b []byte, s []byte) []byte {
		return append(binary.AppendUvarint(b, uint64(len(s))), s...)
	}
	ids := slices.Sorted(maps.Keys(ws.byID))
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		w := ws.byID[id]
		b = binary.AppendVarint(appendStr(b, []byte(id)), w.at)
		b = binary.AppendUvarint(b, uint64(w.md.proto))
		b = binary.AppendUvarint(b, uint64(w.md.db))
		b = binary.AppendUvarint(b, uint64(len(w.args)))
		for _, x := range w.args {
			b = appendStr(b, x)
		}
		b = binary.AppendUvarint(b, uint64(len(w.keys)))
		for _, k := range w.keys {
			b = appendStr(b, []byte(k))
		}
	}
	keys := slices.Sorted(maps.Keys(ws.byKey))
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = appendStr(b, []byte(k))
		b = binary.AppendUvarint(b, uint64(len(ws.byKey[k])))
		for _, w := range ws.byKey[k] {
			b = appendStr(b, []byte(w.id))
		}
	}
	ids = slices.Sorted(maps.Keys(ws.served))
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		sv := ws.served[id]
		b = binary.AppendVarint(appendStr(appendStr(b, []byte(id)), sv.raw), sv.at)
	}
	return b
}

// load replaces the table by the one a snapshot holds (what appendTo wrote).
func (ws *blockQueues) load(r *bufio.Reader) error {
	var err error
	num := func() uint64 {
		if err != nil {
			return 0
		}
		var n uint64
		n, err = binary.ReadUvarint(r)
		err = noEOF(err)
		return n
	}
	count := func() uint64 {
		n := num()
		if err == nil && n > 1<<24 {
			err = fmt.Errorf("%d entries", n)
		}
		return n
	}
	str := func() string {
		n := num()
		if err != nil {
			return ""
		}
		var s string
		s, err = readN(r, n)
		return s
	}
	clock := func() int64 {
		if err != nil {
			return 0
		}
		var v int64
		v, err = binary.ReadVarint(r)
		err = noEOF(err)
		return v
	}
	byID, byKey, srv := map[string]*blockedClient{}, map[string][]*blockedClient{}, map[string]served{}
	for n := count(); n > 0 && err == nil; n-- {
		w := &blockedClient{id: str(), at: clock()}
		w.md = mode{proto: int(num()), db: int(num())}
		for na := count(); na > 0 && err == nil; na-- {
			w.args = append(w.args, []byte(str()))
		}
		for nk := count(); nk > 0 && err == nil; nk-- {
			w.keys = append(w.keys, str())
		}
		if err == nil && len(w.args) == 0 {
			err = fmt.Errorf("blocked client %s without a command", w.id)
		}
		byID[w.id] = w
	}
	for n := count(); n > 0 && err == nil; n-- {
		k := str()
		for nq := count(); nq > 0 && err == nil; nq-- {
			id := str()
			if err == nil && byID[id] == nil {
				err = fmt.Errorf("queue of %q: unknown blocked client %s", k, id)
			}
			byKey[k] = append(byKey[k], byID[id])
		}
	}
	for n := count(); n > 0 && err == nil; n-- {
		id, raw := str(), str()
		srv[id] = served{raw: []byte(raw), at: clock()}
	}
	if err != nil {
		return fmt.Errorf("blocked clients: %w", err)
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.byID, ws.byKey, ws.served = byID, byKey, srv
	ws.change(ws.lastChange)
	return nil
}

// reset empties the table (a replica rebuilt from an empty state).
func (ws *blockQueues) reset() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.byID, ws.byKey, ws.served = map[string]*blockedClient{}, map[string][]*blockedClient{}, map[string]served{}
	ws.change(ws.lastChange)
}

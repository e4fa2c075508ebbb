package redis

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gait-dev/gait/internal/rediscmd"
	"github.com/gait-dev/gait/internal/resp"
)

// CLIENT TRACKING (client-side caching) across agents. Every replica's
// redis-server applies every write of the log, so what changed is known to
// each agent from its own server: the agent holds one connection to it in
// BCAST mode for every key (the watcher), and redis tells it each key a
// write, an expiry, an eviction or a flush changed, in log order. The agent
// keeps its clients' tracking itself (the keys each read in the default
// mode, the prefixes of BCAST clients, OPTIN/OPTOUT, NOLOOP, REDIRECT) and
// sends them the invalidations, whichever agent the write came through.
// The redis-server's own tracking of the agent's pooled connections would
// say nothing useful: a read may be answered by another replica, and the
// pooled connections are shared by all clients.
//
// Before a tracking client gets a reply, the agent waits until its server
// has applied every write acknowledged before the reply (a read index), and
// until the watcher has passed on what those writes changed (a round trip
// on the watcher connection behind them): an invalidation of a write the
// client could know of comes before the reply, as one redis-server
// would have it. The invalidations a client's own write causes come after
// that write's reply, as in redis.

// trackMode is a connection's CLIENT TRACKING state; nil when off. It is
// replaced whole, never changed.
type trackMode struct {
	bcast, optin, optout, noloop bool
	redirect                     uint64
	prefixes                     []string // BCAST's, sorted; "" matches every key
}

// trackState is a connection's side of tracking.
type trackState struct {
	tmode  atomic.Pointer[trackMode]
	broken atomic.Bool // the redirect target had gone when an invalidation was due
	// caching is CLIENT CACHING's yes (1) or no (-1) for the next command;
	// the connection's own goroutine only.
	caching int8
	// multiOwn and multiRead are the keys the open transaction's writes
	// change and its reads name; multiSelf those it reads after writing
	// them (a default-mode connection keeps tracking them, as in redis,
	// and does not hear of its own change).
	multiOwn, multiRead, multiSelf [][]byte

	mu       sync.Mutex
	outbox   []byte      // invalidations not yet handed to the reply writer
	inflight int         // tracked replies not yet written: they carry the outbox
	fwd      bool        // a forwarder is running
	own      []*ownWrite // NOLOOP: this connection's writes in flight
}

// tracker is the agent's side: the watcher connection and the keys the
// default-mode clients read.
type tracker struct {
	mu      sync.Mutex
	conn    *redisConn
	waiters []chan resp.Value                // replies due on conn, in order
	keys    map[string]map[*clientState]bool // default mode: key → connections that read it
	max     int                              // tracking-table-max-keys, as the server last said
	// recent are the latest writes proposed here, while any connection
	// tracks: redis reports the keys one event loop changed in key order,
	// and a default-mode client hears of them one by one in the order the
	// write named them, as from one redis-server.
	recent [][][]byte
	active atomic.Bool // a connection turned tracking on since the agent started
}

// recentWrites is how many writes tracker.recent keeps.
const recentWrites = 32

// noteWrite remembers a write's arguments, for the order of its keys.
func (t *tracker) noteWrite(args [][]byte) {
	c := make([][]byte, len(args))
	for i, x := range args {
		c[i] = bytes.Clone(x)
	}
	t.mu.Lock()
	if t.recent = append(t.recent, c); len(t.recent) > recentWrites {
		t.recent = t.recent[1:]
	}
	t.mu.Unlock()
}

// writeOrder sorts keys in the order the latest recent write that names
// them all has them; as they are when none does.
func (t *tracker) writeOrder(keys [][]byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.recent) - 1; i >= 0; i-- {
		pos := map[string]int{}
		for j, x := range t.recent[i][1:] {
			if _, ok := pos[string(x)]; !ok {
				pos[string(x)] = j
			}
		}
		all := true
		for _, k := range keys {
			if _, ok := pos[string(k)]; !ok {
				all = false
				break
			}
		}
		if all {
			slices.SortStableFunc(keys, func(x, y []byte) int { return pos[string(x)] - pos[string(y)] })
			return
		}
	}
}

const trackingChannel = "__redis__:invalidate"

// tracking is the connection's mode, nil when tracking is off.
func (ts *trackState) tracking() *trackMode { return ts.tmode.Load() }

// watcher returns the watcher connection, opening it if needed.
func (a *agent) watcher() (*redisConn, error) {
	t := &a.track
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conn != nil {
		return t.conn, nil
	}
	conn, err := dialRedis(a.cfg.ServerAddr)
	if err != nil {
		return nil, err
	}
	if _, err := conn.command("HELLO", "3"); err != nil {
		conn.close()
		return nil, err
	}
	if _, err := conn.command("CLIENT", "TRACKING", "ON", "BCAST"); err != nil {
		conn.close()
		return nil, err
	}
	conn.c.SetDeadline(time.Time{}) // invalidations come whenever data changes
	t.conn = conn
	if t.keys == nil {
		t.keys, t.max = map[string]map[*clientState]bool{}, 1000000
	}
	go a.watchChanges(conn)
	return conn, nil
}

// watchChanges reads the watcher connection: invalidations go to the clients,
// other replies to the waiters. When it fails, every tracking client is
// told to drop all it caches (writes may go unseen until it reconnects).
func (a *agent) watchChanges(conn *redisConn) {
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-a.done:
			conn.close()
		case <-stop:
		}
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	go func() { // redis's own cron bounds the table about this often
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				a.track.mu.Lock()
				n := len(a.track.keys)
				a.track.mu.Unlock()
				if n > 0 {
					a.trackBarrier()
				}
			}
		}
	}()
	for {
		_, v, err := resp.ReadReply(conn.r)
		if err != nil {
			break
		}
		if v.Kind == '>' && len(v.Arr) == 2 && string(v.Arr[0].Str) == "invalidate" {
			if v.Arr[1].Kind == '*' && !v.Arr[1].Null {
				keys := make([][]byte, len(v.Arr[1].Arr))
				for i, k := range v.Arr[1].Arr {
					keys[i] = k.Str
				}
				a.invalidate(keys)
			} else {
				a.invalidateAll()
			}
			continue
		}
		t := &a.track
		t.mu.Lock()
		if len(t.waiters) > 0 {
			t.waiters[0] <- v
			t.waiters = t.waiters[1:]
		}
		t.mu.Unlock()
	}
	t := &a.track
	t.mu.Lock()
	if t.conn == conn {
		t.conn = nil
	}
	for _, w := range t.waiters {
		close(w)
	}
	t.waiters = nil
	t.mu.Unlock()
	conn.close()
	a.invalidateAll()
}

// trackBarrier returns once the watcher has passed on every invalidation
// of what the local server applied before it was called, and enforces
// tracking-table-max-keys: it reads the setting on the watcher connection,
// behind those invalidations.
func (a *agent) trackBarrier() error {
	conn, err := a.watcher()
	if err != nil {
		return err
	}
	t := &a.track
	ch := make(chan resp.Value, 1)
	t.mu.Lock()
	if t.conn != conn {
		t.mu.Unlock()
		return errors.New("watcher connection lost")
	}
	t.waiters = append(t.waiters, ch)
	conn.c.SetWriteDeadline(time.Now().Add(redisTimeout))
	_, err = conn.w.Write(resp.AppendCommand(nil, []byte("CONFIG"), []byte("GET"), []byte("tracking-table-max-keys")))
	if err == nil {
		err = conn.w.Flush()
	}
	t.mu.Unlock()
	if err != nil {
		conn.close()
		return fmt.Errorf("watcher connection: %w", err)
	}
	var v resp.Value
	var ok bool
	select {
	case v, ok = <-ch:
	case <-time.After(redisTimeout):
		return errors.New("watcher connection: no answer")
	}
	if !ok {
		return errors.New("watcher connection lost")
	}
	if len(v.Arr) == 2 {
		if n, err := strconv.Atoi(string(v.Arr[1].Str)); err == nil {
			a.limitTracked(n)
		}
	}
	return nil
}

// limitTracked evicts keys from the table beyond max (0: no limit), telling
// the clients that read them, as redis does.
func (a *agent) limitTracked(max int) {
	t := &a.track
	t.mu.Lock()
	t.max = max
	var evicted []string
	var readers []map[*clientState]bool
	if max > 0 {
		for k, r := range t.keys {
			if len(t.keys) <= max {
				break
			}
			evicted, readers = append(evicted, k), append(readers, r)
			delete(t.keys, k)
		}
	}
	t.mu.Unlock()
	for i, k := range evicted {
		for st := range readers[i] {
			if m := st.tracking(); m != nil && !m.bcast {
				a.sendInvalidation(st, m, [][]byte{[]byte(k)})
			}
		}
	}
}

// invalidate tells the clients that read keys, or watch a prefix of them,
// that the keys changed.
func (a *agent) invalidate(keys [][]byte) {
	t := &a.track
	type due struct {
		st  *clientState
		key []byte
	}
	var single []due
	ordered := slices.Clone(keys)
	t.writeOrder(ordered)
	keys = ordered
	t.mu.Lock()
	for _, k := range keys {
		for st := range t.keys[string(k)] {
			single = append(single, due{st, k})
		}
		delete(t.keys, string(k))
	}
	t.mu.Unlock()
	// Default mode: one message per key, as redis sends them.
	for _, d := range single {
		m := d.st.tracking()
		if m == nil || m.bcast {
			continue
		}
		if owned, retrack := d.st.ownsKey(d.key); owned && (retrack || m.noloop) {
			if retrack {
				a.rememberKeys(d.st, [][]byte{d.key})
			}
			continue
		}
		a.sendInvalidation(d.st, m, [][]byte{d.key})
	}
	// BCAST: one message per prefix that matched.
	for _, st := range a.connections() {
		m := st.tracking()
		if m == nil || !m.bcast {
			continue
		}
		for _, p := range m.prefixes {
			var ks [][]byte
			for _, k := range keys {
				if !bytes.HasPrefix(k, []byte(p)) {
					continue
				}
				if owned, _ := st.ownsKey(k); !(m.noloop && owned) {
					ks = append(ks, k)
				}
			}
			if len(ks) > 0 {
				a.sendInvalidation(st, m, ks)
			}
		}
	}
}

// invalidateAll tells every tracking client to drop all it caches: the
// server flushed, or the watcher lost sight of the writes.
func (a *agent) invalidateAll() {
	a.track.mu.Lock()
	if a.track.keys != nil {
		a.track.keys = map[string]map[*clientState]bool{}
	}
	a.track.mu.Unlock()
	for _, st := range a.connections() {
		if m := st.tracking(); m != nil {
			a.sendInvalidation(st, m, nil)
		}
	}
}

// sendInvalidation sends one invalidation message (keys nil: all keys) for
// st: to st itself in RESP3, or to the connection it redirects to (a
// RESP3 one, or a RESP2 one subscribed, on __redis__:invalidate). A
// redirect target that is gone is reported to st, in RESP3.
func (a *agent) sendInvalidation(st *clientState, m *trackMode, keys [][]byte) {
	target, redirected := st, false
	if m.redirect != 0 {
		if target = a.connByID(m.redirect); target == nil {
			st.broken.Store(true)
			if st.proto.Load() == 3 {
				msg := append([]byte(">2\r\n"), resp.AppendBulk(nil, []byte("tracking-redir-broken"))...)
				st.enqueue(append(msg, resp.Int(int(m.redirect))...))
			}
			return
		}
		redirected = true
	}
	var msg []byte
	switch {
	case target.proto.Load() == 3:
		msg = append([]byte(">2\r\n"), resp.AppendBulk(nil, []byte("invalidate"))...)
	case redirected && target.subscribed():
		msg = append([]byte("*3\r\n"), resp.AppendBulk(nil, []byte("message"))...)
		msg = resp.AppendBulk(msg, []byte(trackingChannel))
	default:
		return // a RESP2 connection has no way to receive it
	}
	if keys == nil {
		msg = append(msg, nullReply(int(st.proto.Load()))...)
	} else {
		msg = fmt.Appendf(msg, "*%d\r\n", len(keys))
		for _, k := range keys {
			msg = resp.AppendBulk(msg, k)
		}
	}
	target.enqueue(msg)
}

// connByID is the agent's connection with that CLIENT ID, or nil.
func (a *agent) connByID(id uint64) *clientState {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, st := range a.conns {
		if st.id == id {
			return st
		}
	}
	return nil
}

// enqueue adds a message for the connection: the next tracked reply
// carries it, or, while none is on its way, a forwarder hands it to the
// reply writer at once.
func (st *clientState) enqueue(msg []byte) {
	st.trackState.mu.Lock()
	st.outbox = append(st.outbox, msg...)
	st.kickLocked()
	st.trackState.mu.Unlock()
}

// kickLocked starts a forwarder if messages wait and no reply will carry
// them.
func (st *clientState) kickLocked() {
	if st.inflight > 0 || st.fwd || len(st.outbox) == 0 {
		return
	}
	st.fwd = true
	go func() {
		for {
			st.trackState.mu.Lock()
			if st.inflight > 0 || len(st.outbox) == 0 {
				st.fwd = false
				st.trackState.mu.Unlock()
				return
			}
			out := st.outbox
			st.outbox = nil
			st.trackState.mu.Unlock()
			if !st.replies.push(out) {
				return
			}
		}
	}()
}

// finish ends a tracked reply: the messages due before it, the reply, and
// those that came while it was made. A silenced reply leaves the messages
// to the forwarder.
func (st *clientState) finish(silent bool, before, reply []byte) []byte {
	st.trackState.mu.Lock()
	defer st.trackState.mu.Unlock()
	st.inflight--
	if silent {
		st.outbox = append(before, st.outbox...)
		st.kickLocked()
		return reply
	}
	out := append(append(before, reply...), st.outbox...)
	st.outbox = nil
	return out
}

// ownWrite is a connection's write in flight: the keys it changes whose
// invalidation has not come yet, true for those the connection goes on
// tracking (its transaction reads them after the write).
type ownWrite struct{ keys map[string]bool }

// ownsKey says whether a write of this connection in flight changes key,
// and whether the connection goes on tracking it, and takes the key off the
// write: the write changes it once, and a later change (an expiry) is no
// longer the connection's own.
func (ts *trackState) ownsKey(key []byte) (owned, retrack bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, w := range ts.own {
		if r, ok := w.keys[string(key)]; ok {
			delete(w.keys, string(key))
			return true, r
		}
	}
	return false, false
}

// markOwn records a write in flight that changes keys and self (which the
// connection goes on tracking); nil for none.
func (ts *trackState) markOwn(keys, self [][]byte) *ownWrite {
	if len(keys)+len(self) == 0 {
		return nil
	}
	w := &ownWrite{keys: map[string]bool{}}
	for _, k := range keys {
		w.keys[string(k)] = false
	}
	for _, k := range self {
		w.keys[string(k)] = true
	}
	ts.mu.Lock()
	ts.own = append(ts.own, w)
	ts.mu.Unlock()
	return w
}

// unmarkOwn forgets a write once its invalidations have passed.
func (ts *trackState) unmarkOwn(w *ownWrite) {
	if w == nil {
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.own = slices.DeleteFunc(ts.own, func(x *ownWrite) bool { return x == w })
}

// commandKeys are the keys a command names, as the local redis-server's
// COMMAND GETKEYS says; none when it says the command has none.
func (a *agent) commandKeys(args [][]byte) [][]byte {
	payload := resp.AppendCommand(nil, append([][]byte{[]byte("COMMAND"), []byte("GETKEYS")}, args...)...)
	raw, err := a.reads.do(defaultMode, payload)
	if err != nil {
		return nil
	}
	_, v, err := resp.ReadReply(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil || v.Kind != '*' {
		return nil
	}
	keys := make([][]byte, len(v.Arr))
	for i, k := range v.Arr {
		keys[i] = k.Str
	}
	return keys
}

// trackedHandle serves a command of a tracking connection: the keys a read
// names are remembered before it runs (so no write after it goes unseen),
// the keys a NOLOOP connection's write changes are marked its own until
// its invalidations have passed, and the reply waits for the invalidations
// due before it (after it, for a write's own).
func (a *agent) trackedHandle(st *clientState, args [][]byte) slot {
	m := st.tracking()
	name, sp, msg := rediscmd.Lookup(args)
	caching := st.caching
	isCaching := name == "CLIENT" && len(args) > 1 && strings.EqualFold(string(args[1]), "CACHING")
	// The invalidations of the writes acknowledged before this command
	// come before its reply, and are none of its reads' business. A
	// second barrier passes on what the first one's command made the
	// server evict under maxmemory (redis evicts before any command, and
	// reports it after that command's reply): as in redis, an eviction
	// comes before the reply of the command that found memory short.
	err := a.trackSync()
	if err == nil {
		err = a.trackBarrier()
	}
	if err != nil {
		a.logger.Printf("client tracking: %v", err)
	}
	st.trackState.mu.Lock()
	st.inflight++
	before := st.outbox
	st.outbox = nil
	st.trackState.mu.Unlock()
	var own [][]byte
	var mark *ownWrite
	if msg == "" {
		var keys [][]byte
		reads := sp.Kind == rediscmd.Read
		switch name {
		case "EVAL", "EVAL_RO":
			reads = scriptMayRead(args[1])
		case "EVALSHA", "EVALSHA_RO", "FCALL", "FCALL_RO":
			reads = true // the agent does not see the code: in doubt, tracked
		}
		if reads && !m.bcast && (!m.optin || caching > 0) && (!m.optout || caching >= 0) {
			keys = a.commandKeys(args)
			a.rememberKeys(st, keys)
		}
		has := func(ks [][]byte, k []byte) bool {
			return slices.ContainsFunc(ks, func(x []byte) bool { return bytes.Equal(x, k) })
		}
		var self [][]byte
		switch {
		case sp.Kind == rediscmd.Read && st.inMulti && (m.noloop || !m.bcast):
			if keys == nil {
				keys = a.commandKeys(args)
			}
			st.multiRead = append(st.multiRead, keys...)
			if !m.bcast {
				for _, k := range keys {
					if has(st.multiOwn, k) {
						st.multiSelf = append(st.multiSelf, k)
					}
				}
			}
		case sp.Kind == rediscmd.Write && st.inMulti && (m.noloop || !m.bcast):
			st.multiOwn = append(st.multiOwn, a.commandKeys(args)...)
		case sp.Kind == rediscmd.Write && m.noloop:
			own = a.commandKeys(args)
		case name == "EXEC":
			self = st.multiSelf
			if m.noloop {
				// A key the transaction also reads may expire on that
				// read, which is no write of the client's: in doubt, the
				// client hears of it (an invalidation too many costs a
				// cache miss).
				for _, k := range st.multiOwn {
					if !has(st.multiRead, k) {
						own = append(own, k)
					}
				}
			}
		}
		if name == "EXEC" || name == "DISCARD" {
			st.multiOwn, st.multiRead, st.multiSelf = nil, nil, nil
		}
		mark = st.markOwn(own, self)
	}
	s := a.handle(st, args)
	if !isCaching {
		st.caching = 0
	}
	silent := st.replyOff || st.skipNext > 0 // as serveConn will mark the slot
	writes := msg == "" && (sp.Kind == rediscmd.Write || name == "EXEC")
	fill, reply := s.fill, s.reply
	s.reply, s.fill = nil, func() []byte {
		if fill != nil {
			reply = fill()
		}
		// What the command's own writes (and expiries) change comes
		// after. A read's can only be a lazy expiry on this server: the
		// barrier alone passes it on, without another read index.
		var err error
		if writes {
			err = a.trackSync()
		} else {
			err = a.trackBarrier()
		}
		if err != nil {
			a.logger.Printf("client tracking: %v", err)
		}
		st.unmarkOwn(mark)
		return st.finish(silent, before, reply)
	}
	return s
}

// trackSync waits until the local server has applied every write
// acknowledged so far, anywhere, and the watcher has passed on what they
// changed.
func (a *agent) trackSync() error {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.WriteTimeout)
	defer cancel()
	index, err := a.host.LinearizableIndex(ctx)
	if err != nil {
		return err
	}
	if err := a.host.WaitApplied(ctx, index); err != nil {
		return err
	}
	return a.trackBarrier()
}

// rememberKeys records that st read keys, for the default mode.
func (a *agent) rememberKeys(st *clientState, keys [][]byte) {
	t := &a.track
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		r := t.keys[string(k)]
		if r == nil {
			r = map[*clientState]bool{}
			t.keys[string(k)] = r
		}
		r[st] = true
	}
}

// clientTracking answers CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST]
// [PREFIX p]... [OPTIN] [OPTOUT] [NOLOOP], with redis's checks and words.
func (a *agent) clientTracking(st *clientState, args [][]byte) []byte {
	if len(args) < 3 {
		return resp.Error("ERR wrong number of arguments for 'client|tracking' command")
	}
	next := trackMode{}
	var prefixes []string
	for j := 3; j < len(args); j++ {
		more := j+1 < len(args)
		switch opt := strings.ToUpper(string(args[j])); {
		case opt == "REDIRECT" && more:
			j++
			if next.redirect != 0 {
				return resp.Error("ERR A client can only redirect to a single other client")
			}
			id, err := strconv.ParseInt(string(args[j]), 10, 64)
			if err != nil {
				return resp.Error("ERR value is not an integer or out of range")
			}
			if id <= 0 || a.connByID(uint64(id)) == nil {
				return resp.Error("ERR The client ID you want redirect to does not exist")
			}
			next.redirect = uint64(id)
		case opt == "BCAST":
			next.bcast = true
		case opt == "OPTIN":
			next.optin = true
		case opt == "OPTOUT":
			next.optout = true
		case opt == "NOLOOP":
			next.noloop = true
		case opt == "PREFIX" && more:
			j++
			prefixes = append(prefixes, string(args[j]))
		default:
			return resp.Error("ERR syntax error")
		}
	}
	cur := st.tracking()
	switch strings.ToUpper(string(args[2])) {
	case "ON":
		if !next.bcast && len(prefixes) > 0 {
			return resp.Error("ERR PREFIX option requires BCAST mode to be enabled")
		}
		if cur != nil && cur.bcast != next.bcast {
			return resp.Error("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
		}
		if next.bcast && (next.optin || next.optout) {
			return resp.Error("ERR OPTIN and OPTOUT are not compatible with BCAST")
		}
		if next.optin && next.optout {
			return resp.Error("ERR You can't use both OPTIN and OPTOUT")
		}
		if cur != nil && ((next.optin && cur.optout) || (next.optout && cur.optin)) {
			return resp.Error("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
		}
		if next.bcast {
			if msg := prefixCollision(cur, prefixes); msg != "" {
				return resp.Error(msg)
			}
			if cur != nil {
				next.prefixes = append(next.prefixes, cur.prefixes...)
			}
			if len(prefixes) == 0 {
				prefixes = []string{""}
			}
			for _, p := range prefixes {
				if !slices.Contains(next.prefixes, p) {
					next.prefixes = append(next.prefixes, p)
				}
			}
			slices.Sort(next.prefixes)
		}
		if _, err := a.watcher(); err != nil {
			return resp.Error("ERR gait replica: client tracking: " + err.Error())
		}
		a.track.active.Store(true)
		st.broken.Store(false)
		st.tmode.Store(&next)
	case "OFF":
		st.tmode.Store(nil)
		st.broken.Store(false)
		st.caching = 0
	default:
		return resp.Error("ERR syntax error")
	}
	return resp.Simple("OK")
}

// prefixCollision is redis's refusal of BCAST prefixes of which one starts
// the other (among the new ones, or with the connection's), or "".
func prefixCollision(cur *trackMode, prefixes []string) string {
	overlap := func(x, y string) bool { n := min(len(x), len(y)); return x[:n] == y[:n] }
	for i, p := range prefixes {
		if cur != nil {
			for _, q := range cur.prefixes {
				if overlap(q, p) {
					return fmt.Sprintf("ERR Prefix '%s' overlaps with an existing prefix '%s'. Prefixes for a single client must not overlap.", p, q)
				}
			}
		}
		for _, q := range prefixes[i+1:] {
			if overlap(p, q) {
				return fmt.Sprintf("ERR Prefix '%s' overlaps with another provided prefix '%s'. Prefixes for a single client must not overlap.", p, q)
			}
		}
	}
	return ""
}

// clientCaching answers CLIENT CACHING YES|NO: the next command's reads are
// tracked (OPTIN) or not (OPTOUT).
func (a *agent) clientCaching(st *clientState, args [][]byte) []byte {
	if len(args) != 3 {
		return resp.Error("ERR wrong number of arguments for 'client|caching' command")
	}
	m := st.tracking()
	if m == nil {
		return resp.Error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
	}
	switch strings.ToUpper(string(args[2])) {
	case "YES":
		if !m.optin {
			return resp.Error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
		}
		st.caching = 1
	case "NO":
		if !m.optout {
			return resp.Error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
		}
		st.caching = -1
	default:
		return resp.Error("ERR syntax error")
	}
	return resp.Simple("OK")
}

// trackingInfo answers CLIENT TRACKINGINFO: flags, redirect and prefixes.
func (st *clientState) trackingInfo() []byte {
	m := st.tracking()
	flags := []string{"off"}
	redirect := int64(-1)
	var prefixes []string
	if m != nil {
		flags, redirect, prefixes = []string{"on"}, int64(m.redirect), m.prefixes
		for _, f := range []struct {
			on   bool
			name string
		}{{m.bcast, "bcast"}, {m.optin, "optin"}, {m.optout, "optout"},
			{st.caching > 0, "caching-yes"}, {st.caching < 0, "caching-no"},
			{m.noloop, "noloop"}, {st.broken.Load(), "broken_redirect"}} {
			if f.on {
				flags = append(flags, f.name)
			}
		}
	}
	var out []byte
	if st.proto.Load() == 3 {
		out = []byte("%3\r\n")
	} else {
		out = []byte("*6\r\n")
	}
	out = resp.AppendBulk(out, []byte("flags"))
	out = fmt.Appendf(out, "*%d\r\n", len(flags))
	for _, f := range flags {
		out = resp.AppendBulk(out, []byte(f))
	}
	out = resp.AppendBulk(out, []byte("redirect"))
	out = append(out, resp.Int(int(redirect))...)
	out = resp.AppendBulk(out, []byte("prefixes"))
	out = fmt.Appendf(out, "*%d\r\n", len(prefixes))
	for _, p := range prefixes {
		out = resp.AppendBulk(out, []byte(p))
	}
	return out
}

// trackingFlags are CLIENT LIST's tracking flags (t, R, B) and its redir=.
func (ts *trackState) trackingFlags() (string, int64) {
	m := ts.tracking()
	if m == nil {
		return "", -1
	}
	f := "t"
	if ts.broken.Load() {
		f += "R"
	}
	if m.bcast {
		f += "B"
	}
	return f, int64(m.redirect)
}

// patchTrackingInfo puts the agent's tracking counts into an INFO reply:
// the local server's would count the watcher only.
func (a *agent) patchTrackingInfo(raw []byte) []byte {
	clients := 0
	prefixes := map[string]bool{}
	for _, st := range a.connections() {
		if m := st.tracking(); m != nil {
			clients++
			for _, p := range m.prefixes {
				prefixes[p] = true
			}
		}
	}
	a.track.mu.Lock()
	keys, items := len(a.track.keys), 0
	for _, r := range a.track.keys {
		items += len(r)
	}
	a.track.mu.Unlock()
	raw = patchInfo(raw, "tracking_clients", int64(clients))
	raw = patchInfo(raw, "tracking_total_keys", int64(keys))
	raw = patchInfo(raw, "tracking_total_items", int64(items))
	return patchInfo(raw, "tracking_total_prefixes", int64(len(prefixes)))
}

// scriptMayRead says whether a script may call a read command, for
// tracking its declared keys as redis does (only then). In doubt (a command
// name that is not a literal) it may: an invalidation too many costs a
// cache miss, one too few serves stale data.
func scriptMayRead(src []byte) bool {
	for rest := src; ; {
		i := bytes.Index(rest, []byte("call("))
		if i < 0 {
			return false
		}
		rest = bytes.TrimLeft(rest[i+len("call("):], " \t\r\n")
		if len(rest) == 0 || (rest[0] != '\'' && rest[0] != '"') {
			return true
		}
		end := bytes.IndexByte(rest[1:], rest[0])
		if end < 0 {
			return true
		}
		name := strings.ToUpper(string(rest[1 : 1+end]))
		if _, sp, _ := rediscmd.Lookup([][]byte{[]byte(name)}); sp.Kind == rediscmd.Read || name == "PFCOUNT" {
			return true
		}
	}
}

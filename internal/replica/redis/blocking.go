package redis

import (
	"bufio"
	"bytes"
	"context"
	"math"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/replica"
	"github.com/gait-dev/gait/internal/resp"
)

// A blocking command (BLPOP, BZPOPMIN, XREAD BLOCK...) never blocks a
// redis-server: a redis that waits on the apply connection would stall every
// later entry. The agent proposes the command inside MULTI … EXEC, where
// redis runs it without blocking (an empty source answers nil at once), as
// an ordered write, and every replica serves the client once data comes, in
// the order clients blocked (blockorder.go).
//
// goneCheck spaces the looks of a waiting client's agent at its connection
// (and timeout): redis drops a blocked client that closed at once, and the
// agent cancels its place soon after (meanwhile INFO counts it blocked).
const goneCheck = 50 * time.Millisecond

// blockTimeout reads the timeout of a blocking command: ok false when the
// command does not block (XREAD, XREADGROUP without BLOCK), forever for 0,
// and a zero timeout for one that does not parse (redis then answers the
// error on the first attempt).
func blockTimeout(name string, args [][]byte) (d time.Duration, forever, ok bool) {
	var v []byte
	scale := float64(time.Second)
	switch name {
	case "BLMPOP", "BZMPOP":
		v = args[1]
	case "XREAD", "XREADGROUP":
		for i := 1; i < len(args)-1; i++ {
			switch strings.ToUpper(string(args[i])) {
			case "STREAMS":
				return 0, false, false
			case "BLOCK":
				v, scale = args[i+1], float64(time.Millisecond)
			}
			if v != nil {
				break
			}
		}
		if v == nil {
			return 0, false, false
		}
	default:
		v = args[len(args)-1]
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false, true
	}
	if f == 0 {
		return 0, true, true
	}
	return time.Duration(min(f*scale, float64(math.MaxInt64/2))), false, true
}

// block serves a blocking command until it finds data, the timeout passes,
// CLIENT UNBLOCK ends it, or the client goes away; the reply is what redis
// answered to the successful attempt, or the null of a timeout.
func (a *agent) block(st *clientState, name string, args [][]byte, d time.Duration, forever bool) []byte {
	// Its place among other connections' commands (replica.Host.Take); a wait
	// for the connection's own earlier commands gives it up.
	t := a.host.Take(st.stamped, true, false)
	defer a.host.Release(t)
	var keys [][]byte
	for _, i := range orderedKeys(name, args) {
		keys = append(keys, args[i])
	}
	defer a.blockOn(keys)()
	for _, c := range []chan struct{}{st.lastRead, st.lastWriteDone} {
		if c == nil {
			continue
		}
		select {
		case <-c:
		default:
			a.host.Release(t)
			<-c
		}
	}
	// INFO's blocked_clients and CLIENT LIST's flags=b count it meanwhile.
	a.blockedClients.Add(1)
	defer a.blockedClients.Add(-1)
	unblocked, stop := st.blockUntilUnblocked()
	defer stop()
	b := &blockedCall{a: a, st: st, name: name, args: args, deadline: time.Now().Add(d), forever: forever, unblocked: unblocked, ticket: t}
	return b.ordered()
}

// blockedCall is one blocking command being served.
type blockedCall struct {
	a         *agent
	st        *clientState
	name      string
	args      [][]byte
	deadline  time.Time
	forever   bool
	unblocked *unblocking
	ticket    *replica.Ticket // its place in arrival order, until the first attempt is proposed
}

// expired says the call's timeout passed.
func (b *blockedCall) expired() bool { return !b.forever && !time.Now().Before(b.deadline) }

// pause is how long to wait at most before looking again: the time left,
// at most goneCheck.
func (b *blockedCall) pause() time.Duration {
	if b.forever {
		return goneCheck
	}
	return max(min(goneCheck, time.Until(b.deadline)), 0)
}

// ended tells whether the call must end without data, and with what:
// CLIENT UNBLOCK's error, or a timeout's null (also for a client gone or
// an agent stopping).
func (b *blockedCall) ended() (reply []byte, end bool) {
	if b.unblockedWithError() {
		return resp.Error("UNBLOCKED client unblocked via CLIENT UNBLOCK"), true
	}
	if b.unblocked.ctx.Err() != nil {
		return b.timedOut(), true
	}
	select {
	case <-b.a.done:
		return b.timedOut(), true
	default:
	}
	return b.timedOut(), gone(b.st)
}

// unblockedWithError says CLIENT UNBLOCK ERROR ended the call.
func (b *blockedCall) unblockedWithError() bool {
	return b.unblocked.ctx.Err() != nil && b.unblocked.how == "ERROR"
}

// timedOut is redis's reply to a blocked client whose timeout passed.
func (b *blockedCall) timedOut() []byte {
	return appendValue(nil, nullValue(int(b.st.proto.Load())))
}

// try proposes one attempt and waits for its reply: EXEC's element, and
// whether it is nil (no data yet).
func (b *blockedCall) try(e redisRecord) (w replica.Proposal, index uint64, reply []byte, empty bool, errReply []byte) {
	w, err := b.a.host.Propose(b.ticket, e.encode(), e.volatile)
	b.ticket = nil
	if err != nil {
		return nil, 0, nil, false, resp.Error("TRYAGAIN gait replica: " + err.Error())
	}
	raw, index, err := w.Wait()
	if err != nil {
		return w, index, nil, false, resp.Error("ERR gait replica: " + err.Error())
	}
	if index > b.st.lastIndex.Load() {
		b.st.lastIndex.Store(index)
	}
	reply, empty = execElement(raw)
	return w, index, reply, empty, nil
}

// ordered serves a command whose clients redis serves in the order they
// blocked, through the replicated queues of blockorder.go. The first
// attempt runs the command (on the keys no earlier client waits on) and
// queues the client; every replica then serves it right after an entry
// that gives it data. The agent learns that from its own replica and takes
// the reply out of the table with a next attempt (which also renews the
// client's lease), or a cancel when the client stops waiting: either
// answers the reply it was served, if it was.
func (b *blockedCall) ordered() []byte {
	a, md := b.a, b.st.mode()
	_, n, after := (&attempt{md: md}).payload(b.args)
	var first uint64 // the first attempt's sequence number: names the waiter
	propose := func(cancel bool) (replica.Proposal, uint64, []byte, bool, []byte) {
		at := &attempt{waiter: first, cancel: cancel, at: time.Now().UnixMilli(), md: md, args: b.args}
		return b.try(redisRecord{replies: n, after: after, block: at})
	}
	// leave cancels the wait; the reply is what the client was served
	// meanwhile, if anything.
	leave := func() ([]byte, bool) {
		_, _, reply, empty, errReply := propose(true)
		return reply, errReply == nil && !empty
	}
	moves := b.name == "BLMOVE" || b.name == "BRPOPLPUSH"
	for {
		w, index, reply, empty, errReply := propose(false)
		if w != nil && first == 0 {
			first = w.Seq()
		} else if first != 0 && !moves && bytes.HasPrefix(reply, []byte("-WRONGTYPE")) {
			empty = true // as blockQueues.settle: redis wakes a blocked client only for its type
		}
		if errReply != nil {
			if w != nil {
				leave()
			}
			return errReply
		}
		if !empty {
			return reply
		}
		id := a.host.Proposer() + "/" + strconv.FormatUint(first, 10)
		last := time.Now()
		for {
			if b.expired() {
				if reply, ok := leave(); ok {
					return reply
				}
				return b.timedOut()
			}
			if end, ended := b.ended(); ended {
				if reply, ok := leave(); ok && !b.unblockedWithError() {
					return reply
				}
				return end
			}
			served, waiting, changed := a.redis.blocked.servedTo(id)
			if served || time.Since(last) > waiterLease/2 || (!waiting && a.host.Applied() >= index) {
				break // collect the reply, renew the lease, or queue again
			}
			t := time.NewTimer(b.pause())
			idleFrom := time.Now()
			select {
			case <-changed:
			case <-t.C:
			case <-b.unblocked.ctx.Done():
			case <-a.done:
			}
			t.Stop()
			b.st.blockedFor += time.Since(idleFrom) // not the command's time, as in redis's slow log
		}
	}
}

// unblocking is how CLIENT UNBLOCK ends a blocked command: ctx is cancelled
// once how (TIMEOUT or ERROR) is set.
type unblocking struct {
	ctx    context.Context
	cancel context.CancelFunc
	how    string
}

// blockUntilUnblocked marks the connection blocked until stop is called:
// CLIENT UNBLOCK finds it meanwhile.
func (cl *clientConn) blockUntilUnblocked() (u *unblocking, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	u = &unblocking{ctx: ctx, cancel: cancel}
	cl.mu.Lock()
	cl.unblock = u
	cl.mu.Unlock()
	return u, func() {
		cl.mu.Lock()
		cl.unblock = nil
		cl.mu.Unlock()
		cancel()
	}
}

// unblockWith ends the connection's blocked command, if it has one, as
// CLIENT UNBLOCK does; it says whether there was one.
func (cl *clientConn) unblockWith(how string) bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.unblock == nil || cl.unblock.ctx.Err() != nil {
		return false
	}
	cl.unblock.how = how
	cl.unblock.cancel()
	return true
}

// execElement unwraps the one reply inside EXEC's answer; empty says it is
// nil (no data yet). Anything else (EXECABORT, an error) is returned whole.
func execElement(raw []byte) (reply []byte, empty bool) {
	_, v, err := resp.ReadReply(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil || v.Kind != '*' || v.Null || len(v.Arr) != 1 {
		return raw, false
	}
	reply = raw[bytes.IndexByte(raw, '\n')+1:]
	return reply, v.Arr[0].Null
}

// gone says whether a blocked client closed its connection: a peek that
// finds the end of the stream. Bytes it finds stay for the reader.
func gone(st *clientState) bool {
	sc, ok := st.conn.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n == 0 && err == nil
		return true
	})
	return closed || err != nil
}

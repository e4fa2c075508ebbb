package redis

import (
	"context"
	"encoding/binary"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/resp"
)

// A script or function is a write: every replica's redis-server runs it, in
// log order. One that runs past busy-reply-threshold (lua-time-limit) makes
// each of those servers answer BUSY, and SCRIPT KILL or FUNCTION KILL must
// stop it on all of them, or they diverge (and the ones still running it
// apply nothing else). So the agent sends the kill to its own redis-server
// and tells every peer to do the same: each kills the script that is
// running there now. A replica that has not reached the script yet (it
// lags) keeps sending the kill until it has applied the entry the killing
// agent's replica was running, for at most the write timeout. Redis decides
// alike everywhere: a script that has written is UNKILLABLE on every
// replica, a read-only one ends with the same "killed by user" error.

// busyCheck is how long a batch must have run on redis before PING asks the
// redis-server whether it is busy, rather than answer PONG itself.
const busyCheck = 5 * time.Millisecond

// killRetry is how often a lagging replica sends a kill again.
const killRetry = 20 * time.Millisecond

// isKill says whether args are SCRIPT KILL or FUNCTION KILL.
func isKill(args [][]byte) bool {
	return len(args) == 2 && strings.EqualFold(string(args[1]), "KILL")
}

// killScript serves SCRIPT KILL and FUNCTION KILL: the answer is the local
// redis-server's (OK, NOTBUSY, UNKILLABLE, or BUSY for the other kind of
// script), and every peer kills what runs on its own server.
func (a *agent) killScript(args [][]byte) slot {
	payload := resp.AppendCommand(nil, args...)
	index := a.host.Applied() + 1                                          // the entry this replica runs now, if any
	a.host.Broadcast(append(binary.AppendUvarint(nil, index), payload...)) // Adapter.OnPeer
	return a.localSlot(defaultMode, payload)
}

// onKill runs a peer's kill on this replica's redis-server: at once, and
// again while this replica has not yet applied the entry the peer's replica
// was running (index), up to the write timeout.
func (a *agent) onKill(index uint64, payload []byte) {
	deadline := time.Now().Add(a.cfg.WriteTimeout)
	for {
		raw, err := a.reads.do(defaultMode, payload)
		if err != nil || !strings.HasPrefix(string(raw), "-NOTBUSY") ||
			a.host.Applied() >= index || time.Now().After(deadline) {
			return
		}
		select {
		case <-a.done:
			return
		case <-time.After(killRetry):
		}
	}
}

// pingSlot answers PING as redis would: BUSY while this replica's
// redis-server runs a long script (its applier has been waiting on one batch
// for a while), PONG otherwise. A script of the connection's own that
// another replica finished first is not BUSY: the local replica gets to
// apply it first (up to the write timeout).
func (a *agent) pingSlot(st *clientState, args [][]byte) slot {
	pong := resp.Simple("PONG")
	if len(args) == 2 {
		pong = resp.AppendBulk(nil, args[1])
	}
	if a.redis.busyFor() <= busyCheck {
		return slot{reply: pong}
	}
	after := st.lastWriteDone
	return slot{fill: func() []byte {
		if after != nil {
			<-after
		}
		ctx, cancel := context.WithTimeout(context.Background(), a.cfg.WriteTimeout)
		a.host.WaitApplied(ctx, st.lastIndex.Load())
		cancel()
		if a.redis.busyFor() <= busyCheck {
			return pong
		}
		raw, err := a.reads.do(defaultMode, resp.AppendCommand(nil, args...))
		if err != nil {
			return resp.Error("ERR gait replica: " + strings.TrimSpace(err.Error()))
		}
		return raw
	}}
}

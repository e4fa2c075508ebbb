package redis

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
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

// CLIENT PAUSE timeout [WRITE|ALL] and CLIENT UNPAUSE: the agent holds its
// own clients' commands (all of them, or those that may write) until the
// pause ends, as redis holds its clients, and counts them in INFO's
// blocked_clients. Only the agent's own clients pause: writes through other
// agents go on (a deployment-wide pause would have to be ordered through
// the log, which is not done). The local redis-server pauses its writes as
// long, so that it expires no key meanwhile, as redis does not, while the
// applier's writes go on between a CLIENT UNPAUSE and a CLIENT PAUSE
// (redisConn.pause): a key read meanwhile is gone to its reader but still
// held, and expired_keys counts it once the pause ends.

// pauseState is the agent's pause; zero when none. until is read on every
// command without the lock (the common case: no pause).
type pauseState struct {
	until atomic.Int64 // Unix nanoseconds
	// server is until for the applier's connection (redisConn.pause),
	// which clears it once the pause has passed.
	server atomic.Int64
	mu     sync.Mutex
	all    bool
	end    chan struct{} // closed when the pause ends early (CLIENT UNPAUSE)
	// readOnly are the SHA1s of scripts seen here with the no-writes flag:
	// EVALSHA of one does not write.
	readOnly sync.Map
}

// clientPause answers CLIENT PAUSE timeout [WRITE|ALL], with redis's rule
// for a pause already in effect: the longer end and the stricter kind win.
func (a *agent) clientPause(args [][]byte) []byte {
	if len(args) != 3 && len(args) != 4 {
		return resp.Error("ERR wrong number of arguments for 'client|pause' command")
	}
	all := true
	if len(args) == 4 { // the mode first, as redis checks it
		switch strings.ToUpper(string(args[3])) {
		case "WRITE":
			all = false
		case "ALL":
		default:
			return resp.Error("ERR CLIENT PAUSE mode must be WRITE or ALL")
		}
	}
	ms, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil {
		return resp.Error("ERR timeout is not an integer or out of range")
	}
	if ms < 0 {
		return resp.Error("ERR timeout is negative")
	}
	p := &a.pause
	until := time.Now().Add(time.Duration(ms) * time.Millisecond).UnixNano()
	p.mu.Lock()
	if a.paused() {
		all = all || p.all
		until = max(until, p.until.Load())
	} else {
		p.end = make(chan struct{})
	}
	p.all = all
	p.until.Store(until)
	p.server.Store(until)
	p.mu.Unlock()
	a.pauseServer(nil) // PING, sent between the pause's brackets
	return resp.Simple("OK")
}

// clientUnpause answers CLIENT UNPAUSE: held commands go on.
func (a *agent) clientUnpause() []byte {
	p := &a.pause
	p.mu.Lock()
	if a.paused() {
		close(p.end)
	}
	p.until.Store(0)
	p.server.Store(0)
	p.mu.Unlock()
	a.pauseServer(unpauseCmd)
	return resp.Simple("OK")
}

// pauseServer brings the local redis-server's pause in line with the
// agent's (redisConn.pause), on the applier's connection between two of
// its runs: a pause sent on another connection could hold a run's writes.
// The client's reply waits for it, so a key it reads next is not expired.
func (a *agent) pauseServer(cmd []byte) {
	if cmd == nil {
		cmd = resp.AppendCommand(nil, []byte("PING"))
	}
	// Not while redis has failed: a new connection to it brings the pause
	// in line (redisConn.pause).
	a.host.Exclusive(func() error {
		if _, _, err := a.redis.conn.do(cmd, 1); err != nil {
			return fmt.Errorf("pause the local redis-server: %w", err)
		}
		return nil
	})
}

// paused says whether a pause is in effect; with none ever set it reads
// no clock (it is asked for every request).
func (a *agent) paused() bool {
	until := a.pause.until.Load()
	return until != 0 && time.Now().UnixNano() < until
}

// holdIfPaused waits, before a command is served, while a pause holds it.
func (a *agent) holdIfPaused(st *clientState, args [][]byte) {
	switch cmd := string(args[0]); { // not copied: compared only
	case strings.EqualFold(cmd, "SCRIPT") && len(args) == 3 && strings.EqualFold(string(args[1]), "LOAD") && noWrites(args[2]):
		a.noteReadOnly(args[2])
	case strings.EqualFold(cmd, "EVAL") && len(args) > 1 && noWrites(args[1]):
		a.noteReadOnly(args[1])
	}
	st.pausedFor = 0
	if !a.paused() {
		return
	}
	name, sp, msg := rediscmd.Lookup(args)
	if msg != "" {
		return // answered at once, as redis answers a syntax error
	}
	for {
		p := &a.pause
		p.mu.Lock()
		until, all, end := time.Unix(0, p.until.Load()), p.all, p.end
		p.mu.Unlock()
		if !time.Now().Before(until) || (!all && !a.mayWrite(st, name, sp, args)) {
			return
		}
		a.blockedClients.Add(1)
		held := time.Now()
		t := time.NewTimer(time.Until(until))
		select {
		case <-end:
		case <-t.C:
		case <-a.done:
		}
		t.Stop()
		a.blockedClients.Add(-1)
		st.pausedFor += time.Since(held) // not the command's time (observe.go)
	}
}

// noteReadOnly remembers a no-writes script's SHA1, for EVALSHA.
func (a *agent) noteReadOnly(src []byte) {
	sum := sha1.Sum(src)
	a.pause.readOnly.Store(hex.EncodeToString(sum[:]), true)
}

// mayWrite says whether a command may change data, for CLIENT PAUSE WRITE:
// writes (PUBLISH and PFCOUNT too, as in redis), scripts without the
// no-writes flag, and EXEC of a transaction that holds one. SCRIPT LOAD and
// FUNCTION LOAD are not held (redis does not: they change no key).
func (a *agent) mayWrite(st *clientState, name string, sp rediscmd.Spec, args [][]byte) bool {
	if st.inMulti {
		if name != "EXEC" {
			return false // queued, not run
		}
		for _, q := range st.queued {
			qn, qsp, _ := rediscmd.Lookup(q)
			if a.mayWrite(&clientState{}, qn, qsp, q) {
				return true
			}
		}
		return false
	}
	switch name {
	case "EVAL":
		return !noWrites(args[1])
	case "EVALSHA":
		_, ro := a.pause.readOnly.Load(strings.ToLower(string(args[1])))
		return !ro
	case "FCALL":
		return !a.readOnlyFunction(args[1])
	case "SCRIPT", "FUNCTION":
		return false
	}
	return sp.Kind == rediscmd.Write
}

// noWrites says whether a script's shebang line declares flags=no-writes.
func noWrites(src []byte) bool {
	if !bytes.HasPrefix(src, []byte("#!")) {
		return false
	}
	line, _, _ := strings.Cut(string(src[:min(len(src), 1024)]), "\n")
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "flags="); ok {
			for _, flag := range strings.Split(v, ",") {
				if flag == "no-writes" {
					return true
				}
			}
		}
	}
	return false
}

// readOnlyFunction says whether the local server knows a function of that
// name with the no-writes flag (FUNCTION LIST).
func (a *agent) readOnlyFunction(name []byte) bool {
	raw, err := a.reads.do(defaultMode, resp.AppendCommand(nil, []byte("FUNCTION"), []byte("LIST")))
	if err != nil {
		return false
	}
	_, v, err := resp.ReadReply(bufio.NewReader(bytes.NewReader(raw)))
	return err == nil && hasNoWrites(v, name)
}

// hasNoWrites finds, among FUNCTION LIST's nested arrays, the function
// entry (name ... flags [...]) of that name and tells whether its flags
// hold no-writes.
func hasNoWrites(v resp.Value, name []byte) bool {
	a := v.Arr
	for i := 0; i+1 < len(a); i += 2 {
		if string(a[i].Str) == "name" && bytes.Equal(a[i+1].Str, name) {
			for j := 0; j+1 < len(a); j += 2 {
				if string(a[j].Str) == "flags" {
					return slices.ContainsFunc(a[j+1].Arr, func(f resp.Value) bool { return string(f.Str) == "no-writes" })
				}
			}
		}
	}
	for _, e := range a {
		if hasNoWrites(e, name) {
			return true
		}
	}
	return false
}

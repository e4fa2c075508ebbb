package replica

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/rediscmd"
	"github.com/gait-dev/gait/internal/resp"
)

// CLIENT PAUSE timeout [WRITE|ALL] and CLIENT UNPAUSE: the agent holds its
// own clients' commands (all of them, or those that may write) until the
// pause ends, as redis holds its clients, and counts them in INFO's
// blocked_clients. Only the agent's own clients pause: writes through other
// agents go on (a deployment-wide pause would have to be ordered through
// the log, which is not done).

// pauseState is the agent's pause; zero when none.
type pauseState struct {
	mu    sync.Mutex
	until time.Time
	all   bool
	end   chan struct{} // closed when the pause ends early (CLIENT UNPAUSE)
	// readOnly are the SHA1s of scripts seen here with the no-writes flag:
	// EVALSHA of one does not write.
	readOnly sync.Map
}

// clientPause answers CLIENT PAUSE timeout [WRITE|ALL], with redis's rule
// for a pause already in effect: the longer end and the stricter kind win.
func (a *Agent) clientPause(args [][]byte) []byte {
	if len(args) != 3 && len(args) != 4 {
		return resp.Error("ERR wrong number of arguments for 'client|pause' command")
	}
	ms, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil {
		return resp.Error("ERR timeout is not an integer or out of range")
	}
	if ms < 0 {
		return resp.Error("ERR timeout is negative")
	}
	all := true
	if len(args) == 4 {
		switch strings.ToUpper(string(args[3])) {
		case "WRITE":
			all = false
		case "ALL":
		default:
			return resp.Error("ERR syntax error")
		}
	}
	p := &a.pause
	until := time.Now().Add(time.Duration(ms) * time.Millisecond)
	p.mu.Lock()
	if time.Now().Before(p.until) {
		all = all || p.all
		if p.until.After(until) {
			until = p.until
		}
	} else {
		p.end = make(chan struct{})
	}
	p.until, p.all = until, all
	p.mu.Unlock()
	return resp.Simple("OK")
}

// clientUnpause answers CLIENT UNPAUSE: held commands go on.
func (a *Agent) clientUnpause() []byte {
	p := &a.pause
	p.mu.Lock()
	if time.Now().Before(p.until) {
		close(p.end)
	}
	p.until = time.Time{}
	p.mu.Unlock()
	return resp.Simple("OK")
}

// paused says whether a pause is in effect.
func (a *Agent) paused() bool {
	a.pause.mu.Lock()
	defer a.pause.mu.Unlock()
	return time.Now().Before(a.pause.until)
}

// holdIfPaused waits, before a command is served, while a pause holds it.
func (a *Agent) holdIfPaused(st *clientState, args [][]byte) {
	name, sp, msg := rediscmd.Lookup(args)
	if msg != "" {
		return // answered at once, as redis answers a syntax error
	}
	if (name == "SCRIPT" && strings.EqualFold(string(args[1]), "LOAD") && len(args) == 3) || (name == "EVAL" && len(args) > 1) {
		src := args[len(args)-1]
		if name == "EVAL" {
			src = args[1]
		}
		if noWrites(src) {
			sum := sha1.Sum(src)
			a.pause.readOnly.Store(hex.EncodeToString(sum[:]), true)
		}
	}
	for {
		p := &a.pause
		p.mu.Lock()
		until, all, end := p.until, p.all, p.end
		p.mu.Unlock()
		if !time.Now().Before(until) || (!all && !a.mayWrite(st, name, sp, args)) {
			return
		}
		a.blockedClients.Add(1)
		t := time.NewTimer(time.Until(until))
		select {
		case <-end:
		case <-t.C:
		case <-a.done:
		}
		t.Stop()
		a.blockedClients.Add(-1)
	}
}

// mayWrite says whether a command may change data, for CLIENT PAUSE WRITE:
// writes (PUBLISH and PFCOUNT too, as in redis), scripts without the
// no-writes flag, and EXEC of a transaction that holds one. SCRIPT LOAD and
// FUNCTION LOAD are not held (redis does not: they change no key).
func (a *Agent) mayWrite(st *clientState, name string, sp rediscmd.Spec, args [][]byte) bool {
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
	line, _, _ := strings.Cut(string(src), "\n")
	if !strings.HasPrefix(line, "#!") {
		return false
	}
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
func (a *Agent) readOnlyFunction(name []byte) bool {
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

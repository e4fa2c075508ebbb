package redis

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gait-dev/gait/internal/rediscmd"
	"github.com/gait-dev/gait/internal/resp"
)

// Redis counts the commands a script calls in INFO commandstats, beside
// the script's own EVAL. The agent's counts are its own (observe.go): it
// sees its client's EVAL, not the redis.call()s every replica makes. So
// the agent that proposed a client's script asks its own redis-server what
// the script called: its applier sends INFO commandstats right before and
// right after the script, in the same write, and adds the difference (less
// that INFO and the script command) to the agent's counts, before the
// entry counts as applied (so an INFO after the client's reply sees them).
//
// Nothing but the script runs on that redis-server between the two INFOs:
// redis runs the commands of one read of a connection one after another
// without serving another client (processInputBuffer), and the write gets
// to redis alone and in one read: the applier sends a counted script as a
// run of its own, after every reply of the run before it came back (so
// redis has read everything before it), and only a write of at most one
// read's size (redis's PROTO_IOBUF_LEN) is counted. Redis does serve other
// clients while a script runs past busy-reply-threshold (answering BUSY,
// which counts as their rejected call): the commands of a script that ran
// that long are not counted rather than counted wrong.
//
// Only with Config.ScriptCommandStats (off by default): the two INFOs and
// the round trip a counted script waits for cost EVAL about a third of its
// throughput, a price for a statistic no client pays unasked.

// readScripts are the scripts that only read: an agent that counts
// scripts' commands proposes them through the log too (a read would not
// pass its applier), which costs a raft round where a read costs none.
var readScripts = map[string]bool{"EVAL_RO": true, "EVALSHA_RO": true, "FCALL_RO": true}

// countedMax bounds the write of a counted script: one read of redis's.
const countedMax = 16 << 10

// infoStats is INFO commandstats as a command.
var infoStats = resp.AppendCommand(nil, []byte("INFO"), []byte("commandstats"))

// callCounts are one command's counts in INFO commandstats.
type callCounts struct{ calls, usec, rejected, failed int64 }

// scriptCounting is what the applier needs to count the commands of this
// agent's clients' scripts.
type scriptCounting struct {
	self string // the end of this agent's name as a proposer: "#" and its incarnation
	// busyReply is the local redis-server's busy-reply-threshold, in ms
	// (followed as the slow log's settings are).
	busyReply atomic.Int64
	add       func(map[string]callCounts)
}

// countable says whether e, proposed by proposer, is a script this agent's client sent (EVAL,
// EVALSHA, FCALL and their _RO forms; not a script gait made of another
// command, nor one inside a transaction or a pipelined batch), small
// enough to count.
func (b *redisBackend) countable(proposer string, e redisRecord) bool {
	if e.batch || e.block != nil || !strings.HasSuffix(proposer, b.scripts.self) || len(e.payload)+2*len(infoStats) > countedMax {
		return false
	}
	start, end, ok := commandAt(e.payload, e.replies-1-e.after)
	if !ok {
		return false
	}
	name, rest := bulkAfter(e.payload[start:end], bytes.IndexByte(e.payload[start:end], '\n')+1)
	if len(name) < 4 || len(name) > 10 || (name[0]|0x20 != 'e' && name[0]|0x20 != 'f') {
		return false // most writes: looked at no further
	}
	switch strings.ToUpper(string(name)) {
	case "EVAL", "EVAL_RO":
		body, _ := bulkAfter(e.payload[start:end], rest)
		return !rediscmd.OwnScript(body)
	case "EVALSHA", "EVALSHA_RO", "FCALL", "FCALL_RO":
		return true
	}
	return false
}

// bulkAfter reads the bulk string at cmd[i:] of a RESP command: its bytes,
// and where the next starts (nil, len(cmd) if there is none).
func bulkAfter(cmd []byte, i int) ([]byte, int) {
	if i <= 0 || i >= len(cmd) || cmd[i] != '$' {
		return nil, len(cmd)
	}
	eol := bytes.IndexByte(cmd[i:], '\n')
	if eol < 2 {
		return nil, len(cmd)
	}
	n, err := strconv.Atoi(string(cmd[i+1 : i+eol-1]))
	start := i + eol + 1
	if err != nil || n < 0 || start+n+2 > len(cmd) {
		return nil, len(cmd)
	}
	return cmd[start : start+n], start + n + 2
}

// commandAt is where command i (from 0) of a payload of RESP commands
// starts and ends.
func commandAt(payload []byte, i int) (start, end int, ok bool) {
	for k := 0; ; k++ {
		n, ok := resp.Skip(payload[start:])
		if !ok || i < 0 {
			return 0, 0, false
		}
		if k == i {
			return start, start + n, true
		}
		start += n
	}
}

// appendCounted appends e's payload with INFO commandstats right before and
// right after its script command.
func appendCounted(dst []byte, e redisRecord) []byte {
	start, end, _ := commandAt(e.payload, e.replies-1-e.after)
	dst = append(append(dst, e.payload[:start]...), infoStats...)
	dst = append(append(dst, e.payload[start:end]...), infoStats...)
	return append(dst, e.payload[end:]...)
}

// countedReplies reads the replies of a counted script's entry (two more
// than its own: the INFOs around the script), adds what the script called
// to the agent's counts, and returns the client's reply.
func (b *redisBackend) countedReplies(q applying, sent time.Time) ([]byte, error) {
	e := q.rec
	at := e.replies - 1 - e.after // the INFO before the script
	var before, raw []byte
	for i := range e.replies + 2 {
		r, err := b.conn.reply()
		if err != nil {
			return nil, err
		}
		switch i {
		case at:
			before = bytes.Clone(r)
		case at + 1:
			raw = bytes.Clone(r)
		case at + 2:
			if time.Since(sent) < time.Duration(b.scripts.busyReply.Load())*time.Millisecond {
				b.scripts.add(scriptCalls(before, r, e))
			}
		}
	}
	return raw, nil
}

// scriptCalls is what the script between two INFO commandstats replies
// called: their difference, less the first INFO and the script command.
func scriptCalls(before, after []byte, e redisRecord) map[string]callCounts {
	b, a := parseCommandStats(before), parseCommandStats(after)
	start, end, _ := commandAt(e.payload, e.replies-1-e.after)
	name, _ := bulkAfter(e.payload[start:end], bytes.IndexByte(e.payload[start:end], '\n')+1)
	script := strings.ToLower(string(name))
	out := map[string]callCounts{}
	for name, x := range a {
		y := b[name]
		d := callCounts{x.calls - y.calls, x.usec - y.usec, x.rejected - y.rejected, x.failed - y.failed}
		switch name {
		case "info":
			d.calls--
			d.usec = 0 // the first INFO's, and any the script called, are not told apart
		case script:
			d = callCounts{} // the agent counts its client's script itself
		}
		if d.calls > 0 || d.rejected > 0 || d.failed > 0 {
			out[name] = d
		}
	}
	return out
}

// parseCommandStats reads the cmdstat_ lines of an INFO commandstats reply.
func parseCommandStats(raw []byte) map[string]callCounts {
	out := map[string]callCounts{}
	_, v, err := resp.ReadReply(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(v.Str), "\r\n") {
		name, fields, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		var c callCounts
		for _, f := range strings.Split(fields, ",") {
			k, val, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseInt(val, 10, 64)
			switch k {
			case "calls":
				c.calls = n
			case "usec":
				c.usec = n
			case "rejected_calls":
				c.rejected = n
			case "failed_calls":
				c.failed = n
			}
		}
		out[name] = c
	}
	return out
}

// addScriptCalls adds the commands a client's script called to the agent's
// commandstats (not to its latency histograms: redis's counts tell totals,
// not each call's time).
func (a *agent) addScriptCalls(calls map[string]callCounts) {
	for name, c := range calls {
		s := a.stats.get(name)
		s.calls.Add(c.calls)
		s.usec.Add(c.usec)
		s.rejected.Add(c.rejected)
		s.failed.Add(c.failed)
	}
}

package redis

import (
	"bufio"
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/gait-dev/gait/internal/rediscmd"
	"github.com/gait-dev/gait/internal/resp"
)

// probeQueued asks the local redis-server whether it would queue args in a
// transaction now (MULTI, the command, DISCARD: nothing runs), so the
// client gets redis's own queue-time answer: QUEUED, or the error that
// makes EXEC abort (OOM under maxmemory, BUSY while a script runs, a
// command redis does not know). The replica first applies every write
// acknowledged before (a linearizable read index), so a CONFIG SET
// maxmemory through any agent is in force. "" means QUEUED or that the
// server could not be asked; EXEC then decides.
func (a *agent) probeQueued(args [][]byte) string {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.WriteTimeout)
	index, err := a.host.LinearizableIndex(ctx)
	if err != nil {
		index = a.host.LastIndex()
	}
	a.host.WaitApplied(ctx, index)
	cancel()
	payload := resp.AppendCommand(nil, []byte("MULTI"))
	payload = resp.AppendCommand(payload, args...)
	payload = resp.AppendCommand(payload, []byte("DISCARD"))
	raw, err := a.reads.doSome(payload, 3, 1)
	if err != nil || len(raw) < 3 || raw[0] != '-' {
		return ""
	}
	return strings.TrimRight(string(raw[1:]), "\r\n")
}

// execBusy is EXEC's answer while this replica's redis-server runs a long
// script, as redis answers it: the transaction is discarded. "" when it does
// not.
func (a *agent) execBusy() string {
	if a.redis.busyFor() <= busyCheck {
		return ""
	}
	raw, err := a.reads.do(defaultMode, resp.AppendCommand(nil, []byte("PING")))
	if err != nil || !strings.HasPrefix(string(raw), "-BUSY") {
		return ""
	}
	return "EXECABORT Transaction discarded because of: " + strings.TrimRight(string(raw[1:]), "\r\n")
}

// readOnly tells whether a transaction only reads: every queued command is
// a read (or PING, ECHO). Redis runs such a transaction even out of memory,
// and so must gait, though it queues the commands on the applying
// connection only at EXEC, where redis refuses to queue anything once
// memory is out.
func readOnly(queued [][][]byte) bool {
	for _, q := range queued {
		name, sp, _ := rediscmd.Lookup(q)
		if sp.Kind != rediscmd.Read && name != "PING" && name != "ECHO" {
			return false
		}
	}
	return len(queued) > 0
}

// readTransaction runs a read-only transaction as one log entry without
// MULTI: nothing else runs on the applying connection between its
// commands, so they see one state, as EXEC's do. The client gets EXEC's
// array of their replies.
func (a *agent) readTransaction(st *clientState, queued [][][]byte) slot {
	e := redisRecord{batch: true, replies: len(queued)}
	for i, q := range queued {
		e.payload = resp.AppendCommand(e.payload, q...)
		e.reads = append(e.reads, i)
	}
	s := a.write(st, e)
	if s.fill == nil {
		return s
	}
	fill := s.fill
	header := []byte("*" + strconv.Itoa(len(queued)) + "\r\n")
	s.fill = func() []byte {
		raw := fill()
		if bytes.HasPrefix(raw, []byte("-ERR gait replica: ")) {
			return raw // no replica answered
		}
		return append(header, raw...)
	}
	return s
}

// execAbortCause words a transaction's abort as redis does when EXEC
// itself is refused: redis found a queued command it would not queue at
// EXEC although the client's MULTI queued it (out of memory since), so
// the agent asks its redis-server which, as probeQueued does at queue time.
func (a *agent) execAbortCause(s slot, queued [][][]byte) slot {
	fill := s.fill
	if fill == nil {
		return s
	}
	s.fill = func() []byte {
		raw := fill()
		if !bytes.HasPrefix(raw, []byte("-EXECABORT Transaction discarded because of previous errors.")) {
			return raw
		}
		for _, q := range queued {
			if msg := a.probeQueued(q); msg != "" {
				return resp.Error("EXECABORT Transaction discarded because of: " + msg)
			}
		}
		return raw
	}
	return s
}

// ownQueued says whether a queued command is one the agent runs itself at
// EXEC, not the redis-servers: CLIENT PAUSE and CLIENT UNPAUSE (redis
// queues them like any command; the pause starts when the transaction
// ends), SLOWLOG and LATENCY HISTOGRAM (the agent's own).
func ownQueued(q [][]byte) bool {
	return len(q) >= 2 && (strings.EqualFold(string(q[0]), "CLIENT") &&
		(strings.EqualFold(string(q[1]), "PAUSE") || strings.EqualFold(string(q[1]), "UNPAUSE")) ||
		strings.EqualFold(string(q[0]), "SLOWLOG") ||
		strings.EqualFold(string(q[0]), "LATENCY") && strings.EqualFold(string(q[1]), "HISTOGRAM"))
}

// ownQueuedArity is redis's queue-time refusal of an agent-run command
// with the wrong number of arguments ("" when it may be queued).
func ownQueuedArity(q [][]byte) string {
	name := strings.ToLower(string(q[0])) + "|" + strings.ToLower(string(q[1]))
	switch name {
	case "client|pause":
		if len(q) == 3 || len(q) == 4 {
			return ""
		}
	case "client|unpause", "slowlog|len", "slowlog|reset", "slowlog|help":
		if len(q) == 2 {
			return ""
		}
	case "slowlog|get":
		if len(q) <= 3 {
			return ""
		}
	default:
		return ""
	}
	return "ERR wrong number of arguments for '" + name + "' command"
}

// ownCommand runs a command the agent answers itself inside a
// transaction, or SLOWLOG and LATENCY HISTOGRAM outside one.
func (a *agent) ownCommand(st *clientState, q [][]byte) []byte {
	switch strings.ToUpper(string(q[0])) {
	case "SLOWLOG":
		return a.slowlogCommand(st, q)
	case "LATENCY":
		return a.latencyHistogram(st, q)
	}
	return a.clientCommand(st, q)
}

// withoutOwn replaces the agent-run commands of a transaction with PING,
// so the redis-servers run the rest at the same positions, and returns
// how to answer them, by position. A CONFIG SET of the local server's own
// settings (ownConfigSet) is looked at now, as EXEC runs it: answered here
// when that is all it sets, or refused whole; else it goes on without them.
func (a *agent) withoutOwn(st *clientState, queued [][][]byte) (out [][][]byte, own map[int]func() []byte) {
	out = queued
	put := func(i int, q [][]byte, reply func() []byte) {
		if own == nil {
			out, own = slices.Clone(queued), map[int]func() []byte{}
		}
		out[i] = q
		if reply != nil {
			own[i] = reply
		}
	}
	for i, q := range queued {
		switch {
		case ownQueued(q):
			put(i, [][]byte{[]byte("PING")}, func() []byte { return a.ownCommand(st, q) })
		case len(q) >= 2 && strings.EqualFold(string(q[0]), "CONFIG") && strings.EqualFold(string(q[1]), "SET"):
			rest, reply := a.ownConfigSet(q)
			if reply != nil {
				put(i, [][]byte{[]byte("PING")}, func() []byte { return reply })
			} else if len(rest) != len(q) {
				put(i, rest, nil)
			}
		}
	}
	return out, own
}

// runOwn has the agent run its commands of a transaction once the
// transaction ran (a nil or error reply: it did not, and neither do they),
// in order, and puts their replies in EXEC's array in place of the PINGs.
func (a *agent) runOwn(s slot, own map[int]func() []byte) slot {
	if own == nil || s.fill == nil {
		return s
	}
	fill := s.fill
	s.fill = func() []byte {
		raw := fill()
		r := bufio.NewReader(bytes.NewReader(raw))
		head, err := r.ReadSlice('\n')
		if err != nil || head[0] != '*' {
			return raw
		}
		n, err := strconv.Atoi(string(bytes.TrimSpace(head[1:])))
		if err != nil || n < 0 {
			return raw
		}
		out := append([]byte(nil), head...)
		for i := range n {
			elem, _, err := resp.ReadReply(r)
			if err != nil {
				return raw
			}
			if reply, ok := own[i]; ok {
				elem = reply()
			}
			out = append(out, elem...)
		}
		return out
	}
	return s
}

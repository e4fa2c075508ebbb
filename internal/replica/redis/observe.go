package redis

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gait-dev/gait/internal/rediscmd"
	"github.com/gait-dev/gait/internal/resp"
)

// The agent is the server its clients talk to, so what redis tells of the
// commands it ran (INFO commandstats and latencystats, LATENCY HISTOGRAM,
// the slow log) the agent tells of the commands its clients sent: as they
// sent them (EXPIRE, not the PEXPIREAT the log holds; SPOP, not its
// script; a blocking command once, not each attempt), timed from the moment
// the command's bytes arrived to the moment its reply was ready, which is
// the latency the client saw at the agent. Its redis-server's own counts
// would describe the applier's commands, of every agent's clients.

// cmdStat is one command's counts since the last CONFIG RESETSTAT.
type cmdStat struct {
	calls, usec, rejected, failed atomic.Int64
	// hist counts calls by duration in powers of two of 1,024 ns: bucket k
	// holds those up to 1,024·2^k ns (LATENCY HISTOGRAM's buckets).
	hist [histBuckets]atomic.Int64
}

const histBuckets = 40

// cmdStats are the agent's commandstats, by redis's name (lower case,
// "client|list" for a sub-command).
type cmdStats struct {
	mu sync.RWMutex
	m  map[string]*cmdStat
}

func (cs *cmdStats) get(name string) *cmdStat {
	cs.mu.RLock()
	s := cs.m[name]
	cs.mu.RUnlock()
	if s != nil {
		return s
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.m == nil {
		cs.m = map[string]*cmdStat{}
	}
	if s = cs.m[name]; s == nil {
		s = &cmdStat{}
		cs.m[name] = s
	}
	return s
}

// reset zeroes the counts (CONFIG RESETSTAT).
func (cs *cmdStats) reset() {
	cs.mu.Lock()
	cs.m = nil
	cs.mu.Unlock()
}

// snapshot is the commands called or refused, by name.
func (cs *cmdStats) snapshot() (names []string, stats map[string]*cmdStat) {
	cs.mu.RLock()
	defer cs.mu.RUnlock()
	stats = make(map[string]*cmdStat, len(cs.m))
	for n, s := range cs.m {
		if s.calls.Load() > 0 || s.rejected.Load() > 0 || s.failed.Load() > 0 {
			names = append(names, n)
			stats[n] = s
		}
	}
	sort.Strings(names)
	return names, stats
}

func (s *cmdStat) record(d time.Duration, failed bool) {
	s.calls.Add(1)
	s.usec.Add(d.Microseconds())
	if failed {
		s.failed.Add(1)
	}
	s.hist[min(bits.Len64(uint64(max(d, 0))>>10), histBuckets-1)].Add(1)
}

// bucketUsec is the upper bound of histogram bucket k, in microseconds.
func bucketUsec(k int) int64 { return (int64(1024) << k) / 1000 }

// percentile is the upper bound, in microseconds, of the bucket holding
// quantile q of the calls (0 without calls).
func (s *cmdStat) percentile(q float64) int64 {
	var counts [histBuckets]int64
	var total int64
	for k := range counts {
		counts[k] = s.hist[k].Load()
		total += counts[k]
	}
	rank := int64(q/100*float64(total) + 0.5)
	var seen int64
	for k, c := range counts {
		seen += c
		if c > 0 && seen >= max(rank, 1) {
			return bucketUsec(k)
		}
	}
	return 0
}

// Redis's slow log bounds: entries keep 32 arguments (the last says how many
// more there were) of 128 bytes each.
const (
	slowMaxArgs  = 32
	slowMaxBytes = 128
)

// slowEntry is one slow log entry, as SLOWLOG GET shows it.
type slowEntry struct {
	id   int64
	at   int64 // Unix seconds
	usec int64
	// args are packed (packArgs): most entries of a busy slow log are
	// pushed out before anyone reads them, so trimming and redacting
	// wait for SLOWLOG GET.
	args       []byte
	addr, name string
}

// slowLog is the agent's slow log, oldest first. threshold (µs; negative
// disables) and maxLen are redis's slowlog-log-slower-than and
// slowlog-max-len, defaults redis's, set by CONFIG SET through this agent.
type slowLog struct {
	threshold, maxLen atomic.Int64
	// set counts the CONFIG SETs through this agent; setAt is the log
	// index the latest was answered at.
	set, setAt atomic.Uint64
	mu         sync.Mutex
	entries    []slowEntry
	nextID     int64
}

func newSlowLog() *slowLog {
	l := &slowLog{}
	l.threshold.Store(10000)
	l.maxLen.Store(128)
	return l
}

// push logs entries, oldest first, as many pushes of one would: each
// takes the next id, but only those slowlog-max-len keeps are stored (a
// pipelined batch of a thousand slow commands keeps 128 by default).
func (l *slowLog) push(entries []slowEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	skip := max(len(entries)-int(max(l.maxLen.Load(), 0)), 0)
	for i := range entries[skip:] {
		e := entries[skip+i]
		e.id = l.nextID + int64(skip+i)
		// Its own copy: the packed arguments share their observation's buffer.
		e.args = slices.Clone(e.args)
		l.entries = append(l.entries, e)
	}
	l.nextID += int64(len(entries))
	l.trim()
}

// trim drops the oldest entries past slowlog-max-len; called with mu held.
func (l *slowLog) trim() {
	if n := int64(len(l.entries)) - max(l.maxLen.Load(), 0); n > 0 {
		clear(l.entries[:n]) // their arguments may go
		l.entries = l.entries[n:]
	}
}

func (l *slowLog) reset() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}

// packArgs appends to dst what the slow log keeps of args (32 arguments
// of 128 bytes at most): the argument count, then each kept argument's
// full length and kept bytes. Most commands are never slow, so trimming
// waits for unpackArgs.
func packArgs(dst []byte, args [][]byte) []byte {
	n := min(len(args), slowMaxArgs)
	size := binary.MaxVarintLen64
	for _, a := range args[:n] {
		size += binary.MaxVarintLen64 + min(len(a), slowMaxBytes)
	}
	dst = binary.AppendUvarint(slices.Grow(dst, size), uint64(len(args)))
	for _, a := range args[:n] {
		dst = append(binary.AppendUvarint(dst, uint64(len(a))), a[:min(len(a), slowMaxBytes)]...)
	}
	return dst
}

// unpackArgs is a packed command as redis shows it in a slow log entry:
// past 32 arguments the last says how many more there were, past 128
// bytes an argument says how many more it had; secrets redacted.
func unpackArgs(p []byte) [][]byte {
	argc, k := binary.Uvarint(p)
	p = p[k:]
	var out [][]byte
	for len(p) > 0 {
		if len(out) == slowMaxArgs-1 && argc > slowMaxArgs {
			out = append(out, fmt.Appendf(nil, "... (%d more arguments)", argc-slowMaxArgs+1))
			break
		}
		full, k := binary.Uvarint(p)
		kept := min(int(full), slowMaxBytes)
		arg := append([]byte(nil), p[k:k+kept]...)
		if int(full) > kept {
			arg = fmt.Appendf(arg, "... (%d more bytes)", int(full)-kept)
		}
		out = append(out, arg)
		p = p[k+kept:]
	}
	return redact(out)
}

// redact hides what redis hides in its slow log: the values of sensitive
// configuration, and HELLO's credentials.
func redact(args [][]byte) [][]byte {
	hidden := []byte("(redacted)")
	switch {
	case len(args) > 3 && bytes.EqualFold(args[0], []byte("CONFIG")) && bytes.EqualFold(args[1], []byte("SET")):
		for i := 2; i+1 < len(args); i += 2 {
			switch strings.ToLower(string(args[i])) {
			case "masterauth", "masteruser", "requirepass":
				args[i+1] = hidden
			}
		}
	case bytes.EqualFold(args[0], []byte("HELLO")):
		for i := 1; i+2 < len(args); i++ {
			if bytes.EqualFold(args[i], []byte("AUTH")) {
				args[i+1], args[i+2] = hidden, hidden
			}
		}
	}
	return args
}

// noted is one command an observation covers.
type noted struct {
	name string // commandstats' name; "" for a command redis does not know
	// args are packed for the slow log (packArgs), in the observation's
	// packed buffer; nil when the slow log is off.
	args []byte
	// oomFails: an EVAL of a script without a shebang, which redis never
	// refuses for memory: an OOM reply is the script's own failure.
	oomFails bool
}

// observation follows one slot's commands from their reading to their
// reply.
type observation struct {
	a  *agent
	st *clientState
	// start is when the command's bytes arrived (Unix ns, the kernel's
	// stamp: no clock read here); held how long CLIENT PAUSE held it.
	start int64
	held  time.Duration
	cmds  []noted
	one   [1]noted // cmds' room for the usual one command
	// packed holds the packed arguments of cmds: one buffer for a whole
	// pipelined batch rather than an allocation per command.
	packed []byte
	// slow are the entries the observation logs, pushed together when
	// its reply is counted.
	slow []slowEntry
	// stat is the commandstats entry of the last command counted (named
	// statName), for a batch of one command repeated.
	stat     *cmdStat
	statName string
	bufs     *batchBufs // a pipelined batch's buffers, from batchPool
	// queued: the command joins a transaction, and only a refusal counts;
	// exec: cmds[0] is EXEC, the rest the transaction's commands, which
	// count by EXEC's reply's elements.
	queued, exec bool
}

// observe starts observing a command the connection just read (EXEC: with
// the commands it runs).
func (a *agent) observe(st *clientState, args [][]byte) *observation {
	o := &observation{a: a, st: st, start: st.stamped.Arrived(), held: st.pausedFor}
	o.cmds = o.one[:0]
	st.blockedFor = 0
	is := func(name string) bool { return bytes.EqualFold(args[0], []byte(name)) }
	switch {
	case st.inMulti && is("EXEC"):
		o.exec = true
		o.cmds = append(append(o.cmds, o.note(args)), st.queuedNotes...)
		st.queuedNotes = nil
		return o
	case !st.inMulti && is("MULTI"):
		st.queuedNotes = nil
	case st.inMulti && !is("DISCARD") && !is("MULTI") && !is("QUIT") && !is("RESET"):
		o.queued = true
	}
	o.cmds = append(o.cmds, o.note(args))
	return o
}

// join adds a command pipelined into the same slot.
func (o *observation) join(args [][]byte) {
	if o.bufs == nil {
		o.bufs = batchPool.Get().(*batchBufs)
		o.cmds = append(o.bufs.cmds, o.cmds...)
		o.packed, o.slow = o.bufs.packed, o.bufs.slow
	}
	o.cmds = append(o.cmds, o.note(args))
}

// batchBufs are the buffers of a pipelined batch's observation, reused by
// the next batch: a batch of a thousand commands would otherwise grow
// them from nothing each time.
type batchBufs struct {
	cmds   []noted
	packed []byte
	slow   []slowEntry
}

var batchPool = sync.Pool{New: func() any { return new(batchBufs) }}

// release hands a batch's buffers back once its commands are counted
// (the slow log keeps copies of what it logs).
func (o *observation) release() {
	if o.bufs == nil {
		return
	}
	clear(o.cmds)
	clear(o.slow)
	*o.bufs = batchBufs{cmds: o.cmds[:0], packed: o.packed[:0], slow: o.slow[:0]}
	batchPool.Put(o.bufs)
	o.bufs, o.cmds, o.packed, o.slow = nil, nil, nil, nil
}

func (o *observation) note(args [][]byte) noted {
	n := noted{name: statName(args[0])}
	if n.name == "" {
		return n
	}
	if containers[n.name] && len(args) > 1 {
		n.name += "|" + strings.ToLower(string(args[1]))
	}
	n.oomFails = (n.name == "eval" || n.name == "eval_ro") && len(args) > 1 && !bytes.HasPrefix(args[1], []byte("#!"))
	if o.a.slow.threshold.Load() >= 0 || n.name == "config|set" { // CONFIG SET may turn the slow log on
		from := len(o.packed)
		o.packed = packArgs(o.packed, args)
		// Capped: appending to the buffer must not write over it.
		n.args = o.packed[from:len(o.packed):len(o.packed)]
	}
	return n
}

// statNames caches the lower-case name of each spelling of a known command
// clients sent (up to maxStatNames spellings): most requests then look
// their name up without an allocation.
var statNames struct {
	sync.RWMutex
	m map[string]string
}

const maxStatNames = 4096

// statName is a command's name in commandstats, "" for one redis does not
// know.
func statName(cmd []byte) string {
	statNames.RLock()
	name, ok := statNames.m[string(cmd)]
	statNames.RUnlock()
	if ok {
		return name
	}
	if _, _, msg := rediscmd.Lookup([][]byte{cmd}); strings.HasPrefix(msg, "ERR unknown command") {
		return ""
	}
	name = strings.ToLower(string(cmd))
	statNames.Lock()
	if statNames.m == nil {
		statNames.m = map[string]string{}
	}
	if len(statNames.m) < maxStatNames {
		statNames.m[string(cmd)] = name
	}
	statNames.Unlock()
	return name
}

// done has the slot's reply counted once it is ready.
func (o *observation) done(s slot) slot {
	if s.fill == nil { // answered by now, perhaps after waiting for data
		o.end(s.reply, o.st.blockedFor)
		return s
	}
	fill := s.fill
	s.fill = func() []byte {
		raw := fill()
		o.end(raw, 0)
		return raw
	}
	return s
}

// end counts the commands by their replies: the time a blocking command
// waited for data, or a paused client was held, is left out, as redis
// leaves it out.
func (o *observation) end(raw []byte, waited time.Duration) {
	d := max(time.Duration(time.Now().UnixNano()-o.start)-o.held-waited, 0) // 0 if the clock stepped back
	defer o.logSlow()
	switch {
	case o.queued:
		if bytes.HasPrefix(raw, []byte("-")) && o.cmds[0].name != "" && !unknownSub(raw) {
			o.a.stats.get(o.cmds[0].name).rejected.Add(1)
		} else if bytes.Equal(raw, []byte("+QUEUED\r\n")) {
			// As the client sent it: the queue holds it rewritten.
			o.st.queuedNotes = append(o.st.queuedNotes, o.cmds[0])
		}
		return
	case o.exec:
		o.count(o.cmds[0], raw, d, false)
		elems, ok := execElements(raw)
		if !ok {
			return
		}
		run := o.cmds[1:]
		// A SLOWLOG RESET in the transaction, run by the agent once it
		// ended, leaves the entries after it only.
		logFrom := 0
		for i, c := range run {
			if c.name == "slowlog|reset" {
				logFrom = i
			}
		}
		for i, c := range run {
			if i < len(elems) {
				o.count(c, elems[i], d, i >= logFrom)
			}
		}
		return
	}
	if len(o.cmds) == 1 {
		o.count(o.cmds[0], raw, d, true)
		return
	}
	for _, c := range o.cmds {
		k, ok := resp.Skip(raw)
		if len(raw) == 0 || !ok {
			break
		}
		o.count(c, raw[:k], d, true)
		raw = raw[k:]
	}
	o.logSlow()
	o.release()
}

// count notes one command's reply: in commandstats, and in the slow log
// when log and slow enough.
func (o *observation) count(c noted, reply []byte, d time.Duration, log bool) {
	if c.name == "" || unknownSub(reply) {
		return
	}
	a := o.a
	isErr := len(reply) > 0 && (reply[0] == '-' || reply[0] == '!')
	if isErr && rejection(reply) && !(c.oomFails && bytes.HasPrefix(reply, []byte("-OOM "))) {
		a.stats.get(c.name).rejected.Add(1)
		return
	}
	if !isErr && c.name == "config|resetstat" { // as the servers' (also inside MULTI)
		a.stats.reset()
		o.stat = nil
	}
	if o.stat == nil || o.statName != c.name {
		o.stat, o.statName = a.stats.get(c.name), c.name
	}
	o.stat.record(d, isErr)
	if !isErr && c.name == "config|set" {
		o.logSlow() // the entries before it, under the settings before it
		a.slow.configure(unpackArgs(c.args))
		a.slow.set.Add(1)
		a.slow.setAt.Store(o.st.lastIndex.Load())
	}
	if t := a.slow.threshold.Load(); log && c.args != nil && t >= 0 && d.Microseconds() >= t && c.name != "exec" {
		e := slowEntry{usec: d.Microseconds(), args: c.args}
		if len(o.slow) > 0 { // the client and the second are the observation's
			e.at, e.addr, e.name = o.slow[0].at, o.slow[0].addr, o.slow[0].name
		} else {
			e.at, e.addr, e.name = time.Now().Unix(), o.st.conn.RemoteAddr().String(), o.st.getName()
		}
		o.slow = append(o.slow, e)
	}
}

// logSlow pushes the slow log entries noted so far.
func (o *observation) logSlow() {
	if len(o.slow) > 0 {
		o.a.slow.push(o.slow)
		o.slow = o.slow[:0]
	}
}

// configure takes slowlog-log-slower-than and slowlog-max-len from a
// CONFIG SET the servers accepted.
func (l *slowLog) configure(args [][]byte) {
	for i := 2; i+1 < len(args); i += 2 {
		v, err := strconv.ParseInt(string(args[i+1]), 10, 64)
		if err != nil {
			continue
		}
		switch strings.ToLower(string(args[i])) {
		case "slowlog-log-slower-than":
			l.threshold.Store(v)
		case "slowlog-max-len":
			l.maxLen.Store(v)
			l.mu.Lock()
			l.trim()
			l.mu.Unlock()
		}
	}
}

// followSlowlogConfig takes, every second, the slow log's settings (and
// busy-reply-threshold, for scriptstats.go) from the local redis-server, where CONFIG SET through any agent is applied in
// log order: a CONFIG SET through another agent reaches this agent's slow
// log within a second. A CONFIG SET through this agent wins over a look
// begun before its server applied it.
func (a *agent) followSlowlogConfig() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	get := resp.AppendCommand(nil, []byte("CONFIG"), []byte("GET"), []byte("slowlog-*"), []byte("busy-reply-threshold"))
	for {
		select {
		case <-a.done:
			return
		case <-t.C:
		}
		l := a.slow
		set := l.set.Load()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := a.host.WaitApplied(ctx, l.setAt.Load())
		cancel()
		if err != nil {
			continue
		}
		raw, err := a.reads.do(defaultMode, get)
		if err != nil {
			continue
		}
		_, v, err := resp.ReadReply(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil || l.set.Load() != set {
			continue
		}
		args := [][]byte{[]byte("CONFIG"), []byte("SET")}
		for i, e := range v.Arr {
			args = append(args, e.Str)
			if string(e.Str) == "busy-reply-threshold" && i+1 < len(v.Arr) && a.redis.scripts != nil {
				if ms, err := strconv.ParseInt(string(v.Arr[i+1].Str), 10, 64); err == nil {
					a.redis.scripts.busyReply.Store(ms)
				}
			}
		}
		l.configure(args)
	}
}

// rejection tells an error redis answers before it runs a command (which
// counts in rejected_calls) from one the command itself answered. An
// error raised inside a script (redis adds "script: ...") is the script's
// failure, whatever its kind.
func rejection(reply []byte) bool {
	if bytes.Contains(reply, []byte(" script: ")) {
		return false
	}
	msg := string(reply[1:min(len(reply), 64)])
	for _, p := range []string{"ERR wrong number of arguments", "NOAUTH", "NOPERM", "OOM ", "BUSY ", "MISCONF",
		"NOREPLICAS", "READONLY", "LOADING", "MASTERDOWN", "ERR Can't execute", "TRYAGAIN gait replica"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return bytes.Contains(reply, []byte("is not supported by gait replica"))
}

// unknownSub says the reply is redis's refusal of an unknown sub-command,
// which redis counts for no command.
func unknownSub(reply []byte) bool {
	return bytes.HasPrefix(reply, []byte("-ERR unknown subcommand")) || bytes.HasPrefix(reply, []byte("-ERR Unknown subcommand"))
}

// splitReplies cuts raw into its first n replies (fewer if it does not
// hold n).
func splitReplies(raw []byte, n int) [][]byte {
	out := make([][]byte, 0, n)
	for len(out) < n && len(raw) > 0 {
		k, ok := resp.Skip(raw)
		if !ok {
			break
		}
		out = append(out, raw[:k])
		raw = raw[k:]
	}
	return out
}

// execElements are the replies inside EXEC's array; ok is false when EXEC
// ran nothing (an error, or nil for a WATCH that aborted it).
func execElements(raw []byte) ([][]byte, bool) {
	if len(raw) == 0 || raw[0] != '*' {
		return nil, false
	}
	i := bytes.IndexByte(raw, '\n')
	n, err := strconv.Atoi(string(bytes.TrimSpace(raw[1:max(i, 1)])))
	if i < 0 || err != nil || n < 0 {
		return nil, false
	}
	return splitReplies(raw[i+1:], n), true
}

// slowlogCommand answers SLOWLOG GET [count], LEN, RESET and HELP from the
// agent's slow log.
func (a *agent) slowlogCommand(st *clientState, args [][]byte) []byte {
	sub := strings.ToUpper(string(args[1]))
	arity := map[string][2]int{"GET": {2, 3}, "LEN": {2, 2}, "RESET": {2, 2}, "HELP": {2, 2}}
	if n, ok := arity[sub]; ok && (len(args) < n[0] || len(args) > n[1]) {
		return resp.Error(fmt.Sprintf("ERR wrong number of arguments for 'slowlog|%s' command", strings.ToLower(sub)))
	}
	l := a.slow
	switch sub {
	case "LEN":
		l.mu.Lock()
		defer l.mu.Unlock()
		return resp.Int(len(l.entries))
	case "RESET":
		l.reset()
		return resp.Simple("OK")
	case "HELP":
		var v resp.Value
		v.Kind = '*'
		for _, line := range []string{"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"GET [<count>]", "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
			"    Entries are made of:", "    id, timestamp, time in microseconds, arguments array, client IP and port,",
			"    client name", "LEN", "    Return the length of the slowlog.", "RESET", "    Reset the slowlog.",
			"HELP", "    Prints this help."} {
			v.Arr = append(v.Arr, resp.Value{Kind: '+', Str: []byte(line)})
		}
		return appendValue(nil, v)
	case "GET":
		count := int64(10)
		if len(args) == 3 {
			var err error
			if count, err = strconv.ParseInt(string(args[2]), 10, 64); err != nil {
				return resp.Error("ERR value is not an integer or out of range")
			}
			if count < -1 {
				return resp.Error("ERR count should be greater than or equal to -1")
			}
		}
		l.mu.Lock()
		entries := slices.Clone(l.entries)
		l.mu.Unlock()
		if count == -1 || count > int64(len(entries)) {
			count = int64(len(entries))
		}
		out := resp.Value{Kind: '*'}
		for i := range count { // newest first
			e := entries[int64(len(entries))-1-i]
			argv := resp.Value{Kind: '*'}
			for _, arg := range unpackArgs(e.args) {
				argv.Arr = append(argv.Arr, resp.Value{Kind: '$', Str: arg})
			}
			out.Arr = append(out.Arr, resp.Value{Kind: '*', Arr: []resp.Value{{Kind: ':', Num: e.id}, {Kind: ':', Num: e.at},
				{Kind: ':', Num: e.usec}, argv, {Kind: '$', Str: []byte(e.addr)}, {Kind: '$', Str: []byte(e.name)}}})
		}
		return appendValue(nil, out)
	}
	return resp.Error("ERR unknown subcommand '" + argWord(args[1]) + "'. Try SLOWLOG HELP.")
}

// latencyHistogram answers LATENCY HISTOGRAM [command ...] from the agent's
// counts: every command called, or those named (a container names its
// sub-commands); unknown names are skipped, as redis skips them.
func (a *agent) latencyHistogram(st *clientState, args [][]byte) []byte {
	names, stats := a.stats.snapshot()
	var want []string
	if len(args) > 2 {
		for _, arg := range args[2:] {
			n := strings.ToLower(string(arg))
			for _, have := range names {
				if have == n || strings.HasPrefix(have, n+"|") {
					want = append(want, have)
				}
			}
		}
	} else {
		want = names
	}
	mapKind := byte('*')
	if st.proto.Load() == 3 {
		mapKind = '%'
	}
	out := resp.Value{Kind: mapKind}
	for _, n := range want {
		s := stats[n]
		calls := s.calls.Load()
		if calls == 0 || slicesContain(out.Arr, n) {
			continue
		}
		buckets := resp.Value{Kind: mapKind}
		var cum, prev int64
		for k := range s.hist {
			cum += s.hist[k].Load()
			if cum > prev {
				buckets.Arr = append(buckets.Arr, resp.Value{Kind: ':', Num: bucketUsec(k)}, resp.Value{Kind: ':', Num: cum})
			}
			prev = cum
		}
		out.Arr = append(out.Arr, resp.Value{Kind: '$', Str: []byte(n)}, resp.Value{Kind: mapKind, Arr: []resp.Value{
			{Kind: '$', Str: []byte("calls")}, {Kind: ':', Num: calls}, {Kind: '$', Str: []byte("histogram_usec")}, buckets}})
	}
	return appendValue(nil, out)
}

// slicesContain says whether the map's keys (even elements) hold name.
func slicesContain(kv []resp.Value, name string) bool {
	for i := 0; i < len(kv); i += 2 {
		if string(kv[i].Str) == name {
			return true
		}
	}
	return false
}

// patchCommandStats puts the agent's counts in place of the server's in an
// INFO reply's Commandstats and Latencystats sections (when it has them).
func (a *agent) patchCommandStats(raw []byte) []byte {
	if !bytes.Contains(raw, []byte("# Commandstats\r\n")) && !bytes.Contains(raw, []byte("# Latencystats\r\n")) {
		return raw
	}
	_, v, err := resp.ReadReply(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil || (v.Kind != '$' && v.Kind != '=') || v.Null {
		return raw
	}
	names, stats := a.stats.snapshot()
	var cmd, lat strings.Builder
	for _, n := range names {
		s := stats[n]
		calls, usec := s.calls.Load(), s.usec.Load()
		perCall := 0.0
		if calls > 0 {
			perCall = float64(usec) / float64(calls)
		}
		fmt.Fprintf(&cmd, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
			n, calls, usec, perCall, s.rejected.Load(), s.failed.Load())
		if calls > 0 {
			fmt.Fprintf(&lat, "latency_percentiles_usec_%s:p50=%d.000,p99=%d.000,p99.9=%d.000\r\n",
				n, s.percentile(50), s.percentile(99), s.percentile(99.9))
		}
	}
	v.Str = replaceSection(replaceSection(v.Str, "# Commandstats\r\n", cmd.String()), "# Latencystats\r\n", lat.String())
	return appendValue(nil, v)
}

// replaceSection replaces the lines of the INFO section that starts with
// header (up to the blank line before the next section) with body.
func replaceSection(info []byte, header, body string) []byte {
	i := bytes.Index(info, []byte(header))
	if i < 0 {
		return info
	}
	start := i + len(header)
	end := len(info)
	if k := bytes.Index(info[start:], []byte("\r\n# ")); k >= 0 {
		end = start + k
	}
	return append(append(append([]byte(nil), info[:start]...), body...), info[end:]...)
}

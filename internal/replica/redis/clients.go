package redis

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/replica"
	"github.com/gait-dev/gait/internal/resp"
)

// clientConn is what CLIENT LIST tells of one connection: the agent's own
// connection with its client, not the redis-server's connections.
type clientConn struct {
	id      uint64
	conn    net.Conn
	created time.Time
	mu      sync.Mutex
	name    string
	unblock *unblocking // the blocked command's, while one waits
	// last is the time and name of the latest command, for idle= and cmd=.
	last    atomic.Int64
	lastCmd atomic.Value
	// cmdSeen is the name last stored in lastCmd, kept by the reading
	// goroutine: a client repeating one command stores it once, not a
	// boxed string per request.
	cmdSeen string
	// proto and db are the connection's mode (HELLO, SELECT); only its
	// own goroutine changes them, CLIENT LIST of others reads them.
	proto, db atomic.Int64
	// argvMem is the request being served's arguments' bytes, for
	// argv-mem=; query and out its query and reply buffers, for qbuf=,
	// qbuf-free=, rbs= and rbp= (set once its goroutine made them).
	argvMem atomic.Int64
	// serving is the size of the request being handled, encoded: redis's
	// query buffer still holds it then (qbuf=).
	serving atomic.Int64
	query   atomic.Pointer[resp.Reader]
	out     atomic.Pointer[replyWriter]
	// obs observes the command being read (observe.go); blockedFor is how
	// long a blocking one waited for data, pausedFor how long CLIENT PAUSE
	// held it. Only the connection's own goroutine touches them.
	obs                   *observation
	blockedFor, pausedFor time.Duration
	// queuedNotes are the transaction's commands as the client sent them.
	queuedNotes []noted
	trackState
}

// containers are the commands CLIENT LIST names with their sub-command,
// as redis does (cmd=client|list).
var containers = map[string]bool{"client": true, "config": true, "command": true, "object": true, "memory": true,
	"script": true, "function": true, "xinfo": true, "xgroup": true, "pubsub": true, "slowlog": true,
	"latency": true, "acl": true, "cluster": true, "module": true}

func (cl *clientConn) mode() mode { return mode{proto: int(cl.proto.Load()), db: int(cl.db.Load())} }

// newClientState is the state of a connection the core accepted and
// stamped (replica.Conn): its reads go through the core, its writes
// straight to the socket.
func (a *agent) newClientState(sc replica.Conn) *clientState {
	c := net.Conn(sc)
	st := &clientState{clientConn: clientConn{id: a.clientIDs.Add(1), conn: c, created: sc.Accepted()}}
	// Made before the connection is listed: an invalidation redirected to
	// it may be sent as soon as it is.
	out := newReplyWriter(c)
	st.out.Store(out)
	st.replies = newReplyQueue(func(q *replyQueue) { writeReplies(out, q) })
	st.last.Store(st.created.UnixNano())
	st.proto.Store(2)
	st.stamped = sc
	return st
}

// touch records a command's arrival for CLIENT LIST's idle=, cmd=, qbuf=
// and argv-mem=; at is when its bytes arrived (Unix ns), so touching reads
// no clock.
func (cl *clientConn) touch(args [][]byte, at int64) {
	cl.last.Store(at)
	cmd := statName(args[0]) // lower case, cached for the commands redis knows
	if cmd == "" {
		cmd = strings.ToLower(string(args[0]))
	}
	if containers[cmd] && len(args) > 1 {
		cmd += "|" + strings.ToLower(string(args[1]))
	}
	if cmd != cl.cmdSeen {
		cl.cmdSeen = cmd
		cl.lastCmd.Store(cmd)
	}
	encoded, mem := len(strconv.Itoa(len(args)))+3, 0
	for _, a := range args {
		encoded += len(strconv.Itoa(len(a))) + len(a) + 5
		mem += len(a)
	}
	cl.serving.Store(int64(encoded))
	cl.argvMem.Store(int64(mem))
}

// fd is the connection's file descriptor, for fd=; -1 when it has none.
func (cl *clientConn) fd() int {
	fd := -1
	if sc, ok := cl.conn.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			rc.Control(func(f uintptr) { fd = int(f) })
		}
	}
	return fd
}

func (cl *clientConn) getName() string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.name
}

// info is one line of CLIENT LIST and CLIENT INFO, in redis's field order:
// the agent's connection (its query and reply buffers, resized as redis
// resizes them; no output is held past its reply buffer).
func (cl *clientConn) info(now time.Time, inMulti bool, queued int) string {
	multi := -1
	if inMulti {
		multi = queued
	}
	cmd, _ := cl.lastCmd.Load().(string)
	flags, redir := cl.trackingFlags()
	cl.mu.Lock()
	if cl.unblock != nil {
		flags = "b" + flags
	}
	cl.mu.Unlock()
	if flags == "" {
		flags = "N"
	}
	var qbuf, qsize int
	if rd := cl.query.Load(); rd != nil {
		qbuf, qsize = rd.Sizes()
	}
	qbuf += int(cl.serving.Load())
	qsize = max(qsize, qbuf)
	var rbs, rbp int64
	if out := cl.out.Load(); out != nil {
		rbs, rbp = out.rbs.Load(), out.rbp.Load()
	}
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=%d flags=%s db=%d sub=0 psub=0 ssub=0 multi=%d "+
		"qbuf=%d qbuf-free=%d argv-mem=%d multi-mem=0 rbs=%d rbp=%d obl=0 oll=0 omem=0 tot-mem=%d events=r cmd=%s user=default redir=%d resp=%d\n",
		cl.id, cl.conn.RemoteAddr(), cl.conn.LocalAddr(), cl.fd(), cl.getName(), int(now.Sub(cl.created).Seconds()),
		int(now.Sub(time.Unix(0, cl.last.Load())).Seconds()), flags, cl.db.Load(), multi, qbuf, qsize-qbuf, cl.argvMem.Load(),
		rbs, rbp, int64(qsize)+cl.argvMem.Load()+rbs, cmd, redir, cl.proto.Load())
}

// validName is redis's rule for connection names: no spaces, newlines or
// other characters outside '!' to '~'.
func validName(b []byte) bool {
	for _, c := range b {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}

// clientCommand answers CLIENT for the agent's own connections.
func (a *agent) clientCommand(st *clientState, args [][]byte) []byte {
	sub := strings.ToUpper(string(args[1]))
	arity := map[string]int{"ID": 2, "GETNAME": 2, "SETNAME": 3, "INFO": 2, "GETREDIR": 2, "TRACKINGINFO": 2}
	if n, ok := arity[sub]; ok && len(args) != n {
		return resp.Error(fmt.Sprintf("ERR wrong number of arguments for 'client|%s' command", strings.ToLower(sub)))
	}
	switch sub {
	case "ID":
		return resp.Int(int(st.id))
	case "GETNAME":
		if n := st.getName(); n != "" {
			return resp.AppendBulk(nil, []byte(n))
		}
		return nullReply(int(st.proto.Load()))
	case "SETNAME":
		if !validName(args[2]) {
			return resp.Error("ERR Client names cannot contain spaces, newlines or special characters.")
		}
		st.mu.Lock()
		st.name = string(args[2])
		st.mu.Unlock()
		return resp.Simple("OK")
	case "INFO":
		return resp.AppendBulk(nil, []byte(st.info(time.Now(), st.inMulti, len(st.queued))))
	case "GETREDIR":
		_, redir := st.trackingFlags()
		return resp.Int(int(redir))
	case "PAUSE":
		return a.clientPause(args)
	case "UNPAUSE":
		if len(args) != 2 {
			return resp.Error("ERR wrong number of arguments for 'client|unpause' command")
		}
		return a.clientUnpause()
	case "TRACKING":
		return a.clientTracking(st, args)
	case "CACHING":
		return a.clientCaching(st, args)
	case "TRACKINGINFO":
		return st.trackingInfo()
	case "LIST":
		return a.clientList(st, args[2:])
	case "KILL":
		if len(args) == 2 {
			return resp.Error("ERR wrong number of arguments for 'client|kill' command")
		}
		return a.clientKill(st, args[2:])
	case "REPLY":
		return a.clientReply(st, args)
	case "UNBLOCK":
		return a.clientUnblock(args)
	}
	return resp.Error(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%s'. Try CLIENT HELP.", argWord(args[1])))
}

// clientUnblock answers CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 when it ended
// a blocked command of the agent's connection id, else 0.
func (a *agent) clientUnblock(args [][]byte) []byte {
	if len(args) != 3 && len(args) != 4 {
		return resp.Error("ERR wrong number of arguments for 'client|unblock' command")
	}
	id, err := strconv.ParseUint(string(args[2]), 10, 64)
	if err != nil {
		return resp.Error("ERR value is not an integer or out of range")
	}
	how := "TIMEOUT"
	if len(args) == 4 {
		how = strings.ToUpper(string(args[3]))
		if how != "TIMEOUT" && how != "ERROR" {
			return resp.Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
		}
	}
	for _, st := range a.connections() {
		if st.id == id && st.unblockWith(how) {
			return resp.Int(1)
		}
	}
	return resp.Int(0)
}

// clientReply answers CLIENT REPLY ON|OFF|SKIP: OFF silences every reply
// until ON, SKIP the next command's.
func (a *agent) clientReply(st *clientState, args [][]byte) []byte {
	if len(args) != 3 {
		return resp.Error("ERR wrong number of arguments for 'client|reply' command")
	}
	switch strings.ToUpper(string(args[2])) {
	case "ON":
		st.replyOff, st.skipNext = false, 0
		return resp.Simple("OK")
	case "OFF":
		st.replyOff = true
	case "SKIP":
		st.skipNext = 2 // this command's reply, and the next one's
	default:
		return resp.Error("ERR syntax error")
	}
	return nil
}

// argWord is an argument as redis quotes it in an error: at most 128 bytes.
func argWord(b []byte) string { return string(b[:min(len(b), 128)]) }

// clients is a snapshot of the connections, in id order.
func (a *agent) connections() []*clientState {
	a.mu.Lock()
	out := make([]*clientState, 0, len(a.conns))
	for _, st := range a.conns {
		out = append(out, st)
	}
	a.mu.Unlock()
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].id < out[j-1].id; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// clientList answers CLIENT LIST [TYPE normal] [ID id...].
func (a *agent) clientList(self *clientState, opts [][]byte) []byte {
	var ids map[uint64]bool
	switch {
	case len(opts) == 0:
	case len(opts) == 2 && strings.EqualFold(string(opts[0]), "TYPE"):
		t := strings.ToLower(string(opts[1]))
		if t != "normal" && t != "master" && t != "replica" && t != "slave" && t != "pubsub" {
			return resp.Error("ERR Unknown client type '" + argWord(opts[1]) + "'")
		}
		if t != "normal" {
			return resp.AppendBulk(nil, nil)
		}
	case len(opts) >= 2 && strings.EqualFold(string(opts[0]), "ID"):
		ids = map[uint64]bool{}
		for _, o := range opts[1:] {
			id, err := strconv.ParseUint(string(o), 10, 64)
			if err != nil || id == 0 {
				return resp.Error("ERR Invalid client ID")
			}
			ids[id] = true
		}
	default:
		return resp.Error("ERR syntax error")
	}
	var b bytes.Buffer
	now := time.Now()
	for _, st := range a.connections() {
		if ids != nil && !ids[st.id] {
			continue
		}
		if st == self {
			b.WriteString(st.info(now, st.inMulti, len(st.queued)))
		} else {
			b.WriteString(st.info(now, false, 0)) // another goroutine owns its transaction state
		}
	}
	return resp.AppendBulk(nil, b.Bytes())
}

// clientKill answers CLIENT KILL addr (the old form: OK or an error) and
// CLIENT KILL [ID id] [ADDR addr] [LADDR addr] [TYPE normal] [USER default]
// [SKIPME yes|no] (the number killed), closing the agent's connections.
func (a *agent) clientKill(self *clientState, opts [][]byte) []byte {
	if len(opts) == 1 {
		for _, st := range a.connections() {
			if st.conn.RemoteAddr().String() == string(opts[0]) {
				st.conn.Close()
				return resp.Simple("OK")
			}
		}
		return resp.Error("ERR No such client")
	}
	if len(opts) == 0 || len(opts)%2 != 0 {
		return resp.Error("ERR syntax error")
	}
	var id uint64
	var addr, laddr, typ, user string
	skipMe := true
	for i := 0; i < len(opts); i += 2 {
		v := string(opts[i+1])
		switch strings.ToUpper(string(opts[i])) {
		case "ID":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil || n == 0 {
				return resp.Error("ERR client-id should be greater than 0")
			}
			id = n
		case "ADDR":
			addr = v
		case "LADDR":
			laddr = v
		case "TYPE":
			typ = strings.ToLower(v)
			if typ != "normal" && typ != "master" && typ != "replica" && typ != "slave" && typ != "pubsub" {
				return resp.Error("ERR Unknown client type '" + argWord(opts[i+1]) + "'")
			}
		case "USER":
			if user = v; user != "default" {
				return resp.Error("ERR No such user '" + argWord(opts[i+1]) + "'")
			}
		case "SKIPME":
			switch strings.ToLower(v) {
			case "yes":
				skipMe = true
			case "no":
				skipMe = false
			default:
				return resp.Error("ERR syntax error")
			}
		default:
			return resp.Error("ERR syntax error")
		}
	}
	killed := 0
	for _, st := range a.connections() {
		if (id != 0 && st.id != id) || (addr != "" && st.conn.RemoteAddr().String() != addr) ||
			(laddr != "" && st.conn.LocalAddr().String() != laddr) || (typ != "" && typ != "normal") ||
			(user != "" && user != "default") || (skipMe && st == self) {
			continue
		}
		killed++
		if st == self {
			// Redis answers the killing connection, then closes it and
			// reads nothing more from it.
			self.killed = true
			continue
		}
		st.conn.Close()
	}
	return resp.Int(killed)
}

// hello answers HELLO [protover [AUTH user pass] [SETNAME name]]: 2 or 3
// switches the connection's protocol, as redis does.
func (a *agent) hello(st *clientState, args [][]byte) []byte {
	proto := int(st.proto.Load())
	if len(args) > 1 {
		v, err := strconv.ParseInt(string(args[1]), 10, 64)
		if err != nil {
			return resp.Error("ERR Protocol version is not an integer or out of range")
		}
		if v != 2 && v != 3 {
			return resp.Error("NOPROTO sorry, this protocol version is not supported")
		}
		proto = int(v)
	}
	var name []byte
	for i := 2; i < len(args); i++ {
		switch strings.ToUpper(string(args[i])) {
		case "SETNAME":
			if i+1 >= len(args) {
				return resp.Error("ERR Syntax error in HELLO option 'setname'")
			}
			if name = args[i+1]; !validName(name) {
				return resp.Error("ERR Client names cannot contain spaces, newlines or special characters.")
			}
			i++
		case "AUTH":
			return resp.Error("ERR 'AUTH' is not supported by gait replica: it changes or inspects one server or connection, not the replicated data")
		default:
			return resp.Error("ERR Syntax error in HELLO option '" + argWord(args[i]) + "'")
		}
	}
	// Any replica answers, as a read does: the local redis-server may be the
	// one that limps or is gone, and clients send HELLO on every connect.
	raw, err := a.redisRead(st, mode{proto: proto}, resp.AppendCommand(nil, []byte("HELLO"), []byte(strconv.Itoa(proto))), false)
	if err != nil {
		return resp.Error("ERR gait replica: " + strings.TrimSpace(err.Error()))
	}
	_, v, err := resp.ReadReply(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil || (v.Kind != '*' && v.Kind != '%') || len(v.Arr)%2 != 0 {
		return raw // an error from redis, forwarded
	}
	if name != nil {
		st.mu.Lock()
		st.name = string(name)
		st.mu.Unlock()
	}
	st.proto.Store(int64(proto))
	// The server's own answer (version, role), with this connection's id.
	for i := 0; i < len(v.Arr); i += 2 {
		switch string(v.Arr[i].Str) {
		case "id":
			v.Arr[i+1] = resp.Value{Kind: ':', Num: int64(st.id)}
		case "modules":
			v.Arr[i+1] = resp.Value{Kind: '*'}
		}
	}
	return appendValue(nil, v)
}

// appendValue encodes a decoded value back, in the protocol it came in.
func appendValue(out []byte, v resp.Value) []byte {
	switch v.Kind {
	case '+', '-', ',', '(':
		return append(append(append(out, v.Kind), v.Str...), '\r', '\n')
	case ':':
		return append(out, resp.Int(int(v.Num))...)
	case '#':
		return append(out, "#f\r\n#t\r\n"[4*v.Num:4*v.Num+4]...)
	case '_':
		return append(out, "_\r\n"...)
	case '$', '=', '!':
		if v.Null {
			return append(out, "$-1\r\n"...)
		}
		out = fmt.Appendf(out, "%c%d\r\n", v.Kind, len(v.Str))
		return append(append(out, v.Str...), '\r', '\n')
	}
	if v.Null {
		return append(out, "*-1\r\n"...)
	}
	n := len(v.Arr)
	if v.Kind == '%' {
		n /= 2
	}
	out = fmt.Appendf(out, "%c%d\r\n", v.Kind, n)
	for _, e := range v.Arr {
		out = appendValue(out, e)
	}
	return out
}

// reset answers RESET: the connection as if new (no transaction, no name,
// RESP2, database 0, no tracking, every reply).
func (a *agent) reset(st *clientState) []byte {
	st.inMulti, st.aborted, st.queued, st.watched, st.queuedVolatile = false, false, nil, nil, false
	st.replyOff, st.skipNext = false, 0
	st.tmode.Store(nil)
	st.broken.Store(false)
	st.caching, st.multiOwn, st.multiRead, st.multiSelf = 0, nil, nil, nil
	st.proto.Store(2)
	st.db.Store(0)
	st.mu.Lock()
	st.name = ""
	st.mu.Unlock()
	return resp.Simple("RESET")
}

// waitSlot answers WAIT numreplicas timeout-ms as redis does for its
// replicas: how many replicas other than this one have applied the
// connection's last write, once numreplicas have or the timeout (0: none)
// passed.
func (a *agent) waitSlot(st *clientState, args [][]byte) slot {
	n, err := strconv.ParseInt(string(args[1]), 10, 64)
	if err != nil {
		return slot{reply: resp.Error("ERR value is not an integer or out of range")}
	}
	ms, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil {
		return slot{reply: resp.Error("ERR timeout is not an integer or out of range")}
	}
	if ms < 0 {
		return slot{reply: resp.Error("ERR timeout is negative")}
	}
	w := st.lastWrite
	if w == nil {
		return slot{reply: resp.Int(a.host.Replicas() - 1)}
	}
	return slot{fill: func() []byte {
		var deadline time.Time
		if ms > 0 {
			deadline = time.Now().Add(time.Duration(ms) * time.Millisecond)
		}
		for {
			got, _ := w.Replied()
			others := max(got-1, 0)
			if int64(others) >= n || (!deadline.IsZero() && time.Now().After(deadline)) {
				return resp.Int(others)
			}
			select {
			case <-a.done:
				return resp.Int(others)
			case <-time.After(time.Millisecond):
			}
		}
	}}
}

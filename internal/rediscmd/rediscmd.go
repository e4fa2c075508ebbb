// Package rediscmd is the command table of gait replica: each Redis command
// it knows, its arity, and how the agent serves it (ordered write, read,
// answered by the local server or the agent, or refused and why), with the
// rewrites that make time-relative writes the same on every replica.
package rediscmd

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Kind says how the agent serves a command.
type Kind uint8

const (
	// Write is ordered through raft and applied by every replica.
	Write Kind = iota + 1
	// Read is answered by one replica, as consistent as the read mode says.
	Read
	// Local is answered by the local redis-server without ordering: it
	// describes that server (INFO, TIME), not the replicated data.
	Local
	// Agent is answered by the agent itself (connection state).
	Agent
	// Refused would make replicas diverge or cannot be replicated.
	Refused
)

// Spec is one row of the command table.
type Spec struct {
	Kind  Kind
	Arity int // as Redis counts it, name included: n exactly, or -n for at least n
	// Rewrite makes a time-relative command absolute, using now, the clock of
	// the agent that proposes it, and says whether it changed anything. It
	// returns args unchanged when they do not parse; redis then refuses them
	// the same way on every replica. It never modifies args.
	Rewrite func(args [][]byte, now time.Time) (out [][]byte, changed bool)
	// Expires marks a Rewrite that makes a relative expiry absolute (when it
	// changes the command). The expiry counts from the clock reading, so
	// when it is read matters.
	Expires bool
	Reason  string // why a refused command is refused
	// Subs overrides Kind for some sub-commands (the second word).
	Subs map[string]Kind
	// Pinned marks a read that must come from the same server every time
	// for one client: a SCAN cursor means something to the server that
	// returned it only.
	Pinned bool
	// Blocks marks a command that may wait for data (BLPOP, XREAD BLOCK):
	// the agent serves it by proposing the non-blocking form until it finds
	// data or the timeout passes, never by blocking a redis-server.
	Blocks bool
	// Volatile marks a write whose reply differs between replicas that hold
	// the same data (PUBLISH counts the local server's subscribers).
	Volatile bool
}

const (
	whyServer  = "it changes or inspects one server or connection, not the replicated data"
	whyCluster = "gait replica is not a Redis Cluster"
	whyRewrite = "it writes the local server's configuration file"
)

var table = map[string]Spec{
	// Writes.
	"SET": {Kind: Write, Arity: -3, Rewrite: rewriteSet, Expires: true}, "SETNX": {Kind: Write, Arity: 3},
	"SETEX": {Kind: Write, Arity: 4, Rewrite: rewriteSetex(1000), Expires: true}, "PSETEX": {Kind: Write, Arity: 4, Rewrite: rewriteSetex(1), Expires: true},
	"GETSET": {Kind: Write, Arity: 3}, "GETDEL": {Kind: Write, Arity: 2},
	"GETEX": {Kind: Write, Arity: -2, Rewrite: rewriteGetex, Expires: true},
	"MSET":  {Kind: Write, Arity: -3}, "MSETNX": {Kind: Write, Arity: -3},
	"APPEND": {Kind: Write, Arity: 3}, "SETRANGE": {Kind: Write, Arity: 4},
	"INCR": {Kind: Write, Arity: 2}, "DECR": {Kind: Write, Arity: 2},
	"INCRBY": {Kind: Write, Arity: 3}, "DECRBY": {Kind: Write, Arity: 3},
	"INCRBYFLOAT": {Kind: Write, Arity: 3},
	"SETBIT":      {Kind: Write, Arity: 4}, "BITFIELD": {Kind: Write, Arity: -2}, "BITOP": {Kind: Write, Arity: -4},
	"PFADD": {Kind: Write, Arity: -2}, "PFMERGE": {Kind: Write, Arity: -2}, "PFDEBUG": {Kind: Write, Arity: 3},
	// PFCOUNT stores the cardinality it computed in the key: ordered, so
	// every replica's copy stays byte for byte the same.
	"PFCOUNT": {Kind: Write, Arity: -2},
	"DEL":     {Kind: Write, Arity: -2}, "UNLINK": {Kind: Write, Arity: -2}, "COPY": {Kind: Write, Arity: -3},
	"EXPIRE": {Kind: Write, Arity: -3, Rewrite: rewriteExpire(1000), Expires: true}, "PEXPIRE": {Kind: Write, Arity: -3, Rewrite: rewriteExpire(1), Expires: true},
	"EXPIREAT": {Kind: Write, Arity: -3}, "PEXPIREAT": {Kind: Write, Arity: -3},
	"PERSIST": {Kind: Write, Arity: 2}, "RENAME": {Kind: Write, Arity: 3}, "RENAMENX": {Kind: Write, Arity: 3},
	"RESTORE": {Kind: Write, Arity: -4, Rewrite: rewriteRestore, Expires: true},
	"HSET":    {Kind: Write, Arity: -4}, "HSETNX": {Kind: Write, Arity: 4}, "HMSET": {Kind: Write, Arity: -4},
	"HDEL": {Kind: Write, Arity: -3}, "HINCRBY": {Kind: Write, Arity: 4}, "HINCRBYFLOAT": {Kind: Write, Arity: 4},
	"LPUSH": {Kind: Write, Arity: -3}, "RPUSH": {Kind: Write, Arity: -3},
	"LPUSHX": {Kind: Write, Arity: -3}, "RPUSHX": {Kind: Write, Arity: -3},
	"LPOP": {Kind: Write, Arity: -2}, "RPOP": {Kind: Write, Arity: -2}, "LMPOP": {Kind: Write, Arity: -4},
	"LSET": {Kind: Write, Arity: 4}, "LTRIM": {Kind: Write, Arity: 4}, "LREM": {Kind: Write, Arity: 4},
	"LINSERT": {Kind: Write, Arity: 5}, "LMOVE": {Kind: Write, Arity: 5}, "RPOPLPUSH": {Kind: Write, Arity: 3},
	"SADD": {Kind: Write, Arity: -3}, "SREM": {Kind: Write, Arity: -3}, "SMOVE": {Kind: Write, Arity: 4},
	"SPOP":        {Kind: Write, Arity: -2, Rewrite: rewriteSpop},
	"SINTERSTORE": {Kind: Write, Arity: -3}, "SUNIONSTORE": {Kind: Write, Arity: -3}, "SDIFFSTORE": {Kind: Write, Arity: -3},
	"ZADD": {Kind: Write, Arity: -4}, "ZREM": {Kind: Write, Arity: -3}, "ZINCRBY": {Kind: Write, Arity: 4},
	"ZPOPMIN": {Kind: Write, Arity: -2}, "ZPOPMAX": {Kind: Write, Arity: -2}, "ZMPOP": {Kind: Write, Arity: -4},
	"ZREMRANGEBYLEX": {Kind: Write, Arity: 4}, "ZREMRANGEBYRANK": {Kind: Write, Arity: 4}, "ZREMRANGEBYSCORE": {Kind: Write, Arity: 4},
	"ZUNIONSTORE": {Kind: Write, Arity: -4}, "ZINTERSTORE": {Kind: Write, Arity: -4}, "ZDIFFSTORE": {Kind: Write, Arity: -4},
	"ZRANGESTORE": {Kind: Write, Arity: -5},
	"GEOADD":      {Kind: Write, Arity: -5}, "GEOSEARCHSTORE": {Kind: Write, Arity: -8},
	// GEORADIUS and GEORADIUSBYMEMBER write with STORE; ordered either way.
	"GEORADIUS": {Kind: Write, Arity: -6}, "GEORADIUSBYMEMBER": {Kind: Write, Arity: -5},
	// SORT writes with STORE; ordered either way.
	"SORT": {Kind: Write, Arity: -2},
	"XADD": {Kind: Write, Arity: -5, Rewrite: rewriteXadd}, "XDEL": {Kind: Write, Arity: -3}, "XTRIM": {Kind: Write, Arity: -4},
	"XSETID": {Kind: Write, Arity: -3}, "XACK": {Kind: Write, Arity: -4}, "XGROUP": {Kind: Write, Arity: -2},
	"XCLAIM": {Kind: Write, Arity: -6}, "XAUTOCLAIM": {Kind: Write, Arity: -6},
	"XREADGROUP": {Kind: Write, Arity: -7, Blocks: true},
	"FLUSHALL":   {Kind: Write, Arity: -1}, "FLUSHDB": {Kind: Write, Arity: -1},
	// Every replica runs a script or function, in log order, with the same
	// data and the same sequence of math.random numbers.
	"EVAL": {Kind: Write, Arity: -3}, "EVALSHA": {Kind: Write, Arity: -3}, "FCALL": {Kind: Write, Arity: -3},
	"FUNCTION": {Kind: Write, Arity: -2, Subs: map[string]Kind{"LIST": Read, "DUMP": Read, "STATS": Local, "HELP": Local, "KILL": Agent}},
	"SCRIPT":   {Kind: Write, Arity: -2, Subs: map[string]Kind{"EXISTS": Read, "HELP": Local, "KILL": Agent}},

	// Blocking: the agent proposes the non-blocking form until it finds data
	// or the timeout passes.
	"BLPOP": {Kind: Write, Arity: -3, Blocks: true}, "BRPOP": {Kind: Write, Arity: -3, Blocks: true},
	"BLMOVE": {Kind: Write, Arity: 6, Blocks: true}, "BRPOPLPUSH": {Kind: Write, Arity: 4, Blocks: true},
	"BLMPOP": {Kind: Write, Arity: -5, Blocks: true}, "BZPOPMIN": {Kind: Write, Arity: -3, Blocks: true},
	"BZPOPMAX": {Kind: Write, Arity: -3, Blocks: true}, "BZMPOP": {Kind: Write, Arity: -5, Blocks: true},

	// Reads.
	"GET": {Kind: Read, Arity: 2}, "MGET": {Kind: Read, Arity: -2}, "EXISTS": {Kind: Read, Arity: -2},
	"STRLEN": {Kind: Read, Arity: 2}, "GETRANGE": {Kind: Read, Arity: 4}, "SUBSTR": {Kind: Read, Arity: 4},
	"LCS": {Kind: Read, Arity: -3}, "GETBIT": {Kind: Read, Arity: 3}, "BITCOUNT": {Kind: Read, Arity: -2},
	"BITPOS": {Kind: Read, Arity: -3}, "BITFIELD_RO": {Kind: Read, Arity: -2},
	"TTL": {Kind: Read, Arity: 2}, "PTTL": {Kind: Read, Arity: 2},
	"EXPIRETIME": {Kind: Read, Arity: 2}, "PEXPIRETIME": {Kind: Read, Arity: 2},
	"TYPE": {Kind: Read, Arity: 2}, "DBSIZE": {Kind: Read, Arity: 1}, "TOUCH": {Kind: Read, Arity: -2},
	"DUMP": {Kind: Read, Arity: 2}, "OBJECT": {Kind: Read, Arity: -2}, "MEMORY": {Kind: Read, Arity: -2},
	"KEYS": {Kind: Read, Arity: 2}, "SCAN": {Kind: Read, Arity: -2, Pinned: true}, "SORT_RO": {Kind: Read, Arity: -2},
	// A random answer changes nothing, so one replica may give it.
	"RANDOMKEY": {Kind: Read, Arity: 1}, "SRANDMEMBER": {Kind: Read, Arity: -2},
	"HRANDFIELD": {Kind: Read, Arity: -2}, "ZRANDMEMBER": {Kind: Read, Arity: -2},
	"HGET": {Kind: Read, Arity: 3}, "HMGET": {Kind: Read, Arity: -3}, "HGETALL": {Kind: Read, Arity: 2},
	"HLEN": {Kind: Read, Arity: 2}, "HEXISTS": {Kind: Read, Arity: 3}, "HKEYS": {Kind: Read, Arity: 2},
	"HVALS": {Kind: Read, Arity: 2}, "HSTRLEN": {Kind: Read, Arity: 3}, "HSCAN": {Kind: Read, Arity: -3, Pinned: true},
	"LRANGE": {Kind: Read, Arity: 4}, "LLEN": {Kind: Read, Arity: 2}, "LINDEX": {Kind: Read, Arity: 3},
	"LPOS":     {Kind: Read, Arity: -3},
	"SMEMBERS": {Kind: Read, Arity: 2}, "SISMEMBER": {Kind: Read, Arity: 3}, "SMISMEMBER": {Kind: Read, Arity: -3},
	"SCARD": {Kind: Read, Arity: 2}, "SINTER": {Kind: Read, Arity: -2}, "SUNION": {Kind: Read, Arity: -2},
	"SDIFF": {Kind: Read, Arity: -2}, "SINTERCARD": {Kind: Read, Arity: -3}, "SSCAN": {Kind: Read, Arity: -3, Pinned: true},
	"ZRANGE": {Kind: Read, Arity: -4}, "ZREVRANGE": {Kind: Read, Arity: -4}, "ZRANGEBYSCORE": {Kind: Read, Arity: -4},
	"ZREVRANGEBYSCORE": {Kind: Read, Arity: -4}, "ZRANGEBYLEX": {Kind: Read, Arity: -4}, "ZREVRANGEBYLEX": {Kind: Read, Arity: -4},
	"ZSCORE": {Kind: Read, Arity: 3}, "ZMSCORE": {Kind: Read, Arity: -3}, "ZCARD": {Kind: Read, Arity: 2},
	"ZRANK": {Kind: Read, Arity: -3}, "ZREVRANK": {Kind: Read, Arity: -3},
	"ZCOUNT": {Kind: Read, Arity: 4}, "ZLEXCOUNT": {Kind: Read, Arity: 4}, "ZSCAN": {Kind: Read, Arity: -3, Pinned: true},
	"ZUNION": {Kind: Read, Arity: -3}, "ZINTER": {Kind: Read, Arity: -3}, "ZDIFF": {Kind: Read, Arity: -3},
	"ZINTERCARD": {Kind: Read, Arity: -3},
	"GEODIST":    {Kind: Read, Arity: -4}, "GEOHASH": {Kind: Read, Arity: -2}, "GEOPOS": {Kind: Read, Arity: -2},
	"GEOSEARCH": {Kind: Read, Arity: -7}, "GEORADIUS_RO": {Kind: Read, Arity: -6}, "GEORADIUSBYMEMBER_RO": {Kind: Read, Arity: -5},
	"XLEN": {Kind: Read, Arity: 2}, "XRANGE": {Kind: Read, Arity: -4}, "XREVRANGE": {Kind: Read, Arity: -4},
	"XPENDING": {Kind: Read, Arity: -3}, "XINFO": {Kind: Read, Arity: -2}, "XREAD": {Kind: Read, Arity: -4, Blocks: true},
	"EVAL_RO": {Kind: Read, Arity: -3}, "EVALSHA_RO": {Kind: Read, Arity: -3}, "FCALL_RO": {Kind: Read, Arity: -3},

	// About the local server.
	"INFO": {Kind: Local, Arity: -1}, "COMMAND": {Kind: Local, Arity: -1},
	"TIME": {Kind: Local, Arity: 1}, "LASTSAVE": {Kind: Local, Arity: 1}, "ROLE": {Kind: Local, Arity: 1},
	// LATENCY's events are the local server's; its HISTOGRAM, like the slow
	// log, the agent's, of its clients' commands.
	"LATENCY": {Kind: Local, Arity: -2, Subs: map[string]Kind{"HISTOGRAM": Agent}}, "LOLWUT": {Kind: Local, Arity: -1},
	"PFSELFTEST": {Kind: Local, Arity: 1},
	// An RDB file is the local server's own copy of the data: gait's
	// durability is the raft log, so saving one server's is harmless.
	"SAVE": {Kind: Local, Arity: 1}, "BGSAVE": {Kind: Local, Arity: -1},
	// CONFIG SET is ordered, so every replica's server is configured alike.
	"CONFIG": {Kind: Local, Arity: -2, Subs: map[string]Kind{"SET": Write, "REWRITE": Refused}},

	// The agent's own.
	"PING": {Kind: Agent, Arity: -1}, "ECHO": {Kind: Agent, Arity: 2}, "SELECT": {Kind: Agent, Arity: 2},
	"MULTI": {Kind: Agent, Arity: 1}, "EXEC": {Kind: Agent, Arity: 1}, "DISCARD": {Kind: Agent, Arity: 1},
	"QUIT": {Kind: Agent, Arity: -1}, "WAITALL": {Kind: Agent, Arity: -1}, "WAIT": {Kind: Agent, Arity: 3},
	"CLIENT": {Kind: Agent, Arity: -2}, "HELLO": {Kind: Agent, Arity: -1}, "RESET": {Kind: Agent, Arity: 1},
	"WATCH": {Kind: Agent, Arity: -2}, "UNWATCH": {Kind: Agent, Arity: 1}, "SLOWLOG": {Kind: Agent, Arity: -2},

	// Publish/subscribe: a message is an ordered write, which every replica
	// publishes to its own server's subscribers; each subscriber is a
	// connection of its agent to that agent's server.
	"PUBLISH": {Kind: Write, Arity: 3, Volatile: true}, "SPUBLISH": {Kind: Write, Arity: 3, Volatile: true},
	"SUBSCRIBE": {Kind: Agent, Arity: -2}, "PSUBSCRIBE": {Kind: Agent, Arity: -2}, "SSUBSCRIBE": {Kind: Agent, Arity: -2},
	"UNSUBSCRIBE": {Kind: Agent, Arity: -1}, "PUNSUBSCRIBE": {Kind: Agent, Arity: -1}, "SUNSUBSCRIBE": {Kind: Agent, Arity: -1},
	// PUBSUB CHANNELS, NUMSUB...: the subscribers of this agent.
	"PUBSUB": {Kind: Local, Arity: -2},

	// Refused.
	// DEBUG: what describes the data is a read, what changes it or every
	// server's behaviour is ordered, what concerns one server is local; the
	// rest (crashes, restarts) is refused. The redis-server must allow
	// DEBUG (enable-debug-command).
	"DEBUG": {Kind: Refused, Arity: -2, Reason: whyServer, Subs: map[string]Kind{
		"DIGEST": Read, "DIGEST-VALUE": Read, "OBJECT": Read, "LISTPACK": Read, "QUICKLIST": Read,
		"STRINGMATCH-LEN": Read, "PROTOCOL": Local, "SLEEP": Local, "JMAP": Local, "ERROR": Local, "LOG": Local,
		"RELOAD": Write, "POPULATE": Write, "SET-ACTIVE-EXPIRE": Write, "QUICKLIST-PACKED-THRESHOLD": Write,
		"SET-SKIP-CHECKSUM-VALIDATION": Write, "SET-DISABLE-DENY-SCRIPTS": Write, "CHANGE-REPL-ID": Local,
		"REPLYBUFFER": Local, "PAUSE-CRON": Local}},
	"WAITAOF":  {Kind: Refused, Reason: whyServer},
	"SHUTDOWN": {Kind: Refused, Reason: whyServer}, "BGREWRITEAOF": {Kind: Refused, Reason: whyServer},
	"REPLICAOF": {Kind: Refused, Reason: whyServer}, "SLAVEOF": {Kind: Refused, Reason: whyServer},
	"SYNC": {Kind: Refused, Reason: whyServer}, "PSYNC": {Kind: Refused, Reason: whyServer},
	"REPLCONF": {Kind: Refused, Reason: whyServer},
	"MONITOR":  {Kind: Refused, Reason: whyServer}, "MIGRATE": {Kind: Refused, Reason: whyServer},
	"MOVE": {Kind: Refused, Reason: whyServer}, "SWAPDB": {Kind: Refused, Reason: whyServer},
	"ACL": {Kind: Refused, Reason: whyServer}, "AUTH": {Kind: Refused, Reason: whyServer},
	"MODULE": {Kind: Refused, Reason: whyServer}, "FAILOVER": {Kind: Refused, Reason: whyServer},
	"CLUSTER": {Kind: Refused, Reason: whyCluster}, "ASKING": {Kind: Refused, Reason: whyCluster},
	"READONLY": {Kind: Refused, Reason: whyCluster}, "READWRITE": {Kind: Refused, Reason: whyCluster},
	"RESTORE-ASKING": {Kind: Refused, Reason: whyCluster},
}

// Lookup finds the command's row and checks its arity and sub-command. The
// error is the Redis-style error line to send the client, without the '-'.
func Lookup(args [][]byte) (string, Spec, string) {
	name := strings.ToUpper(string(args[0]))
	s, ok := table[name]
	if !ok {
		return name, s, unknownCommand(args)
	}
	if (s.Kind != Refused || s.Subs != nil) && ((s.Arity > 0 && len(args) != s.Arity) || (s.Arity < 0 && len(args) < -s.Arity)) {
		return name, s, fmt.Sprintf("ERR wrong number of arguments for '%s' command", strings.ToLower(name))
	}
	if len(args) > 1 && s.Subs != nil { // not for every key of every SET
		sub := strings.ToUpper(string(args[1]))
		if k, ok := s.Subs[sub]; ok {
			s.Kind = k
			if k == Refused {
				return name, s, fmt.Sprintf("ERR '%s %s' is not supported by gait replica: %s", name, sub, subReasons[name+" "+sub])
			}
		}
	}
	if s.Kind == Refused {
		return name, s, fmt.Sprintf("ERR '%s' is not supported by gait replica: %s", name, s.Reason)
	}
	return name, s, ""
}

// subReasons says why a refused sub-command is refused.
var subReasons = map[string]string{"CONFIG REWRITE": whyRewrite}

// unknownCommand words the error as redis-server does, so tools recognise it.
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ERR unknown command '%s', with args beginning with: ", argExcerpt(args[0]))
	for _, a := range args[1:min(len(args), 4)] {
		fmt.Fprintf(&b, "'%s' ", argExcerpt(a))
	}
	return b.String()
}

// argExcerpt writes an argument the way redis-server does in this error: its
// first 64 bytes, control characters and quotes blanked.
func argExcerpt(b []byte) string {
	if len(b) > 64 {
		b = b[:64]
	}
	return string(bytes.Map(func(r rune) rune {
		if r < ' ' || r == '\'' {
			return ' '
		}
		return r
	}, b))
}

// absolute turns a relative expiry of n units (unit ms each) into an
// absolute Unix time in milliseconds; false on a malformed or overflowing n.
func absolute(n []byte, unit int64, now time.Time) ([]byte, bool) {
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || v > (math.MaxInt64/2)/unit || v < (math.MinInt64/2)/unit {
		return nil, false
	}
	return strconv.AppendInt(nil, now.UnixMilli()+v*unit, 10), true
}

// rewriteSet turns SET's EX and PX options into PXAT.
func rewriteSet(args [][]byte, now time.Time) ([][]byte, bool) { return rewriteOptions(args, 3, now) }

// rewriteGetex turns GETEX's EX and PX options into PXAT.
func rewriteGetex(args [][]byte, now time.Time) ([][]byte, bool) { return rewriteOptions(args, 2, now) }

// rewriteOptions copies args only once it rewrites one: most SETs (every
// one of a redis-cli --pipe of SETs) have no expiry.
func rewriteOptions(args [][]byte, from int, now time.Time) ([][]byte, bool) {
	out, copied := args, false
	for i := from; i < len(args)-1; i++ {
		var unit int64
		switch {
		case bytes.EqualFold(args[i], []byte("EX")):
			unit = 1000
		case bytes.EqualFold(args[i], []byte("PX")):
			unit = 1
		default:
			continue
		}
		at, ok := absolute(args[i+1], unit, now)
		if !ok || bytes.HasPrefix(args[i+1], []byte("-")) || string(args[i+1]) == "0" {
			return args, false // redis answers "invalid expire time" on every replica
		}
		if !copied {
			out, copied = slicesClone(args), true
		}
		out[i], out[i+1] = []byte("PXAT"), at
		i++
	}
	return out, copied
}

// rewriteSetex turns SETEX/PSETEX key n value into SET key value PXAT t.
func rewriteSetex(unit int64) func([][]byte, time.Time) ([][]byte, bool) {
	return func(args [][]byte, now time.Time) ([][]byte, bool) {
		at, ok := absolute(args[2], unit, now)
		if !ok || bytes.HasPrefix(args[2], []byte("-")) || string(args[2]) == "0" {
			return args, false
		}
		return [][]byte{[]byte("SET"), args[1], args[3], []byte("PXAT"), at}, true
	}
}

// rewriteExpire turns EXPIRE/PEXPIRE key n [flag] into PEXPIREAT key t [flag].
// A negative n stays negative in the past, and redis deletes the key either way.
func rewriteExpire(unit int64) func([][]byte, time.Time) ([][]byte, bool) {
	return func(args [][]byte, now time.Time) ([][]byte, bool) {
		at, ok := absolute(args[2], unit, now)
		if !ok {
			return args, false
		}
		return append([][]byte{[]byte("PEXPIREAT"), args[1], at}, args[3:]...), true
	}
}

// rewriteRestore makes RESTORE's relative TTL absolute (ABSTTL).
func rewriteRestore(args [][]byte, now time.Time) ([][]byte, bool) {
	for _, a := range args[4:] {
		if strings.EqualFold(string(a), "ABSTTL") {
			return args, false
		}
	}
	at, ok := absolute(args[2], 1, now)
	if !ok || string(args[2]) == "0" || bytes.HasPrefix(args[2], []byte("-")) {
		return args, false
	}
	out := slicesClone(args)
	out[2] = at
	return append(out, []byte("ABSTTL")), true
}

// OwnScript says whether an EVAL's script is one a rewrite here made of
// another command (XADD *, SPOP), rather than a client's.
func OwnScript(body []byte) bool {
	return string(body) == xaddScript || string(body) == spopScript
}

// xaddScript is XADD with an automatic ID made the same on every replica,
// as redis makes it: the proposer's clock (ARGV[1]) if it is past the
// stream's last generated ID, else that ID's millisecond with the next
// sequence number (the next millisecond when the sequence is exhausted).
// ARGV[2] says which argument is the "*" it replaces; XADD's own arguments
// follow. Decimal strings are compared and incremented as strings: an ID's
// parts go to 2^64-1, past a Lua number's precision.
const xaddScript = `local id = ARGV[1] .. '-*'
local info = redis.pcall('XINFO', 'STREAM', KEYS[1])
if not info.err then
  local last
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then last = info[i + 1] end
  end
  local ms, seq = string.match(last, '^(%d+)-(%d+)$')
  local p = ARGV[1]
  if #ms > #p or (#ms == #p and ms >= p) then
    id = ms .. '-*'
    if seq == '18446744073709551615' and ms ~= '18446744073709551615' then
      local d, i = {}, #ms
      for c in ms:gmatch('%d') do d[#d + 1] = tonumber(c) end
      while i > 0 and d[i] == 9 do d[i] = 0; i = i - 1 end
      if i == 0 then table.insert(d, 1, 1) else d[i] = d[i] + 1 end
      id = table.concat(d) .. '-0'
    end
  end
end
ARGV[tonumber(ARGV[2])] = id
return redis.pcall('XADD', KEYS[1], unpack(ARGV, 3))
`

// xaddScriptArgs bounds the XADDs that go as xaddScript: Lua's unpack
// refuses more than about 8000 values.
const xaddScriptArgs = 7000

// rewriteXadd makes XADD's automatic ID ("*") deterministic: xaddScript
// picks it from the proposer's clock and the stream's last ID when every
// replica applies it. An XADD too long for the script gets "<ms>-*", which
// a stream whose last ID is ahead of the proposer's clock refuses.
func rewriteXadd(args [][]byte, now time.Time) ([][]byte, bool) {
	i := 2
	for i < len(args) {
		switch strings.ToUpper(string(args[i])) {
		case "NOMKSTREAM":
			i++
			continue
		case "MAXLEN", "MINID":
			i++
			if i < len(args) && (string(args[i]) == "=" || string(args[i]) == "~") {
				i++
			}
			i++
			if i < len(args) && strings.EqualFold(string(args[i]), "LIMIT") {
				i += 2
			}
			continue
		}
		break
	}
	if i >= len(args) || string(args[i]) != "*" {
		return args, false
	}
	ms := strconv.AppendInt(nil, now.UnixMilli(), 10)
	if len(args) > xaddScriptArgs {
		out := slicesClone(args)
		out[i] = append(ms, "-*"...)
		return out, true
	}
	out := [][]byte{[]byte("EVAL"), []byte(xaddScript), []byte("1"), args[1], ms, strconv.AppendInt(nil, int64(i+1), 10)}
	return append(out, args[2:]...), true
}

// spopScript is SPOP executed the same way on every replica: the members
// sorted, then a partial shuffle driven by a seed the proposer chose.
const spopScript = `local m = redis.pcall('SMEMBERS', KEYS[1])
if m.err then return m end
table.sort(m)
local x = tonumber(ARGV[1])
local n = #m
local want = 1
if ARGV[2] then want = tonumber(ARGV[2]) end
local out = {}
for i = 1, math.min(want, n) do
  x = (x * 16807) % 2147483647
  local j = i + (x % (n - i + 1))
  m[i], m[j] = m[j], m[i]
  out[i] = m[i]
end
for i = 1, #out, 1000 do
  redis.call('SREM', KEYS[1], unpack(out, i, math.min(i + 999, #out)))
end
if ARGV[2] then return out end
return out[1] or false
`

// rewriteSpop turns SPOP key [count] into spopScript with a seed from the
// proposer's clock: the members are chosen once, when the write is proposed.
// A malformed count stays SPOP, which redis refuses alike everywhere.
func rewriteSpop(args [][]byte, now time.Time) ([][]byte, bool) {
	if len(args) > 3 {
		return args, false
	}
	seed := strconv.AppendInt(nil, now.UnixNano()%(math.MaxInt32-1)+1, 10)
	out := [][]byte{[]byte("EVAL"), []byte(spopScript), []byte("1"), args[1], seed}
	if len(args) == 3 {
		if n, err := strconv.ParseInt(string(args[2]), 10, 64); err != nil || n < 0 {
			return args, false
		}
		out = append(out, args[2])
	}
	return out, true
}

func slicesClone(args [][]byte) [][]byte { return append([][]byte(nil), args...) }

// Supported lists the command table by kind, for docs and help text.
func Supported() map[string][]string {
	names := map[string][]string{}
	label := map[Kind]string{Write: "write", Read: "read", Local: "local",
		Agent: "agent", Refused: "refused"}
	for name, s := range table {
		names[label[s.Kind]] = append(names[label[s.Kind]], name)
	}
	for _, l := range names {
		sort.Strings(l)
	}
	return names
}

// Served says whether gait replica serves the command (name in any case,
// "container|sub" for a sub-command, as COMMAND names them), or at least
// one of its sub-commands: COMMAND lists only these.
func Served(name string) bool {
	name, sub, isSub := strings.Cut(strings.ToUpper(name), "|")
	s, ok := table[name]
	if !ok {
		return false
	}
	if k, ok := s.Subs[sub]; isSub && ok {
		return k != Refused
	}
	if s.Kind != Refused || isSub {
		return s.Kind != Refused
	}
	for _, k := range s.Subs {
		if k != Refused {
			return true
		}
	}
	return false
}

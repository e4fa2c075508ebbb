package replica

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// kind says how the agent serves a command.
type kind uint8

const (
	// kindWrite is ordered through raft and applied by every replica.
	kindWrite kind = iota + 1
	// kindRead is answered by one replica, as consistent as the read mode says.
	kindRead
	// kindLocal is answered by the local redis-server without ordering: it
	// describes that server (INFO, TIME), not the replicated data.
	kindLocal
	// kindAgent is answered by the agent itself (connection state).
	kindAgent
	// kindRefused would make replicas diverge or cannot be replicated.
	kindRefused
)

// spec is one row of the command table.
type spec struct {
	kind  kind
	arity int // as Redis counts it, name included: n exactly, or -n for at least n
	// rewrite makes a time-relative command absolute, using now, the clock of
	// the agent that proposes it. It returns args unchanged when they do not
	// parse; redis then refuses them the same way on every replica.
	rewrite func(args [][]byte, now time.Time) [][]byte
	reason  string // why a refused command is refused
}

const (
	whyRandom   = "its result is random, so replicas would diverge"
	whyBlocking = "blocking commands cannot be replicated through the log"
	whyScript   = "scripts may read the clock or random numbers"
	whyServer   = "it changes or inspects one server or connection, not the replicated data"
	whyPubSub   = "publish/subscribe is not replicated"
	whyWatch    = "optimistic locking with WATCH is not supported; use MULTI/EXEC"
)

var commandTable = map[string]spec{
	// Writes.
	"SET": {kind: kindWrite, arity: -3, rewrite: rewriteSet}, "SETNX": {kind: kindWrite, arity: 3},
	"SETEX": {kind: kindWrite, arity: 4, rewrite: rewriteSetex(1000)}, "PSETEX": {kind: kindWrite, arity: 4, rewrite: rewriteSetex(1)},
	"GETSET": {kind: kindWrite, arity: 3}, "GETDEL": {kind: kindWrite, arity: 2},
	"GETEX": {kind: kindWrite, arity: -2, rewrite: rewriteGetex},
	"MSET":  {kind: kindWrite, arity: -3}, "MSETNX": {kind: kindWrite, arity: -3},
	"APPEND": {kind: kindWrite, arity: 3}, "SETRANGE": {kind: kindWrite, arity: 4},
	"INCR": {kind: kindWrite, arity: 2}, "DECR": {kind: kindWrite, arity: 2},
	"INCRBY": {kind: kindWrite, arity: 3}, "DECRBY": {kind: kindWrite, arity: 3},
	"INCRBYFLOAT": {kind: kindWrite, arity: 3},
	"DEL":         {kind: kindWrite, arity: -2}, "UNLINK": {kind: kindWrite, arity: -2},
	"EXPIRE": {kind: kindWrite, arity: -3, rewrite: rewriteExpire(1000)}, "PEXPIRE": {kind: kindWrite, arity: -3, rewrite: rewriteExpire(1)},
	"EXPIREAT": {kind: kindWrite, arity: -3}, "PEXPIREAT": {kind: kindWrite, arity: -3},
	"PERSIST": {kind: kindWrite, arity: 2}, "RENAME": {kind: kindWrite, arity: 3}, "RENAMENX": {kind: kindWrite, arity: 3},
	"HSET": {kind: kindWrite, arity: -4}, "HSETNX": {kind: kindWrite, arity: 4}, "HMSET": {kind: kindWrite, arity: -4},
	"HDEL": {kind: kindWrite, arity: -3}, "HINCRBY": {kind: kindWrite, arity: 4}, "HINCRBYFLOAT": {kind: kindWrite, arity: 4},
	"LPUSH": {kind: kindWrite, arity: -3}, "RPUSH": {kind: kindWrite, arity: -3},
	"LPUSHX": {kind: kindWrite, arity: -3}, "RPUSHX": {kind: kindWrite, arity: -3},
	"LPOP": {kind: kindWrite, arity: -2}, "RPOP": {kind: kindWrite, arity: -2},
	"LSET": {kind: kindWrite, arity: 4}, "LTRIM": {kind: kindWrite, arity: 4}, "LREM": {kind: kindWrite, arity: 4},
	"LINSERT": {kind: kindWrite, arity: 5}, "LMOVE": {kind: kindWrite, arity: 5}, "RPOPLPUSH": {kind: kindWrite, arity: 3},
	"SADD": {kind: kindWrite, arity: -3}, "SREM": {kind: kindWrite, arity: -3}, "SMOVE": {kind: kindWrite, arity: 4},
	"ZADD": {kind: kindWrite, arity: -4}, "ZREM": {kind: kindWrite, arity: -3}, "ZINCRBY": {kind: kindWrite, arity: 4},
	"ZPOPMIN": {kind: kindWrite, arity: -2}, "ZPOPMAX": {kind: kindWrite, arity: -2},
	"FLUSHALL": {kind: kindWrite, arity: -1}, "FLUSHDB": {kind: kindWrite, arity: -1},

	// Reads.
	"GET": {kind: kindRead, arity: 2}, "MGET": {kind: kindRead, arity: -2}, "EXISTS": {kind: kindRead, arity: -2},
	"STRLEN": {kind: kindRead, arity: 2}, "GETRANGE": {kind: kindRead, arity: 4},
	"TTL": {kind: kindRead, arity: 2}, "PTTL": {kind: kindRead, arity: 2},
	"EXPIRETIME": {kind: kindRead, arity: 2}, "PEXPIRETIME": {kind: kindRead, arity: 2},
	"TYPE": {kind: kindRead, arity: 2}, "DBSIZE": {kind: kindRead, arity: 1},
	"KEYS": {kind: kindRead, arity: 2}, "SCAN": {kind: kindRead, arity: -2},
	"HGET": {kind: kindRead, arity: 3}, "HMGET": {kind: kindRead, arity: -3}, "HGETALL": {kind: kindRead, arity: 2},
	"HLEN": {kind: kindRead, arity: 2}, "HEXISTS": {kind: kindRead, arity: 3}, "HKEYS": {kind: kindRead, arity: 2},
	"HVALS": {kind: kindRead, arity: 2}, "HSTRLEN": {kind: kindRead, arity: 3},
	"LRANGE": {kind: kindRead, arity: 4}, "LLEN": {kind: kindRead, arity: 2}, "LINDEX": {kind: kindRead, arity: 3},
	"LPOS":     {kind: kindRead, arity: -3},
	"SMEMBERS": {kind: kindRead, arity: 2}, "SISMEMBER": {kind: kindRead, arity: 3}, "SMISMEMBER": {kind: kindRead, arity: -3},
	"SCARD": {kind: kindRead, arity: 2}, "SINTER": {kind: kindRead, arity: -2}, "SUNION": {kind: kindRead, arity: -2},
	"SDIFF":  {kind: kindRead, arity: -2},
	"ZRANGE": {kind: kindRead, arity: -4}, "ZREVRANGE": {kind: kindRead, arity: -4}, "ZRANGEBYSCORE": {kind: kindRead, arity: -4},
	"ZSCORE": {kind: kindRead, arity: 3}, "ZCARD": {kind: kindRead, arity: 2}, "ZRANK": {kind: kindRead, arity: -3},
	"ZCOUNT": {kind: kindRead, arity: 4},

	// About the local server.
	"INFO": {kind: kindLocal, arity: -1}, "COMMAND": {kind: kindLocal, arity: -1},
	"TIME": {kind: kindLocal, arity: 1}, "LASTSAVE": {kind: kindLocal, arity: 1},
	"CONFIG": {kind: kindLocal, arity: -2}, "HELLO": {kind: kindLocal, arity: -1},

	// The agent's own.
	"PING": {kind: kindAgent, arity: -1}, "ECHO": {kind: kindAgent, arity: 2}, "SELECT": {kind: kindAgent, arity: 2},
	"MULTI": {kind: kindAgent, arity: 1}, "EXEC": {kind: kindAgent, arity: 1}, "DISCARD": {kind: kindAgent, arity: 1},
	"QUIT": {kind: kindAgent, arity: -1}, "WAITALL": {kind: kindAgent, arity: -1},

	// Refused.
	"RANDOMKEY": {kind: kindRefused, reason: whyRandom}, "SPOP": {kind: kindRefused, reason: whyRandom},
	"SRANDMEMBER": {kind: kindRefused, reason: whyRandom}, "HRANDFIELD": {kind: kindRefused, reason: whyRandom},
	"ZRANDMEMBER": {kind: kindRefused, reason: whyRandom},
	"BLPOP":       {kind: kindRefused, reason: whyBlocking}, "BRPOP": {kind: kindRefused, reason: whyBlocking},
	"BLMOVE": {kind: kindRefused, reason: whyBlocking}, "BRPOPLPUSH": {kind: kindRefused, reason: whyBlocking},
	"BLMPOP": {kind: kindRefused, reason: whyBlocking}, "BZPOPMIN": {kind: kindRefused, reason: whyBlocking},
	"BZPOPMAX": {kind: kindRefused, reason: whyBlocking}, "BZMPOP": {kind: kindRefused, reason: whyBlocking},
	"WAIT": {kind: kindRefused, reason: whyBlocking}, "WAITAOF": {kind: kindRefused, reason: whyBlocking},
	"EVAL": {kind: kindRefused, reason: whyScript}, "EVALSHA": {kind: kindRefused, reason: whyScript},
	"EVAL_RO": {kind: kindRefused, reason: whyScript}, "EVALSHA_RO": {kind: kindRefused, reason: whyScript},
	"SCRIPT": {kind: kindRefused, reason: whyScript}, "FUNCTION": {kind: kindRefused, reason: whyScript},
	"FCALL": {kind: kindRefused, reason: whyScript}, "FCALL_RO": {kind: kindRefused, reason: whyScript},
	"CLIENT": {kind: kindRefused, reason: whyServer}, "DEBUG": {kind: kindRefused, reason: whyServer},
	"SHUTDOWN": {kind: kindRefused, reason: whyServer}, "SAVE": {kind: kindRefused, reason: whyServer},
	"BGSAVE": {kind: kindRefused, reason: whyServer}, "BGREWRITEAOF": {kind: kindRefused, reason: whyServer},
	"REPLICAOF": {kind: kindRefused, reason: whyServer}, "SLAVEOF": {kind: kindRefused, reason: whyServer},
	"SYNC": {kind: kindRefused, reason: whyServer}, "PSYNC": {kind: kindRefused, reason: whyServer},
	"MONITOR": {kind: kindRefused, reason: whyServer}, "MIGRATE": {kind: kindRefused, reason: whyServer},
	"MOVE": {kind: kindRefused, reason: whyServer}, "SWAPDB": {kind: kindRefused, reason: whyServer},
	"ACL": {kind: kindRefused, reason: whyServer}, "AUTH": {kind: kindRefused, reason: whyServer},
	"MODULE": {kind: kindRefused, reason: whyServer}, "FAILOVER": {kind: kindRefused, reason: whyServer},
	"RESTORE":   {kind: kindRefused, reason: whyServer},
	"SUBSCRIBE": {kind: kindRefused, reason: whyPubSub}, "PSUBSCRIBE": {kind: kindRefused, reason: whyPubSub},
	"SSUBSCRIBE": {kind: kindRefused, reason: whyPubSub}, "PUBLISH": {kind: kindRefused, reason: whyPubSub},
	"SPUBLISH": {kind: kindRefused, reason: whyPubSub},
	"WATCH":    {kind: kindRefused, reason: whyWatch}, "UNWATCH": {kind: kindRefused, reason: whyWatch},
}

// lookup finds the command's row and checks its arity and sub-command. The
// error is the Redis-style error line to send the client, without the '-'.
func lookup(args [][]byte) (string, spec, string) {
	name := strings.ToUpper(string(args[0]))
	s, ok := commandTable[name]
	if !ok {
		return name, s, unknownCommand(args)
	}
	if s.kind == kindRefused {
		return name, s, fmt.Sprintf("ERR '%s' is not supported by gait replica: %s", name, s.reason)
	}
	if (s.arity > 0 && len(args) != s.arity) || (s.arity < 0 && len(args) < -s.arity) {
		return name, s, fmt.Sprintf("ERR wrong number of arguments for '%s' command", strings.ToLower(name))
	}
	if name == "CONFIG" && !strings.EqualFold(string(args[1]), "GET") {
		return name, s, fmt.Sprintf("ERR 'CONFIG %s' is not supported by gait replica: %s", strings.ToUpper(string(args[1])), whyServer)
	}
	if name == "HELLO" && len(args) > 1 && string(args[1]) != "2" {
		return name, s, "NOPROTO sorry, this protocol version is not supported"
	}
	return name, s, ""
}

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
func rewriteSet(args [][]byte, now time.Time) [][]byte { return rewriteOptions(args, 3, now) }

// rewriteGetex turns GETEX's EX and PX options into PXAT.
func rewriteGetex(args [][]byte, now time.Time) [][]byte { return rewriteOptions(args, 2, now) }

func rewriteOptions(args [][]byte, from int, now time.Time) [][]byte {
	out := slicesClone(args)
	for i := from; i < len(out)-1; i++ {
		unit := map[string]int64{"EX": 1000, "PX": 1}[strings.ToUpper(string(out[i]))]
		if unit == 0 {
			continue
		}
		at, ok := absolute(out[i+1], unit, now)
		if !ok || bytes.HasPrefix(out[i+1], []byte("-")) || string(out[i+1]) == "0" {
			return args // redis answers "invalid expire time" on every replica
		}
		out[i], out[i+1] = []byte("PXAT"), at
		i++
	}
	return out
}

// rewriteSetex turns SETEX/PSETEX key n value into SET key value PXAT t.
func rewriteSetex(unit int64) func([][]byte, time.Time) [][]byte {
	return func(args [][]byte, now time.Time) [][]byte {
		at, ok := absolute(args[2], unit, now)
		if !ok || bytes.HasPrefix(args[2], []byte("-")) || string(args[2]) == "0" {
			return args
		}
		return [][]byte{[]byte("SET"), args[1], args[3], []byte("PXAT"), at}
	}
}

// rewriteExpire turns EXPIRE/PEXPIRE key n [flag] into PEXPIREAT key t [flag].
// A negative n stays negative in the past, and redis deletes the key either way.
func rewriteExpire(unit int64) func([][]byte, time.Time) [][]byte {
	return func(args [][]byte, now time.Time) [][]byte {
		at, ok := absolute(args[2], unit, now)
		if !ok {
			return args
		}
		out := append([][]byte{[]byte("PEXPIREAT"), args[1], at}, args[3:]...)
		return out
	}
}

func slicesClone(args [][]byte) [][]byte { return append([][]byte(nil), args...) }

// SupportedCommands lists the command table by kind, for docs and help text.
func SupportedCommands() map[string][]string {
	names := map[string][]string{}
	label := map[kind]string{kindWrite: "write", kindRead: "read", kindLocal: "local",
		kindAgent: "agent", kindRefused: "refused"}
	for name, s := range commandTable {
		names[label[s.kind]] = append(names[label[s.kind]], name)
	}
	for _, l := range names {
		sort.Strings(l)
	}
	return names
}

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
	// the agent that proposes it. It returns args unchanged when they do not
	// parse; redis then refuses them the same way on every replica.
	Rewrite func(args [][]byte, now time.Time) [][]byte
	Reason  string // why a refused command is refused
}

const (
	whyRandom   = "its result is random, so replicas would diverge"
	whyBlocking = "blocking commands cannot be replicated through the log"
	whyScript   = "scripts may read the clock or random numbers"
	whyServer   = "it changes or inspects one server or connection, not the replicated data"
	whyPubSub   = "publish/subscribe is not replicated"
	whyWatch    = "optimistic locking with WATCH is not supported; use MULTI/EXEC"
)

var table = map[string]Spec{
	// Writes.
	"SET": {Kind: Write, Arity: -3, Rewrite: rewriteSet}, "SETNX": {Kind: Write, Arity: 3},
	"SETEX": {Kind: Write, Arity: 4, Rewrite: rewriteSetex(1000)}, "PSETEX": {Kind: Write, Arity: 4, Rewrite: rewriteSetex(1)},
	"GETSET": {Kind: Write, Arity: 3}, "GETDEL": {Kind: Write, Arity: 2},
	"GETEX": {Kind: Write, Arity: -2, Rewrite: rewriteGetex},
	"MSET":  {Kind: Write, Arity: -3}, "MSETNX": {Kind: Write, Arity: -3},
	"APPEND": {Kind: Write, Arity: 3}, "SETRANGE": {Kind: Write, Arity: 4},
	"INCR": {Kind: Write, Arity: 2}, "DECR": {Kind: Write, Arity: 2},
	"INCRBY": {Kind: Write, Arity: 3}, "DECRBY": {Kind: Write, Arity: 3},
	"INCRBYFLOAT": {Kind: Write, Arity: 3},
	"DEL":         {Kind: Write, Arity: -2}, "UNLINK": {Kind: Write, Arity: -2},
	"EXPIRE": {Kind: Write, Arity: -3, Rewrite: rewriteExpire(1000)}, "PEXPIRE": {Kind: Write, Arity: -3, Rewrite: rewriteExpire(1)},
	"EXPIREAT": {Kind: Write, Arity: -3}, "PEXPIREAT": {Kind: Write, Arity: -3},
	"PERSIST": {Kind: Write, Arity: 2}, "RENAME": {Kind: Write, Arity: 3}, "RENAMENX": {Kind: Write, Arity: 3},
	"HSET": {Kind: Write, Arity: -4}, "HSETNX": {Kind: Write, Arity: 4}, "HMSET": {Kind: Write, Arity: -4},
	"HDEL": {Kind: Write, Arity: -3}, "HINCRBY": {Kind: Write, Arity: 4}, "HINCRBYFLOAT": {Kind: Write, Arity: 4},
	"LPUSH": {Kind: Write, Arity: -3}, "RPUSH": {Kind: Write, Arity: -3},
	"LPUSHX": {Kind: Write, Arity: -3}, "RPUSHX": {Kind: Write, Arity: -3},
	"LPOP": {Kind: Write, Arity: -2}, "RPOP": {Kind: Write, Arity: -2},
	"LSET": {Kind: Write, Arity: 4}, "LTRIM": {Kind: Write, Arity: 4}, "LREM": {Kind: Write, Arity: 4},
	"LINSERT": {Kind: Write, Arity: 5}, "LMOVE": {Kind: Write, Arity: 5}, "RPOPLPUSH": {Kind: Write, Arity: 3},
	"SADD": {Kind: Write, Arity: -3}, "SREM": {Kind: Write, Arity: -3}, "SMOVE": {Kind: Write, Arity: 4},
	"ZADD": {Kind: Write, Arity: -4}, "ZREM": {Kind: Write, Arity: -3}, "ZINCRBY": {Kind: Write, Arity: 4},
	"ZPOPMIN": {Kind: Write, Arity: -2}, "ZPOPMAX": {Kind: Write, Arity: -2},
	"FLUSHALL": {Kind: Write, Arity: -1}, "FLUSHDB": {Kind: Write, Arity: -1},

	// Reads.
	"GET": {Kind: Read, Arity: 2}, "MGET": {Kind: Read, Arity: -2}, "EXISTS": {Kind: Read, Arity: -2},
	"STRLEN": {Kind: Read, Arity: 2}, "GETRANGE": {Kind: Read, Arity: 4},
	"TTL": {Kind: Read, Arity: 2}, "PTTL": {Kind: Read, Arity: 2},
	"EXPIRETIME": {Kind: Read, Arity: 2}, "PEXPIRETIME": {Kind: Read, Arity: 2},
	"TYPE": {Kind: Read, Arity: 2}, "DBSIZE": {Kind: Read, Arity: 1},
	"KEYS": {Kind: Read, Arity: 2}, "SCAN": {Kind: Read, Arity: -2},
	"HGET": {Kind: Read, Arity: 3}, "HMGET": {Kind: Read, Arity: -3}, "HGETALL": {Kind: Read, Arity: 2},
	"HLEN": {Kind: Read, Arity: 2}, "HEXISTS": {Kind: Read, Arity: 3}, "HKEYS": {Kind: Read, Arity: 2},
	"HVALS": {Kind: Read, Arity: 2}, "HSTRLEN": {Kind: Read, Arity: 3},
	"LRANGE": {Kind: Read, Arity: 4}, "LLEN": {Kind: Read, Arity: 2}, "LINDEX": {Kind: Read, Arity: 3},
	"LPOS":     {Kind: Read, Arity: -3},
	"SMEMBERS": {Kind: Read, Arity: 2}, "SISMEMBER": {Kind: Read, Arity: 3}, "SMISMEMBER": {Kind: Read, Arity: -3},
	"SCARD": {Kind: Read, Arity: 2}, "SINTER": {Kind: Read, Arity: -2}, "SUNION": {Kind: Read, Arity: -2},
	"SDIFF":  {Kind: Read, Arity: -2},
	"ZRANGE": {Kind: Read, Arity: -4}, "ZREVRANGE": {Kind: Read, Arity: -4}, "ZRANGEBYSCORE": {Kind: Read, Arity: -4},
	"ZSCORE": {Kind: Read, Arity: 3}, "ZCARD": {Kind: Read, Arity: 2}, "ZRANK": {Kind: Read, Arity: -3},
	"ZCOUNT": {Kind: Read, Arity: 4},

	// About the local server.
	"INFO": {Kind: Local, Arity: -1}, "COMMAND": {Kind: Local, Arity: -1},
	"TIME": {Kind: Local, Arity: 1}, "LASTSAVE": {Kind: Local, Arity: 1},
	"CONFIG": {Kind: Local, Arity: -2}, "HELLO": {Kind: Local, Arity: -1},

	// The agent's own.
	"PING": {Kind: Agent, Arity: -1}, "ECHO": {Kind: Agent, Arity: 2}, "SELECT": {Kind: Agent, Arity: 2},
	"MULTI": {Kind: Agent, Arity: 1}, "EXEC": {Kind: Agent, Arity: 1}, "DISCARD": {Kind: Agent, Arity: 1},
	"QUIT": {Kind: Agent, Arity: -1}, "WAITALL": {Kind: Agent, Arity: -1},

	// Refused.
	"RANDOMKEY": {Kind: Refused, Reason: whyRandom}, "SPOP": {Kind: Refused, Reason: whyRandom},
	"SRANDMEMBER": {Kind: Refused, Reason: whyRandom}, "HRANDFIELD": {Kind: Refused, Reason: whyRandom},
	"ZRANDMEMBER": {Kind: Refused, Reason: whyRandom},
	"BLPOP":       {Kind: Refused, Reason: whyBlocking}, "BRPOP": {Kind: Refused, Reason: whyBlocking},
	"BLMOVE": {Kind: Refused, Reason: whyBlocking}, "BRPOPLPUSH": {Kind: Refused, Reason: whyBlocking},
	"BLMPOP": {Kind: Refused, Reason: whyBlocking}, "BZPOPMIN": {Kind: Refused, Reason: whyBlocking},
	"BZPOPMAX": {Kind: Refused, Reason: whyBlocking}, "BZMPOP": {Kind: Refused, Reason: whyBlocking},
	"WAIT": {Kind: Refused, Reason: whyBlocking}, "WAITAOF": {Kind: Refused, Reason: whyBlocking},
	"EVAL": {Kind: Refused, Reason: whyScript}, "EVALSHA": {Kind: Refused, Reason: whyScript},
	"EVAL_RO": {Kind: Refused, Reason: whyScript}, "EVALSHA_RO": {Kind: Refused, Reason: whyScript},
	"SCRIPT": {Kind: Refused, Reason: whyScript}, "FUNCTION": {Kind: Refused, Reason: whyScript},
	"FCALL": {Kind: Refused, Reason: whyScript}, "FCALL_RO": {Kind: Refused, Reason: whyScript},
	"CLIENT": {Kind: Refused, Reason: whyServer}, "DEBUG": {Kind: Refused, Reason: whyServer},
	"SHUTDOWN": {Kind: Refused, Reason: whyServer}, "SAVE": {Kind: Refused, Reason: whyServer},
	"BGSAVE": {Kind: Refused, Reason: whyServer}, "BGREWRITEAOF": {Kind: Refused, Reason: whyServer},
	"REPLICAOF": {Kind: Refused, Reason: whyServer}, "SLAVEOF": {Kind: Refused, Reason: whyServer},
	"SYNC": {Kind: Refused, Reason: whyServer}, "PSYNC": {Kind: Refused, Reason: whyServer},
	"MONITOR": {Kind: Refused, Reason: whyServer}, "MIGRATE": {Kind: Refused, Reason: whyServer},
	"MOVE": {Kind: Refused, Reason: whyServer}, "SWAPDB": {Kind: Refused, Reason: whyServer},
	"ACL": {Kind: Refused, Reason: whyServer}, "AUTH": {Kind: Refused, Reason: whyServer},
	"MODULE": {Kind: Refused, Reason: whyServer}, "FAILOVER": {Kind: Refused, Reason: whyServer},
	"RESTORE":   {Kind: Refused, Reason: whyServer},
	"SUBSCRIBE": {Kind: Refused, Reason: whyPubSub}, "PSUBSCRIBE": {Kind: Refused, Reason: whyPubSub},
	"SSUBSCRIBE": {Kind: Refused, Reason: whyPubSub}, "PUBLISH": {Kind: Refused, Reason: whyPubSub},
	"SPUBLISH": {Kind: Refused, Reason: whyPubSub},
	"WATCH":    {Kind: Refused, Reason: whyWatch}, "UNWATCH": {Kind: Refused, Reason: whyWatch},
}

// Lookup finds the command's row and checks its arity and sub-command. The
// error is the Redis-style error line to send the client, without the '-'.
func Lookup(args [][]byte) (string, Spec, string) {
	name := strings.ToUpper(string(args[0]))
	s, ok := table[name]
	if !ok {
		return name, s, unknownCommand(args)
	}
	if s.Kind == Refused {
		return name, s, fmt.Sprintf("ERR '%s' is not supported by gait replica: %s", name, s.Reason)
	}
	if (s.Arity > 0 && len(args) != s.Arity) || (s.Arity < 0 && len(args) < -s.Arity) {
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

package redis

import (
	"strconv"

	"github.com/gait-dev/gait/internal/resp"
)

// mode is what a client chose for its connection that redis must know to
// answer it: the protocol (HELLO 2 or 3) and the database (SELECT n).
//
// Every connection the agent holds to its redis-server (the applier's, the
// reads') stays at RESP2 and database 0 between requests: a request of a
// client in another mode is framed by HELLO 3 and SELECT n before it and
// SELECT 0 and HELLO 2 after it, in the same log entry (or the same
// pipelined read), and the client gets the reply of its own command. So
// every replica applies a write in the client's mode whatever came before
// on its connection, the replies the digests chain are the same on every
// replica, and a RESP2 client of database 0 costs nothing extra.
type mode struct {
	proto int // 2 or 3
	db    int
}

var defaultMode = mode{proto: 2}

// frame wraps payload, which makes n replies, for m; it returns the
// payload to send, its replies in all, and how many of them follow the
// client's.
func (m mode) frame(payload []byte, n int) ([]byte, int, int) {
	if m == defaultMode {
		return payload, n, 0
	}
	var out []byte
	after := 0
	if m.proto == 3 {
		out = resp.AppendCommand(out, []byte("HELLO"), []byte("3"))
		after++
	}
	if m.db != 0 {
		out = resp.AppendCommand(out, []byte("SELECT"), strconv.AppendInt(nil, int64(m.db), 10))
		after++
	}
	out = append(out, payload...)
	if m.db != 0 {
		out = resp.AppendCommand(out, []byte("SELECT"), []byte("0"))
	}
	if m.proto == 3 {
		out = resp.AppendCommand(out, []byte("HELLO"), []byte("2"))
	}
	return out, n + 2*after, after
}

// nullReply is the null a client of protocol proto reads for a missing value.
func nullReply(proto int) []byte {
	if proto == 3 {
		return []byte("_\r\n")
	}
	return []byte("$-1\r\n")
}

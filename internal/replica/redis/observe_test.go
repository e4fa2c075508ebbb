package redis

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/rediscmd"
	"github.com/gait-dev/gait/internal/resp"
)

// TestObservePure: the slow log keeps arguments as redis trims them, an
// INFO section is replaced up to the next one, and a pipelined batch's
// replies split one per command.
func TestObservePure(t *testing.T) {
	args := [][]byte{[]byte("SADD"), []byte("set")}
	for i := 3; i <= 33; i++ {
		args = append(args, []byte(strings.Repeat("x", i*5)))
	}
	got := unpackArgs(packArgs(nil, args))
	if len(got) != slowMaxArgs || string(got[31]) != "... (2 more arguments)" ||
		string(got[30]) != strings.Repeat("x", slowMaxBytes)+"... (27 more bytes)" || string(got[2]) != "xxxxxxxxxxxxxxx" {
		t.Errorf("trimmed: %d args, last %q, before it %q", len(got), got[len(got)-1], got[len(got)-2])
	}
	conf := unpackArgs(packArgs(nil, [][]byte{[]byte("config"), []byte("set"), []byte("masterauth"), []byte("pw"), []byte("maxmemory"), []byte("1")}))
	if string(conf[3]) != "(redacted)" || string(conf[5]) != "1" {
		t.Errorf("CONFIG SET redacted as %q", conf)
	}

	info := "# Server\r\nredis_version:7.0.15\r\n\r\n# Commandstats\r\ncmdstat_pexpireat:calls=1\r\ncmdstat_get:calls=2\r\n\r\n# Errorstats\r\nerrorstat_ERR:count=1\r\n"
	want := "# Server\r\nredis_version:7.0.15\r\n\r\n# Commandstats\r\ncmdstat_expire:calls=1\r\n\r\n# Errorstats\r\nerrorstat_ERR:count=1\r\n"
	if got := string(replaceSection([]byte(info), "# Commandstats\r\n", "cmdstat_expire:calls=1\r\n")); got != want {
		t.Errorf("replaced:\n%q\nwant\n%q", got, want)
	}
	last := "# Commandstats\r\ncmdstat_get:calls=2\r\n"
	if got := string(replaceSection([]byte(last), "# Commandstats\r\n", "")); got != "# Commandstats\r\n" {
		t.Errorf("emptied last section: %q", got)
	}

	var batch []byte
	parts := [][]byte{resp.Simple("OK"), resp.Error("ERR x"), resp.AppendBulk(nil, []byte("a\r\nb")),
		[]byte("*2\r\n$-1\r\n%1\r\n+k\r\n:1\r\n"), resp.Int(7)}
	for _, p := range parts {
		batch = append(batch, p...)
	}
	split := splitReplies(batch, len(parts))
	if len(split) != len(parts) {
		t.Fatalf("split into %d replies, want %d", len(split), len(parts))
	}
	for i := range parts {
		if string(split[i]) != string(parts[i]) {
			t.Errorf("reply %d: %q, want %q", i, split[i], parts[i])
		}
	}

	// A batch's slow entries pushed together leave what a push of each
	// would: the ids run on, and slowlog-max-len keeps the newest.
	l := newSlowLog()
	l.maxLen.Store(3)
	l.push([]slowEntry{{usec: 1}})
	var slow []slowEntry
	for i := range 5 {
		slow = append(slow, slowEntry{usec: int64(i + 2), args: packArgs(nil, [][]byte{[]byte("SET"), fmt.Appendf(nil, "k%d", i)})})
	}
	l.push(slow)
	if len(l.entries) != 3 || l.nextID != 6 {
		t.Fatalf("%d entries, next id %d; want 3 and 6", len(l.entries), l.nextID)
	}
	for i, e := range l.entries {
		if e.id != int64(i+3) || e.usec != int64(i+4) || string(unpackArgs(e.args)[1]) != fmt.Sprintf("k%d", i+2) {
			t.Errorf("entry %d: id %d, %d µs, %q", i, e.id, e.usec, unpackArgs(e.args))
		}
	}

	var s cmdStat
	for _, d := range []time.Duration{500 * time.Nanosecond, 3 * time.Microsecond, 3 * time.Microsecond, 5 * time.Millisecond} {
		s.record(d, false)
	}
	if p50, p99 := s.percentile(50), s.percentile(99); p50 != bucketUsec(2) || p99 != bucketUsec(13) {
		t.Errorf("p50 %d µs, p99 %d µs; want %d and %d", p50, p99, bucketUsec(2), bucketUsec(13))
	}
}

// BenchmarkObserve is what observing costs a SET on the request path
// (commandstats, histogram, the slow log's copy of the arguments), next to
// its peer, the command table's lookup every request already pays.
func BenchmarkObserve(b *testing.B) {
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	a := &agent{slow: newSlowLog()}
	st := &clientState{clientConn: clientConn{conn: c1}}
	stamped := &stampConn{Conn: c1} // its arrival stamp read, as serveConn reads it
	st.stamped = stamped
	args := [][]byte{[]byte("SET"), []byte("key:000123"), []byte("value-of-some-length")}
	ok := resp.Simple("OK")
	b.Run("observe", func(b *testing.B) {
		for range b.N {
			stamped.at = time.Now().UnixNano() // the read path's stamp
			st.obs = a.observe(st, args)
			st.obs.done(slot{fill: func() []byte { return ok }}).fill()
		}
	})
	// A pipelined batch of 1,000 SETs (what redis-cli --pipe sends), its
	// replies ready 20 ms after its bytes arrived: past the slow log's
	// default threshold, as a batch's raft round usually is.
	batch := make([][][]byte, 1000)
	for i := range batch {
		batch[i] = [][]byte{[]byte("SET"), fmt.Appendf(nil, "k%d", i), []byte("v")}
	}
	oks := bytes.Repeat(ok, len(batch))
	b.Run("batch", func(b *testing.B) {
		for range b.N {
			stamped.at = time.Now().Add(-20 * time.Millisecond).UnixNano()
			st.obs = a.observe(st, batch[0])
			for _, args := range batch[1:] {
				st.obs.join(args)
			}
			st.obs.done(slot{fill: func() []byte { return oks }}).fill()
		}
	})
	b.Run("lookup", func(b *testing.B) {
		for range b.N {
			rediscmd.Lookup(args)
		}
	})
}

// stampConn is a replica.Conn whose arrival stamp a benchmark sets.
type stampConn struct {
	net.Conn
	at int64
}

func (c *stampConn) Arrived() int64      { return c.at }
func (c *stampConn) Accepted() time.Time { return time.Time{} }
func (c *stampConn) Handled()            {}
func (c *stampConn) WaitRead() error     { return nil }
func (c *stampConn) SyscallConn() (syscall.RawConn, error) {
	return nil, errors.New("not a socket")
}

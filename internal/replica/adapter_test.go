package replica

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/resp"
)

// lineAdapter is a second protocol on the core, for its tests: clients send
// lines ("SET k v", "GET k", "INCR k", "SYNC") and get one quoted line back;
// the server behind it is a real redis-server, applied through the Redis
// backend. It shows that the core serves any Adapter: nothing in it is
// Redis's session (no RESP on the client side, no MULTI, no modes).
type lineAdapter struct{}

func (lineAdapter) Name() string { return "lines" }

func (lineAdapter) Open(addr string) (Backend, error) {
	return openRedis(addr, new(atomic.Int64), newRedisMux(addr, 1), log.New(nil, "", 0))
}

func (lineAdapter) ServeConn(c net.Conn, cl Client) {
	defer c.Close()
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		args := make([][]byte, len(f))
		for i, w := range f {
			args[i] = []byte(w)
		}
		cmd := resp.AppendCommand(nil, args...)
		var reply []byte
		var err error
		switch strings.ToUpper(f[0]) {
		case "SET", "INCR":
			reply, _, err = cl.Write(Command{Class: ClassWrite, Data: redisRecord{replies: 1, payload: cmd}.encode()}).Wait()
		case "GET":
			reply, err = cl.Read(context.Background(), Command{Class: ClassRead, Data: encodeRead(defaultMode, cmd)})
		case "SYNC":
			var n int
			n, err = cl.WaitAll(context.Background())
			reply = []byte(strconv.Itoa(n))
		default:
			err = fmt.Errorf("unknown command %q", f[0])
		}
		if err != nil {
			reply = []byte("error: " + err.Error())
		}
		fmt.Fprintf(c, "%q\n", reply)
	}
}

// lines is a client of lineAdapter.
type lines struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dialLines(t *testing.T, addr string) *lines {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &lines{t: t, c: c, r: bufio.NewReader(c)}
}

func (l *lines) do(line string) string {
	l.t.Helper()
	l.c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := fmt.Fprintln(l.c, line); err != nil {
		l.t.Fatal(err)
	}
	got, err := l.r.ReadString('\n')
	if err != nil {
		l.t.Fatalf("%s: %v", line, err)
	}
	s, err := strconv.Unquote(strings.TrimSpace(got))
	if err != nil {
		l.t.Fatalf("%s: reply %q: %v", line, got, err)
	}
	return s
}

// TestAdapter runs the core under an adapter that is not the built-in
// Redis serving: writes through any agent are ordered and applied on every
// replica, a read through another agent sees them, SYNC waits for every
// replica, and a replica that joins after a snapshot is rebuilt from it
// through the backend's Restore.
func TestAdapter(t *testing.T) {
	// Five trailing entries: the late replica gets the snapshot, not the log.
	cl := startCluster(t, 3, 0, func(c *Config) { c.Adapter = lineAdapter{}; c.TrailingLogs = 5; c.SnapshotThreshold = 1 << 20 })
	a, b := dialLines(t, cl.nodes[0].agent.ClientAddr()), dialLines(t, cl.nodes[2].agent.ClientAddr())
	if got := a.do("SET k v1"); got != "+OK\r\n" {
		t.Fatalf("SET: %q", got)
	}
	if got := b.do("GET k"); got != "$2\r\nv1\r\n" {
		t.Errorf("GET through another agent: %q", got)
	}
	for range 5 {
		a.do("INCR n")
		b.do("INCR n")
	}
	if got := b.do("SYNC"); got != "3" {
		t.Errorf("SYNC: %q replicas", got)
	}
	if got := a.do("GET n"); got != "$2\r\n10\r\n" {
		t.Errorf("GET n: %q", got)
	}
	for _, n := range cl.live() {
		if err := n.agent.Snapshot(); err != nil {
			t.Fatalf("snapshot on %s: %v", n.cfg.ID, err)
		}
	}
	a.do("SET after snapshot")
	late := cl.add(Config{ID: "r4", RaftAddr: "127.0.0.1:0", Listen: "127.0.0.1:0", Join: cl.nodes[0].agent.RaftAddr(),
		Adapter: lineAdapter{}, Log: testLog(t)})
	if n := cl.sameData(); n != 3 {
		t.Errorf("%d keys on every replica, want 3", n)
	}
	if got := dialLines(t, late.agent.ClientAddr()).do("GET n"); got != "$2\r\n10\r\n" {
		t.Errorf("GET n through the late replica: %q", got)
	}
	if first, err := late.agent.logStore.FirstIndex(); err != nil || first <= 1 {
		t.Errorf("the late replica's log starts at %d: it was not rebuilt from a snapshot", first)
	}
}

package replica

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lineAdapter is a protocol of the core's own tests: clients send lines
// ("SET k v", "GET k", "INCR k", "SYNC") and get one quoted line back. Its
// server is a map in memory (memServer), so the core's tests run without
// any real server: the Redis and ZooKeeper adapters' tests run the core
// in front of real ones.
type lineAdapter struct{ server *memServer }

func (lineAdapter) Name() string { return "lines" }

func (l lineAdapter) Open(string) (Backend, error) { return l.server, nil }

func (lineAdapter) ServeConn(c net.Conn, cl Client) {
	defer c.Close()
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		var reply []byte
		var err error
		switch strings.ToUpper(f[0]) {
		case "SET", "INCR":
			reply, _, err = cl.Write(Command{Class: ClassWrite, Data: []byte(sc.Text())}).Wait()
		case "GET":
			reply, err = cl.Read(context.Background(), Command{Class: ClassRead, Data: []byte(sc.Text())})
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

// memServer is a Backend over a map: SET k v, INCR k, GET k.
type memServer struct {
	mu   sync.Mutex
	data map[string]string
}

func (m *memServer) Apply(batch []Committed) ([]Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Result, len(batch))
	for i, c := range batch {
		f := strings.Fields(string(c.Data))
		reply := "OK"
		switch {
		case len(f) == 3 && f[0] == "SET":
			m.data[f[1]] = f[2]
		case len(f) == 2 && f[0] == "INCR":
			n, _ := strconv.Atoi(m.data[f[1]])
			m.data[f[1]] = strconv.Itoa(n + 1)
			reply = m.data[f[1]]
		default:
			reply = "error: bad write"
		}
		out[i] = Result{Reply: []byte(reply), Digest: []byte(reply)}
	}
	return out, nil
}

func (m *memServer) Read(_ context.Context, data []byte) ([]byte, error) {
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return nil, errors.New("bad read")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return []byte(m.data[f[1]]), nil
}

func (m *memServer) Snapshot(w io.Writer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range slices.Sorted(maps.Keys(m.data)) {
		if _, err := fmt.Fprintf(w, "%q %q\n", k, m.data[k]); err != nil {
			return err
		}
	}
	return nil
}

func (m *memServer) Restore(r io.Reader) error {
	data := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var k, v string
		if _, err := fmt.Sscanf(sc.Text(), "%q %q", &k, &v); err != nil {
			return err
		}
		data[k] = v
	}
	m.mu.Lock()
	m.data = data
	m.mu.Unlock()
	return sc.Err()
}

func (m *memServer) Reset() error {
	m.mu.Lock()
	m.data = map[string]string{}
	m.mu.Unlock()
	return nil
}

func (m *memServer) Alive(context.Context) error { return nil }
func (m *memServer) Close() error                { return nil }

func (m *memServer) keys() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.data)
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

// lineAgent starts an agent of lineAdapter (groupingLines with grouping)
// over a memServer of its own.
func lineAgent(t *testing.T, cfg Config, grouping bool) (*Agent, *memServer) {
	t.Helper()
	srv := &memServer{data: map[string]string{}}
	var ad Adapter = lineAdapter{srv}
	if grouping {
		ad = groupingLines{lineAdapter{srv}}
	}
	cfg.Adapter, cfg.ServerAddr, cfg.RaftAddr, cfg.Listen = ad, "memory", "127.0.0.1:0", "127.0.0.1:0"
	a, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, srv
}

// lineCluster starts three agents of lineAdapter, IDs prefix1 to prefix3,
// the first leading.
func lineCluster(t *testing.T, base Config, prefix string, grouping bool) ([]*Agent, []*memServer) {
	t.Helper()
	var agents []*Agent
	var servers []*memServer
	for i := range 3 {
		cfg := base
		cfg.ID, cfg.Bootstrap = fmt.Sprintf("%s%d", prefix, i+1), i == 0
		if i > 0 {
			cfg.Join = agents[0].RaftAddr()
		}
		a, srv := lineAgent(t, cfg, grouping)
		agents, servers = append(agents, a), append(servers, srv)
		for i == 0 && !a.IsLeader() {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return agents, servers
}

// TestAdapter runs the core under an adapter of its own: writes through
// any agent are ordered and applied on every replica, a read through
// another agent sees them, SYNC waits for every replica, a write committed
// twice is applied once, and a replica that joins after a snapshot is
// rebuilt from it through the backend's Restore.
func TestAdapter(t *testing.T) {
	// Five trailing entries: the late replica gets the snapshot, not the log.
	base := Config{TrailingLogs: 5, SnapshotThreshold: 1 << 20, HeartbeatTimeout: 200 * time.Millisecond}
	agents, servers := lineCluster(t, base, "r", false)
	a, b := dialLines(t, agents[0].ClientAddr()), dialLines(t, agents[2].ClientAddr())
	if got := a.do("SET k v1"); got != "OK" {
		t.Fatalf("SET: %q", got)
	}
	if got := b.do("GET k"); got != "v1" {
		t.Errorf("GET through another agent: %q", got)
	}
	for range 5 {
		a.do("INCR n")
		b.do("INCR n")
	}
	if got := b.do("SYNC"); got != "3" {
		t.Errorf("SYNC: %q replicas", got)
	}
	if got := a.do("GET n"); got != "10" {
		t.Errorf("GET n: %q", got)
	}
	// A write its proposer re-sent to a new leader commits twice: once
	// before the snapshot, once after it. Every replica, the one restored
	// from the snapshot included, must apply it once (sessions.go).
	leader := agents[0]
	for !leader.IsLeader() {
		if leader = agents[(slices.Index(agents, leader)+1)%len(agents)]; leader == agents[0] {
			time.Sleep(10 * time.Millisecond)
		}
	}
	resent := entry{proposer: leader.RaftAddr() + "#earlier-run", seq: 5, floor: 5, data: []byte("INCR resent")}.encode()
	if err := leader.raft.Apply(resent, 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	for _, ag := range agents {
		for ag.Applied() < leader.LastIndex() {
			time.Sleep(5 * time.Millisecond)
		}
		if err := ag.Snapshot(); err != nil {
			t.Fatalf("snapshot on %s: %v", ag.ID(), err)
		}
	}
	if err := leader.raft.Apply(resent, 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	a.do("SET after snapshot")
	cfg := base
	cfg.ID, cfg.Join = "r4", agents[0].RaftAddr()
	late, lateSrv := lineAgent(t, cfg, false)
	// A joining agent learns the others when its configuration entry
	// commits there; until then SYNC through it counts fewer replicas.
	for deadline := time.Now().Add(10 * time.Second); len(late.Replicas()) < 4 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	c := dialLines(t, late.ClientAddr())
	c.do("SET late yes")
	if got := c.do("SYNC"); got != "4" {
		t.Errorf("SYNC with the late replica: %q replicas", got)
	}
	want := map[string]string{"k": "v1", "n": "10", "after": "snapshot", "late": "yes", "resent": "1"}
	for i, srv := range append(servers, lateSrv) {
		if got := srv.keys(); !maps.Equal(got, want) {
			t.Errorf("replica %d holds %v, want %v", i+1, got, want)
		}
	}
	if got := dialLines(t, late.ClientAddr()).do("GET n"); got != "10" {
		t.Errorf("GET n through the late replica: %q", got)
	}
	if first, err := late.logStore.FirstIndex(); err != nil || first <= 1 {
		t.Errorf("the late replica's log starts at %d: it was not rebuilt from a snapshot", first)
	}
}

// groupingLines is lineAdapter letting its writes share a log index.
type groupingLines struct{ lineAdapter }

func (groupingLines) GroupsWrites() bool { return true }

// TestAdapterGroups: with an adapter that lets writes share a log index,
// eight clients' writes through the leader go in fewer log entries than
// there are writes, and every replica applies each write once, every
// client getting its own reply.
func TestAdapterGroups(t *testing.T) {
	agents, servers := lineCluster(t, Config{HeartbeatTimeout: 200 * time.Millisecond}, "g", true)
	for deadline := time.Now().Add(10 * time.Second); len(agents[0].Replicas()) < 3 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	const clients, each = 8, 40
	before := agents[0].LastIndex()
	var wg sync.WaitGroup
	replies := make(chan string, clients*each)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := dialLines(t, agents[0].ClientAddr())
			for range each {
				replies <- l.do(fmt.Sprintf("INCR c%d", c)) + " " + l.do("INCR n")
			}
		}()
	}
	wg.Wait()
	close(replies)
	seen := map[string]bool{}
	for r := range replies {
		n := strings.Fields(r)[1]
		if seen[n] {
			t.Errorf("two clients got INCR n's reply %s", n)
		}
		seen[n] = true
	}
	entries := agents[0].LastIndex() - before
	if entries >= 2*clients*each {
		t.Errorf("%d writes took %d log entries: none were grouped", 2*clients*each, entries)
	}
	t.Logf("%d writes in %d log entries", 2*clients*each, entries)
	last := agents[0].LastIndex()
	for _, ag := range agents {
		for deadline := time.Now().Add(10 * time.Second); ag.Applied() < last && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	for i, srv := range servers {
		got := srv.keys()
		if got["n"] != strconv.Itoa(clients*each) {
			t.Errorf("replica %d: n = %s, want %d", i+1, got["n"], clients*each)
		}
		for c := range clients {
			if got[fmt.Sprintf("c%d", c)] != strconv.Itoa(each) {
				t.Errorf("replica %d: c%d = %s, want %d", i+1, c, got[fmt.Sprintf("c%d", c)], each)
			}
		}
	}
}

package redis

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/replica"
	goredis "github.com/redis/go-redis/v9"
)

// TestReplica runs one deployment of 3 voters and 2 non-voting duplicates
// through the client-visible behaviour, then kills its leader.
func TestReplica(t *testing.T) {
	cl := startCluster(t, 3, 2, func(c *replica.Config) {
		c.MaxRequest, c.RequestMemory, c.RequestTimeout = 1<<20, 2<<20, 500*time.Millisecond
	})
	t.Run("ReadYourWriteAcrossAgents", func(t *testing.T) { testReadYourWrite(t, cl) })
	t.Run("LeaseReads", func(t *testing.T) { testLeaseReads(t, cl) })
	t.Run("MultiExec", func(t *testing.T) { testMultiExec(t, cl) })
	t.Run("ExpiryRewritten", func(t *testing.T) { testExpiry(t, cl) })
	t.Run("ExpiryBehindALaggingServer", func(t *testing.T) { testExpiryBehindLag(t, cl) })
	t.Run("Refused", func(t *testing.T) { testRefused(t, cl) })
	t.Run("BadInput", func(t *testing.T) { testBadInput(t, cl) })
	t.Run("BoundedRequests", func(t *testing.T) { testBoundedRequests(t, cl) })
	t.Run("Pipeline", func(t *testing.T) { testPipeline(t, cl) })
	t.Run("RequestsWhileAWriteWaits", func(t *testing.T) { testRequestsWhileAWriteWaits(t, cl) })
	t.Run("RedisCLI", func(t *testing.T) { testRedisCLI(t, cl) })
	t.Run("LeaderFailover", func(t *testing.T) { testFailover(t, cl) })
}

func testReadYourWrite(t *testing.T, cl *cluster) {
	ctx := context.Background()
	n := len(cl.nodes)
	for i := range 40 {
		wn, rn := cl.nodes[i%n], cl.nodes[(i+2)%n]
		w, r := client(t, wn.agent.ClientAddr()), client(t, rn.agent.ClientAddr())
		key, val := fmt.Sprintf("ryw%d", i), fmt.Sprintf("v%d", i)
		if err := w.Set(ctx, key, val, 0).Err(); err != nil {
			t.Fatalf("set %s via %s: %v", key, wn.cfg.ID, err)
		}
		got, err := r.Get(ctx, key).Result()
		if err != nil || got != val {
			t.Fatalf("get %s via %s after set via %s: %q, %v", key, rn.cfg.ID, wn.cfg.ID, got, err)
		}
		if v, err := r.Incr(ctx, "counter").Result(); err != nil || v != int64(i+1) {
			t.Fatalf("incr via %s: %d, %v; want %d", rn.cfg.ID, v, err, i+1)
		}
	}
	cl.sameData()
}

// testLeaseReads: once the leader holds its lease, linearizable reads on it
// take their index under the lease, without a round of messages.
func testLeaseReads(t *testing.T, cl *cluster) {
	ctx := context.Background()
	leader := cl.waitLeader().agent
	c := client(t, leader.ClientAddr())
	count := func(name string) float64 { _, v := metric(t, leader, name, ""); return v }
	eventually(t, "the leader reads under its lease", func() bool {
		before := count("lease_read_indexes_total")
		c.Get(ctx, "lease")
		return count("lease_read_indexes_total") > before
	})
	rounds := count("read_index_rounds_total")
	for range 20 {
		if err := c.Get(ctx, "lease").Err(); err != goredis.Nil {
			t.Fatal(err)
		}
	}
	if n := count("read_index_rounds_total") - rounds; n > 2 {
		t.Errorf("%v read-index rounds for 20 reads under the lease", n)
	}
}

func testMultiExec(t *testing.T, cl *cluster) {
	ctx := context.Background()
	c := client(t, cl.nodes[3].agent.ClientAddr()) // a duplicate: forwarded to the leader
	var incr1, incr2 *goredis.IntCmd
	var get *goredis.StringCmd
	_, err := c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Set(ctx, "tx", "10", 0)
		incr1 = p.IncrBy(ctx, "tx", 5)
		incr2 = p.Incr(ctx, "tx")
		get = p.Get(ctx, "tx")
		p.RPush(ctx, "txlist", "a", "b")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if incr1.Val() != 15 || incr2.Val() != 16 || get.Val() != "16" {
		t.Errorf("transaction results %d %d %q, want 15 16 \"16\"", incr1.Val(), incr2.Val(), get.Val())
	}
	// A bad command while queueing discards the transaction, as in redis.
	conn := rawConn(t, cl.nodes[1].agent.ClientAddr())
	for _, line := range []string{"MULTI", "INCR tx", "ACL WHOAMI", "EXEC"} {
		conn.send(line)
	}
	conn.expect("+OK", "+QUEUED", "-ERR 'ACL' is not supported", "-EXECABORT")
	conn.send("EXEC")
	conn.expect("-ERR EXEC without MULTI")
	cl.sameData()
	for _, n := range cl.live() {
		if v := direct(t, n).Get(ctx, "tx").Val(); v != "16" {
			t.Errorf("%s: tx = %q, want 16", n.cfg.ID, v)
		}
	}
}

func testExpiry(t *testing.T, cl *cluster) {
	ctx := context.Background()
	c := client(t, cl.nodes[4].agent.ClientAddr())
	before := time.Now()
	if err := c.Set(ctx, "ex", "v", 100*time.Second).Err(); err != nil { // go-redis sends EX 100
		t.Fatal(err)
	}
	if err := c.Do(ctx, "SET", "px", "v", "PX", "250000").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "SETEX", "setex", "300", "v").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "exp", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Expire(ctx, "exp", 400*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	cl.converge()
	for _, key := range []string{"ex", "px", "setex", "exp"} {
		var first int64
		for i, n := range cl.live() {
			at := direct(t, n).PExpireTime(ctx, key).Val().Milliseconds()
			pttl := direct(t, n).PTTL(ctx, key).Val()
			if at <= before.UnixMilli() {
				t.Fatalf("%s on %s: expiry %d not after the write at %d", key, n.cfg.ID, at, before.UnixMilli())
			}
			if i == 0 {
				first = at
			} else if at != first {
				t.Errorf("%s: absolute expiry %d on %s, %d on %s", key, at, n.cfg.ID, first, cl.live()[0].cfg.ID)
			}
			if want := time.Duration(at-time.Now().UnixMilli()) * time.Millisecond; pttl < want-2*time.Second || pttl > want+time.Second {
				t.Errorf("%s on %s: PTTL %v, want about %v", key, n.cfg.ID, pttl, want)
			}
		}
	}
	cl.sameData()
}

// testExpiryBehindLag: a relative expiry sent while the client's own
// redis-server lags behind its write (a busy script holds it; another
// replica answered) counts from when that server has the write, so the key
// expires there as redis expires it (expired_keys), not deleted inside the
// PEXPIREAT that came too late; every replica ends alike.
func testExpiryBehindLag(t *testing.T, cl *cluster) {
	ctx := context.Background()
	n := cl.other(cl.waitLeader())
	server, c := direct(t, n), client(t, n.agent.ClientAddr())
	expired := func() int64 {
		info := server.Info(ctx, "stats").Val()
		_, rest, _ := strings.Cut(info, "expired_keys:")
		v, _ := strconv.ParseInt(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]), 10, 64)
		return v
	}
	before := expired()
	stalled := make(chan error, 1)
	go func() {
		stalled <- server.Eval(ctx, `local s = redis.call('TIME') local t0 = s[1] * 1e6 + s[2]
repeat s = redis.call('TIME') until s[1] * 1e6 + s[2] - t0 > 700000`, nil).Err()
	}()
	time.Sleep(50 * time.Millisecond) // the script runs
	if err := c.Set(ctx, "lagged", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.PExpire(ctx, "lagged", 50*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	if err := <-stalled; err != nil && err != goredis.Nil {
		t.Fatalf("stalling %s's redis-server: %v", n.cfg.ID, err)
	}
	eventually(t, "the key expired on the lagging server", func() bool { return server.Exists(ctx, "lagged").Val() == 0 })
	if got := expired() - before; got != 1 {
		t.Errorf("%s's redis-server counts %d keys expired, want 1 (deleted in PEXPIREAT instead)", n.cfg.ID, got)
	}
	cl.sameData()
}

func testRefused(t *testing.T, cl *cluster) {
	ctx := context.Background()
	c := client(t, cl.nodes[0].agent.ClientAddr())
	for _, cmd := range [][]any{{"DEBUG", "SEGFAULT"}, {"ACL", "WHOAMI"}, {"CONFIG", "REWRITE"}, {"SHUTDOWN"},
		{"MONITOR"}, {"SYNC"}, {"CLUSTER", "INFO"}} {
		err := c.Do(ctx, cmd...).Err()
		if err == nil || !strings.Contains(err.Error(), "not supported by gait replica") {
			t.Errorf("%v: %v, want a refusal", cmd, err)
		}
	}
	for cmd, want := range map[string]string{"NOSUCH a": "ERR unknown command 'NOSUCH'", "GET": "ERR wrong number of arguments for 'get'",
		"SELECT 16": "ERR DB index is out of range"} {
		args := []any{}
		for _, f := range strings.Fields(cmd) {
			args = append(args, f)
		}
		if err := c.Do(ctx, args...).Err(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %q", cmd, err, want)
		}
	}
	if v, err := c.ConfigGet(ctx, "appendonly").Result(); err != nil || len(v) != 1 {
		t.Errorf("CONFIG GET: %v, %v", v, err)
	}
}

func testBadInput(t *testing.T, cl *cluster) {
	addr := cl.nodes[2].agent.ClientAddr()
	for name, tc := range map[string]struct{ in, want string }{
		"not a bulk":    {"*2\r\n$3\r\nGET\r\n:1\r\n", "-ERR Protocol error: expected '$', got ':'"},
		"bad length":    {"*1\r\n$x\r\n", "-ERR Protocol error: invalid bulk length"},
		"bad count":     {"*zz\r\n", "-ERR Protocol error: invalid multibulk length"},
		"oversized":     {"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n", "-ERR Protocol error: request larger than the agent's limit"},
		"no terminator": {"*1\r\n$4\r\nPINGxx", "-ERR Protocol error: bulk string not terminated"},
	} {
		c := rawConn(t, addr)
		c.write(tc.in)
		c.expect(tc.want)
		if _, err := c.r.ReadByte(); err == nil {
			t.Errorf("%s: connection still open after a protocol error", name)
		}
	}
	// The agent still serves, inline commands included.
	c := rawConn(t, addr)
	c.write("PING\r\nECHO hi\r\n")
	c.expect("+PONG", "$2", "hi")
}

// testBoundedRequests: requests that stall half-way hold the agent's
// request memory (2 MiB here) only until --request-timeout (500 ms); one
// over the cap meanwhile is refused with an error, and other clients are
// served throughout.
func testBoundedRequests(t *testing.T, cl *cluster) {
	addr := cl.nodes[0].agent.ClientAddr()
	const size = 900_000
	header := func(key string) string {
		return fmt.Sprintf("*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n", len(key), key, size)
	}
	value := strings.Repeat("v", size) + "\r\n"
	var stalled []*rawPeer
	for _, key := range []string{"stallA", "stallB"} {
		c := rawConn(t, addr)
		c.write(header(key) + value[:1000])
		stalled = append(stalled, c)
	}
	time.Sleep(100 * time.Millisecond) // both headers read: 1.8 MB of 2 MiB held
	over := rawConn(t, addr)
	over.write(header("over"))
	over.expect("-ERR requests being read hold the agent's cap of 2097152 bytes")
	start := time.Now()
	if err := client(t, addr).Set(context.Background(), "small", "x", 0).Err(); err != nil {
		t.Fatalf("a small SET beside the stalled requests: %v", err)
	}
	for _, c := range stalled {
		c.expect("-ERR request stalled: no byte of it for 500ms")
		if _, err := c.r.ReadByte(); err == nil {
			t.Error("a stalled request's connection still open after its error")
		}
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("stalled requests cut after %v, want about 500ms", waited)
	}
	again := rawConn(t, addr)
	again.write(header("over") + value)
	again.expect("+OK")
}

// testRequestsWhileAWriteWaits: a client that waits for each reply has
// its write answered by its connection's reader (server.go, awaited);
// requests it sends before a reply, each in a write of its own, are still
// read, ordered and answered in order, through every agent.
func testRequestsWhileAWriteWaits(t *testing.T, cl *cluster) {
	for i, n := range cl.nodes {
		p := rawConn(t, n.agent.ClientAddr())
		key := fmt.Sprintf("awaited%d", i)
		for range 3 { // one at a time: answered by the reader
			p.send("INCR " + key)
			p.r.ReadString('\n')
		}
		for range 20 { // then without waiting, a request per write
			p.send("INCR " + key)
			time.Sleep(100 * time.Microsecond)
		}
		p.send("GET " + key)
		for want := 4; want <= 23; want++ {
			p.expect(fmt.Sprintf(":%d\r\n", want))
		}
		p.expect("$2", "23")
		p.send("INCR " + key) // one at a time again
		p.expect(":24\r\n")
	}
}

func testPipeline(t *testing.T, cl *cluster) {
	ctx := context.Background()
	c := client(t, cl.nodes[1].agent.ClientAddr())
	cmds, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i := range 100 {
			p.RPush(ctx, "pipe", i)
		}
		p.LRange(ctx, "pipe", 0, -1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds[:100] {
		if v := cmd.(*goredis.IntCmd).Val(); v != int64(i+1) {
			t.Fatalf("RPUSH %d answered %d: pipelined writes out of order", i, v)
		}
	}
	if got := cmds[100].(*goredis.StringSliceCmd).Val(); len(got) != 100 || got[99] != "99" {
		t.Errorf("LRANGE after the pipeline: %d items", len(got))
	}
	testInterleavedPipeline(t, cl, c)
	// Concurrent clients on every agent.
	var wg sync.WaitGroup
	for i, n := range cl.live() {
		wg.Go(func() {
			c := client(t, n.agent.ClientAddr())
			for j := range 50 {
				if err := c.Incr(ctx, "concurrent").Err(); err != nil {
					t.Errorf("client %d incr %d: %v", i, j, err)
					return
				}
			}
		})
	}
	wg.Wait()
	want := int64(50 * len(cl.live()))
	if v, err := c.Get(ctx, "concurrent").Int64(); err != nil || v != want {
		t.Errorf("concurrent = %d, %v; want %d", v, err, want)
	}
	cl.sameData()
}

// testInterleavedPipeline sends writes and reads interleaved with commands
// that end a batch (PING, a refused command, MULTI): every reply comes in
// request order, each read sees the write before it, and a read whose
// answer differs per replica (PTTL) quarantines nobody.
func testInterleavedPipeline(t *testing.T, cl *cluster, c *goredis.Client) {
	ctx := context.Background()
	before := cl.batched()
	cmds, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i := range 50 {
			p.Set(ctx, "il", i, time.Minute)
			p.Get(ctx, "il")
			p.PTTL(ctx, "il")
			if i%10 == 9 {
				p.Ping(ctx)
				p.Do(ctx, "SHUTDOWN")
			}
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("pipeline with a refused command: %v, want its refusal", err)
	}
	i := 0
	for _, cmd := range cmds {
		switch cmd := cmd.(type) {
		case *goredis.StringCmd:
			if v := cmd.Val(); v != strconv.Itoa(i) {
				t.Fatalf("GET after SET %d in a pipeline: %q, %v", i, v, cmd.Err())
			}
			i++
		case *goredis.DurationCmd:
			if d := cmd.Val(); d <= 0 || d > time.Minute {
				t.Fatalf("PTTL after SET %d: %v, %v", i-1, d, cmd.Err())
			}
		case *goredis.StatusCmd:
			if cmd.Err() != nil {
				t.Fatalf("%v: %v", cmd.Args(), cmd.Err())
			}
		}
	}
	if i != 50 {
		t.Fatalf("%d GET replies, want 50", i)
	}
	if cl.batched() == before {
		t.Error("no pipelined batch was proposed as one log entry")
	}
	for _, r := range cl.nodes[0].agent.Replicas() {
		if r.Quarantined {
			t.Errorf("replica %s quarantined after a pipeline of reads", r.ID)
		}
	}
}

// batched is how many pipelined batches the live agents proposed.
func (cl *cluster) batched() uint64 {
	var n uint64
	for _, node := range cl.live() {
		c, _ := metric(cl.t, node.agent, "pipelined_batch_commands", "")
		n += c
	}
	return n
}

func testRedisCLI(t *testing.T, cl *cluster) {
	const cli = "/usr/bin/redis-cli"
	if _, err := os.Stat(cli); err != nil {
		t.Skipf("%s not installed", cli)
	}
	host, port, _ := net.SplitHostPort(cl.nodes[3].agent.ClientAddr())
	run := func(args ...string) string {
		out, err := exec.Command(cli, append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if out := run("SET", "cli", "hello"); out != "OK" {
		t.Errorf("redis-cli SET: %q", out)
	}
	if out := run("GET", "cli"); out != "hello" {
		t.Errorf("redis-cli GET: %q", out)
	}
	if out := run("INCRBY", "cli-n", "7"); out != "7" {
		t.Errorf("redis-cli INCRBY: %q", out)
	}
	if out := run("ACL", "WHOAMI"); !strings.Contains(out, "not supported") {
		t.Errorf("redis-cli ACL: %q", out)
	}
	// Interactive use reads commands from standard input.
	cmd := exec.Command(cli, "-h", host, "-p", port)
	cmd.Stdin = strings.NewReader("MULTI\nINCR cli-n\nINCR cli-n\nEXEC\n")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "8\n9") {
		t.Errorf("redis-cli transaction: %v: %q", err, out)
	}
}

func testFailover(t *testing.T, cl *cluster) {
	ctx := context.Background()
	old := cl.waitLeader()
	other := cl.other(old)
	c := client(t, other.agent.ClientAddr())
	acked := map[string]string{}
	for i := range 30 {
		k, v := fmt.Sprintf("fo%d", i), fmt.Sprintf("v%d", i)
		if err := c.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
		acked[k] = v
	}
	// Keep writing through the crash; only acknowledged writes count.
	stop := make(chan struct{})
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 30; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k, v := fmt.Sprintf("fo%d", i), fmt.Sprintf("v%d", i)
			if c.Set(ctx, k, v, 0).Err() == nil {
				mu.Lock()
				acked[k] = v
				mu.Unlock()
			}
		}
	})
	time.Sleep(200 * time.Millisecond)
	cl.stop(old)
	leader := cl.waitLeader()
	if leader == old {
		t.Fatal("the stopped leader still leads")
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	if err := c.Set(ctx, "after", "failover", 0).Err(); err != nil {
		t.Fatalf("write after failover: %v", err)
	}
	cl.sameData()
	for _, n := range cl.live() {
		d := direct(t, n)
		for k, v := range acked {
			if got := d.Get(ctx, k).Val(); got != v {
				t.Fatalf("%s lost acknowledged write %s=%s (has %q)", n.cfg.ID, k, v, got)
			}
		}
	}
	t.Logf("%d acknowledged writes survived the leader's crash on %d replicas", len(acked), len(cl.live()))
}

// TestSnapshotCatchUp compacts the log and adds a duplicate, which must
// catch up from the snapshot (DUMP/RESTORE) plus the log after it.
func TestSnapshotCatchUp(t *testing.T) {
	cl := startCluster(t, 3, 0, func(c *replica.Config) { c.TrailingLogs = 5; c.SnapshotThreshold = 1 << 20 })
	ctx := context.Background()
	c := client(t, cl.nodes[0].agent.ClientAddr())
	for i := range 60 {
		if err := c.HSet(ctx, fmt.Sprintf("h%d", i%7), fmt.Sprint(i), i).Err(); err != nil {
			t.Fatal(err)
		}
	}
	c.Set(ctx, "ttl", "v", time.Hour)
	// A key of another database (SELECT 2) must be in the snapshot too.
	db2 := goredis.NewClient(&goredis.Options{Addr: cl.nodes[0].agent.ClientAddr(), DB: 2, MaxRetries: -1})
	defer db2.Close()
	if err := db2.Set(ctx, "in-db2", "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cl.converge()
	for _, n := range cl.live() {
		if err := n.agent.Snapshot(); err != nil {
			t.Fatalf("snapshot on %s: %v", n.cfg.ID, err)
		}
	}
	for i := range 10 {
		c.RPush(ctx, "after-snapshot", i)
	}
	cl.add(replica.Config{ID: "late", RaftAddr: "127.0.0.1:0", Listen: "127.0.0.1:0", NonVoter: true,
		Join: cl.nodes[1].agent.RaftAddr(), Log: testLog(t)})
	if n := cl.sameData(); n != 9 {
		t.Errorf("%d keys, want 9", n)
	}
	for _, n := range cl.live() {
		d2 := goredis.NewClient(&goredis.Options{Addr: n.redis.Addr, DB: 2})
		if v, err := d2.Get(ctx, "in-db2").Result(); v != "v2" {
			t.Errorf("%s: database 2 holds in-db2=%q (%v), want \"v2\"", n.cfg.ID, v, err)
		}
		d2.Close()
	}
	late := cl.nodes[3].agent
	if s := late.RaftStats()["last_snapshot_index"]; s == "0" {
		t.Errorf("the late duplicate caught up without a snapshot (last_snapshot_index %s)", s)
	}
}

// rawConn speaks RESP by hand, for input no client library would send.
type rawPeer struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func rawConn(t *testing.T, addr string) *rawPeer {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawPeer{t: t, c: c, r: bufio.NewReader(c)}
}

func (p *rawPeer) write(s string) {
	if _, err := p.c.Write([]byte(s)); err != nil {
		p.t.Fatal(err)
	}
}

func (p *rawPeer) send(inline string) { p.write(inline + "\r\n") }

// expect reads one line per prefix and checks it starts with that prefix.
func (p *rawPeer) expect(prefixes ...string) {
	p.t.Helper()
	for _, want := range prefixes {
		line, err := p.r.ReadString('\n')
		if err != nil {
			p.t.Fatalf("reading reply (want %q): %v", want, err)
		}
		if !strings.HasPrefix(line, want) {
			p.t.Fatalf("reply %q, want prefix %q", strings.TrimSpace(line), want)
		}
	}
}

// TestDurabilityReplicated: with --durability replicated writes replicate
// as with disk, and an agent restarted on its data directory, with the
// other durability, resumes from its log.
func TestDurabilityReplicated(t *testing.T) {
	dir := t.TempDir()
	cl := startCluster(t, 3, 0, func(c *replica.Config) {
		c.Durability = replica.DurableReplicated
		c.DataDir = filepath.Join(dir, c.ID)
	})
	ctx := context.Background()
	c := client(t, cl.nodes[0].agent.ClientAddr())
	for i := range 50 {
		if err := c.Incr(ctx, "n").Err(); err != nil {
			t.Fatalf("INCR %d: %v", i, err)
		}
	}
	cl.sameData()
	follower := cl.nodes[2]
	if segs, _ := filepath.Glob(filepath.Join(follower.cfg.DataDir, "log", "*.wal")); len(segs) == 0 {
		t.Fatalf("%s: no raft log in %s", follower.cfg.ID, follower.cfg.DataDir)
	}
	cfg := follower.cfg
	cfg.RaftAddr = follower.agent.RaftAddr() // its peers know it there
	follower.agent.Close()
	follower.agent = nil
	cfg.Bootstrap, cfg.Join, cfg.Durability = false, "", replica.DurableDisk
	a, err := replica.Start(cfg)
	if err != nil {
		t.Fatalf("restart with durability disk: %v", err)
	}
	follower.agent = a
	if err := c.Incr(ctx, "n").Err(); err != nil {
		t.Fatal(err)
	}
	cl.sameData()
	if v, err := direct(t, follower).Get(ctx, "n").Result(); v != "51" {
		t.Errorf("restarted follower has n = %q (%v), want 51", v, err)
	}
}

package redis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/replica"
	redisserver "github.com/gait-dev/gait/internal/systems/redis"
	dto "github.com/prometheus/client_model/go"
	goredis "github.com/redis/go-redis/v9"
)

// node is one replica: an unmodified redis-server and its agent.
type node struct {
	redis *redisserver.Server
	agent *replica.Agent
	cfg   replica.Config
}

type cluster struct {
	t     testing.TB
	nodes []*node
}

// startCluster starts voters+duplicates replicas on loopback; the first bootstraps.
func startCluster(t testing.TB, voters, duplicates int, tweak func(*replica.Config)) *cluster {
	t.Helper()
	if _, err := os.Stat(redisserver.ServerBinary); err != nil {
		t.Skipf("%s not installed (make deps installs it)", redisserver.ServerBinary)
	}
	cl := &cluster{t: t}
	t.Cleanup(cl.close)
	for i := range voters + duplicates {
		cfg := replica.Config{ID: fmt.Sprintf("r%d", i+1), RaftAddr: "127.0.0.1:0", Listen: "127.0.0.1:0",
			Bootstrap: i == 0, NonVoter: i >= voters, Log: testLog(t)}
		if i > 0 {
			cfg.Join = cl.nodes[0].agent.RaftAddr()
		}
		if tweak != nil {
			tweak(&cfg)
		}
		cl.add(cfg)
		if i == 0 {
			cl.waitLeader()
		}
	}
	return cl
}

func (cl *cluster) add(cfg replica.Config) *node {
	cl.t.Helper()
	srv, err := redisserver.StartServer(context.Background())
	if err != nil {
		cl.t.Fatal(err)
	}
	cfg.ServerAddr = srv.Addr
	if cfg.Adapter == nil {
		cfg.Adapter = New(Options{})
	}
	a, err := replica.Start(cfg)
	if err != nil {
		srv.Close()
		cl.t.Fatal(err)
	}
	n := &node{redis: srv, agent: a, cfg: cfg}
	cl.nodes = append(cl.nodes, n)
	return n
}

// testLog keeps raft's warnings out of passing runs; -v shows them.
func testLog(t testing.TB) io.Writer {
	if testing.Verbose() {
		return os.Stderr
	}
	return io.Discard
}

func (cl *cluster) close() {
	for _, n := range cl.nodes {
		cl.stop(n)
	}
}

// stop closes a node's agent and redis; stopping twice is harmless.
func (cl *cluster) stop(n *node) {
	if n.agent != nil {
		n.agent.Close()
		n.agent = nil
	}
	if n.redis != nil {
		n.redis.Close()
		n.redis = nil
	}
}

func (cl *cluster) live() []*node {
	var out []*node
	for _, n := range cl.nodes {
		if n.agent != nil {
			out = append(out, n)
		}
	}
	return out
}

func (cl *cluster) waitLeader() *node {
	cl.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range cl.live() {
			if n.agent.IsLeader() {
				return n
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	cl.t.Fatal("no raft leader within 20s")
	return nil
}

// converge waits until every live replica has applied the leader's whole log.
func (cl *cluster) converge() {
	cl.t.Helper()
	leader := cl.waitLeader()
	target := leader.agent.LastIndex()
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range cl.live() {
		for n.agent.Applied() < target {
			if time.Now().After(deadline) {
				cl.t.Fatalf("%s applied %d, leader's log ends at %d", n.cfg.ID, n.agent.Applied(), target)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func client(t testing.TB, addr string) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: 15 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// direct talks to a replica's redis-server behind its agent's back.
// plainRedis starts a redis-server of t's own, skipping t where none is
// installed; it stops when t ends.
func plainRedis(t testing.TB) *redisserver.Server {
	t.Helper()
	if _, err := os.Stat(redisserver.ServerBinary); err != nil {
		t.Skipf("%s not installed (make deps installs it)", redisserver.ServerBinary)
	}
	srv, err := redisserver.StartServer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// other returns a live node other than n.
func (cl *cluster) other(n *node) *node {
	cl.t.Helper()
	for _, o := range cl.live() {
		if o != n {
			return o
		}
	}
	cl.t.Fatalf("no live node but %s", n.cfg.ID)
	return nil
}

func direct(t testing.TB, n *node) *goredis.Client {
	return client(t, n.redis.Addr)
}

// digest hashes every key of a redis with its type-independent DUMP and
// absolute expiry, in key order.
func digest(t testing.TB, c *goredis.Client) (string, int) {
	t.Helper()
	ctx := context.Background()
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		d, err := c.Dump(ctx, k).Result()
		if err != nil {
			t.Fatalf("dump %s: %v", k, err)
		}
		at, err := c.PExpireTime(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%q %q %d\n", k, d, at)
	}
	return hex.EncodeToString(h.Sum(nil)), len(keys)
}

// sameData checks that every live replica holds the same keys and values.
func (cl *cluster) sameData() int {
	cl.t.Helper()
	cl.converge()
	var want string
	var wantN int
	for i, n := range cl.live() {
		d, count := digest(cl.t, direct(cl.t, n))
		if i == 0 {
			want, wantN = d, count
			continue
		}
		if d != want || count != wantN {
			cl.t.Errorf("%s: %d keys, digest %s; %s: %d keys, digest %s", n.cfg.ID, count, d[:12],
				cl.live()[0].cfg.ID, wantN, want[:12])
		}
	}
	return wantN
}

// metric reads gait_replica_NAME from a's metrics (with label stage=STAGE
// when given): a counter's value, or a histogram's sample count and mean.
func metric(t testing.TB, a *replica.Agent, name, stage string) (count uint64, value float64) {
	t.Helper()
	families, err := a.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "gait_replica_"+name {
			continue
		}
		for _, m := range f.GetMetric() {
			if stage != "" && !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == "stage" && l.GetValue() == stage }) {
				continue
			}
			if h := m.GetHistogram(); h != nil {
				if h.GetSampleCount() == 0 {
					return 0, 0
				}
				return h.GetSampleCount(), h.GetSampleSum() / float64(h.GetSampleCount())
			}
			if g := m.GetGauge(); g != nil {
				return 0, g.GetValue()
			}
			return 0, m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric gait_replica_%s %s", name, stage)
	return 0, 0
}

package linearize_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/gait-dev/gait/internal/gaitbin"
	"github.com/gait-dev/gait/internal/limp"
	"github.com/gait-dev/gait/internal/linearize"
	"github.com/gait-dev/gait/internal/systems/gaitredis"
	"github.com/gait-dev/gait/internal/systems/redis"
	"github.com/gait-dev/gait/internal/systems/tbhost"
	"github.com/gait-dev/gait/internal/testbed"
	goredis "github.com/redis/go-redis/v9"
)

// gaitBin is a gait built once, for the agents; only root runs the
// testbed test, so only root builds it.
var gaitBin string

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		os.Exit(m.Run())
	}
	bin, cleanup, err := gaitbin.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gaitBin = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// Settings of one schedule.
const (
	scheduleLength = 15 * time.Second // clients run and faults strike for this long
	clientsPerHost = 2
	requestTimeout = 3 * time.Second
	checkTimeout   = 60 * time.Second // porcupine, per schedule
	registers      = 4                // keys with GET, SET and INCR
	counters       = 2                // keys with INCR and GET only
	queues         = 2                // list keys with RPUSH, LPOP, BLPOP and BLMOVE from one to the other
	blockFor       = time.Second      // BLPOP's and BLMOVE's timeout
)

// TestRandomized runs randomized fault schedules against a gait-redis
// deployment of 3 voters and 1 duplicate on testbed hosts while clients on
// every agent read and write registers and queues (blocking pops among
// them) and publish to and subscribe to a channel, and checks each
// schedule's history for linearizability, that no acknowledged write was
// lost, what pub/sub promises (linearize.CheckPubSub) and that the
// replicas' redis-servers hold the same data. GAIT_LIN_SCHEDULES sets the
// number of schedules (default 3), GAIT_LIN_SEED the random seed, and
// GAIT_LIN_READ the deployment's read mode (default linearizable; "any",
// which may read stale data, shows the check failing); GAIT_LIN_KEEP keeps
// the hosts' logs of a run that passed (a failed run keeps them always).
func TestRandomized(t *testing.T) {
	if err := testbed.NeedRoot(); err != nil {
		t.Skipf("the randomized linearizability test runs on testbed hosts: %v", err)
	}
	if _, err := os.Stat(redis.ServerBinary); err != nil {
		t.Skipf("%s not installed (make deps installs it)", redis.ServerBinary)
	}
	schedules := envInt(t, "GAIT_LIN_SCHEDULES", 3)
	seed := uint64(envInt(t, "GAIT_LIN_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("%d schedules, seed %d (GAIT_LIN_SEED=%d repeats them)", schedules, seed, seed)
	read := os.Getenv("GAIT_LIN_READ")
	if read == "" {
		read = "linearizable"
	}
	d := deploy(t, read)
	rng := rand.New(rand.NewPCG(seed, seed))
	var stats totals
	partitioned := 0
	// Logged also when a schedule stops the test with t.Fatal.
	defer func() {
		t.Logf("%d of %d schedules completed: %s", stats.schedules, schedules, stats)
		t.Logf("partitions: %d of %d schedules planned one (a voter's link down for 1 to 3 s)", partitioned, schedules)
	}()
	for s := range schedules {
		sc := plan(rng, s)
		if sc.has("partition") {
			partitioned++
		}
		t.Logf("schedule %d: %s", s+1, sc)
		res := d.run(t, sc)
		stats.add(res)
		t.Logf("schedule %d: %s", s+1, res)
		if t.Failed() {
			break
		}
	}
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// deployment is a gait-redis cluster on testbed hosts.
type deployment struct {
	tb   *testbed.Testbed
	c    *gaitredis.Cluster
	read string // the read mode
}

func deploy(t *testing.T, read string) *deployment {
	t.Helper()
	dir, err := os.MkdirTemp("", "gait-linearize-")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := testbed.Up(testbed.Options{Hosts: 4, Dir: dir})
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tb.Close(); err != nil {
			t.Error(err)
		}
		if t.Failed() || os.Getenv("GAIT_LIN_KEEP") != "" {
			t.Logf("hosts' logs kept in %s", dir)
		} else {
			os.RemoveAll(dir)
		}
	})
	drv := gaitredis.New()
	drv.Gait, drv.Voters, drv.Read = gaitBin, 3, read
	t0 := time.Now()
	c, err := drv.Start(context.Background(), tbhost.Hosts(tb, ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	t.Logf("3 voters and 1 duplicate, %s reads, ready in %v", read, time.Since(t0).Round(time.Millisecond))
	return &deployment{tb: tb, c: c.(*gaitredis.Cluster), read: read}
}

// fault is one planned injection, its target a role resolved when it strikes.
type fault struct {
	kind   string // crash, nic, partition or redis (the redis-server killed behind its running agent)
	target string // leader, follower (a voter that does not lead, or the duplicate) or voter (leader or follower, not the duplicate)
	at     time.Duration
	length time.Duration // down for (crash), limping for (nic) or cut off for (partition)
}

// overlaps reports whether f and a fault at..at+length come within a
// second of each other.
func (f fault) overlaps(at, length time.Duration) bool {
	return at < f.at+f.length+time.Second && at+length+time.Second > f.at
}

type schedule struct {
	n      int
	faults []fault
}

func (s schedule) String() string {
	var parts []string
	for _, f := range s.faults {
		what := f.kind
		if f.kind == "nic" {
			what += " 1000x"
		}
		parts = append(parts, fmt.Sprintf("%s on %s at %.1fs for %.1fs", what, f.target, f.at.Seconds(), f.length.Seconds()))
	}
	return strings.Join(parts, ", ")
}

func (s schedule) has(kind string) bool {
	return slices.ContainsFunc(s.faults, func(f fault) bool { return f.kind == kind })
}

// plan draws a schedule: the leader crashes once and comes back after 1
// to 3 s; a follower's NIC limps at 1000x for 3 to 6 s; half the time a
// follower also crashes, never while the leader is down, so a quorum can
// always form again; half the time a random voter (the leader or not) is
// cut off from every other host for 1 to 3 s, never within a second of a
// crash, so at most one voter is out of reach at a time; and half the time a
// voter's redis-server is killed behind its running agent for 1 to 3 s,
// never within a second of another crash, and then started again for the
// agent to re-attach.
func plan(rng *rand.Rand, n int) schedule {
	dur := func(lo, hi float64) time.Duration {
		return time.Duration((lo + rng.Float64()*(hi-lo)) * float64(time.Second))
	}
	end := scheduleLength.Seconds()
	leader := fault{kind: "crash", target: "leader", at: dur(2, end-6), length: dur(1, 3)}
	s := schedule{n: n, faults: []fault{leader,
		{kind: "nic", target: "follower", at: dur(1, end-7), length: dur(3, 6)}}}
	if rng.IntN(2) == 0 {
		at := dur(1, end-4)
		length := dur(1, 3)
		if leader.overlaps(at, length) {
			at = leader.at + leader.length + time.Second // after the leader is back
		}
		if at+length < scheduleLength {
			s.faults = append(s.faults, fault{kind: "crash", target: "follower", at: at, length: length})
		}
	}
	if rng.IntN(2) == 0 {
		if f, ok := apart(s, "redis", "voter", dur(1, end-4), dur(1, 3)); ok {
			s.faults = append(s.faults, f)
		}
	}
	if rng.IntN(2) == 0 {
		if f, ok := apart(s, "partition", "voter", dur(1, end-4), dur(1, 3)); ok {
			s.faults = append(s.faults, f)
		}
	}
	return s
}

// apart places a fault of kind on target at at for length, moved past every
// crash (of a host or of a redis-server) it would come within a second of;
// false when it would then end after the schedule.
func apart(s schedule, kind, target string, at, length time.Duration) (fault, bool) {
	crashes := slices.DeleteFunc(slices.Clone(s.faults), func(f fault) bool { return f.kind != "crash" && f.kind != "redis" })
	slices.SortFunc(crashes, func(a, b fault) int { return cmp.Compare(a.at, b.at) })
	for _, c := range crashes {
		if c.overlaps(at, length) {
			at = c.at + c.length + time.Second
		}
	}
	return fault{kind: kind, target: target, at: at, length: length}, at+length < scheduleLength
}

// result is what one schedule found.
type result struct {
	ops, unknown, droppedReads int
	pruned                     int // unknown writes nobody could have observed
	verdict                    porcupine.CheckResult
	check                      time.Duration
	applied                    []string
	pubsub                     linearize.PubSubReport
}

func (r result) String() string {
	return fmt.Sprintf("%d operations (%d writes of unknown outcome, %d of them never observable; %d failed reads left out), linearizable: %s (checked in %v); pub/sub violations %d; faults: %s",
		r.ops, r.unknown, r.pruned, r.droppedReads, linearize.Verdict(r.verdict), r.check.Round(time.Millisecond), r.pubsub.Violations(), strings.Join(r.applied, "; "))
}

type totals struct {
	schedules, ops, unknown int
	verdicts                map[string]int
	published, violations   int
}

func (t *totals) add(r result) {
	t.schedules++
	t.ops += r.ops
	t.unknown += r.unknown
	if t.verdicts == nil {
		t.verdicts = map[string]int{}
	}
	t.verdicts[linearize.Verdict(r.verdict)]++
	t.published += r.pubsub.Published
	t.violations += r.pubsub.Violations()
}

func (t totals) String() string {
	return fmt.Sprintf("%d operations, %d of unknown outcome; verdicts %v; %d messages published, %d pub/sub violations",
		t.ops, t.unknown, t.verdicts, t.published, t.violations)
}

// run runs one schedule on fresh keys and checks what it recorded.
func (d *deployment) run(t *testing.T, sc schedule) result {
	t.Helper()
	keys := newKeys(sc.n)
	h := linearize.NewHistory()
	ctx, cancel := context.WithTimeout(context.Background(), scheduleLength)
	defer cancel()
	var applied []string
	var mu sync.Mutex
	record := func(e limp.Event) {
		mu.Lock()
		defer mu.Unlock()
		s := fmt.Sprintf("%.1fs %s %s on %s", time.Duration(h.Now()).Seconds(), e.Action, e.Kind, e.Host)
		if e.Err != nil {
			s += " failed: " + e.Err.Error()
			t.Errorf("schedule %d: %s", sc.n+1, s)
		}
		applied = append(applied, s)
	}
	var addrs []string
	for _, name := range d.c.Hosts() {
		addrs = append(addrs, d.c.AgentAddr(name))
	}
	ps := startPubSub(h.Now, keys.channel, addrs)
	defer ps.halt()
	var faultsDone, published sync.WaitGroup
	faultsDone.Go(func() { limp.Run(ctx, d.faults(t, sc), record) })
	published.Go(func() { ps.publish(ctx, addrs) })
	counts := d.drive(ctx, h, keys)
	published.Wait()
	faultsDone.Wait() // every fault cleared, crashed hosts restarted
	for msg, n := range counts.errors {
		t.Logf("schedule %d: %d× %s", sc.n+1, n, msg)
	}
	d.waitHealthy(t)

	d.finalReads(t, h, keys)
	checkCounters(t, h, keys, counts)
	d.checkReplicasAgree(t)

	res := result{applied: applied}
	var err error
	res.pubsub, err = ps.drain(addrs[0])
	logPubSub(t, fmt.Sprintf("schedule %d", sc.n+1), res.pubsub, err, d.read == "linearizable")
	res.ops, res.unknown, res.droppedReads = h.Counts()
	t.Logf("schedule %d: operations by kind: %s", sc.n+1, kindCounts(h.Operations()))
	t.Logf("schedule %d: compare-and-set (swapped/not): %s", sc.n+1, casOutcomes(h.Operations()))
	t0 := time.Now()
	ops := linearize.Prune(h.Operations())
	res.pruned = res.ops + res.unknown - len(ops)
	verdict, violations := linearize.Check(ops, checkTimeout)
	res.verdict, res.check = verdict, time.Since(t0)
	switch verdict {
	case porcupine.Illegal:
		for _, v := range violations {
			t.Errorf("schedule %d: history not linearizable:\n%s", sc.n+1, v.Text)
		}
		d.picture(t, sc, violations[0])
	case porcupine.Unknown:
		t.Errorf("schedule %d: porcupine did not finish within %v", sc.n+1, checkTimeout)
	}
	return res
}

// picture writes porcupine's picture of a violation beside the hosts'
// logs, which a failed test keeps.
func (d *deployment) picture(t *testing.T, sc schedule, v linearize.Violation) {
	path := filepath.Join(d.tb.Dir, fmt.Sprintf("schedule-%d-%s.html", sc.n+1, strings.ReplaceAll(v.Key, ":", "-")))
	if err := linearize.Visualize(v.Ops, path, checkTimeout); err != nil {
		t.Error(err)
		return
	}
	t.Logf("schedule %d: porcupine's picture of %s's %d operations up to the violation: %s", sc.n+1, v.Key, len(v.Ops), path)
}

// keys of one schedule, and its channel, apart from every other schedule's.
type keys struct {
	registers, counters, queues []string
	channel                     string
}

func newKeys(n int) keys {
	k := keys{channel: fmt.Sprintf("s%d:ch", n)}
	for i := range registers {
		k.registers = append(k.registers, fmt.Sprintf("s%d:r%d", n, i))
	}
	for i := range counters {
		k.counters = append(k.counters, fmt.Sprintf("s%d:c%d", n, i))
	}
	for i := range queues {
		k.queues = append(k.queues, fmt.Sprintf("s%d:q%d", n, i))
	}
	return k
}

func (k keys) all() []string { return slices.Concat(k.registers, k.counters, k.queues) }

// faults turns a schedule into limp faults whose targets are resolved by
// asking the agents for their roles when the fault strikes.
func (d *deployment) faults(t *testing.T, sc schedule) []limp.Fault {
	var out []limp.Fault
	for _, f := range sc.faults {
		var inj limp.Injector = limp.NIC{}
		factor := 1000.0
		switch f.kind {
		case "crash":
			inj, factor = &limp.Crash{}, 1
		case "partition":
			inj, factor = limp.Partition{}, 1
		case "redis":
			inj, factor = redisCrash{d.c}, 1
		}
		out = append(out, limp.Fault{Injector: inj, Target: d.target(t, f.target), Factor: factor, At: f.at, For: f.length})
	}
	return out
}

// redisCrash kills a host's redis-server behind its running agent and, once
// cleared, starts a new one, empty, which the agent re-attaches and refills
// (waitHealthy, after every fault cleared, waits until it serves).
type redisCrash struct{ c *gaitredis.Cluster }

func (redisCrash) Kind() string { return "redis-crash" }

func (r redisCrash) Apply(h limp.Host, _ float64) error { return r.c.KillServer(h.HostName()) }

func (r redisCrash) Clear(h limp.Host) error {
	return r.c.RestartServer(context.Background(), h.HostName())
}

func (d *deployment) target(t *testing.T, role string) limp.Target {
	return func() (limp.Host, error) {
		var roles map[string]string
		var err error
		// Each try is short: an agent behind a limping NIC answers late,
		// and the healthy ones name the leader; limp applies faults one at
		// a time, so a slow answer would delay every fault after this one.
		// More tries, half a second apart, cover a moment when every scrape
		// is late or an election is under way (a busy machine), which
		// failed the test with nothing wrong.
		for try := 0; try < 6; try++ {
			if try > 0 {
				time.Sleep(500 * time.Millisecond)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			roles, err = d.c.Roles(ctx)
			cancel()
			if cands := candidates(d.c.Hosts(), roles, role); len(cands) > 0 {
				return d.tb.Host(cands[rand.IntN(len(cands))]), nil
			}
		}
		return nil, fmt.Errorf("no %s among %v: %v", role, roles, err)
	}
}

// candidates are the hosts that have role: a duplicate counts as a
// follower, a leader or follower as a voter.
func candidates(hosts []string, roles map[string]string, role string) []string {
	var cands []string
	for _, h := range hosts {
		r := roles[h]
		voter := r == "leader" || r == "follower"
		if r == role || (role == "follower" && r == "duplicate") || (role == "voter" && voter) {
			cands = append(cands, h)
		}
	}
	return cands
}

// counts of acknowledged and unknown increments, per counter key.
type counts struct {
	mu           sync.Mutex
	acked, maybe map[string]int64
	errors       map[string]int
}

// drive runs clientsPerHost clients on every agent until ctx ends, and
// returns how many increments of each counter were acknowledged and how
// many have an unknown outcome.
func (d *deployment) drive(ctx context.Context, h *linearize.History, k keys) *counts {
	cs := &counts{acked: map[string]int64{}, maybe: map[string]int64{}, errors: map[string]int{}}
	var ids atomic.Int64
	var wg sync.WaitGroup
	for i, hostName := range slices.Repeat(d.c.Hosts(), clientsPerHost) {
		wg.Go(func() {
			c := &client{h: h, ids: &ids, id: int(ids.Add(1)), rdb: goredis.NewClient(redis.Options(d.c.AgentAddr(hostName))),
				rng: rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))}
			defer c.rdb.Close()
			for ctx.Err() == nil {
				c.step(ctx, k, cs)
			}
		})
	}
	wg.Wait()
	return cs
}

// client is one connection to one agent, recording into h. After an
// operation of unknown outcome it takes a fresh id: that operation never
// returns, and one client's operations must not overlap.
type client struct {
	h   *linearize.History
	ids *atomic.Int64
	id  int
	seq int64
	rdb *goredis.Client
	rng *rand.Rand
}

func (c *client) step(ctx context.Context, k keys, cs *counts) {
	in := c.next(k)
	// The request runs to its own deadline even when the schedule ends,
	// so that its outcome is known where it can be.
	rctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	call := c.h.Now()
	in, out, err := c.do(rctx, in)
	ret := c.h.Now()
	isCounter := slices.Contains(k.counters, in.Key)
	switch {
	case err == nil:
		c.h.Done(c.id, in, call, out, ret)
		if isCounter && in.Kind == linearize.Incr {
			cs.add(cs.acked, in.Key)
		}
	case notSent(err) || errors.Is(err, errNothingWritten):
		// Nothing reached the agent, or nothing that writes: the
		// operation did not happen.
		sleep(ctx, 100*time.Millisecond)
	case in.Kind == linearize.Get:
		c.h.Failed(c.id, in, call)
		cs.failure(err)
		sleep(ctx, 50*time.Millisecond)
	default:
		c.h.Failed(c.id, in, call)
		cs.failure(err)
		c.id = int(c.ids.Add(1))
		if isCounter {
			cs.add(cs.maybe, in.Key)
		}
		// Every write of unknown outcome stays open to the end of the
		// history and multiplies porcupine's search; while the deployment
		// elects a leader they come fast, so back off.
		sleep(ctx, 500*time.Millisecond)
	}
}

// failure counts a failed operation by its error, digits left out.
func (cs *counts) failure(err error) {
	msg := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, err.Error())
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.errors[msg]++
}

func (cs *counts) add(m map[string]int64, key string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	m[key]++
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// next draws an operation: on a register GET 35%, SET 35%, INCR 10%, a
// compare-and-set by WATCH/MULTI/EXEC 10% and by a script 10%; on a counter
// GET 30%, INCR 70%; on a queue RPUSH 40%, LPOP 15%, BLPOP 30%, BLMOVE to
// the other queue 15%. Every SET,
// CAS and RPUSH writes a value that no other writes, at least
// linearize.Spread from any other, so Prune applies.
func (c *client) next(k keys) linearize.Input {
	p := c.rng.IntN(100)
	c.seq++
	unique := (int64(c.id)<<24 + c.seq) * linearize.Spread
	switch n := c.rng.IntN(registers + counters + queues); {
	case n < queues:
		q := c.rng.IntN(len(k.queues))
		key := k.queues[q]
		switch {
		case p < 40:
			return linearize.Input{Kind: linearize.Push, Key: key, Value: unique}
		case p < 55:
			return linearize.Input{Kind: linearize.Pop, Key: key}
		case p < 85:
			return linearize.Input{Kind: linearize.BlockingPop, Key: key}
		}
		return linearize.Input{Kind: linearize.BlockingMove, Key: key, Dest: k.queues[(q+1)%len(k.queues)]}
	case n < queues+counters:
		key := k.counters[c.rng.IntN(len(k.counters))]
		if p < 30 {
			return linearize.Input{Kind: linearize.Get, Key: key}
		}
		return linearize.Input{Kind: linearize.Incr, Key: key}
	}
	key := k.registers[c.rng.IntN(len(k.registers))]
	kind := linearize.Incr
	switch {
	case p < 35:
		return linearize.Input{Kind: linearize.Get, Key: key}
	case p < 70:
		kind = linearize.Set
	case p < 80:
		return linearize.Input{Kind: linearize.Incr, Key: key}
	case p < 90:
		kind = linearize.WatchCas
	default:
		kind = linearize.ScriptCas
	}
	return linearize.Input{Kind: kind, Key: key, Value: unique}
}

// errNothingWritten marks a CAS that failed before it sent its write.
var errNothingWritten = errors.New("failed before the write was sent")

// casScript sets KEYS[1] to ARGV[2] when it holds ARGV[1] ("": no key).
const casScript = `local v = redis.call('GET', KEYS[1])
if (ARGV[1] == '' and not v) or v == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2])
  return 1
end
return 0`

// do runs in and returns it with what a CAS expected, read on the way.
func (c *client) do(ctx context.Context, in linearize.Input) (linearize.Input, linearize.Output, error) {
	switch in.Kind {
	case linearize.Get:
		v, err := c.rdb.Get(ctx, in.Key).Int64()
		if errors.Is(err, goredis.Nil) {
			return in, linearize.Output{}, nil
		}
		return in, linearize.Output{Value: v, Exists: true}, err
	case linearize.Set:
		return in, linearize.Output{}, c.rdb.Set(ctx, in.Key, in.Value, 0).Err()
	case linearize.WatchCas:
		err := c.rdb.Watch(ctx, func(tx *goredis.Tx) error {
			if err := expect(tx.Get(ctx, in.Key), &in); err != nil {
				return err
			}
			_, err := tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				p.Set(ctx, in.Key, in.Value, 0)
				return nil
			})
			return err
		}, in.Key)
		if errors.Is(err, goredis.TxFailedErr) {
			return in, linearize.Output{}, nil
		}
		return in, linearize.Output{Swapped: err == nil}, err
	case linearize.ScriptCas:
		if err := expect(c.rdb.Get(ctx, in.Key), &in); err != nil {
			return in, linearize.Output{}, err
		}
		was := ""
		if !in.ExpectNone {
			was = fmt.Sprint(in.Expect)
		}
		n, err := c.rdb.Eval(ctx, casScript, []string{in.Key}, was, in.Value).Int()
		return in, linearize.Output{Swapped: n == 1}, err
	case linearize.Push:
		n, err := c.rdb.RPush(ctx, in.Key, in.Value).Result()
		return in, linearize.Output{Value: n}, err
	case linearize.Pop:
		out, err := popped(c.rdb.LPop(ctx, in.Key).Result())
		return in, out, err
	case linearize.BlockingPop:
		kv, err := c.rdb.BLPop(ctx, blockFor, in.Key).Result()
		v := ""
		if len(kv) == 2 {
			v = kv[1]
		}
		out, err := popped(v, err)
		return in, out, err
	case linearize.BlockingMove:
		out, err := popped(c.rdb.BLMove(ctx, in.Key, in.Dest, "LEFT", "RIGHT", blockFor).Result())
		return in, out, err
	}
	v, err := c.rdb.Incr(ctx, in.Key).Result()
	return in, linearize.Output{Value: v, Exists: true}, err
}

// popped is the output of a pop that answered v (goredis.Nil: an empty
// list).
func popped(v string, err error) (linearize.Output, error) {
	switch {
	case errors.Is(err, goredis.Nil):
		return linearize.Output{}, nil
	case err != nil:
		return linearize.Output{}, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return linearize.Output{}, fmt.Errorf("popped %q: %w", v, err)
	}
	return linearize.Output{Value: n, Exists: true}, nil
}

// expect sets what a CAS expects from the GET it read; a failed GET wrote
// nothing.
func expect(get *goredis.StringCmd, in *linearize.Input) error {
	v, err := get.Int64()
	switch {
	case errors.Is(err, goredis.Nil):
		in.ExpectNone = true
	case err != nil:
		return fmt.Errorf("%w: %w", errNothingWritten, err)
	default:
		in.Expect = v
	}
	return nil
}

// notSent tells a failure to connect, before any request was written.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// waitHealthy waits until every agent serves again after the faults.
func (d *deployment) waitHealthy(t *testing.T) {
	t.Helper()
	t0 := time.Now()
	for _, name := range d.c.Hosts() {
		if err := d.c.WaitServing(context.Background(), name); err != nil {
			t.Fatalf("after the faults: %v", err)
		}
	}
	t.Logf("every agent serves %v after the faults cleared; writes re-proposed (a new leader, a failed proposal) since each agent started: %s",
		time.Since(t0).Round(time.Millisecond), d.reproposals())
}

// reproposals sums gait_replica_reproposals_total over the agents, which
// count from their own start (a crashed agent starts again from zero).
func (d *deployment) reproposals() string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	m, err := d.c.Metrics(ctx)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	n := 0.0
	for k, v := range m {
		if strings.HasPrefix(k, "gait_replica_reproposals_total{") {
			n += v
		}
	}
	return strconv.FormatFloat(n, 'f', 0, 64)
}

// finalClient is the client id of the final reads.
const finalClient = 1 << 20

// finalReads reads every key through every agent, one after another, into
// the history (so porcupine checks them against every acknowledged write),
// and checks all agents answer alike.
func (d *deployment) finalReads(t *testing.T, h *linearize.History, k keys) {
	t.Helper()
	for _, key := range k.all() {
		var seen []string
		for _, name := range d.c.Hosts() {
			rdb := goredis.NewClient(redis.Options(d.c.AgentAddr(name)))
			ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
			in := linearize.Input{Kind: linearize.Get, Key: key}
			if slices.Contains(k.queues, key) {
				in.Kind = linearize.Range
			}
			call := h.Now()
			out, err := finalRead(ctx, rdb, in)
			ret := h.Now()
			cancel()
			rdb.Close()
			if err != nil {
				t.Errorf("final read of %s through %s: %v", key, name, err)
				continue
			}
			h.Done(finalClient, in, call, out, ret)
			seen = append(seen, fmt.Sprintf("%s=%s", name, linearize.Model.DescribeOperation(in, out)))
			if !sameAnswer(seen) {
				t.Errorf("final reads of %s disagree: %v", key, seen)
			}
		}
	}
}

// finalRead reads a register with GET, a queue with LRANGE.
func finalRead(ctx context.Context, rdb *goredis.Client, in linearize.Input) (linearize.Output, error) {
	if in.Kind == linearize.Range {
		var out linearize.Output
		cmd := rdb.LRange(ctx, in.Key, 0, -1)
		// ScanSlice drops the command's error: a read that timed out
		// would pass for an empty queue.
		if err := cmd.Err(); err != nil {
			return out, err
		}
		return out, cmd.ScanSlice(&out.Items)
	}
	v, err := rdb.Get(ctx, in.Key).Int64()
	if errors.Is(err, goredis.Nil) {
		return linearize.Output{}, nil
	}
	return linearize.Output{Value: v, Exists: true}, err
}

func sameAnswer(seen []string) bool {
	answer := func(s string) string { _, a, _ := strings.Cut(s, "->"); return a }
	for _, s := range seen[1:] {
		if answer(s) != answer(seen[0]) {
			return false
		}
	}
	return true
}

// checkCounters checks no acknowledged increment was lost and none
// counted twice: a counter's final value is at least its acknowledged
// increments and at most those plus the ones of unknown outcome.
func checkCounters(t *testing.T, h *linearize.History, k keys, cs *counts) {
	t.Helper()
	final := map[string]int64{}
	for _, op := range h.Operations() {
		if op.ClientId == finalClient {
			final[op.Input.(linearize.Input).Key] = op.Output.(linearize.Output).Value
		}
	}
	for _, key := range k.counters {
		v, read := final[key]
		if !read {
			// No final read of it succeeded: that failure is reported where
			// the read failed, and a missing value is not a count of 0.
			continue
		}
		lo, hi := cs.acked[key], cs.acked[key]+cs.maybe[key]
		if v < lo || v > hi {
			t.Errorf("counter %s is %d after %d acknowledged and %d unknown increments", key, v, lo, cs.maybe[key])
		}
	}
}

// checkReplicasAgree compares every key of every redis-server directly
// (DUMP, bypassing the agents), waiting up to 5 s for replicas still
// applying the log. A restarted agent once took up to 17 s here (its
// server applied a backlog at ~1,000 entries a second, and the leader's
// retries to it had backed off for seconds); since both were fixed, 32
// schedules agreed within 0.1 s (docs/results/replica-catch-up.md), and
// 5 s leaves room for a busy machine and TCP's retransmission timer after
// a partition. A replica that lost a write never agrees.
func (d *deployment) checkReplicasAgree(t *testing.T) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(5 * time.Second)
	var shown time.Time
	for {
		diff, err := d.compareServers()
		if err == nil && diff == "" {
			t.Logf("every redis-server holds the same data, %v after the schedule", time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("replicas diverge: %s %v", diff, err)
			return
		}
		if time.Since(shown) >= time.Second {
			shown = time.Now()
			t.Logf("%v after the schedule: %s %v; %s", time.Since(start).Round(time.Millisecond), diff, err, d.progress())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// progress tells, per host, its agent's role, the applied index its
// replica last reported and its committed entries waiting for the server.
func (d *deployment) progress() string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	roles, _ := d.c.Roles(ctx)
	m, _ := d.c.Metrics(ctx)
	var parts []string
	for _, h := range d.c.Hosts() {
		parts = append(parts, fmt.Sprintf("%s %s applied %.0f queued %.0f", h, roles[h],
			m["gait_replica_applied_index{host="+h+"}"], m["gait_replica_apply_queue_length{host="+h+"}"]))
	}
	return strings.Join(parts, ", ")
}

// compareServers returns the first difference between the first
// redis-server's data and another's, "" when all hold the same.
func (d *deployment) compareServers() (string, error) {
	var first map[string]string
	hosts := d.c.Hosts()
	for _, name := range hosts {
		data, err := dumpAll(d.c.ServerAddr(name))
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		if first == nil {
			first = data
			continue
		}
		for k, v := range first {
			if data[k] != v {
				return fmt.Sprintf("key %s differs between %s and %s (%d and %d keys)", k, hosts[0], name, len(first), len(data)), nil
			}
		}
		if len(data) != len(first) {
			return fmt.Sprintf("%s holds %d keys, %s %d", hosts[0], len(first), name, len(data)), nil
		}
	}
	return "", nil
}

// dumpAll returns every key of the server at addr with its DUMP.
func dumpAll(addr string) (map[string]string, error) {
	rdb := goredis.NewClient(redis.Options(addr))
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[string]string{}
	iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		v, err := rdb.Dump(ctx, iter.Val()).Result()
		if err != nil && !errors.Is(err, goredis.Nil) {
			return nil, err
		}
		out[iter.Val()] = v
	}
	return out, iter.Err()
}

// kindCounts counts the history's operations by kind, and the pops by
// what they answered.
func kindCounts(ops []porcupine.Operation) string {
	n := map[linearize.Kind]int{}
	pops := map[linearize.Kind]*[3]int{} // item, nil, unknown
	for _, op := range ops {
		in, out := op.Input.(linearize.Input), op.Output.(linearize.Output)
		n[in.Kind]++
		if in.Kind != linearize.Pop && in.Kind != linearize.BlockingPop && in.Kind != linearize.BlockingMove {
			continue
		}
		if pops[in.Kind] == nil {
			pops[in.Kind] = &[3]int{}
		}
		switch {
		case out.Unknown:
			pops[in.Kind][2]++
		case out.Exists:
			pops[in.Kind][0]++
		default:
			pops[in.Kind][1]++
		}
	}
	var parts []string
	for kind := linearize.Get; kind <= linearize.BlockingMove; kind++ {
		parts = append(parts, fmt.Sprintf("%s %d", kind, n[kind]))
	}
	s := strings.Join(parts, ", ") + "; item/nil/unknown:"
	for _, kind := range []linearize.Kind{linearize.Pop, linearize.BlockingPop, linearize.BlockingMove} {
		p := pops[kind]
		if p == nil {
			p = &[3]int{}
		}
		s += fmt.Sprintf(" %s %d/%d/%d", kind, p[0], p[1], p[2])
	}
	return s
}

// casOutcomes counts the history's CAS operations by kind and outcome, to
// show that the workload exercised both.
func casOutcomes(ops []porcupine.Operation) string {
	var n [2][3]int // kind (watch, script) × swapped, not, unknown
	for _, op := range ops {
		in, out := op.Input.(linearize.Input), op.Output.(linearize.Output)
		k := 0
		switch in.Kind {
		case linearize.WatchCas:
		case linearize.ScriptCas:
			k = 1
		default:
			continue
		}
		switch {
		case out.Unknown:
			n[k][2]++
		case out.Swapped:
			n[k][0]++
		default:
			n[k][1]++
		}
	}
	return fmt.Sprintf("WATCH/MULTI/EXEC %d/%d (%d unknown), EVAL %d/%d (%d unknown)",
		n[0][0], n[0][1], n[0][2], n[1][0], n[1][1], n[1][2])
}

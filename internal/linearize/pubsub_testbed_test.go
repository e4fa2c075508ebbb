package linearize_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/linearize"
	"github.com/gait-dev/gait/internal/systems/redis"
	goredis "github.com/redis/go-redis/v9"
)

// The pub/sub workload: on every agent a subscriber of the schedule's
// channel by name (SUBSCRIBE) and one by pattern (PSUBSCRIBE), and a
// publisher that publishes numbered messages through its agent; at the end
// one last message, the sentinel, ends every subscription that gets it
// (linearize.CheckPubSub judges the lot).

// drainTimeout bounds the wait for every subscription to get the sentinel.
const drainTimeout = 10 * time.Second

// pubsubRun records one run's publishes and subscriptions on one clock.
type pubsubRun struct {
	now      func() int64
	channel  string
	sentinel string

	mu       sync.Mutex
	pubs     []linearize.Publish
	sessions []linearize.Session

	stop    chan struct{} // closed (by halt) when the subscribers must end, got the sentinel or not
	halted  sync.Once
	subs    sync.WaitGroup
	started sync.WaitGroup // every subscriber's first subscription is answered
}

// startPubSub starts the subscribers, two on each address, and returns once
// each has its subscription's answer (or after 10 s).
func startPubSub(now func() int64, channel string, addrs []string) *pubsubRun {
	p := &pubsubRun{now: now, channel: channel, sentinel: channel + ":end", stop: make(chan struct{})}
	for i, addr := range addrs {
		for _, pattern := range []bool{false, true} {
			name := fmt.Sprintf("sub%d", i)
			if pattern {
				name = fmt.Sprintf("psub%d", i)
			}
			p.started.Add(1)
			p.subs.Go(func() { p.subscriber(name, addr, pattern) })
		}
	}
	ready := make(chan struct{})
	go func() { p.started.Wait(); close(ready) }()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
	}
	return p
}

// subscriber subscribes through addr until stop or the sentinel, starting
// a new session each time its connection fails.
func (p *pubsubRun) subscriber(name, addr string, pattern bool) {
	rdb := goredis.NewClient(redis.Options(addr))
	defer rdb.Close()
	var once sync.Once
	defer once.Do(p.started.Done) // never answered
	for {
		s, done := p.session(rdb, name, pattern, func() { once.Do(p.started.Done) })
		if s != nil {
			p.mu.Lock()
			p.sessions = append(p.sessions, *s)
			p.mu.Unlock()
		}
		if done {
			return
		}
		select {
		case <-p.stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// session runs one subscription, calling answered once it is: nil when it
// never was; done when the subscriber should not start another.
func (p *pubsubRun) session(rdb *goredis.Client, name string, pattern bool, answered func()) (*linearize.Session, bool) {
	ctx := context.Background()
	ps := rdb.Subscribe(ctx)
	defer ps.Close()
	// A Receive blocks with no deadline; stop closes the connection under it.
	closed := make(chan struct{})
	defer close(closed)
	go func() {
		select {
		case <-p.stop:
			ps.Close()
		case <-closed:
		}
	}()
	subscribe := ps.Subscribe
	if pattern {
		subscribe = ps.PSubscribe
	}
	what := p.channel
	if pattern {
		what = strings.TrimSuffix(p.channel, "h") + "*" // s1:c* for s1:ch
	}
	asked := p.now()
	if err := subscribe(ctx, what); err != nil {
		return nil, stopped(p.stop)
	}
	for {
		m, err := ps.Receive(ctx)
		if err != nil {
			return nil, stopped(p.stop)
		}
		if _, ok := m.(*goredis.Subscription); ok {
			break
		}
	}
	s := &linearize.Session{Subscriber: name, Asked: asked, Start: p.now()}
	answered()
	for {
		m, err := ps.Receive(ctx)
		if err != nil {
			s.End = p.now()
			s.Broken = !stopped(p.stop)
			return s, !s.Broken
		}
		msg, ok := m.(*goredis.Message)
		if !ok {
			continue
		}
		s.Msgs = append(s.Msgs, msg.Payload)
		if msg.Payload == p.sentinel {
			s.End = p.now()
			return s, true
		}
	}
}

func stopped(stop chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// publish runs one publisher on every address until ctx ends.
func (p *pubsubRun) publish(ctx context.Context, addrs []string) {
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Go(func() {
			rdb := goredis.NewClient(redis.Options(addr))
			defer rdb.Close()
			for seq := 0; ctx.Err() == nil; seq++ {
				if err := p.publishOne(rdb, fmt.Sprintf("%s:%d:%d", p.channel, i, seq)); err != nil {
					sleep(ctx, 100*time.Millisecond)
				}
				sleep(ctx, 10*time.Millisecond)
			}
		})
	}
	wg.Wait()
}

// publishOne publishes msg and records it, unless it surely was not sent.
func (p *pubsubRun) publishOne(rdb *goredis.Client, msg string) error {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	call := p.now()
	err := rdb.Publish(ctx, p.channel, msg).Err()
	pub := linearize.Publish{Msg: msg, Call: call, Return: p.now(), Acked: err == nil}
	if err != nil {
		pub.Return = linearize.Never
	}
	if err == nil || !notSent(err) {
		p.mu.Lock()
		p.pubs = append(p.pubs, pub)
		p.mu.Unlock()
	}
	return err
}

// drain publishes the sentinel through addr (again on failure), waits for
// every subscriber to get it or drainTimeout, and checks what was recorded.
func (p *pubsubRun) drain(addr string) (linearize.PubSubReport, error) {
	rdb := goredis.NewClient(redis.Options(addr))
	defer rdb.Close()
	var err error
	for try := 0; try < 3; try++ {
		if err = p.publishOne(rdb, p.sentinel); err == nil {
			break
		}
		time.Sleep(time.Second)
	}
	done := make(chan struct{})
	go func() { p.subs.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drainTimeout):
	}
	p.halt()
	if err != nil {
		err = fmt.Errorf("publish the sentinel through %s: %w", addr, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return linearize.CheckPubSub(p.pubs, p.sessions), err
}

// halt ends the subscribers and waits for them; a run that stops early
// (t.Fatal) defers it.
func (p *pubsubRun) halt() {
	p.halted.Do(func() { close(p.stop) })
	p.subs.Wait()
}

// logPubSub reports a run's counts and fails t on a violation; with fresh,
// also on a delivery of a message acknowledged before its SUBSCRIBE was
// sent, which neither redis nor gait under linearizable reads makes.
func logPubSub(t *testing.T, what string, r linearize.PubSubReport, err error, fresh bool) {
	t.Helper()
	t.Logf("%s: pub/sub: %s", what, r)
	if err != nil {
		t.Errorf("%s: %v", what, err)
	}
	if r.Violations() > 0 || fresh && r.BeforeSubscribe > 0 {
		t.Errorf("%s: pub/sub violations:\n%s", what, strings.Join(r.Examples, "\n"))
	}
}

// TestPubSubPlainRedis runs the pub/sub workload against one plain
// redis-server on loopback, without faults, as the peer of TestRandomized's
// pub/sub: the checker must find nothing there either.
func TestPubSubPlainRedis(t *testing.T) {
	if _, err := os.Stat(redis.ServerBinary); err != nil {
		t.Skipf("%s not installed (make deps installs it)", redis.ServerBinary)
	}
	addr := startRedis(t)
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }
	addrs := []string{addr, addr, addr, addr} // as many clients as on four agents
	p := startPubSub(now, "plain:ch", addrs)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p.publish(ctx, addrs)
	r, err := p.drain(addr)
	logPubSub(t, "plain redis-server", r, err, true)
	if r.Acked == 0 || r.Delivered["sub0"] == 0 || r.Delivered["psub3"] == 0 {
		t.Errorf("the workload published or delivered nothing: %s", r)
	}
}

// startRedis starts a redis-server on a free loopback port for the test's
// duration and returns its address.
func startRedis(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(redis.ServerBinary, "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	rdb := goredis.NewClient(redis.Options(addr))
	defer rdb.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s does not answer: %v", addr, err)
		}
	}
}

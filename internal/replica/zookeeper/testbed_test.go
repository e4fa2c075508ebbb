package zookeeper_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/gaitbin"
	"github.com/gait-dev/gait/internal/limp"
	"github.com/gait-dev/gait/internal/replica/zookeeper"
	"github.com/gait-dev/gait/internal/systems/gaitredis"
	"github.com/gait-dev/gait/internal/systems/gaitzookeeper"
	"github.com/gait-dev/gait/internal/systems/tbhost"
	zksys "github.com/gait-dev/gait/internal/systems/zookeeper"
	"github.com/gait-dev/gait/internal/testbed"
)

// Linearizable on testbed hosts, through every fault the issue names:
// gait-zookeeper (3 voters and a duplicate, each agent its own process in
// front of its own ZooKeeper, on a host of its own) while a follower and
// later the leader are cut off by a partition, a follower's host crashes
// (its agent and ZooKeeper killed, restarted together), the duplicate's
// ZooKeeper is killed behind its running agent and comes back, a
// follower's NIC limps at 1000x, and the leader's host crashes. Then every
// ZooKeeper holds the same nodes, and porcupine checks the history.
//
// It needs root and takes a few minutes: it runs when GAIT_ZOOKEEPER_FAULTS
// is set.
func TestLinearizableOnTestbed(t *testing.T) {
	if os.Getenv("GAIT_ZOOKEEPER_FAULTS") == "" {
		t.Skip("set GAIT_ZOOKEEPER_FAULTS=1 to run (root, a few minutes)")
	}
	if err := testbed.NeedRoot(); err != nil {
		t.Skip(err)
	}
	if err := zksys.New().Check(); err != nil {
		t.Skip(err)
	}
	bin, cleanup, err := gaitbin.Build()
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	dir := t.TempDir()
	tb, err := testbed.Up(testbed.Options{Hosts: 4, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tb.Close(); err != nil {
			t.Error(err)
		}
	}()
	d := gaitzookeeper.New()
	d.Gait, d.Voters = bin, 3
	t0 := time.Now()
	sc, err := d.Start(context.Background(), tbhost.Hosts(tb, ""))
	if err != nil {
		t.Fatal(err)
	}
	c := sc.(*gaitredis.Cluster)
	defer c.Stop()
	t.Logf("3 voters and 1 duplicate on testbed hosts, ready in %v", time.Since(t0).Round(time.Millisecond))

	var agents, servers []string
	for _, h := range c.Hosts() {
		agents, servers = append(agents, c.AgentAddr(h)), append(servers, c.ServerAddr(h))
	}
	w := zookeeper.NewWorkload(agents, 6, 60*time.Millisecond)
	w.Setup(t)
	role := func(want string) limp.Target {
		return func() (limp.Host, error) {
			// An election may be under way after the fault before: ask
			// again for up to 10 s.
			var err error
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				var roles map[string]string
				roles, err = c.Roles(ctx)
				cancel()
				for _, h := range c.Hosts()[:3] {
					if roles[h] == want {
						return tb.Host(h), nil
					}
				}
			}
			return nil, fmt.Errorf("no %s within 10 s: %v", want, err)
		}
	}
	duplicate := limp.On(tb.Host(c.Hosts()[3]))
	// The duplicate's ZooKeeper comes last: its restart takes tens of
	// seconds on a busy machine, and the schedule clears faults in turn.
	faults := []limp.Fault{
		{Injector: limp.Partition{}, Target: role("follower"), Factor: 1, At: 3 * time.Second, For: 3 * time.Second},
		{Injector: &limp.Crash{}, Target: role("follower"), Factor: 1, At: 9 * time.Second, For: 3 * time.Second},
		{Injector: limp.NIC{}, Target: role("follower"), Factor: 1000, At: 15 * time.Second, For: 4 * time.Second},
		{Injector: limp.Partition{}, Target: role("leader"), Factor: 1, At: 22 * time.Second, For: 3 * time.Second},
		{Injector: &limp.Crash{}, Target: role("leader"), Factor: 1, At: 28 * time.Second, For: 3 * time.Second},
		{Injector: serverCrash{c}, Target: duplicate, Factor: 1, At: 34 * time.Second, For: 2 * time.Second},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 42*time.Second)
	defer cancel()
	stop := make(chan struct{})
	var mu sync.Mutex
	var events []string
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(stop)
		limp.Run(ctx, faults, func(e limp.Event) {
			s := fmt.Sprintf("%.1fs %s %s on %s", time.Since(t0).Seconds(), e.Action, e.Kind, e.Host)
			if e.Err != nil {
				s += ": " + e.Err.Error()
				t.Error(s)
			}
			mu.Lock()
			events = append(events, s)
			mu.Unlock()
		})
	})
	t0 = time.Now()
	w.Run(t, stop)
	wg.Wait()
	for _, e := range events {
		t.Log("fault:", e)
	}
	// Every agent serves again, and every server converges on the log.
	for _, h := range c.Hosts() {
		if err := c.WaitServing(context.Background(), h); err != nil {
			t.Fatal(err)
		}
	}
	var nodes int
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(time.Second) {
		if nodes, err = zookeeper.SameData(t, servers); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	t.Logf("every server holds the same %d nodes", nodes)
	w.Check(t)
}

// serverCrash kills a host's ZooKeeper behind its running agent and, once
// cleared, starts it again; the agent re-attaches and rebuilds it.
type serverCrash struct{ c *gaitredis.Cluster }

func (serverCrash) Kind() string { return "zookeeper-crash" }

func (s serverCrash) Apply(h limp.Host, _ float64) error { return s.c.KillServer(h.HostName()) }

func (s serverCrash) Clear(h limp.Host) error {
	return s.c.RestartServer(context.Background(), h.HostName())
}

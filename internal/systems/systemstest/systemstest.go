// Package systemstest holds what the system drivers' tests share: a
// cluster started on loopback hosts or on a testbed's, and the check that
// it has one leader and every other member follows.
package systemstest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/loopback"
	"github.com/gait-dev/gait/internal/systems/tbhost"
	"github.com/gait-dev/gait/internal/testbed"
)

// Start starts d on n loopback hosts (each stopping its processes within
// grace, 0 for the host's default) and stops the cluster when t ends.
func Start(t testing.TB, d systems.Driver, n int, grace time.Duration) (systems.Cluster, []systems.Host) {
	t.Helper()
	lb, err := loopback.Hosts(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	hosts := make([]systems.Host, n)
	for i, h := range lb {
		if grace > 0 {
			h.Grace = grace
		}
		hosts[i] = h
	}
	t0 := time.Now()
	c, err := d.Start(context.Background(), hosts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d-member %s cluster ready in %v", n, d.Name(), time.Since(t0).Round(time.Millisecond))
	t.Cleanup(func() { c.Stop() })
	return c, hosts
}

// OnTestbed starts d on a testbed of n hosts, h0 to h(n-1), and stops the
// cluster and removes the testbed when t ends. It skips t unless it runs
// as root, which a testbed needs.
func OnTestbed(t testing.TB, d systems.Driver, n int) (systems.Cluster, *testbed.Testbed) {
	t.Helper()
	if err := testbed.NeedRoot(); err != nil {
		t.Skipf("%s runs on testbed hosts: %v", d.Name(), err)
	}
	tb, err := testbed.Up(testbed.Options{Hosts: n, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tb.Close(); err != nil {
			t.Error(err)
		}
	})
	t0 := time.Now()
	c, err := d.Start(context.Background(), tbhost.Hosts(tb, ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d-host %s cluster ready in %v", n, d.Name(), time.Since(t0).Round(time.Millisecond))
	t.Cleanup(func() { c.Stop() })
	return c, tb
}

// LeaderAndFollowers returns the leader and the followers (sorted),
// failing unless there is exactly one leader and every other member follows.
func LeaderAndFollowers(t testing.TB, c systems.Cluster) (leader string, followers []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rs, err := c.Roles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for h, r := range rs {
		switch r {
		case "leader":
			if leader != "" {
				t.Fatalf("two leaders: %v", rs)
			}
			leader = h
		case "follower":
			followers = append(followers, h)
		default:
			t.Fatalf("host %s has role %q: %v", h, r, rs)
		}
	}
	if leader == "" {
		t.Fatalf("no leader: %v", rs)
	}
	slices.Sort(followers)
	return leader, followers
}

// Eventually polls cond every 50 ms, failing the test if it is not true
// within limit.
func Eventually(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
	}
}

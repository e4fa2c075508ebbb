package redis

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/gait-dev/gait/internal/systems"
)

// MasterName is what the Sentinels call the primary they watch.
const MasterName = "gait"

// sentinelConf is the configuration of the Sentinel on h watching the
// primary at primaryIP: Sentinel rewrites the file as it learns, so a
// Sentinel restarted after a crash remembers the others and the failovers.
func (d *Driver) sentinelConf(h systems.Host, primaryIP string, quorum int) string {
	return strings.Join([]string{
		"port " + strconv.Itoa(d.SentinelPort),
		"bind " + h.Address(),
		"protected-mode no",
		"daemonize no",
		`logfile "/dev/stderr"`,
		"dir " + ServerDir(h),
		"sentinel announce-ip " + h.Address(),
		fmt.Sprintf("sentinel monitor %s %s %d %d", MasterName, primaryIP, d.Port, quorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", MasterName, d.DownAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", MasterName, d.failoverTimeout().Milliseconds()),
		fmt.Sprintf("sentinel parallel-syncs %s 1", MasterName),
		"",
	}, "\n")
}

// failoverTimeout bounds one failover attempt. A Sentinel whose election
// ended in a split vote tries again only after twice this time, so it also
// sets how long a failover can take when the Sentinels disagree.
func (d *Driver) failoverTimeout() time.Duration {
	return max(10*d.DownAfter, 10*time.Second)
}

func (c *Cluster) sentinelAddr(m *member) string {
	return net.JoinHostPort(m.host.Address(), strconv.Itoa(c.d.SentinelPort))
}

// startSentinels starts a Sentinel on every host, a majority of them the
// quorum, returns once each knows the primary's replicas and the other
// Sentinels, and starts counting their failovers.
func (c *Cluster) startSentinels(ctx context.Context, primary systems.Host) error {
	quorum := len(c.members)/2 + 1
	for _, m := range c.members {
		conf := filepath.Join(ServerDir(m.host), "sentinel.conf")
		if err := m.host.WriteFile(conf, []byte(c.d.sentinelConf(m.host, primary.Address(), quorum))); err != nil {
			return fmt.Errorf("redis-sentinel on %s: %w", m.host.Name(), err)
		}
		c.failovers[m.host.Name()] = &atomic.Int64{}
		if err := c.startSentinel(ctx, m); err != nil {
			return err
		}
	}
	others := len(c.members) - 1
	err := systems.WaitReady(ctx, "redis-sentinel", 30*time.Second, c.starting, func(ctx context.Context) error {
		for _, m := range c.members {
			st, err := sentinelMaster(ctx, c.sentinelAddr(m))
			if err == nil && (st["num-slaves"] != strconv.Itoa(others) || st["num-other-sentinels"] != strconv.Itoa(others)) {
				err = fmt.Errorf("knows %s replicas and %s other Sentinels of %d each", st["num-slaves"], st["num-other-sentinels"], others)
			}
			if err != nil {
				return &systems.NotReady{Host: m.host.Name(), Proc: m.sentinel, Err: err}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(context.Background())
	c.stopWatch = cancel
	for _, m := range c.members {
		c.watching.Go(func() { c.countFailovers(wctx, m) })
	}
	return nil
}

// startSentinel starts m's Sentinel from its configuration file.
func (c *Cluster) startSentinel(ctx context.Context, m *member) error {
	conf := filepath.Join(ServerDir(m.host), "sentinel.conf")
	p, err := m.host.Start("redis-sentinel", []string{c.d.Binary, conf, "--sentinel"}, nil)
	if err != nil {
		return fmt.Errorf("redis-sentinel on %s: %w", m.host.Name(), err)
	}
	c.mu.Lock()
	m.sentinel = p
	c.mu.Unlock()
	if err := WaitAnswer(ctx, m.host, c.sentinelAddr(m), p, 10*time.Second); err != nil {
		return fmt.Errorf("redis-sentinel on %s: %w", m.host.Name(), err)
	}
	return nil
}

// sentinelMaster is SENTINEL MASTER's view of the watched primary.
func sentinelMaster(ctx context.Context, addr string) (map[string]string, error) {
	sc := goredis.NewSentinelClient(Options(addr))
	defer sc.Close()
	return sc.Master(ctx, MasterName).Result()
}

// countFailovers counts the +switch-master events m's Sentinel publishes,
// each one a failover it saw completed, resubscribing while the Sentinel
// is down (events meanwhile are missed).
func (c *Cluster) countFailovers(ctx context.Context, m *member) {
	sc := goredis.NewSentinelClient(Options(c.sentinelAddr(m)))
	defer sc.Close()
	ps := sc.Subscribe(ctx, "+switch-master")
	// A read in progress ignores ctx (the connection has no deadline);
	// closing the subscription ends it.
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	for {
		if _, err := ps.ReceiveMessage(ctx); err == nil {
			c.failovers[m.host.Name()].Add(1)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// dialPrimary connects to whichever server the Sentinels name the primary,
// asking them again on every reconnection.
func (c *Cluster) dialPrimary(ctx context.Context) (*Client, error) {
	o := Options("")
	var sentinels []string
	for _, m := range c.members {
		sentinels = append(sentinels, c.sentinelAddr(m))
	}
	rdb := goredis.NewFailoverClient(&goredis.FailoverOptions{
		MasterName: MasterName, SentinelAddrs: sentinels,
		PoolSize: o.PoolSize, MaxRetries: o.MaxRetries, Protocol: o.Protocol, DisableIdentity: o.DisableIdentity,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled, DialTimeout: o.DialTimeout,
		ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
	})
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redis primary through Sentinel: %w", err)
	}
	return &Client{rdb: rdb}, nil
}

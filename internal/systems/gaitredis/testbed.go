package gaitredis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gait-dev/gait/internal/systems/tbhost"
	"github.com/gait-dev/gait/internal/testbed"
)

// TestbedOptions describe a deployment on a testbed of its own (gait
// replica cluster): one host per replica, voters first.
type TestbedOptions struct {
	Voters     int    // raft voters, at least 1
	Duplicates int    // non-voting duplicates
	Bandwidth  uint64 // each host's link in bit/s, both directions; 0 means testbed.DefaultBandwidth
	StateDir   string // where the testbed's state file goes; empty means testbed.DefaultStateDir
	// Progress is told what starts and when it is ready; nil means io.Discard.
	Progress io.Writer
}

// OnTestbed is a gait-redis deployment on a testbed of its own.
type OnTestbed struct {
	Testbed *testbed.Testbed
	Cluster *Cluster
}

// StartOnTestbed builds a testbed with one host per replica and starts the
// driver's deployment on it: a redis-server and an agent on every host, the
// first opts.Voters hosts voting. It needs root. It returns once every agent
// serves a write and a linearizable read; on error, and when ctx ends
// before that, everything started is removed. Close removes it otherwise;
// after a crash, gait clean does (the testbed's state file names it all).
func (d *Driver) StartOnTestbed(ctx context.Context, opts TestbedOptions) (_ *OnTestbed, err error) {
	if opts.Voters < 1 || opts.Duplicates < 0 {
		return nil, fmt.Errorf("gait-redis: %d voters and %d duplicates; want at least 1 voter", opts.Voters, opts.Duplicates)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("gait-redis: not started: %w", err)
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	t0 := time.Now()
	tb, err := testbed.Up(testbed.Options{Hosts: opts.Voters + opts.Duplicates, Bandwidth: opts.Bandwidth, StateDir: opts.StateDir})
	if err != nil {
		return nil, fmt.Errorf("gait-redis: testbed: %w", err)
	}
	fmt.Fprintf(progress, "starting %s and %s on testbed run %s (%s, links at %s)...",
		plural(opts.Voters, "voter"), plural(opts.Duplicates, "duplicate"), tb.ID, tb.Subnet, testbed.FormatBandwidth(tb.Bandwidth))
	defer func() {
		if err != nil {
			fmt.Fprintln(progress, " failed")
			err = errors.Join(err, tb.Close())
		}
	}()
	drv := *d
	drv.Voters = opts.Voters
	c, err := drv.Start(ctx, tbhost.Hosts(tb, ""))
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("gait-redis: interrupted while starting: %w", err)
		}
		return nil, err
	}
	fmt.Fprintf(progress, " ready in %v\n", time.Since(t0).Round(time.Millisecond))
	return &OnTestbed{Testbed: tb, Cluster: c.(*Cluster)}, nil
}

// Addresses are where clients reach the agents, in host order.
func (o *OnTestbed) Addresses() []string {
	var out []string
	for _, h := range o.Cluster.Hosts() {
		out = append(out, o.Cluster.AgentAddr(h))
	}
	return out
}

// MetricsURLs are the agents' /metrics pages, in host order.
func (o *OnTestbed) MetricsURLs() []string {
	var out []string
	for _, h := range o.Cluster.Hosts() {
		out = append(out, o.Cluster.MetricsURL(h))
	}
	return out
}

// Close stops every agent, then every redis-server, then removes the
// testbed: its namespaces, links, cgroups and directories. It is safe to
// call more than once.
func (o *OnTestbed) Close() error {
	stop := o.Cluster.Stop()
	if stop != nil {
		stop = fmt.Errorf("gait-redis: stop: %w", stop)
	}
	return errors.Join(stop, o.Testbed.Close())
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

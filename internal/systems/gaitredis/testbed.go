package gaitredis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
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
	// Kill, once closed, makes the deployment stop at once: every agent and
	// redis-server is killed (SIGKILL) instead of stopped, including one
	// starting meanwhile, whether the deployment is still starting or
	// already closing. The testbed is still removed as ever. nil never
	// closes.
	Kill <-chan struct{}
}

// OnTestbed is a deployment (gait-redis, or another backend's) on a
// testbed of its own.
type OnTestbed struct {
	Testbed *testbed.Testbed
	Cluster *Cluster

	kill      <-chan struct{}
	stopWatch func()
	closeOnce sync.Once
	closeErr  error
}

// StartOnTestbed builds a testbed with one host per replica and starts the
// driver's deployment on it: a server and an agent on every host, the
// first opts.Voters hosts voting. It needs root. It returns once every agent
// serves a write and a linearizable read; on error, and when ctx ends
// before that, everything started is removed. Close removes it otherwise;
// after a crash, gait clean does (the testbed's state file names it all).
func (d *Driver) StartOnTestbed(ctx context.Context, opts TestbedOptions) (_ *OnTestbed, err error) {
	if err := d.checkShape(opts.Voters, opts.Duplicates); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: not started: %w", d.Name(), err)
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	t0 := time.Now()
	tb, err := testbed.Up(testbed.Options{Hosts: opts.Voters + opts.Duplicates, Bandwidth: opts.Bandwidth, StateDir: opts.StateDir})
	if err != nil {
		return nil, fmt.Errorf("%s: testbed: %w", d.Name(), err)
	}
	fmt.Fprintf(progress, "starting %s and %s on testbed run %s (%s, links at %s)...",
		plural(opts.Voters, "voter"), plural(opts.Duplicates, "duplicate"), tb.ID, tb.Subnet, testbed.FormatBandwidth(tb.Bandwidth))
	stopWatch := watchKill(tb, opts.Kill)
	defer func() {
		if err != nil {
			fmt.Fprintln(progress, " failed")
			stopWatch()
			err = errors.Join(err, tb.Close())
		}
	}()
	drv := *d
	drv.Voters = opts.Voters
	c, err := drv.Start(ctx, tbhost.Hosts(tb, ""))
	if err != nil {
		if ctx.Err() != nil {
			// What failed is only the interruption's doing.
			err = fmt.Errorf("%s: interrupted while starting; removed testbed run %s", d.Name(), tb.ID)
		}
		return nil, err
	}
	fmt.Fprintf(progress, " ready in %v\n", time.Since(t0).Round(time.Millisecond))
	return &OnTestbed{Testbed: tb, Cluster: c.(*Cluster), kill: opts.Kill, stopWatch: stopWatch}, nil
}

// watchKill kills every process on tb's hosts once kill is closed, and
// again every 50 ms until stop is called, so that a process started in the
// meantime (the deployment may still be starting) goes too.
func watchKill(tb *testbed.Testbed, kill <-chan struct{}) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-kill:
		case <-done:
			return
		}
		for {
			for _, h := range tb.Hosts {
				h.KillAll() // a process that lingers is killed again with the testbed
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return sync.OnceFunc(func() {
		close(done)
		<-finished
	})
}

// killed tells whether the deployment was told to stop at once.
func (o *OnTestbed) killed() bool {
	select {
	case <-o.kill:
		return true
	default:
		return false
	}
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

// Close stops every agent, then every server (or kills them all,
// once TestbedOptions.Kill is closed), then removes the testbed: its
// namespaces, links, cgroups and directories. It is safe to call more than
// once.
func (o *OnTestbed) Close() error {
	o.closeOnce.Do(func() {
		var stop error
		if !o.killed() {
			if stop = o.Cluster.Stop(); stop != nil {
				stop = fmt.Errorf("%s: stop: %w", o.Cluster.d.Name(), stop)
			}
		}
		o.stopWatch()
		o.closeErr = errors.Join(stop, o.Testbed.Close())
	})
	return o.closeErr
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

package etcd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/prom"
)

// Cluster is a running etcd cluster started by Driver.Start.
type Cluster struct {
	d       *Driver
	members []*member
	byName  map[string]*member
	http    *http.Client
	means   prom.IntervalMeans // of the histograms, between scrapes
}

var _ systems.Cluster = (*Cluster)(nil)

// Roles asks every member for its raft status. The leader is the one most
// members name; others are "follower", or "down" if their process has exited,
// or "unreachable" if they did not answer in time.
func (c *Cluster) Roles(ctx context.Context) (map[string]string, error) {
	leaders, errs := c.statuses(ctx)
	leader := mostNamed(leaders)
	roles := map[string]string{}
	found := false
	for i, m := range c.members {
		switch {
		case leader != 0 && m.memberID() == leader:
			roles[m.host.Name()] = "leader"
			found = true
		case errs[i] == nil:
			roles[m.host.Name()] = "follower"
		case m.exited():
			roles[m.host.Name()] = "down"
		default:
			roles[m.host.Name()] = "unreachable"
		}
	}
	if !found {
		return roles, fmt.Errorf("etcd: no member is known as leader: %w", errors.Join(errs...))
	}
	return roles, nil
}

// statusTimeout bounds one member's answer to a status request, so a member
// that is down or limping cannot hold up Roles or Stop.
const statusTimeout = 3 * time.Second

// statuses asks every member at once whom it takes for leader; leaders[i]
// is 0 where member i did not answer, and errs[i] says why.
func (c *Cluster) statuses(ctx context.Context) (leaders []uint64, errs []error) {
	leaders = make([]uint64, len(c.members))
	errs = make([]error, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, statusTimeout)
			defer cancel()
			st, err := m.statusOf(ctx)
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", m.host.Name(), err)
				return
			}
			leaders[i] = st.Leader
		})
	}
	wg.Wait()
	return leaders, errs
}

// mostNamed returns the non-zero ID that occurs most often in ids, 0 if none.
func mostNamed(ids []uint64) uint64 {
	votes := map[uint64]int{}
	var best uint64
	for _, id := range ids {
		if id == 0 {
			continue
		}
		votes[id]++
		if votes[id] > votes[best] {
			best = id
		}
	}
	return best
}

// Client returns a client talking only to the member on host.
func (c *Cluster) Client(host string) (load.Client, error) {
	m, err := c.member(host)
	if err != nil {
		return nil, err
	}
	cli, err := c.d.client(m.host)
	if err != nil {
		return nil, err
	}
	return &client{cli: cli, rangeLimit: c.d.RangeLimit, leaseTTL: c.d.LeaseTTL}, nil
}

func (c *Cluster) member(host string) (*member, error) {
	m, ok := c.byName[host]
	if !ok {
		return nil, fmt.Errorf("etcd: no member on host %q", host)
	}
	return m, nil
}

// Restart starts the member on host again with its data directory and flags
// (joining the existing cluster), and waits until it follows the leader.
func (c *Cluster) Restart(ctx context.Context, host string) error {
	m, err := c.member(host)
	if err != nil {
		return err
	}
	m.mu.Lock()
	argv := existing(m.argv)
	m.mu.Unlock()
	if err := m.launch(c.d, argv); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return c.waitReady(ctx, []*member{m})
}

// exited tells whether the member's process has ended.
func (m *member) exited() bool {
	proc, _ := m.current()
	return proc == nil || proc.Exited()
}

// existing turns a first start's command line into a restart's.
func existing(argv []string) []string {
	out := slices.Clone(argv)
	for i, a := range out {
		if a == "--initial-cluster-state=new" {
			out[i] = "--initial-cluster-state=existing"
		}
	}
	return out
}

// Stop ends the followers first, at once, then the leader once it has
// stepped down. A leader stopped while it leads hands its leadership to a
// follower first; with the followers gone it waits for a transfer that never
// comes, until Process.Stop kills it. Without a quorum it steps down after
// an election timeout, and a member that does not lead just ends.
func (c *Cluster) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	leader := c.leader(ctx)
	cancel()
	var rest []*member
	for _, m := range c.members {
		if m != leader {
			rest = append(rest, m)
		}
	}
	err := c.stop(rest)
	if leader != nil {
		leader.waitStepDown(stepDownWait)
		err = errors.Join(err, c.stop([]*member{leader}))
	}
	c.http.CloseIdleConnections()
	return err
}

// stepDownWait is twice etcd's default election timeout, after which a
// leader without a quorum has stepped down.
const stepDownWait = 2 * time.Second

// waitStepDown waits up to d until m no longer takes itself for leader (or
// does not answer).
func (m *member) waitStepDown(d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		st, err := m.statusOf(ctx)
		cancel()
		if err != nil || st.Leader != st.Header.MemberId {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leader returns the member the others name as leader, nil if none.
func (c *Cluster) leader(ctx context.Context) *member {
	leaders, _ := c.statuses(ctx)
	id := mostNamed(leaders)
	for _, m := range c.members {
		if id != 0 && m.memberID() == id {
			return m
		}
	}
	return nil
}

// stop ends the members ms at once and closes the driver's connections to them.
func (c *Cluster) stop(ms []*member) error {
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			proc, cli := m.current()
			if proc != nil {
				errs[i] = proc.Stop()
			}
			if cli != nil {
				cli.Close()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

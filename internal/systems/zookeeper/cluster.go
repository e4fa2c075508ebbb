package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
)

// Cluster is a running ZooKeeper ensemble started by Driver.Start.
type Cluster struct {
	d       *Driver
	members []*member
	byName  map[string]*member
	means   intervalMeans
}

var _ systems.Cluster = (*Cluster)(nil)

// statusTimeout bounds one server's answer to a four-letter word, so a
// server that is down or limping cannot hold up Roles or Metrics.
const statusTimeout = 3 * time.Second

// Roles asks every server for its mode (srvr's Mode, mntr's
// zk_server_state): "leader" or "follower" as it answers, "down" if its
// process has exited, "unreachable" if it did not answer in time or does
// not serve (while it looks for a leader).
func (c *Cluster) Roles(ctx context.Context) (map[string]string, error) {
	states := make([]string, len(c.members))
	errs := make([]error, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Go(func() {
			st, err := c.state(ctx, m)
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", m.host.Name(), err)
				return
			}
			states[i] = st
		})
	}
	wg.Wait()
	roles := map[string]string{}
	found := false
	for i, m := range c.members {
		switch {
		case errs[i] == nil:
			roles[m.host.Name()] = states[i]
			found = found || states[i] == "leader"
		case m.exited():
			roles[m.host.Name()] = "down"
		default:
			roles[m.host.Name()] = "unreachable"
		}
	}
	if !found {
		return roles, fmt.Errorf("zookeeper: no server leads: %w", errors.Join(errs...))
	}
	return roles, nil
}

// Client returns a client with a session on the server on host only.
func (c *Cluster) Client(host string) (load.Client, error) {
	m, err := c.member(host)
	if err != nil {
		return nil, err
	}
	return c.d.dial(m.host)
}

func (c *Cluster) member(host string) (*member, error) {
	m, ok := c.byName[host]
	if !ok {
		return nil, fmt.Errorf("zookeeper: no server on host %q", host)
	}
	return m, nil
}

// Restart starts the server on host again with its data directory and
// configuration, and waits until it serves again (as a follower, unless the
// ensemble elected it).
func (c *Cluster) Restart(ctx context.Context, host string) error {
	m, err := c.member(host)
	if err != nil {
		return err
	}
	if err := m.launch(c.d); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return c.waitReady(ctx, []*member{m})
}

// Stop ends every server at once.
func (c *Cluster) Stop() error {
	procs := make([]systems.Process, len(c.members))
	for i, m := range c.members {
		procs[i] = m.Current()
	}
	return systems.StopAll(procs)
}

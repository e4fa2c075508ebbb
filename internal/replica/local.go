package replica

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gait-dev/gait/internal/systems/redis"
)

// Local is a whole deployment on loopback: one redis-server and one agent
// per replica, the first voter bootstrapping and the rest joining it.
type Local struct {
	Agents  []*Agent
	servers []*redis.Server
}

// StartLocal starts voters voting replicas and duplicates non-voting ones,
// each configured as base (read mode, fan-out, write-all, metrics address,
// log) with its own ID, addresses and role.
func StartLocal(voters, duplicates int, base Config) (*Local, error) {
	if voters < 1 || duplicates < 0 {
		return nil, fmt.Errorf("replica deployment: %d voters and %d duplicates; want at least 1 voter", voters, duplicates)
	}
	l := &Local{}
	for i := range voters + duplicates {
		cfg := base
		cfg.ID, cfg.RaftAddr, cfg.Listen = fmt.Sprintf("r%d", i+1), "127.0.0.1:0", "127.0.0.1:0"
		cfg.Bootstrap, cfg.NonVoter, cfg.Join = i == 0, i >= voters, ""
		if i > 0 {
			cfg.Join = l.Agents[0].RaftAddr()
		}
		if err := l.add(cfg); err != nil {
			return nil, errors.Join(err, l.Close())
		}
		if i == 0 {
			if err := l.waitLeader(20 * time.Second); err != nil {
				return nil, errors.Join(err, l.Close())
			}
		}
	}
	return l, nil
}

func (l *Local) add(cfg Config) error {
	srv, err := redis.StartServer(context.Background())
	if err != nil {
		return err
	}
	l.servers = append(l.servers, srv)
	cfg.RedisAddr = srv.Addr
	a, err := Start(cfg)
	if err != nil {
		return fmt.Errorf("replica %s: %w", cfg.ID, err)
	}
	l.Agents = append(l.Agents, a)
	return nil
}

func (l *Local) waitLeader(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if l.Agents[0].IsLeader() {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("replica deployment: no raft leader within %v", limit)
}

// Close stops every agent, then every redis-server.
func (l *Local) Close() error {
	var errs []error
	for _, a := range l.Agents {
		errs = append(errs, a.Close())
	}
	for _, s := range l.servers {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

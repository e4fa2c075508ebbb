package gaitredis

import (
	"context"
	"fmt"
	"os"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/redis"
)

// Backend is the unmodified server every agent of a testbed deployment
// fronts, and how clients reach it through the agents: everything of the
// driver that depends on which server that is. Redis's is the default
// (RedisBackend); gaitzookeeper gives ZooKeeper's.
type Backend interface {
	// System is the registered system's name ("gait-redis"); it names the
	// driver's errors.
	System() string
	// Check says what is missing to run the server.
	Check() error
	// Start starts the server on h listening at port and returns once it
	// answers.
	Start(ctx context.Context, h systems.Host, port int) (systems.Process, error)
	// Answers waits until the server at addr on h, restarted in place as p,
	// answers again.
	Answers(ctx context.Context, h systems.Host, addr string, p systems.Process) error
	// AgentFlags are gait replica agent's flags naming the server at addr.
	AgentFlags(addr string) []string
	// Dial returns a load client of the agent at addr.
	Dial(ctx context.Context, addr string) (load.Client, error)
	// Probe writes val to key through the agent at addr on h, then reads it
	// back linearizably, connecting from inside h when h can
	// (systems.LocalDialer): it tells that the agent serves.
	Probe(ctx context.Context, h systems.Host, addr, key, val string) error
}

// RedisBackend is an unmodified redis-server behind every agent.
type RedisBackend struct {
	Binary string // the redis-server program
}

func (RedisBackend) System() string { return "gait-redis" }

// Needs is the server's program, on every machine of a run across
// machines.
func (b RedisBackend) Needs() []string { return []string{b.Binary} }

func (b RedisBackend) Check() error {
	if _, err := os.Stat(b.Binary); err != nil {
		return fmt.Errorf("gait-redis: %w", err)
	}
	return nil
}

func (b RedisBackend) Start(ctx context.Context, h systems.Host, port int) (systems.Process, error) {
	return redis.StartOn(ctx, b.Binary, h, port)
}

func (RedisBackend) Answers(ctx context.Context, h systems.Host, addr string, p systems.Process) error {
	return redis.WaitAnswer(ctx, h, addr, p, 10*time.Second)
}

func (RedisBackend) AgentFlags(addr string) []string { return []string{"--redis", addr} }

func (RedisBackend) Dial(ctx context.Context, addr string) (load.Client, error) {
	return redis.Dial(ctx, addr)
}

func (RedisBackend) Probe(ctx context.Context, h systems.Host, addr, key, val string) error {
	rdb := goredis.NewClient(redis.LocalOptions(h, addr))
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := rdb.Set(ctx, key, val, 0).Err(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	got, err := rdb.Get(ctx, key).Result()
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if got != val {
		return fmt.Errorf("read %q after writing %q", got, val)
	}
	return nil
}

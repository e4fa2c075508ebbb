// Package redis drives a Redis server: a load.Client speaking to it with
// go-redis, and a helper that starts Debian's redis-server on loopback.
package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gait-dev/gait/internal/load"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Ops are the operations a Client offers; load.Op.Kind indexes them.
var Ops = []string{"get", "set", "del"}

// Operation kinds, in the order of Ops.
const (
	OpGet uint8 = iota
	OpSet
	OpDel
)

// Client is one connection to a Redis server.
type Client struct {
	rdb *goredis.Client
	// replicas are the hosts of the primary's replicas when this is a
	// client of a primary whose replicas gait started; waited is what the
	// last request's WAIT asked for (0: it did not wait).
	replicas []string
	waited   int
}

// Dial connects to the server at addr (host:port) and checks it answers.
func Dial(ctx context.Context, addr string) (*Client, error) {
	return dialWith(ctx, Options(addr))
}

func dialWith(ctx context.Context, opts *goredis.Options) (*Client, error) {
	rdb := goredis.NewClient(opts)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redis %s: %w", opts.Addr, err)
	}
	return &Client{rdb: rdb}, nil
}

// Options are the go-redis options of a Client on addr: one connection,
// no retries, the plainest handshake, timeouts from the context only.
func Options(addr string) *goredis.Options {
	return &goredis.Options{
		Addr: addr,
		// One connection per client: a load client is one Redis client.
		PoolSize: 1,
		// gait measures requests, so the driver must not retry them behind
		// its back, and the plainest handshake keeps any Redis version happy.
		MaxRetries:               -1,
		Protocol:                 2,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		ContextTimeoutEnabled:    true,
		DialTimeout:              5 * time.Second,
		ReadTimeout:              -1, // the engine's per-request timeout bounds a request, if any
		WriteTimeout:             -1,
	}
}

// Do performs one operation. A get of a missing key is a success.
func (c *Client) Do(ctx context.Context, op load.Op) error {
	c.waited = 0
	var err error
	switch op.Kind {
	case OpGet:
		err = c.rdb.Get(ctx, op.Key).Err()
		if errors.Is(err, goredis.Nil) {
			err = nil
		}
	case OpSet:
		err = c.rdb.Set(ctx, op.Key, op.Value, 0).Err()
	case OpDel:
		err = c.rdb.Del(ctx, op.Key).Err()
	default:
		return fmt.Errorf("redis: unknown operation kind %d", op.Kind)
	}
	return err
}

// Involved names the replicas a write waited for (load.Involver): every
// replica when its WAIT asked for as many as the primary has, since each
// must acknowledge it, so a slow replica is on that write's path. A WAIT
// for fewer is answered by the fastest, which the client cannot name, and
// a request that did not wait involves no replica: both nil.
func (c *Client) Involved() []string {
	if len(c.replicas) == 0 || c.waited < len(c.replicas) {
		return nil
	}
	return c.replicas
}

// Close closes the connection.
func (c *Client) Close() error { return c.rdb.Close() }

// Dialer gives every load worker its own connection to addr, recorded as host 0.
func Dialer(addr string) load.Dialer {
	return func(int) (load.Client, uint8, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := Dial(ctx, addr)
		if err != nil {
			return nil, 0, err
		}
		return c, 0, nil
	}
}

// WaitReplicas sends WAIT replicas timeout: it returns once replicas
// replicas have acknowledged every write of this connection, or timeout
// passes (0: Redis waits without limit, the context's deadline bounds it).
func (c *Client) WaitReplicas(ctx context.Context, replicas int, timeout time.Duration) (int, error) {
	c.waited = replicas
	n, err := c.rdb.Wait(ctx, replicas, timeout).Result()
	return int(n), err
}

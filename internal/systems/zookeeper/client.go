package zookeeper

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
)

// Root is the znode under which operations' keys live: key k is Root+"/"+k.
const Root = "/gait"

// quiet silences go-zookeeper's logger: gait reports errors itself.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// client is a load.Client with one session on one server.
type client struct {
	conn *zk.Conn
	// root is set once Root is known to exist.
	root bool
}

var _ load.Client = (*client)(nil)

// dial opens a session on the server on h only. It connects in the
// background: the first request waits for it.
func (d *Driver) dial(h systems.Host) (*client, error) {
	c, err := d.dialAddr(d.clientAddr(h))
	if err != nil {
		return nil, fmt.Errorf("zookeeper client for %s: %w", h.Name(), err)
	}
	return c, nil
}

func (d *Driver) dialAddr(addr string) (*client, error) {
	conn, _, err := zk.Connect([]string{addr}, d.SessionTimeout,
		zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, err
	}
	return &client{conn: conn}, nil
}

// DialAddr opens a session on the server at addr (HOST:PORT) only, as a
// load client of this driver's ops: a ZooKeeper server's, or a gait
// replica agent's that speaks ZooKeeper's protocol. It connects in the
// background: the first request waits for it.
func (d *Driver) DialAddr(addr string) (load.Client, error) {
	c, err := d.dialAddr(addr)
	if err != nil {
		return nil, fmt.Errorf("zookeeper client for %s: %w", addr, err)
	}
	return c, nil
}

// Dialer gives every load worker its own session on addr, recorded as
// host 0 (gait load).
func Dialer(addr string) load.Dialer {
	return func(int) (load.Client, uint8, error) {
		c, err := New().DialAddr(addr)
		return c, 0, err
	}
}

func path(key string) string { return Root + "/" + key }

// Do issues op on znode Root/Key: "create" makes it with Value (an
// existing one counts as done), "set" writes Value (creating the znode if
// it is missing), "get" reads it (a missing one is not an error: the read
// was served), "delete" removes it (a missing one counts as done).
func (c *client) Do(ctx context.Context, op load.Op) error {
	if op.Kind > opDelete {
		return fmt.Errorf("zookeeper: operation kind %d: not one of %v", op.Kind, Ops)
	}
	return c.do(ctx, func() error { return c.op(op) })
}

func (c *client) op(op load.Op) error {
	p := path(op.Key)
	switch op.Kind {
	case opCreate:
		return c.create(p, op.Value)
	case opSet:
		_, err := c.conn.Set(p, op.Value, -1)
		if errors.Is(err, zk.ErrNoNode) {
			return c.create(p, op.Value)
		}
		return err
	case opGet:
		_, _, err := c.conn.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	default:
		err := c.conn.Delete(p, -1)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	}
}

// create makes znode p with data, and Root first if needed.
func (c *client) create(p string, data []byte) error {
	if !c.root {
		if _, err := c.conn.Create(Root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
		c.root = true
	}
	_, err := c.conn.Create(p, data, 0, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNodeExists) {
		_, err = c.conn.Set(p, data, -1)
	}
	return err
}

// do runs f, a blocking request, and returns its error, or ctx's when ctx
// ends first (go-zookeeper's requests take no context; f then finishes in
// the background and its answer is dropped).
func (c *client) do(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *client) Close() error {
	c.conn.Close()
	return nil
}

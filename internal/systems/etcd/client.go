package etcd

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gait-dev/gait/internal/load"
)

// client is a load.Client on one member.
type client struct {
	cli        *clientv3.Client
	rangeLimit int64
}

// Do issues op: "put" writes Key=Value, "get" reads Key, "range" reads up to
// rangeLimit keys from Key on in key order. Reads are linearizable (etcd's
// default), so they pass through the leader.
func (c *client) Do(ctx context.Context, op load.Op) error {
	var err error
	switch op.Kind {
	case opPut:
		_, err = c.cli.Put(ctx, op.Key, string(op.Value))
	case opGet:
		_, err = c.cli.Get(ctx, op.Key)
	case opRange:
		_, err = c.cli.Get(ctx, op.Key, clientv3.WithFromKey(), clientv3.WithLimit(c.rangeLimit))
	default:
		return fmt.Errorf("etcd: operation kind %d: not one of %v", op.Kind, Ops)
	}
	if isServerTimeout(err) {
		return timeoutError{err}
	}
	return err
}

func (c *client) Close() error { return c.cli.Close() }

// isServerTimeout tells etcd's own "request timed out" answers, which the
// server gives when a proposal does not commit in time.
func isServerTimeout(err error) bool {
	for _, t := range []error{rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail,
		rpctypes.ErrTimeoutDueToConnectionLost, rpctypes.ErrTimeoutWaitAppliedIndex} {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// timeoutError makes a server-side timeout count as a timeout in load's
// outcomes, which recognise timeouts as net.Error.
type timeoutError struct{ err error }

func (e timeoutError) Error() string   { return e.err.Error() }
func (e timeoutError) Unwrap() error   { return e.err }
func (e timeoutError) Timeout() bool   { return true }
func (e timeoutError) Temporary() bool { return true }

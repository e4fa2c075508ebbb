package etcd

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gait-dev/gait/internal/load"
)

// client is a load.Client on one member. A load worker owns its client, so
// the lease it keeps alive needs no lock.
type client struct {
	cli        *clientv3.Client
	rangeLimit int64
	leaseTTL   int64            // seconds
	lease      clientv3.LeaseID // kept alive by "lease"; NoLease before the first
}

// Do issues op: "put" writes Key=Value, "get" reads Key, "range" reads up to
// rangeLimit keys from Key on in key order, "lease" keeps the client's lease
// alive. Reads are linearizable (etcd's default), so they pass through the
// leader.
func (c *client) Do(ctx context.Context, op load.Op) error {
	var err error
	switch op.Kind {
	case opPut:
		_, err = c.cli.Put(ctx, op.Key, string(op.Value))
	case opGet:
		_, err = c.cli.Get(ctx, op.Key)
	case opRange:
		_, err = c.cli.Get(ctx, op.Key, clientv3.WithFromKey(), clientv3.WithLimit(c.rangeLimit))
	case opLease:
		err = c.keepLease(ctx)
	default:
		return fmt.Errorf("etcd: operation kind %d: not one of %v", op.Kind, Ops)
	}
	if isServerTimeout(err) {
		return timeoutError{err}
	}
	return err
}

// keepLease grants the client's lease on its first call and renews it once
// on every later one, as a session (an election, a lock, a registration)
// keeps its lease. A lease the cluster no longer knows was revoked while its
// holder was renewing it, which no healthy cluster does: that is an error
// (the failure etcd-io/etcd#15247 reports), and the next call grants a new
// lease.
func (c *client) keepLease(ctx context.Context) error {
	if c.lease == clientv3.NoLease {
		g, err := c.cli.Grant(ctx, c.leaseTTL)
		if err != nil {
			return err
		}
		c.lease = g.ID
		return nil
	}
	_, err := c.cli.KeepAliveOnce(ctx, c.lease)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		lost := c.lease
		c.lease = clientv3.NoLease
		return fmt.Errorf("etcd: lease %x was revoked while it was being kept alive: %w", int64(lost), err)
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

package load

import (
	"context"
	"fmt"
	"time"
)

// Wait makes a write wait until Replicas replicas have it, or Timeout
// passes (0: as long as the request's own timeout allows): Redis's WAIT,
// the synchronous replication a user picks for durability.
type Wait struct {
	Replicas int
	Timeout  time.Duration
}

// Waiter is a client whose writes can wait for replicas.
type Waiter interface {
	// WaitReplicas blocks until replicas replicas have acknowledged the
	// client's writes so far, or timeout passes (0: no limit but ctx's),
	// and returns how many had.
	WaitReplicas(ctx context.Context, replicas int, timeout time.Duration) (int, error)
}

// ShortWait is the error of a write that fewer replicas acknowledged than
// it waited for: the write happened on the server it was sent to, but not
// as durably as asked, so it counts as a failed request.
type ShortWait struct {
	Acked int
	Wait  Wait
}

func (e *ShortWait) Error() string {
	return fmt.Sprintf("WAIT: %d of %d replicas acknowledged the write within %v", e.Acked, e.Wait.Replicas, e.Wait.Timeout)
}

// waitingDialer dials clients whose writes (ops of kind write) wait as w
// says; a client that cannot wait fails its dial.
func waitingDialer(dial Dialer, write uint8, w Wait) Dialer {
	return func(worker int) (Client, uint8, error) {
		c, host, err := dial(worker)
		if err != nil {
			return nil, host, err
		}
		wc, ok := c.(Waiter)
		if !ok {
			c.Close()
			return nil, host, fmt.Errorf("a client of this system cannot wait for replicas (%T)", c)
		}
		return &waitingClient{Client: c, waiter: wc, write: write, wait: w}, host, nil
	}
}

type waitingClient struct {
	Client
	waiter Waiter
	write  uint8
	wait   Wait
}

func (c *waitingClient) Do(ctx context.Context, op Op) error {
	if err := c.Client.Do(ctx, op); err != nil || op.Kind != c.write {
		return err
	}
	n, err := c.waiter.WaitReplicas(ctx, c.wait.Replicas, c.wait.Timeout)
	if err != nil {
		return fmt.Errorf("WAIT: %w", err)
	}
	if n < c.wait.Replicas {
		return &ShortWait{Acked: n, Wait: c.wait}
	}
	return nil
}

// Involved passes on what the client waited for says, so waiting hides
// nothing of it.
func (c *waitingClient) Involved() []string {
	if iv, ok := c.Client.(Involver); ok {
		return iv.Involved()
	}
	return nil
}

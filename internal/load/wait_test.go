package load

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// acker is a client whose WAIT answers acked, and which counts its calls.
type acker struct {
	acked, waits int
	writes       []string
}

func (a *acker) Do(_ context.Context, op Op) error { a.writes = append(a.writes, op.Key); return nil }
func (a *acker) Close() error                      { return nil }
func (a *acker) WaitReplicas(_ context.Context, n int, _ time.Duration) (int, error) {
	a.waits++
	return min(a.acked, n), nil
}

type plain struct{}

func (plain) Do(context.Context, Op) error { return nil }
func (plain) Close() error                 { return nil }

func TestWaitingClient(t *testing.T) {
	a := &acker{acked: 1}
	w := Wait{Replicas: 2, Timeout: 100 * time.Millisecond}
	dial := waitingDialer(func(int) (Client, uint8, error) { return a, 3, nil }, 1, w)
	c, host, err := dial(0)
	if err != nil || host != 3 {
		t.Fatalf("dial: %v, host %d", err, host)
	}
	ctx := context.Background()
	if err := c.Do(ctx, Op{Kind: 0, Key: "read"}); err != nil || a.waits != 0 {
		t.Errorf("a read waited (%d) or failed: %v", a.waits, err)
	}
	err = c.Do(ctx, Op{Kind: 1, Key: "write"})
	var sw *ShortWait
	if !errors.As(err, &sw) || sw.Acked != 1 || a.waits != 1 {
		t.Fatalf("a write acknowledged by 1 of 2: %v (waits %d)", err, a.waits)
	}
	if !strings.Contains(err.Error(), "1 of 2 replicas") {
		t.Errorf("error %q", err)
	}
	a.acked = 2
	if err := c.Do(ctx, Op{Kind: 1, Key: "write"}); err != nil {
		t.Errorf("a write acknowledged by 2 of 2: %v", err)
	}

	_, _, err = waitingDialer(func(int) (Client, uint8, error) { return plain{}, 0, nil }, 1, w)(0)
	if err == nil || !strings.Contains(err.Error(), "cannot wait for replicas") {
		t.Errorf("a client that cannot wait: %v", err)
	}
}

func TestWaitSpec(t *testing.T) {
	mix := Mix{{Kind: 0, Name: "set", Weight: 1}}
	for _, c := range []struct {
		wait  Wait
		field string
	}{
		{Wait{Replicas: -1}, "wait.replicas"},
		{Wait{Replicas: 1, Timeout: -time.Second}, "wait.timeout"},
		{Wait{Timeout: time.Second}, "wait.replicas"},
	} {
		_, err := Spec{Mix: mix, Wait: c.wait}.Resolve()
		var se *SpecError
		if !errors.As(err, &se) || se.Field != c.field {
			t.Errorf("%+v: %v, want an error in %s", c.wait, err, c.field)
		}
	}
	if s, err := (Spec{Mix: mix, Wait: Wait{Replicas: 1}}).Resolve(); err != nil || s.Wait.Replicas != 1 {
		t.Errorf("wait for one replica: %+v, %v", s.Wait, err)
	}
}

package load

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/rundir"
)

// Preload writes every key of wl once with operation kind, using clients
// concurrent clients, so reads during the run find their keys.
func Preload(ctx context.Context, wl Workload, kind uint8, dial Dialer, clients int) error {
	if err := wl.validate(); err != nil {
		return err
	}
	clients = max(1, min(clients, wl.Keys))
	value := wl.value(0)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() { errs[i] = preloadStripe(ctx, dial, i, clients, wl.Keys, Op{Kind: kind, Value: value}) })
	}
	wg.Wait()
	return firstOf(errs, fmt.Sprintf("load: preload %d keys", wl.Keys))
}

// firstOf reports the first of the clients' errors and how many others
// failed: sixteen copies of "connection refused" say no more than one.
func firstOf(errs []error, what string) error {
	var first error
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	switch {
	case failed == 0:
		return nil
	case failed > 1:
		return fmt.Errorf("%s: %w (and %d more of its %d connections failed)", what, first, failed-1, len(errs))
	}
	return fmt.Errorf("%s: %w", what, first)
}

// preloadStripe writes keys i, i+n, i+2n, ...
func preloadStripe(ctx context.Context, dial Dialer, i, n, keys int, op Op) error {
	c, _, err := dial(i)
	if err != nil {
		return fmt.Errorf("dial client %d: %w", i, err)
	}
	defer c.Close()
	for k := i; k < keys; k += n {
		op.Key = Key(k)
		if err := c.Do(ctx, op); err != nil {
			return fmt.Errorf("write %s: %w", op.Key, err)
		}
	}
	return nil
}

// Calibrate measures the maximum throughput of wl: a closed-loop run of
// clients clients for d, nothing recorded. A rate given as a share of the
// maximum (the Limplock paper loads systems to 30-70%) is that share of it.
func Calibrate(ctx context.Context, wl Workload, dial Dialer, clients int, d time.Duration, seed uint64) (float64, error) {
	res, err := Run(ctx, Config{Workload: wl, Clients: clients, Duration: d, Seed: seed}, dial, discard{})
	if err != nil {
		return 0, fmt.Errorf("load: calibrate: %w", err)
	}
	ok := res.Requests - res.Errors - res.Timeouts
	if ok == 0 {
		return 0, fmt.Errorf("load: calibrate: no request succeeded in %v (first error: %v)", d, res.FirstError)
	}
	return float64(ok) / res.Elapsed.Seconds(), nil
}

type discard struct{}

func (discard) Add(rundir.Sample)              {}
func (discard) AddMetric(int, string, float64) {}

package load

import (
	"fmt"
	"time"
)

// timedDialer bounds each dial of dial by timeout, the run's per-request
// timeout: a server that accepts connections but never answers would
// otherwise hold a run for as long as the driver's own dial allows,
// whatever the user asked. A dial that answers after the bound has its
// client closed. timeout 0 leaves dial as it is.
func timedDialer(dial Dialer, timeout time.Duration) Dialer {
	if timeout <= 0 || dial == nil {
		return dial
	}
	type dialed struct {
		c    Client
		host uint8
		err  error
	}
	return func(worker int) (Client, uint8, error) {
		done := make(chan dialed, 1)
		go func() {
			c, h, err := dial(worker)
			done <- dialed{c, h, err}
		}()
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		select {
		case d := <-done:
			return d.c, d.host, d.err
		case <-timer.C:
			go func() {
				if d := <-done; d.err == nil {
					d.c.Close()
				}
			}()
			return nil, 0, fmt.Errorf("no answer within %v (the request timeout)", timeout)
		}
	}
}

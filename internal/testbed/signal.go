package testbed

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/gait-dev/gait/internal/interrupt"
)

// open holds the testbeds not yet closed, for a second interrupt.
var (
	openMu sync.Mutex
	open   = map[*Testbed]bool{}
)

func track(tb *Testbed) {
	openMu.Lock()
	open[tb] = true
	openMu.Unlock()
}

func untrack(tb *Testbed) {
	openMu.Lock()
	delete(open, tb)
	openMu.Unlock()
}

// SignalContext returns a context cancelled by the first SIGINT or
// SIGTERM, so the caller unwinds and its deferred Close calls remove the
// hosts. If a second signal comes before that is done, every testbed
// still open is closed at once and the process exits with
// interrupt.ExitStatus. stop releases the signals.
func SignalContext(parent context.Context) (ctx context.Context, stop func()) {
	s := interrupt.Catch(parent, os.Stderr, interrupt.Messages{Second: "second signal: removing the testbed now"})
	quit := make(chan struct{})
	go func() {
		select {
		case <-s.Hurry():
			closeAll()
			os.Exit(interrupt.ExitStatus)
		case <-quit:
		}
	}()
	var once sync.Once
	return s.Context(), func() {
		once.Do(func() {
			s.Stop()
			close(quit)
		})
	}
}

func closeAll() {
	openMu.Lock()
	tbs := make([]*Testbed, 0, len(open))
	for tb := range open {
		tbs = append(tbs, tb)
	}
	openMu.Unlock()
	for _, tb := range tbs {
		tb.hurry()
	}
	for _, tb := range tbs {
		if err := tb.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "gait:", err)
		}
	}
}

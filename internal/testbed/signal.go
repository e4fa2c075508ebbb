package testbed

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
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
// still open is closed at once and the process exits with status 130.
// stop releases the signals.
func SignalContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	quit := make(chan struct{})
	go func() {
		select {
		case <-ch:
			cancel()
		case <-quit:
			return
		}
		select {
		case sig := <-ch:
			fmt.Fprintf(os.Stderr, "gait: %s again: removing the testbed now\n", sig)
			closeAll()
			os.Exit(130)
		case <-quit:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(ch)
			close(quit)
			cancel()
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
		if err := tb.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "gait:", err)
		}
	}
}

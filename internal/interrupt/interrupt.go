// Package interrupt is what a long gait command does about SIGINT and
// SIGTERM: the first asks it to stop cleanly, the second to hurry (kill
// what it started rather than wait for it, but still remove everything it
// created), later ones are only answered. gait run, gait testbed up and
// gait replica all stop this one way.
package interrupt

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
)

// Messages are printed on the first signal, the second, and any later one;
// an empty one prints nothing. Each follows "gait: SIGNAL: ".
type Messages struct {
	First, Second, Later string
}

// Signals follows the interrupts of one command.
type Signals struct {
	ctx     context.Context
	hurry   chan struct{}
	hurried atomic.Bool
	stop    func()
}

// Catch starts following SIGINT and SIGTERM, from now until Stop; w gets
// the messages.
func Catch(parent context.Context, w io.Writer, m Messages) *Signals {
	ctx, cancel := context.WithCancel(parent)
	s := &Signals{ctx: ctx, hurry: make(chan struct{})}
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	quit := make(chan struct{})
	say := func(sig os.Signal, msg string) {
		if msg != "" {
			fmt.Fprintf(w, "gait: %s: %s\n", sig, msg)
		}
	}
	go func() {
		for n := 1; ; n++ {
			var sig os.Signal
			select {
			case sig = <-ch:
			case <-quit:
				return
			}
			switch n {
			case 1:
				say(sig, m.First)
				cancel()
			case 2:
				say(sig, m.Second)
				s.hurried.Store(true)
				close(s.hurry)
			default:
				say(sig, m.Later)
			}
		}
	}()
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			signal.Stop(ch)
			close(quit)
			cancel()
		})
	}
	return s
}

// Context is cancelled by the first signal (or by Stop).
func (s *Signals) Context() context.Context { return s.ctx }

// Hurry is closed by the second signal.
func (s *Signals) Hurry() <-chan struct{} { return s.hurry }

// Hurried reports whether a second signal came.
func (s *Signals) Hurried() bool { return s.hurried.Load() }

// Stop stops following the signals and cancels the context.
func (s *Signals) Stop() { s.stop() }

// ExitStatus is a command's status after a second signal cut it short, as
// for a program a SIGINT killed (128 + 2).
const ExitStatus = 130

// End finishes a command once everything it created is removed: after a
// second signal it prints err (if any) and exits with ExitStatus, so a
// script sees the cut was short; otherwise it returns err.
func (s *Signals) End(w io.Writer, err error) error {
	if !s.Hurried() {
		return err
	}
	s.Stop()
	if err != nil {
		fmt.Fprintln(w, "gait:", err)
	}
	os.Exit(ExitStatus) // the CLI would turn any error into status 1
	return err
}

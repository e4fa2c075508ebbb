package load

import (
	"context"
	"runtime"
	"syscall"
	"time"
)

// Go's timers round a wait below a millisecond up to about a millisecond
// when the process is otherwise idle. In an open loop that lateness would be
// charged to the system as latency (a loopback Redis answers in 70 µs), so
// the dispatcher sleeps in nanosleep(2) on a thread of its own whose timer
// slack is 1 ns: it then wakes within about 10 µs of an arrival.

// ownThread gives the calling goroutine its own OS thread for precise
// sleeps; the goroutine calls the returned release when it is done, which
// puts the thread's timer slack back and unlocks it. The thread must not
// end with the goroutine (as a locked thread does): a process started
// from it earlier with Pdeathsig (a testbed host's server) would be
// killed with it.
func ownThread() (release func()) {
	const prSetTimerSlack, prGetTimerSlack = 29, 30 // prctl(2)
	runtime.LockOSThread()
	old, _, _ := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0)
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0)
	return func() {
		syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, old, 0)
		runtime.UnlockOSThread()
	}
}

// sleepUntil waits until t or until ctx ends, reporting which. Long waits use
// a Go timer so ctx can end them; the last stretch is slept precisely.
func sleepUntil(ctx context.Context, timer *time.Timer, t time.Time) bool {
	const coarse = 5 * time.Millisecond
	for {
		wait := time.Until(t)
		switch {
		case wait <= 0:
			return true
		case wait > coarse:
			timer.Reset(wait - coarse/2)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return false
			}
		default:
			ts := syscall.NsecToTimespec(int64(wait))
			syscall.Nanosleep(&ts, nil) // interrupted early: the loop sleeps again
		}
	}
}

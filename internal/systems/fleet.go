package systems

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"
)

// Fleet is how a system of a few masters and many workers starts (HDFS's
// NameNode and DataNodes; HBase's master and region servers; YARN's
// resource manager and node managers; Cassandra's seeds and the other
// nodes): the masters first, serving before any worker starts; then the
// workers, at most Wave starting at a time, so that a hundred JVMs do not
// starve the master they register with; ready once the masters count
// every worker registered, which is what a client needs, not merely each
// worker's port open. The wait grows with the cluster, says how far it
// is on the context's progress line, and a start that fails names the
// member and quotes the meaningful end of its log.
type Fleet struct {
	System string // in errors: "hdfs"
	Noun   string // the workers in the progress line: "DataNodes"

	Masters []Member
	// MastersReady returns nil once the masters serve. An error may be a
	// *NotReady naming the member to blame.
	MastersReady func(ctx context.Context) error

	Workers []Member
	// Registered returns the host names of the workers the masters count
	// as members now.
	Registered func(ctx context.Context) (map[string]bool, error)
	// Settled, if set, returns nil once the cluster serves with every
	// worker registered (HDFS: the NameNode has left safe mode).
	Settled func(ctx context.Context) error

	// Wave is how many workers may be starting (launched, not yet
	// registered) at once; 0 means WaveSize().
	Wave int
	// Base bounds the masters' start, a small cluster's, and a pause in
	// the workers' registrations; PerWorker is what one more worker may
	// add on a machine of one CPU. The start fails once it has taken
	// Timeout(len(Workers)) and no worker has registered for Base: on a
	// machine shared with other work, a start that goes on slowly goes
	// on.
	Base, PerWorker time.Duration
}

// Member is one server of a Fleet.
type Member struct {
	Host string
	// Launch starts the member's server; nil when it runs already (after
	// a master's restart, the workers it waits for to register again).
	Launch func() error
	// Proc is the member's server now; nil before Launch.
	Proc func() Process
}

// WaveSize is how many workers start at once on this machine: a JVM's
// start is mostly CPU (class loading, its compiler), so a few per CPU
// keep every CPU busy while leaving the master room to answer.
func WaveSize() int { return 4 * runtime.NumCPU() }

// Timeout is how long the start of a fleet with n workers may take
// while it makes no progress.
func (f *Fleet) Timeout(n int) time.Duration {
	return f.Base + time.Duration(n)*f.PerWorker/time.Duration(runtime.NumCPU())
}

type progressKey struct{}

// WithProgress returns a context whose fleet starts report their
// progress to show, a line at a time (`41 of 99 DataNodes registered,
// 2m10s`).
func WithProgress(ctx context.Context, show func(string)) context.Context {
	return context.WithValue(ctx, progressKey{}, show)
}

// Progress is where ctx's progress lines go (nowhere when it has none).
func Progress(ctx context.Context) func(string) {
	if show, ok := ctx.Value(progressKey{}).(func(string)); ok {
		return show
	}
	return func(string) {}
}

// progressEvery is how often a start shows where it is.
const progressEvery = 10 * time.Second

// Start launches the masters, waits until they serve, then launches the
// workers in waves and waits until the masters count every one
// registered and the cluster has settled. On failure the caller stops
// whatever was launched.
func (f *Fleet) Start(ctx context.Context) error {
	begin := time.Now()
	for _, m := range f.Masters {
		if err := launch(m); err != nil {
			return fmt.Errorf("%s on %s: %w", f.System, m.Host, err)
		}
	}
	if f.MastersReady != nil {
		mctx, mcancel := context.WithTimeout(ctx, f.Base)
		err := f.poll(mctx, f.Masters, f.MastersReady)
		mcancel()
		if err != nil {
			return f.failed(err, begin, f.Masters)
		}
	}
	if err := f.workers(ctx, begin); err != nil {
		return err
	}
	if f.Settled == nil {
		return nil
	}
	sctx, scancel := context.WithTimeout(ctx, f.Base)
	defer scancel()
	if err := f.poll(sctx, f.all(), f.Settled); err != nil {
		return f.failed(err, begin, f.Masters)
	}
	return nil
}

func launch(m Member) error {
	if m.Launch == nil {
		return nil
	}
	return m.Launch()
}

func (f *Fleet) all() []Member { return f.started(len(f.Workers)) }

// started is the masters, the first next workers and every later worker
// that runs already: the members whose servers must not have exited. (A
// worker not launched yet may still hold an earlier server that ended.)
func (f *Fleet) started(next int) []Member {
	out := append(append([]Member(nil), f.Masters...), f.Workers[:next]...)
	for _, m := range f.Workers[next:] {
		if m.Launch == nil {
			out = append(out, m)
		}
	}
	return out
}

// interval is how often readiness is asked: often for a few members, so
// tests are quick; once a second for many, so the asking does not load
// the master that is busy registering them.
func (f *Fleet) interval() time.Duration {
	if len(f.Workers) > 8 {
		return time.Second
	}
	return 100 * time.Millisecond
}

// poll calls ready until it returns nil, failing at once when a member
// of ms has exited.
func (f *Fleet) poll(ctx context.Context, ms []Member, ready func(context.Context) error) error {
	for {
		if err := exited(ms); err != nil {
			return err
		}
		last := ready(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return &timedOut{last}
		case <-time.After(f.interval()):
		}
	}
}

// timedOut is a wait that ended with the last error its check gave.
type timedOut struct{ last error }

func (e *timedOut) Error() string { return e.last.Error() }
func (e *timedOut) Unwrap() error { return e.last }

// exited is a *NotReady for the first member of ms whose server has ended.
func exited(ms []Member) error {
	for _, m := range ms {
		if p := current(m); p != nil && p.Exited() {
			return &NotReady{Host: m.Host, Proc: p, Err: errExited}
		}
	}
	return nil
}

var errExited = errors.New("exited while starting")

func current(m Member) Process {
	if m.Proc == nil {
		return nil
	}
	return m.Proc()
}

// workers launches the workers, at most a wave starting at a time, and
// waits until every one is registered.
func (f *Fleet) workers(ctx context.Context, begin time.Time) error {
	wave := f.Wave
	if wave <= 0 {
		wave = WaveSize()
	}
	show := Progress(ctx)
	next, shown := 0, time.Now()
	deadline, gained, most := begin.Add(f.Timeout(len(f.Workers))), time.Now(), 0
	var registered map[string]bool
	for {
		if err := exited(f.started(next)); err != nil {
			return f.failed(err, begin, nil)
		}
		reg, err := f.Registered(ctx)
		if err == nil {
			registered = reg
		}
		done := 0
		for _, m := range f.Workers[:next] {
			if registered[m.Host] {
				done++
			}
		}
		for ; next < len(f.Workers) && next-done < wave; next++ {
			if err := launch(f.Workers[next]); err != nil {
				return fmt.Errorf("%s on %s: %w", f.System, f.Workers[next].Host, err)
			}
		}
		if done > most {
			most, gained = done, time.Now()
		}
		if done == len(f.Workers) {
			if len(f.Workers) > 8 {
				show(f.progressLine(done, begin))
			}
			return nil
		}
		if time.Since(shown) >= progressEvery {
			show(f.progressLine(done, begin))
			shown = time.Now()
		}
		if time.Now().After(deadline) && time.Since(gained) > f.Base {
			if registered == nil { // the masters never answered
				return f.failed(&timedOut{err}, begin, nil)
			}
			first, miss := f.missing(registered)
			return f.failed(&timedOut{miss}, begin, []Member{first})
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: start stopped after %v: %w", f.System, since(begin), ctx.Err())
		case <-time.After(f.interval()):
		}
	}
}

func (f *Fleet) progressLine(done int, begin time.Time) string {
	return fmt.Sprintf("%d of %d %s registered, %s", done, len(f.Workers), f.Noun, since(begin))
}

// since is the time since begin as a progress line writes it: 2m10s.
func since(begin time.Time) time.Duration { return time.Since(begin).Round(time.Second) }

// missing says how many workers are registered and which are not, and
// returns the first that is not.
func (f *Fleet) missing(registered map[string]bool) (Member, error) {
	var not []string
	var first Member
	for _, m := range f.Workers {
		if !registered[m.Host] {
			if not == nil {
				first = m
			}
			not = append(not, m.Host)
		}
	}
	list := strings.Join(not[:min(len(not), 8)], ", ")
	if len(not) > 8 {
		list += fmt.Sprintf(" and %d more", len(not)-8)
	}
	return first, fmt.Errorf("%d of %d %s registered; not %s", len(f.Workers)-len(not), len(f.Workers), f.Noun, list)
}

// failed words a start's failure: which member, why, after how long,
// and the end of that member's log (else of the first of blame's).
func (f *Fleet) failed(err error, begin time.Time, blame []Member) error {
	var nr *NotReady
	if errors.Is(err, errExited) && errors.As(err, &nr) {
		return fmt.Errorf("%s on %s exited while starting, after %v%s", f.System, nr.Host, since(begin), LogTail(nr.Proc))
	}
	prefix := f.System
	if to := (*timedOut)(nil); errors.As(err, &to) {
		prefix += fmt.Sprintf(" not ready after %v", since(begin))
	}
	if errors.As(err, &nr) && nr.Proc != nil {
		return fmt.Errorf("%s: %w%s", prefix, err, LogTail(nr.Proc))
	}
	for _, m := range blame {
		if p := current(m); p != nil {
			return fmt.Errorf("%s: %w%s", prefix, err, LogTail(p))
		}
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

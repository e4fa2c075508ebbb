package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// statusLine shows a long command's log lines, and its once-a-second
// status on one line that rewrites itself on a terminal (a log file gets
// every line).
type statusLine struct {
	mu       sync.Mutex // the status comes from the workload's goroutine
	w        io.Writer
	terminal bool
	shown    bool
}

func newStatusLine(w io.Writer) *statusLine {
	s := &statusLine{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			s.terminal = true
		}
	}
	return s
}

func (s *statusLine) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.erase()
	return s.w.Write(p)
}

func (s *statusLine) show(status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.terminal {
		fmt.Fprintf(s.w, "\r\033[K  %s", status)
		s.shown = true
		return
	}
	fmt.Fprintf(s.w, "  %s\n", status)
}

func (s *statusLine) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.erase()
}

func (s *statusLine) erase() {
	if s.shown {
		fmt.Fprint(s.w, "\r\033[K")
		s.shown = false
	}
}

// progressLine shows a long computation's progress on standard error: what
// runs, the share done, the time spent and an estimate of the time left.
// It keeps quiet for the first few seconds, so a quick command prints
// nothing; then a terminal sees one line rewritten every second, a log a
// line every ten seconds.
type progressLine struct {
	verb                string
	status              *statusLine
	quiet, every        time.Duration
	start, shown, phase time.Time
	last                float64
	closed              bool
}

func newProgressLine(w io.Writer, verb string) *progressLine {
	p := &progressLine{verb: verb, status: newStatusLine(w), quiet: 3 * time.Second, every: 10 * time.Second}
	if p.status.terminal {
		p.every = time.Second
	}
	p.start = time.Now()
	p.phase = p.start
	return p
}

// report is a model.Progress.
func (p *progressLine) report(what string, done float64) {
	now := time.Now()
	if done < p.last {
		p.phase = now // a new stage starts over: estimate from its own pace
	}
	p.last = done
	if p.closed || now.Sub(p.start) < p.quiet || now.Sub(p.shown) < p.every {
		return
	}
	p.shown = now
	line := fmt.Sprintf("%s: %s, %.0f%% done, %s elapsed", p.verb, what, 100*done, now.Sub(p.start).Round(time.Second))
	if spent := now.Sub(p.phase); done > 0.001 && spent > time.Second {
		left := time.Duration(float64(spent) * (1 - done) / done)
		line += fmt.Sprintf(", about %s left", left.Round(time.Second))
	}
	p.status.show(line)
}

// stage is report for a named part of the work.
func (p *progressLine) stage(name string) func(string, float64) {
	return func(what string, done float64) { p.report(name+": "+what, done) }
}

// close clears the line before the result is printed.
func (p *progressLine) close() {
	if !p.closed {
		p.closed = true
		p.status.clear()
	}
}

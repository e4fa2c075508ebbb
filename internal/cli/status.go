package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
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

package interrupt

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFirstStopsSecondHurries sends this process SIGINT three times: the
// context ends on the first, Hurry closes on the second, the third is only
// answered.
func TestFirstStopsSecondHurries(t *testing.T) {
	var out syncBuffer
	s := Catch(context.Background(), &out, Messages{First: "stopping", Second: "hurrying", Later: "still here"})
	defer s.Stop()
	wait := func(what string, done <-chan struct{}) {
		t.Helper()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s did not happen", what)
		}
	}
	syscall.Kill(syscall.Getpid(), syscall.SIGINT)
	wait("the first signal's cancel", s.Context().Done())
	if s.Hurried() {
		t.Fatal("hurried after one signal")
	}
	syscall.Kill(syscall.Getpid(), syscall.SIGINT)
	wait("the second signal's hurry", s.Hurry())
	if !s.Hurried() {
		t.Fatal("not hurried after two signals")
	}
	syscall.Kill(syscall.Getpid(), syscall.SIGINT)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "still here") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	want := "gait: interrupt: stopping\ngait: interrupt: hurrying\ngait: interrupt: still here\n"
	if out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
}

// TestEndWithoutHurry: without a second signal, End hands back the error.
func TestEndWithoutHurry(t *testing.T) {
	s := Catch(context.Background(), &syncBuffer{}, Messages{})
	defer s.Stop()
	if err := s.End(&syncBuffer{}, context.Canceled); err != context.Canceled {
		t.Errorf("End: %v", err)
	}
}

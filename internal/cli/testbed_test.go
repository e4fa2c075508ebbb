package cli

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer lets a test read what a command running in another
// goroutine writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func needRootCLI(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root for network namespaces, tc and FUSE")
	}
}

func TestTestbedUpThenClean(t *testing.T) {
	needRootCLI(t)
	stateDir := t.TempDir()
	cmd := newTestbedCmd()
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"up", "--hosts", "2", "--bandwidth", "10mbit", "--state-dir", stateDir})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "Ctrl-C") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	text := out.String()
	ns := regexp.MustCompile(`g[0-9a-f]{5}-h[01]`).FindAllString(text, -1)
	if len(ns) != 2 || !strings.Contains(text, "198.1") {
		cancel()
		<-done
		t.Fatalf("output names no hosts:\n%s", text)
	}
	for _, n := range ns {
		if _, err := os.Stat("/run/netns/" + n); err != nil {
			t.Errorf("namespace %s: %v", n, err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "removed run") {
		t.Errorf("no removal reported:\n%s", out.String())
	}
	for _, n := range ns {
		if _, err := os.Stat("/run/netns/" + n); err == nil {
			t.Errorf("namespace %s left after the command ended", n)
		}
	}

	clean := newCleanCmd()
	var cout bytes.Buffer
	clean.SetOut(&cout)
	clean.SetArgs([]string{"--state-dir", stateDir})
	if err := clean.Execute(); err != nil {
		t.Fatal(err)
	}
	if cout.String() != "nothing to clean\n" {
		t.Errorf("clean said %q", cout.String())
	}
}

func TestTestbedUpBadBandwidth(t *testing.T) {
	needRootCLI(t)
	cmd := newTestbedCmd()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"up", "--bandwidth", "fast", "--state-dir", t.TempDir()})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), `"fast"`) {
		t.Errorf("error %v, want one naming the bad rate", err)
	}
}

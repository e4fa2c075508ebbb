package loopback

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/systems"
)

var _ systems.Host = (*Host)(nil)

func TestHostsAddresses(t *testing.T) {
	hosts, err := Hosts(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	prefix := hosts[0].Address()[:strings.LastIndex(hosts[0].Address(), ".")+1]
	for i, h := range hosts {
		if want := prefix + string(rune('1'+i)); h.Address() != want {
			t.Errorf("host %d address %s, want %s", i, h.Address(), want)
		}
		if fi, err := os.Stat(h.DataDir()); err != nil || !fi.IsDir() {
			t.Errorf("host %s data dir %s: %v", h.Name(), h.DataDir(), err)
		}
	}
	if _, err := Hosts(t.TempDir(), 0); err == nil {
		t.Error("Hosts(0) gave no error")
	}
}

func TestStartOutputAndStop(t *testing.T) {
	h := New("a", "127.0.0.1", t.TempDir())
	p, err := h.Start("echo", []string{"/bin/sh", "-c", "echo hello $GAIT_X; exec sleep 60"}, []string{"GAIT_X=there"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(h.DataDir(), "echo.log"))
		return strings.Contains(string(b), "hello there")
	})
	if p.Exited() {
		t.Fatal("process exited early")
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if !p.Exited() {
		t.Fatal("process still there after Stop")
	}
	if err := syscall.Kill(p.Pid(), 0); err == nil {
		t.Fatal("pid still alive after Stop")
	}
}

func TestStopKillsAfterGrace(t *testing.T) {
	h := New("a", "127.0.0.1", t.TempDir())
	h.Grace = 200 * time.Millisecond
	p, err := h.Start("stubborn", []string{"/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		b, _ := os.ReadFile(p.(*Process).LogPath())
		return strings.Contains(string(b), "ready")
	})
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if !p.Exited() {
		t.Fatal("process ignoring SIGTERM still there after Stop")
	}
}

func TestStartMissingProgram(t *testing.T) {
	h := New("a", "127.0.0.1", t.TempDir())
	if _, err := h.Start("x", []string{"/nonexistent/prog"}, nil); err == nil {
		t.Fatal("no error starting a missing program")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

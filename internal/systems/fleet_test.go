package systems_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/loopback"
)

// fleetOf is a fleet of one master and n workers on loopback hosts, each
// running script (sh -c) with $DIR its data directory. A worker counts as
// registered once its script has created $DIR/up.
func fleetOf(t *testing.T, n int, script func(i int) string) (*systems.Fleet, *launches) {
	t.Helper()
	hosts, err := loopback.Hosts(t.TempDir(), n+1)
	if err != nil {
		t.Fatal(err)
	}
	l := &launches{}
	f := &systems.Fleet{System: "toy", Noun: "workers", Base: 20 * time.Second}
	for i, h := range hosts {
		var mu sync.Mutex
		var proc systems.Process
		m := systems.Member{Host: h.Name(),
			Proc: func() systems.Process { mu.Lock(); defer mu.Unlock(); return proc }}
		m.Launch = func() error {
			p, err := h.Start("server", []string{"sh", "-c", script(i)}, []string{"DIR=" + h.DataDir()})
			if err != nil {
				return err
			}
			mu.Lock()
			proc = p
			mu.Unlock()
			if i > 0 {
				l.launched(f)
			}
			return nil
		}
		t.Cleanup(func() {
			if p := m.Proc(); p != nil {
				p.Stop()
			}
		})
		if i == 0 {
			f.Masters = append(f.Masters, m)
		} else {
			f.Workers = append(f.Workers, m)
		}
	}
	dirs := map[string]string{}
	for _, h := range hosts[1:] {
		dirs[h.Name()] = h.DataDir()
	}
	f.Registered = func(context.Context) (map[string]bool, error) {
		up := map[string]bool{}
		for name, dir := range dirs {
			if _, err := os.Stat(filepath.Join(dir, "up")); err == nil {
				up[name] = true
			}
		}
		return up, nil
	}
	l.registered = f.Registered
	return f, l
}

// launches records, at each worker's launch, how many workers were
// starting (launched, not registered).
type launches struct {
	registered func(context.Context) (map[string]bool, error)
	n, most    int
}

func (l *launches) launched(f *systems.Fleet) {
	l.n++
	up, _ := l.registered(context.Background())
	l.most = max(l.most, l.n-len(up))
}

func TestFleetStartsInWaves(t *testing.T) {
	f, l := fleetOf(t, 12, func(i int) string { return "sleep 0.3; touch $DIR/up; exec sleep 60" })
	f.Wave = 3
	var lines []string
	ctx := systems.WithProgress(context.Background(), func(s string) { lines = append(lines, s) })
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if l.n != 12 || l.most > 3 {
		t.Errorf("launched %d workers, at most %d starting at once; want 12, at most 3", l.n, l.most)
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], "12 of 12 workers registered, ") {
		t.Errorf("progress lines %q; want the last to say 12 of 12 workers registered", lines)
	}
}

func TestFleetNamesTheWorkerThatExited(t *testing.T) {
	banner := `printf '/************************************************************\nSTARTUP_MSG: Starting DataNode\nSTARTUP_MSG:   classpath = /a.jar:/b.jar\n************************************************************/\n' >&2`
	f, _ := fleetOf(t, 3, func(i int) string {
		if i == 2 { // h3
			return banner + "; echo 'ERROR DataNode: bind 198.18.0.3:9866: address in use' >&2; exit 1"
		}
		return "touch $DIR/up; exec sleep 60"
	})
	err := f.Start(context.Background())
	if err == nil {
		t.Fatal("started with a worker that exits")
	}
	msg := err.Error()
	for _, want := range []string{"toy on h3 exited while starting", "address in use"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "STARTUP_MSG") {
		t.Errorf("error %q quotes the start-up banner", msg)
	}
}

func TestFleetTimeoutSaysWhoIsMissing(t *testing.T) {
	f, _ := fleetOf(t, 3, func(i int) string {
		if i == 2 { // h3
			return "echo 'WARN DataNode: Problem connecting to server' >&2; exec sleep 60"
		}
		return "touch $DIR/up; exec sleep 60"
	})
	f.Base = 1500 * time.Millisecond
	err := f.Start(context.Background())
	if err == nil {
		t.Fatal("started with a worker that never registers")
	}
	msg := err.Error()
	for _, want := range []string{"toy not ready after", "2 of 3 workers registered; not h3", "Problem connecting to server"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
}

func TestFleetTimeoutGrows(t *testing.T) {
	f := &systems.Fleet{Base: time.Minute, PerWorker: 10 * time.Second}
	if small, big := f.Timeout(2), f.Timeout(200); big-small < 198*10*time.Second/time.Duration(32) || small < time.Minute {
		t.Errorf("Timeout(2) %v, Timeout(200) %v: the timeout does not grow with the workers", small, big)
	}
}

func TestMeaningful(t *testing.T) {
	long := strings.Repeat("x", 1000)
	var frames []string
	for i := range 20 {
		frames = append(frames, fmt.Sprintf("\tat org.apache.Foo.bar%d(Foo.java:%d)", i, i))
	}
	log := strings.Join([]string{
		"/************************************************************",
		"STARTUP_MSG: Starting NameNode",
		"STARTUP_MSG:   classpath = " + long,
		"************************************************************/",
		"10:00:00.000 INFO NameNode: createNameNode []",
		"",
		`08:03:09.018 INFO namenode: 198.18.0.1 - - [28/Nov/2026:08:03:08 +0000] "GET /jmx?qry=Hadoop%3Aservice%3DNameNode HTTP/1.1" 200 38503 "-" "Go-http-client/1.1"`,
		"10:00:01.000 ERROR NameNode: Failed to start namenode.",
		"java.net.BindException: Address already in use",
		strings.Join(frames, "\n"),
		"10:00:02.000 INFO ExitUtil: Exiting with status 1: " + long,
	}, "\n")
	got := systems.Meaningful(log, 15)
	want := []string{
		"10:00:00.000 INFO NameNode: createNameNode []",
		"10:00:01.000 ERROR NameNode: Failed to start namenode.",
		"java.net.BindException: Address already in use",
		frames[0], frames[1], frames[2], "\t...",
		"10:00:02.000 INFO ExitUtil: Exiting with status 1: " + long[:240-len("10:00:02.000 INFO ExitUtil: Exiting with status 1: ")] +
			fmt.Sprintf("... (%d bytes more)", len("10:00:02.000 INFO ExitUtil: Exiting with status 1: ")+1000-240),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Meaningful:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := systems.Meaningful(log, 2); len(got) != 2 || !strings.HasPrefix(got[1], "10:00:02") {
		t.Errorf("Meaningful(2) = %q; want the last two lines", got)
	}
}

// A worker whose earlier server has ended (a DataNode stopped after it
// made the class-data archive) is started again in its wave, not taken
// for one that exited while starting.
func TestFleetRestartsAnEndedWorker(t *testing.T) {
	f, _ := fleetOf(t, 3, func(i int) string { return "sleep 0.2; touch $DIR/up; exec sleep 60" })
	f.Wave = 1
	last := &f.Workers[2]
	ended, err := loopback.New("old", "127.0.0.1", t.TempDir()).Start("old", []string{"true"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for !ended.Exited() {
		time.Sleep(10 * time.Millisecond)
	}
	launch, proc := last.Launch, last.Proc
	launched := false
	last.Proc = func() systems.Process {
		if !launched {
			return ended
		}
		return proc()
	}
	last.Launch = func() error { launched = true; return launch() }
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

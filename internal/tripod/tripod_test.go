package tripod

import (
	"context"
	"math/rand/v2"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestPlaceKeepsCopiesApart(t *testing.T) {
	slots := []Slot{
		{Host: "h0", Machine: "m0", CPUSet: "0"},
		{Host: "h1", Machine: "m0", CPUSet: "1"}, // same machine as h0
		{Host: "h2", Machine: "m1", CPUSet: "0"}, // same CPUs as h0
		{Host: "h3", Machine: "m2", CPUSet: "1"},
	}
	for seed := range uint64(50) {
		got, err := Place(slots, 2, rand.New(rand.NewPCG(seed, 0)))
		if err != nil {
			t.Fatal(err)
		}
		a, b := slots[got[0]], slots[got[1]]
		if a.Host == b.Host || a.Machine == b.Machine || a.CPUSet == b.CPUSet {
			t.Fatalf("placed copies together: %+v and %+v", a, b)
		}
	}
	if _, err := Place(slots, 3, rand.New(rand.NewPCG(1, 0))); err == nil || !strings.Contains(err.Error(), "strength 3") {
		t.Errorf("3 copies on slots that hold 2 apart: %v", err)
	}
	if _, err := Place(slots, 0, rand.New(rand.NewPCG(1, 0))); err == nil {
		t.Error("strength 0 placed")
	}
}

// localCopy runs a copy as a plain child process, for the race alone.
type localCopy struct {
	cmd  *exec.Cmd
	out  strings.Builder
	done chan struct{}
	once sync.Once
}

func startLocal(args ...string) (Copy, error) {
	c := &localCopy{cmd: exec.Command(args[0], args[1:]...), done: make(chan struct{})}
	c.cmd.Stdout = &c.out
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { c.cmd.Wait(); close(c.done) }()
	return c, nil
}

func (c *localCopy) Done() <-chan struct{}   { return c.done }
func (c *localCopy) Exit() int               { return c.cmd.ProcessState.ExitCode() }
func (c *localCopy) Output() ([]byte, error) { return []byte(c.out.String()), nil }
func (c *localCopy) Errors() ([]byte, error) { return nil, nil }
func (c *localCopy) Stop() error {
	syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	<-c.done
	return nil
}

// TestFirstOutputWins: of a slow copy and a fast one, the fast one's
// output and exit status are the task's, and the slow one is stopped long
// before it would have ended.
func TestFirstOutputWins(t *testing.T) {
	var slow Copy
	start := func(slot int) (Copy, error) {
		if slot == 0 {
			c, err := startLocal("sh", "-c", "sleep 5; echo slow")
			slow = c
			return c, err
		}
		return startLocal("sh", "-c", "sleep 0.1; echo fast; exit 3")
	}
	res, err := Run(context.Background(), []int{0, 1}, start)
	if err != nil {
		t.Fatal(err)
	}
	if res.Winner != 1 || res.Exit != 3 || strings.TrimSpace(string(res.Output)) != "fast" {
		t.Errorf("winner slot %d, exit %d, output %q; want slot 1, exit 3, fast", res.Winner, res.Exit, res.Output)
	}
	select {
	case <-slow.Done():
	default:
		t.Error("the slow copy still runs after the task ended")
	}
	if res.Took > 3*time.Second || res.Held < res.Took || res.Copies != 2 {
		t.Errorf("took %v, held %v by %d copies", res.Took, res.Held, res.Copies)
	}
}

func TestStartFailureStopsTheStarted(t *testing.T) {
	var first Copy
	start := func(slot int) (Copy, error) {
		if slot == 0 {
			c, err := startLocal("sleep", "5")
			first = c
			return c, err
		}
		return startLocal("/nonexistent/task")
	}
	if _, err := Run(context.Background(), []int{0, 1}, start); err == nil {
		t.Fatal("a copy that cannot start is not an error")
	}
	select {
	case <-first.Done():
	case <-time.After(2 * time.Second):
		t.Error("the copy that started still runs")
	}
}

func TestTasksRefuseBadInput(t *testing.T) {
	argv := []string{"true"}
	for _, c := range []struct {
		tasks Tasks
		want  string
	}{
		{Tasks{Strength: 4, Hosts: 3, Repeat: 1, Argv: argv}, "--strength 4 is larger than --hosts 3"},
		{Tasks{Strength: 0, Repeat: 1, Argv: argv}, "--strength 0"},
		{Tasks{Strength: 1, Repeat: 0, Argv: argv}, "--repeat 0"},
		{Tasks{Strength: 1, Repeat: 1, CPUs: -1, Argv: argv}, "--cpus -1"},
		{Tasks{Strength: 1, Repeat: 1, Limp: "h5:cpu:10", Argv: argv}, "not one of h0..h0"},
		{Tasks{Strength: 1, Repeat: 1, Limp: "h0:net:10", Argv: argv}, "want cpu or disk"},
		{Tasks{Strength: 1, Repeat: 1, Limp: "h0:disk:10", Argv: argv}, "add --disk"},
		{Tasks{Strength: 1, Repeat: 1, Limp: "h0:cpu:0.5", Argv: argv}, "factor"},
		{Tasks{Strength: 1, Repeat: 1}, "no command"},
	} {
		tasks := c.tasks
		if _, err := tasks.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: want an error saying %q, got %v", c.tasks, c.want, err)
		}
	}
}

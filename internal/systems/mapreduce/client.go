package mapreduce

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/hdfs"
)

// clientJVM are the job client's flags: it submits a job and waits.
var clientJVM = []string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}

// runJava runs Hadoop's class with args in gait's own namespace (it
// reaches the testbed's hosts as gait's Go clients do), with the
// ResourceManager's configuration, its output kept in log; each line is
// handed to line as it comes. On ctx's end it is killed.
func (c *Cluster) runJava(ctx context.Context, log string, line func(string), args ...string) (string, error) {
	argv := append(append(append([]string{}, hdfs.JVMFlags...), clientJVM...),
		systems.JavaTmpFlag(dir(c.rm.host)), "-cp", confDir(c.rm.host)+":"+filepath.Join(c.d.Home, "lib", "*"))
	cmd := exec.Command(c.d.Java, append(argv, args...)...)
	cmd.Env = append(os.Environ(), "HADOOP_CONF_DIR="+confDir(c.rm.host))
	// It dies with gait, and is not in the terminal's process group:
	// Ctrl-C is gait's to handle.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	cmd.Stderr = cmd.Stdout
	for _, d := range []string{filepath.Dir(log), systems.JavaTmpDir(dir(c.rm.host))} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	f, err := os.Create(log)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := cmd.Start(); err != nil {
		return "", err
	}
	stop := context.AfterFunc(ctx, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer stop()
	var out strings.Builder
	sc := bufio.NewScanner(pipe)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		fmt.Fprintln(f, l)
		if out.Len() < 1<<20 {
			out.WriteString(l + "\n")
		}
		if line != nil {
			line(l)
		}
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		return out.String(), ctx.Err()
	}
	return out.String(), err
}

// tail is the meaningful end of a client's output, for an error.
func tail(out string) string {
	lines := systems.Meaningful(out, 8)
	if len(lines) == 0 {
		return ""
	}
	return ":\n  " + strings.Join(lines, "\n  ")
}

// writeInput writes the jobs' text into HDFS, a file a split (each with
// three copies, so that a map can read its split on its own host), by
// Hadoop's own FsShell.
func (c *Cluster) writeInput(ctx context.Context) error {
	local := filepath.Join(dir(c.rm.host), "input")
	if err := os.MkdirAll(local, 0o755); err != nil {
		return err
	}
	files := max(1, int(c.d.Input/c.d.SplitSize))
	for i := range files {
		text := Words(c.d.Input/int64(files), uint64(i))
		if err := os.WriteFile(filepath.Join(local, fmt.Sprintf("part-%03d.txt", i)), text, 0o644); err != nil {
			return fmt.Errorf("mapreduce: input: %w", err)
		}
	}
	log := filepath.Join(dir(c.rm.host), "jobs", "input.log")
	ctx, cancel := context.WithTimeout(ctx, c.d.StartTimeout)
	defer cancel()
	out, err := c.runJava(ctx, log, nil, fsShellClass, "-Ddfs.replication=3", "-put", local, inputDir)
	if err != nil {
		return fmt.Errorf("mapreduce: write the jobs' input into HDFS: %w%s", err, tail(out))
	}
	return os.RemoveAll(local)
}

// jobClient runs one job at a time through Hadoop's job client.
type jobClient struct {
	c        *Cluster
	involved []string
}

var _ load.Involver = (*jobClient)(nil)

// Involved names the hosts whose NodeManagers ran a container of the
// last job (its master, maps, reduces, speculative attempts), as the
// ResourceManager listed them while it ran.
func (jc *jobClient) Involved() []string { return jc.involved }

// Do runs the job the scenario's config names and waits for its end: a
// job that fails is an error with the end of its client's output.
func (jc *jobClient) Do(ctx context.Context, op load.Op) error {
	c := jc.c
	c.seq.Lock()
	n := c.next
	c.next++
	c.seq.Unlock()
	jc.involved = nil
	w := &containerWatch{c: c, hosts: map[string]bool{}}
	defer func() { jc.involved = w.stop() }()
	log := filepath.Join(dir(c.rm.host), "jobs", fmt.Sprintf("%d.log", n))
	out, err := c.runJava(ctx, log, func(l string) {
		if m := submittedRE.FindStringSubmatch(l); m != nil {
			w.start(ctx, m[1])
		}
	}, c.d.jobArgs(n)...)
	counters := ParseJobOutput(out)
	c.jobsMu.Lock()
	c.jobs.add(counters, c.d.Reduces)
	c.jobsMu.Unlock()
	if err != nil && ctx.Err() == nil && counters.App != "" && c.succeeded(counters.App) {
		// The client asks a job history server for the final status
		// once the master has exited, and there is none: the job's
		// outcome is the ResourceManager's.
		counters.Succeeded, err = true, nil
	}
	if err == nil && !counters.Succeeded {
		err = errors.New("did not complete")
	}
	if err != nil {
		if counters.App != "" {
			c.kill(counters.App)
		}
		return fmt.Errorf("mapreduce job %d (%s): %w%s", n, log, err, tail(out))
	}
	return nil
}

// succeeded says whether the ResourceManager has app finished with
// final status SUCCEEDED.
func (c *Cluster) succeeded(app string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), restTimeout)
	defer cancel()
	var out struct {
		App struct {
			FinalStatus string `json:"finalStatus"`
		} `json:"app"`
	}
	return c.rest(ctx, "/ws/v1/cluster/apps/"+app, nil, &out) == nil && out.App.FinalStatus == "SUCCEEDED"
}

// kill asks the ResourceManager to end app (a job cut at its timeout
// goes on without its client otherwise).
func (c *Cluster) kill(app string) {
	ctx, cancel := context.WithTimeout(context.Background(), restTimeout)
	defer cancel()
	c.put(ctx, "/ws/v1/cluster/apps/"+app+"/state", map[string]string{"state": "KILLED"})
}

func (jc *jobClient) Close() error { return nil }

// containerWatch gathers the hosts of a running application's
// containers, once a second, from the ResourceManager.
type containerWatch struct {
	c      *Cluster
	mu     sync.Mutex
	hosts  map[string]bool
	cancel context.CancelFunc
	done   chan struct{}
}

func (w *containerWatch) start(ctx context.Context, app string) {
	if w.done != nil {
		return
	}
	ctx, w.cancel = context.WithCancel(ctx)
	w.done = make(chan struct{})
	go func() {
		defer close(w.done)
		for {
			w.see(ctx, app)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
}

// see adds the hosts of app's containers now: its attempts' (after a
// master's retry, both).
func (w *containerWatch) see(ctx context.Context, app string) {
	var attempts struct {
		AppAttempts struct {
			AppAttempt []struct {
				ID string `json:"appAttemptId"`
			} `json:"appAttempt"`
		} `json:"appAttempts"`
	}
	if w.c.rest(ctx, "/ws/v1/cluster/apps/"+app+"/appattempts", nil, &attempts) != nil {
		return
	}
	for _, a := range attempts.AppAttempts.AppAttempt {
		var cs struct {
			Container []struct {
				Node string `json:"assignedNodeId"`
			} `json:"container"`
		}
		if w.c.rest(ctx, "/ws/v1/cluster/apps/"+app+"/appattempts/"+a.ID+"/containers", nil, &cs) != nil {
			continue
		}
		w.mu.Lock()
		for _, ct := range cs.Container {
			addr, _, _ := net.SplitHostPort(ct.Node)
			if h, ok := w.c.byAddr[addr]; ok {
				w.hosts[h] = true
			}
		}
		w.mu.Unlock()
	}
}

// stop ends the watch and returns the hosts seen, sorted; nil when it
// never saw the application.
func (w *containerWatch) stop() []string {
	if w.done == nil {
		return nil
	}
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.hosts) == 0 {
		return nil
	}
	var hs []string
	for h := range w.hosts {
		hs = append(hs, h)
	}
	slices.Sort(hs)
	return hs
}

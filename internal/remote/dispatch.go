package remote

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/agent"
)

// Job is one whole experiment for one machine: files to put in its
// directory there, and the gait command to run in it.
type Job struct {
	Name string
	// Files, by name, are written into the job's directory on the
	// machine before it runs (the scenario).
	Files map[string][]byte
	// Args are gait's arguments; {dir} in them stands for the job's
	// directory on the machine, {state} for the agent's state directory.
	Args []string
	// Fetch is the path, under the job's directory, that is copied back
	// into Into (as Into/<its last element>) when the command has run.
	Fetch string
	Into  string
}

// Outcome is how a job went.
type Outcome struct {
	Job     string   `json:"job"`
	Machine string   `json:"machine,omitempty"` // where it finished; empty if nowhere
	Lost    []string `json:"lost,omitempty"`    // machines lost while running it, each with why
	Wall    float64  `json:"wall_seconds"`      // on the machine where it finished
	Exit    int      `json:"exit"`
	Output  string   `json:"output,omitempty"` // the end of what the command wrote, when it failed
	Err     string   `json:"error,omitempty"`
}

// Rerun says whether the job ran again elsewhere after losing a machine.
func (o Outcome) Rerun() bool { return len(o.Lost) > 0 }

// Dispatch runs every job on the next free machine, each machine one job
// at a time, and copies each job's results back. A machine lost while
// running a job costs only that job's run: the job goes back to the
// queue for another machine, and its Outcome lists the machine lost. It
// returns when every job has an outcome, or ctx ends, or no machine is
// left. note is told of every start, end and loss, one line each.
func Dispatch(ctx context.Context, machines []*Machine, jobs []Job, note func(string)) []Outcome {
	if note == nil {
		note = func(string) {}
	}
	outcomes := make([]Outcome, len(jobs))
	for i, j := range jobs {
		outcomes[i].Job = j.Name
	}
	var mu sync.Mutex
	queue := make([]int, len(jobs))
	for i := range jobs {
		queue[i] = i
	}
	running := 0
	cond := sync.NewCond(&mu)
	// next hands out a job, waiting while others run that may come back.
	next := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		for len(queue) == 0 && running > 0 && ctx.Err() == nil {
			cond.Wait()
		}
		if len(queue) == 0 || ctx.Err() != nil {
			return 0, false
		}
		i := queue[0]
		queue = queue[1:]
		running++
		return i, true
	}
	stop := context.AfterFunc(ctx, func() { mu.Lock(); cond.Broadcast(); mu.Unlock() })
	defer stop()
	var wg sync.WaitGroup
	for _, m := range machines {
		wg.Go(func() {
			for {
				i, ok := next()
				if !ok {
					return
				}
				note(fmt.Sprintf("%s: %s started", m.Name, jobs[i].Name))
				o, err := m.runJob(ctx, jobs[i])
				mu.Lock()
				running--
				lost := err != nil && errors.Is(err, ErrLost) && ctx.Err() == nil
				if lost {
					outcomes[i].Lost = append(outcomes[i].Lost, fmt.Sprintf("%s: %v", m.Name, m.Err()))
					queue = append([]int{i}, queue...)
				} else {
					o.Job, o.Lost = jobs[i].Name, outcomes[i].Lost
					if err != nil {
						o.Err = err.Error()
					}
					outcomes[i] = o
				}
				cond.Broadcast()
				mu.Unlock()
				switch {
				case lost:
					note(fmt.Sprintf("%s: lost while running %s (%v); it goes to the next free machine", m.Name, jobs[i].Name, m.Err()))
					return
				case err != nil:
					note(fmt.Sprintf("%s: %s failed: %v", m.Name, jobs[i].Name, err))
				default:
					note(fmt.Sprintf("%s: %s done in %.0fs", m.Name, jobs[i].Name, o.Wall))
				}
			}
		})
	}
	wg.Wait()
	for i := range outcomes {
		if outcomes[i].Machine == "" && outcomes[i].Err == "" {
			outcomes[i].Err = "not run: no machine was left, or interrupted"
		}
	}
	return outcomes
}

// runJob puts a job's files on the machine, runs it through the agent,
// copies its results back and removes its directory there.
func (m *Machine) runJob(ctx context.Context, j Job) (Outcome, error) {
	o := Outcome{Machine: m.Name}
	dir := fmt.Sprintf("%s/job-%d", agent.TmpDir(m.Root), time.Now().UnixNano())
	defer m.run("sudo -n rm -rf "+dir, nil)
	if _, err := m.Run("sudo -n mkdir -p "+dir, nil); err != nil {
		return o, m.lostOr(err)
	}
	for name, data := range j.Files {
		if strings.ContainsAny(name, "/ '") {
			return o, fmt.Errorf("job %s: file name %q", j.Name, name)
		}
		if _, err := m.Run(fmt.Sprintf("sudo -n sh -c 'cat > %s/%s'", dir, name), strings.NewReader(string(data))); err != nil {
			return o, m.lostOr(err)
		}
	}
	args := make([]string, len(j.Args))
	for i, a := range j.Args {
		a = strings.ReplaceAll(a, "{dir}", dir)
		args[i] = strings.ReplaceAll(a, "{state}", agent.StateDir(m.Root))
	}
	begin := time.Now()
	var r agent.ExecResult
	if err := m.Call(ctx, "exec", "", "", agent.ExecArgs{Args: args}, &r); err != nil {
		return o, m.lostOr(err)
	}
	o.Wall, o.Exit = time.Since(begin).Seconds(), r.Exit
	if r.Exit != 0 {
		o.Output = r.Output
	}
	if j.Fetch == "" {
		return o, nil
	}
	if err := m.fetch(dir, j.Fetch, j.Into); err != nil {
		return o, m.lostOr(err)
	}
	return o, nil
}

// lostOr is ErrLost when the machine is lost (the error was its
// symptom), else err.
func (m *Machine) lostOr(err error) error {
	if m.Err() != nil && !errors.Is(err, ErrLost) {
		return fmt.Errorf("%w: %v", ErrLost, err)
	}
	return err
}

// fetch copies dir/path on the machine into the local directory into,
// through tar over a session of its own.
func (m *Machine) fetch(dir, path, into string) error {
	if strings.ContainsAny(path, " '") || strings.HasPrefix(path, "/") || strings.Contains(path, "..") {
		return fmt.Errorf("fetch %q: not a plain relative path", path)
	}
	s, err := m.client.NewSession()
	if err != nil {
		return fmt.Errorf("fetch from %s: %w", m.Name, err)
	}
	defer s.Close()
	out, err := s.StdoutPipe()
	if err != nil {
		return err
	}
	stderr := &lastLines{agent.Tail{Max: 2048}}
	s.Stderr = stderr
	cmd := fmt.Sprintf("sudo -n tar -C %s/%s -cf - %s", dir, filepath.Dir(path), filepath.Base(path))
	if err := s.Start(cmd); err != nil {
		return fmt.Errorf("%s on %s: %w", cmd, m.Name, err)
	}
	if err := untar(out, into); err != nil {
		return fmt.Errorf("fetch %s from %s: %w", path, m.Name, err)
	}
	if err := s.Wait(); err != nil {
		return fmt.Errorf("%s on %s: %w: %s", cmd, m.Name, err, stderr.String())
	}
	return nil
}

// untar writes a tar stream's directories and regular files under dir,
// refusing any name that would land outside it; links and devices are
// left out.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("tar entry %q leaves the directory", h.Name)
		}
		path := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}

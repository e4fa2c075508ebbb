package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/agent"
	"github.com/gait-dev/gait/internal/inventory"
	"golang.org/x/crypto/ssh"
)

// Machine is a machine of the inventory with its agent running: one SSH
// connection, one session carrying the agent protocol, a heartbeat.
type Machine struct {
	inventory.Machine
	Arch string // the machine's, as uname -m says it
	// Binary is gait's binary on the machine, pushed from Pushed, the
	// one on this machine.
	Binary, Pushed string

	client *ssh.Client
	sess   *ssh.Session
	in     io.WriteCloser
	stderr *lastLines

	wmu     sync.Mutex
	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan agent.Response
	lost    chan struct{}
	lostErr error
	closed  bool
	// offset is the machine's clock minus this one's, as ClockOffset
	// last measured it (clockKnown).
	offset     time.Duration
	clockKnown bool
}

// Step names what Connect was doing when a machine failed, for the one
// line preflight prints about it.
type Step string

// The steps of Connect, in order.
const (
	StepSSH   Step = "ssh"
	StepSudo  Step = "sudo"
	StepArch  Step = "arch"
	StepPush  Step = "push"
	StepAgent Step = "agent"
)

// StepError is a machine that failed at a step of Connect.
type StepError struct {
	Machine string
	Step    Step
	Err     error
}

func (e *StepError) Error() string { return fmt.Sprintf("%s: %s: %v", e.Machine, e.Step, e.Err) }
func (e *StepError) Unwrap() error { return e.Err }

// Connect reaches a machine over SSH, checks passwordless sudo and the
// architecture, pushes the gait binary (by content hash, once), and
// starts its agent. An error is a *StepError naming the machine and the
// step.
func Connect(ctx context.Context, m inventory.Machine, o Options) (*Machine, error) {
	fail := func(s Step, err error) (*Machine, error) { return nil, &StepError{Machine: m.Name, Step: s, Err: err} }
	client, err := dial(ctx, m, o)
	if err != nil {
		return fail(StepSSH, err)
	}
	rm := &Machine{Machine: m, client: client, pending: map[uint64]chan agent.Response{}, lost: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			client.Close()
		}
	}()
	if _, stderr, err := rm.run("sudo -n true", nil); err != nil {
		return fail(StepSudo, sudoProblem(m, stderr, err))
	}
	out, stderr, err := rm.run("uname -m", nil)
	if err != nil {
		return fail(StepArch, fmt.Errorf("uname -m: %w: %s", err, stderr))
	}
	rm.Arch = strings.TrimSpace(out)
	if goArch(rm.Arch) != runtime.GOARCH {
		return fail(StepArch, fmt.Errorf("the machine is %s, gait here is built for %s: build gait for it (GOARCH=%s) and run from there", rm.Arch, runtime.GOARCH, goArch(rm.Arch)))
	}
	bin, err := rm.push(o.Binary)
	if err != nil {
		return fail(StepPush, err)
	}
	rm.Binary = bin
	if err := rm.startAgent(bin, o.AgentTimeout); err != nil {
		return fail(StepAgent, err)
	}
	ok = true
	return rm, nil
}

// sudoProblem turns a failed `sudo -n true` into what to do about it.
func sudoProblem(m inventory.Machine, out string, err error) error {
	out = strings.TrimSpace(out)
	switch {
	case strings.Contains(out, "password is required"):
		return fmt.Errorf("sudo asks for a password (%q): gait needs passwordless sudo for %s, e.g. a line '%s ALL=(root) NOPASSWD: ALL' in /etc/sudoers.d/gait", out, userOr(m.User), userOr(m.User))
	case strings.Contains(out, "not found"):
		return fmt.Errorf("sudo is not installed (%q)", out)
	}
	return fmt.Errorf("sudo -n true: %v: %q", err, out)
}

func userOr(u string) string {
	if u == "" {
		return "your user"
	}
	return u
}

func goArch(uname string) string {
	switch uname {
	case "x86_64":
		return "amd64"
	case "aarch64", "arm64":
		return "arm64"
	case "i686", "i386":
		return "386"
	case "armv7l", "armv6l":
		return "arm"
	}
	return uname
}

// run runs a command in a session of its own and returns its stdout
// and stderr.
func (m *Machine) run(cmd string, stdin io.Reader) (stdout, stderr string, err error) {
	s, err := m.client.NewSession()
	if err != nil {
		return "", "", fmt.Errorf("new SSH session: %w", err)
	}
	defer s.Close()
	var out, errOut bytes.Buffer
	s.Stdout, s.Stderr, s.Stdin = &out, &errOut, stdin
	err = s.Run(cmd)
	return out.String(), strings.TrimSpace(errOut.String()), err
}

// Run runs a shell command on the machine as its SSH user, in a session
// of its own, and returns its stdout, or an error with its stderr.
func (m *Machine) Run(cmd string, stdin io.Reader) (string, error) {
	out, stderr, err := m.run(cmd, stdin)
	if err != nil {
		return out, fmt.Errorf("%s on %s: %w: %s", cmd, m.Name, err, stderr)
	}
	return out, nil
}

// Stream runs a command on the machine and writes its stdout to w.
func (m *Machine) Stream(cmd string, w io.Writer) error {
	s, err := m.client.NewSession()
	if err != nil {
		return fmt.Errorf("new SSH session: %w", err)
	}
	defer s.Close()
	var stderr bytes.Buffer
	s.Stdout, s.Stderr = w, &stderr
	if err := s.Run(cmd); err != nil {
		return fmt.Errorf("%s on %s: %w: %s", cmd, m.Name, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// push puts the binary under <root>/bin/gait-<first 16 hex of its
// SHA-256> unless the machine has it, checking what arrived.
func (m *Machine) push(path string) (string, error) {
	if path == "" {
		self, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("find gait's binary: %w", err)
		}
		path = self
	}
	m.Pushed = path
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read gait's binary: %w", err)
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	bin := fmt.Sprintf("%s/bin/gait-%s", m.Root, hash[:16])
	if _, _, err := m.run("sudo -n test -x "+bin, nil); err == nil {
		return bin, nil
	}
	tmp := fmt.Sprintf("%s/bin/.gait-%s.%d", m.Root, hash[:16], time.Now().UnixNano())
	script := fmt.Sprintf("sudo -n sh -c 'umask 022 && mkdir -p %s/bin && cat > %s && echo \"%s  %s\" | sha256sum -c --quiet - && chmod 755 %s && mv %s %s' || { sudo -n rm -f %s; exit 1; }",
		m.Root, tmp, hash, tmp, tmp, tmp, bin, tmp)
	if _, stderr, err := m.run(script, bytes.NewReader(data)); err != nil {
		return "", fmt.Errorf("copy %s (%d MiB) to %s: %v: %s", path, len(data)>>20, bin, err, stderr)
	}
	return bin, nil
}

// startAgent runs the agent over a session of its own, reads its
// responses, and pings it every agent.HeartbeatInterval.
func (m *Machine) startAgent(bin string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = agent.DefaultTimeout
	}
	s, err := m.client.NewSession()
	if err != nil {
		return fmt.Errorf("new SSH session: %w", err)
	}
	in, err := s.StdinPipe()
	if err != nil {
		return err
	}
	out, err := s.StdoutPipe()
	if err != nil {
		return err
	}
	m.stderr = &lastLines{agent.Tail{Max: 2048}}
	s.Stderr = m.stderr
	cmd := fmt.Sprintf("sudo -n %s agent --stdio --root %s --timeout %s", bin, m.Root, timeout)
	if m.Cgroup != "" {
		cmd += " --cgroup " + m.Cgroup
	}
	if err := s.Start(cmd); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	m.sess, m.in = s, in
	go m.read(out)
	// The agent first removes what an earlier one left, which may take
	// a while on a busy machine; heartbeats begin once it answers.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Call(ctx, "ping", "", "", nil, nil); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	go m.heartbeat(timeout)
	return nil
}

// read dispatches the agent's responses until its stdout ends.
func (m *Machine) read(out io.Reader) {
	for {
		body, err := agent.ReadFrame(out)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the agent exited")
			}
			m.lose(fmt.Errorf("%w (its last words: %s)", err, m.stderr.String()))
			return
		}
		r, err := agent.DecodeResponse(body)
		if err != nil {
			m.lose(err)
			return
		}
		m.mu.Lock()
		ch := m.pending[r.ID]
		delete(m.pending, r.ID)
		m.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
}

// heartbeat pings the agent; a ping unanswered for the timeout loses the
// machine.
func (m *Machine) heartbeat(timeout time.Duration) {
	t := time.NewTicker(agent.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-m.lost:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := m.Call(ctx, "ping", "", "", nil, nil)
		cancel()
		if err != nil && !errors.Is(err, ErrLost) {
			m.lose(fmt.Errorf("heartbeat: %w", err))
		}
	}
}

// ErrLost is a call to a machine whose agent or connection is gone.
var ErrLost = errors.New("machine lost")

// lose marks the machine lost (once), fails every call in flight, and
// closes its connection.
func (m *Machine) lose(err error) {
	m.mu.Lock()
	if m.lostErr != nil {
		m.mu.Unlock()
		return
	}
	m.lostErr = err
	close(m.lost)
	m.pending = map[uint64]chan agent.Response{}
	m.mu.Unlock()
	m.client.Close()
}

// Lost is closed when the machine is lost; Err then says why.
func (m *Machine) Lost() <-chan struct{} { return m.lost }

// Err says why the machine was lost, nil while it is not.
func (m *Machine) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lostErr
}

// Call sends one request and waits for its response, decoding its result
// into result (when not nil).
func (m *Machine) Call(ctx context.Context, op, run, host string, args, result any) error {
	_, err := m.call(ctx, op, run, host, args, result)
	return err
}

// call is Call that also says when the agent began the request, on this
// machine's clock: zero when the agent did not answer or the machine's
// clock offset has not been measured.
func (m *Machine) call(ctx context.Context, op, run, host string, args, result any) (time.Time, error) {
	req := agent.Request{Op: op, Run: run, Host: host}
	if args != nil {
		data, err := json.Marshal(args)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s on %s: %w", op, m.Name, err)
		}
		req.Args = data
	}
	ch := make(chan agent.Response, 1)
	m.mu.Lock()
	if m.lostErr != nil {
		err := m.lostErr
		m.mu.Unlock()
		return time.Time{}, fmt.Errorf("%s on %s: %w: %v", op, m.Name, ErrLost, err)
	}
	m.next++
	req.ID = m.next
	m.pending[req.ID] = ch
	m.mu.Unlock()
	m.wmu.Lock()
	err := agent.WriteFrame(m.in, req)
	m.wmu.Unlock()
	if err != nil {
		m.lose(fmt.Errorf("send to the agent: %w", err))
		return time.Time{}, fmt.Errorf("%s on %s: %w", op, m.Name, err)
	}
	select {
	case r := <-ch:
		began := m.localTime(r.At)
		if r.Err != "" {
			return began, &AgentError{Machine: m.Name, Op: op, Msg: r.Err, Code: r.Code}
		}
		if result != nil {
			if err := json.Unmarshal(r.Result, result); err != nil {
				return began, fmt.Errorf("%s on %s: result: %w", op, m.Name, err)
			}
		}
		return began, nil
	case <-m.lost:
		return time.Time{}, fmt.Errorf("%s on %s: %w: %v", op, m.Name, ErrLost, m.Err())
	case <-ctx.Done():
		m.mu.Lock()
		delete(m.pending, req.ID)
		m.mu.Unlock()
		return time.Time{}, fmt.Errorf("%s on %s: %w", op, m.Name, ctx.Err())
	}
}

// localTime puts a time of the agent's clock (Unix nanoseconds) on this
// machine's: zero when there is none or the offset is not known.
func (m *Machine) localTime(agentNano int64) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if agentNano == 0 || !m.clockKnown {
		return time.Time{}
	}
	return time.Unix(0, agentNano).Add(-m.offset)
}

// AgentError is an error the agent answered.
type AgentError struct {
	Machine, Op, Msg, Code string
}

func (e *AgentError) Error() string { return fmt.Sprintf("%s on %s: %s", e.Op, e.Machine, e.Msg) }

// Close ends the agent's session, so the agent takes down what it made,
// and the SSH connection. It waits until the agent has exited, at most
// the agent's timeout and a little more.
func (m *Machine) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	if m.in != nil {
		m.in.Close()
		done := make(chan struct{})
		go func() { m.sess.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(agent.DefaultTimeout + 5*time.Second):
		}
	}
	m.lose(errors.New("closed"))
	return nil
}

// lastLines keeps the end of what the agent wrote to stderr, for the
// error that says it exited.
type lastLines struct{ agent.Tail }

func (l *lastLines) String() string {
	s := strings.TrimSpace(l.Tail.String())
	if s == "" {
		return "none"
	}
	return strings.ReplaceAll(s, "\n", " | ")
}

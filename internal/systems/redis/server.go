package redis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// ServerBinary is Debian's redis-server.
const ServerBinary = "/usr/bin/redis-server"

// Server is a redis-server started on loopback for a test or a measurement:
// a free port, a temporary directory, no persistence.
type Server struct {
	Addr string
	cmd  *exec.Cmd
	dir  string
	log  *syncBuffer
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, once done
}

// StartServer starts redis-server on 127.0.0.1 and returns once it answers.
func StartServer(ctx context.Context) (*Server, error) {
	port, err := FreePort()
	if err != nil {
		return nil, fmt.Errorf("redis-server: find a free port: %w", err)
	}
	dir, err := os.MkdirTemp("", "gait-redis-")
	if err != nil {
		return nil, fmt.Errorf("redis-server: %w", err)
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir,
		log: &syncBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(ServerBinary, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no", "--logfile", "",
		// DEBUG from loopback: gait replica forwards the DEBUG sub-commands that
		// describe or change the data (Redis's own test suite needs them).
		"--enable-debug-command", "local")
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	// Should gait die without Close, the server goes with it.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", ServerBinary, err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.done) }()
	if err := s.waitReady(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// PID is the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		c, err := Dial(ctx, s.Addr)
		if err == nil {
			return c.Close()
		}
		select {
		case <-s.done:
			return fmt.Errorf("redis-server exited before answering (%v): %s", s.err, bytes.TrimSpace(s.log.Bytes()))
		case <-ctx.Done():
			return fmt.Errorf("redis-server on %s not answering: %w", s.Addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Close stops the server (SIGTERM, then SIGKILL after 5 s) and removes its directory.
func (s *Server) Close() error {
	var err error
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
		err = fmt.Errorf("redis-server on %s ignored SIGTERM for 5s and was killed", s.Addr)
	}
	return errors.Join(err, os.RemoveAll(s.dir))
}

// FreePort asks the kernel for a loopback port nobody listens on. Another
// process could take it before a server binds it: StartServer then fails
// with the server's own message; gaitredis.Local tries another port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// syncBuffer keeps the server's output for error messages.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

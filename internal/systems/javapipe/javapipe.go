// Package javapipe runs a system's own Java client for gait: one JVM that
// serves every load client of a cluster over its standard input and
// output, each load client a channel of its own there, since gait's load
// engine is Go and the client (HDFS's, HBase's) is Java.
//
// A request is a header line "CHANNEL SEQ OP ARG LEN\n" and LEN bytes of
// data. The JVM answers "SEQ ok LEN REST\n" and LEN bytes, or "SEQ err
// MESSAGE\n", in the order its ops end; while an op runs it may say
// "SEQ KIND REST\n" (what the op has met so far: a pipeline, a server), so
// that an op gait gives up on at its timeout, which the JVM then answers
// too late, is still known by what it was waiting on. Each request
// carries its sequence number, so a late answer is told from the next.
package javapipe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/systems"
)

// Options say how to run a client JVM.
type Options struct {
	Name string   // in errors: "hbase client"
	Java string   // the java program
	Args []string // its flags, class path, main class and arguments
	Log  string   // the file its standard error goes to
	// Greeting says the JVM's first line is not an answer but a greeting
	// (the HBase client's "ready", once it has placed its table), which
	// Greeting returns.
	Greeting bool
	// Check, if set, vets what a progress line says ("pipe", "BLOCK:IPS")
	// and what an ok answer's line says after LEN (kind "ok"): a line it
	// refuses ends the client, as a garbled answer does.
	Check func(kind, rest string) error
}

// Client is a running client JVM.
type Client struct {
	name string
	cmd  *exec.Cmd
	log  string
	chk  func(kind, rest string) error

	wmu sync.Mutex // guards w: channels write requests from their goroutines
	w   *bufio.Writer
	in  io.Closer

	mu       sync.Mutex
	pending  map[uint64]chan Answer
	seen     map[uint64][]string // progress lines of pending ops, "KIND REST"
	err      error               // why the JVM stopped answering, once it has
	greeting chan string
	done     chan struct{} // closed once the JVM has exited

	seq, chans atomic.Uint64
}

// Answer is what the JVM said of one request.
type Answer struct {
	Data []byte
	Rest string // what follows LEN on its ok line
	// Seen are the progress lines ("KIND REST") it said while the op ran,
	// in order: all that is known of an op cut at its timeout.
	Seen []string
	Err  error // the JVM's error message
}

// Start runs the JVM in gait's own namespace (it reaches the testbed's
// hosts as gait's Go clients do), its standard error appended to o.Log.
// The JVM dies with gait and is not in the terminal's process group:
// Ctrl-C is gait's to handle.
func Start(o Options) (*Client, error) {
	logf, err := os.OpenFile(o.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Name, err)
	}
	defer logf.Close()
	cmd := exec.Command(o.Java, o.Args...)
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", o.Name, err)
	}
	c := &Client{name: o.Name, cmd: cmd, log: o.Log, chk: o.Check, w: bufio.NewWriterSize(stdin, 1<<16), in: stdin,
		pending: map[uint64]chan Answer{}, seen: map[uint64][]string{}, done: make(chan struct{})}
	if o.Greeting {
		c.greeting = make(chan string, 1)
	}
	go c.read(bufio.NewReaderSize(stdout, 1<<16))
	return c, nil
}

// Greeting waits for the JVM's first line (Options.Greeting), its exit,
// or ctx.
func (c *Client) Greeting(ctx context.Context) (string, error) {
	select {
	case line := <-c.greeting:
		return line, nil
	case <-c.done:
		return "", c.Failed()
	case <-ctx.Done():
		return "", fmt.Errorf("%s: no greeting: %w%s", c.name, ctx.Err(), systems.LogTail(c))
	}
}

// read hands each answer to the request waiting for it, until the JVM's
// output ends; then every waiting request fails with the log's tail.
func (c *Client) read(r *bufio.Reader) {
	defer close(c.done)
	err := c.readAnswers(r)
	if !errors.Is(err, io.EOF) {
		// A garbled or refused line: the JVM, still running, is ended
		// (Wait would wait for it).
		c.cmd.Process.Kill()
	}
	werr := c.cmd.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = fmt.Errorf("%s exited (%v, %v)%s", c.name, err, werr, systems.LogTail(c))
	for seq, ch := range c.pending {
		ch <- Answer{Err: c.err}
		delete(c.pending, seq)
	}
}

func (c *Client) readAnswers(r *bufio.Reader) error {
	if c.greeting != nil {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		c.greeting <- strings.TrimSuffix(line, "\n")
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimSuffix(line, "\n")
		seq, kind, rest, err := ParseLine(line)
		if err != nil {
			return err
		}
		var a Answer
		switch kind {
		case "ok":
			size, more, _ := strings.Cut(rest, " ")
			n, err := strconv.Atoi(size)
			if err != nil || n < 0 {
				return fmt.Errorf("bad answer %q", line)
			}
			if c.chk != nil {
				if err := c.chk(kind, more); err != nil {
					return fmt.Errorf("bad answer %q: %w", line, err)
				}
			}
			a.Rest = more
			a.Data = make([]byte, n)
			if _, err := io.ReadFull(r, a.Data); err != nil {
				return err
			}
		case "err":
			a.Err = errors.New(rest)
		default:
			if c.chk != nil {
				if err := c.chk(kind, rest); err != nil {
					return fmt.Errorf("bad answer %q: %w", line, err)
				}
			}
			c.mu.Lock()
			if _, ok := c.pending[seq]; ok {
				c.seen[seq] = append(c.seen[seq], kind+" "+rest)
			}
			c.mu.Unlock()
			continue
		}
		c.mu.Lock()
		ch := c.pending[seq]
		a.Seen = c.seen[seq]
		delete(c.pending, seq)
		delete(c.seen, seq)
		c.mu.Unlock()
		if ch != nil {
			ch <- a
		}
	}
}

// ParseLine splits an answer's header line: "SEQ KIND REST".
func ParseLine(line string) (seq uint64, kind, rest string, err error) {
	f := strings.SplitN(line, " ", 3)
	if len(f) != 3 || f[1] == "" {
		return 0, "", "", fmt.Errorf("bad answer %q", line)
	}
	if seq, err = strconv.ParseUint(f[0], 10, 64); err != nil {
		return 0, "", "", fmt.Errorf("bad answer %q", line)
	}
	return seq, f[1], f[2], nil
}

// Channel returns a new channel number.
func (c *Client) Channel() uint64 { return c.chans.Add(1) }

// Failed says why the JVM stopped answering, or nil.
func (c *Client) Failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Ask sends one request on channel ch and waits for its answer or ctx.
// An answer that is an error has it in Err and is returned with it; when
// ctx ends first, the answer holds what the op had said it met by then.
func (c *Client) Ask(ctx context.Context, ch uint64, op, arg string, data []byte) (Answer, error) {
	seq := c.seq.Add(1)
	wait := make(chan Answer, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return Answer{}, c.err
	}
	c.pending[seq] = wait
	c.mu.Unlock()
	c.wmu.Lock()
	_, err := fmt.Fprintf(c.w, "%d %d %s %s %d\n", ch, seq, op, arg, len(data))
	if err == nil {
		_, err = c.w.Write(data)
	}
	if err == nil {
		err = c.w.Flush()
	}
	c.wmu.Unlock()
	if err != nil {
		c.mu.Lock()
		delete(c.pending, seq)
		delete(c.seen, seq)
		c.mu.Unlock()
		return Answer{}, fmt.Errorf("%s: send %s %s: %w", c.name, op, arg, err)
	}
	select {
	case a := <-wait:
		return a, a.Err
	case <-ctx.Done():
		c.mu.Lock()
		a := Answer{Seen: c.seen[seq]}
		delete(c.pending, seq)
		delete(c.seen, seq)
		c.mu.Unlock()
		return a, ctx.Err()
	}
}

// CloseChannel asks the JVM to close channel ch and waits at most wait
// for its answer. A channel's ops run one after another, so the close
// queues behind an op in flight: one gait gave up on at its timeout may
// run on to the system's own (HBase's 60 s), which no one is measuring.
// A close not answered within wait is left to happen when that op ends,
// or with the JVM; like a close of a JVM that has gone, it is no error.
func (c *Client) CloseChannel(ch uint64, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_, err := c.Ask(ctx, ch, "close", "-", nil)
	if errors.Is(err, context.DeadlineExceeded) || err != nil && c.Failed() != nil {
		return nil
	}
	return err
}

// grace is how long the JVM may take to close its channels and exit.
const grace = 5 * time.Second

// Stop closes the JVM's input, on which it closes every channel and
// exits; it is killed if it has not within grace.
func (c *Client) Stop() error {
	c.in.Close()
	select {
	case <-c.done:
	case <-time.After(grace):
		c.cmd.Process.Kill()
		<-c.done
	}
	return nil
}

// The client JVM is a systems.Process, so that its failures quote its log
// as the daemons' do.
var _ systems.Process = (*Client)(nil)

func (c *Client) Pid() int        { return c.cmd.Process.Pid }
func (c *Client) LogPath() string { return c.log }
func (c *Client) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

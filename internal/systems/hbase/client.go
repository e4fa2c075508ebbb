package hbase

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
)

// Ops are the operations of this driver's clients, in load.Op kind order:
//
//	put   the row KEY's one cell set to Value
//	get   the row KEY's cell read (a missing row is a success)
//	scan  ScanRows rows read from KEY on
var Ops = []string{"put", "get", "scan"}

const (
	opPut = iota
	opGet
	opScan
)

// ScanRows is how many rows a scan reads: a short range scan, in the
// region of its first row but for the last rows of a region.
const ScanRows = 100

// The table the clients use and its one column family.
const (
	table  = "gait"
	family = "f"
)

// clientTimeout bounds a request on HBase's side: an operation that has
// not succeeded within it, retries included, fails (HBase's default is
// 20 minutes). The load engine's own timeout is shorter still.
const clientTimeout = 60 * time.Second

// javaClient is one JVM running dev.gait.hbase.Client (java/hbase), which
// serves every load client of a cluster as a channel of its own over one
// HBase connection: gait's load engine is Go, HBase's client is Java.
// Requests and answers are framed on the JVM's stdin and stdout (see
// Client.java); each carries a sequence number, so an answer that comes
// after its request was given up is told from the next one's.
type javaClient struct {
	cmd *exec.Cmd
	log string
	c   *Cluster

	wmu sync.Mutex // guards w: channels write requests from their goroutines
	w   *bufio.Writer
	in  io.Closer

	mu      sync.Mutex
	pending map[uint64]chan answer
	// at holds the region server a pending op went to, as the JVM said
	// before it ran: where an op cut at its timeout was waiting.
	at    map[uint64]string
	ready chan string   // the JVM's first line: the table's regions placed
	err   error         // why the JVM stopped answering, once it has
	done  chan struct{} // closed once the JVM has exited

	seq, chans atomic.Uint64
}

type answer struct {
	data    []byte
	servers []string // the region servers' addresses the op went to
	err     error
}

// startClient runs the client JVM in gait's own namespace (it reaches the
// testbed's hosts as gait's Go clients do), with its configuration and
// output in the master host's directory. The JVM first creates the table,
// a region per region server, and moves each region to its server; it
// returns once the JVM says so.
func startClient(ctx context.Context, c *Cluster) (*javaClient, error) {
	d, master := c.d, c.master.host
	conf := filepath.Join(dir(master), "client-conf")
	props := map[string]string{
		"hbase.zookeeper.quorum":              master.Address(),
		"hbase.zookeeper.property.clientPort": strconv.Itoa(zkPort),
		"hbase.client.operation.timeout":      strconv.FormatInt(clientTimeout.Milliseconds(), 10),
	}
	if err := os.MkdirAll(conf, 0o755); err != nil {
		return nil, fmt.Errorf("hbase client: %w", err)
	}
	for name, text := range map[string]string{"hbase-site.xml": siteXML(props), "log4j.properties": strings.Replace(log4j, "rootLogger=INFO", "rootLogger=WARN", 1)} {
		if err := os.WriteFile(filepath.Join(conf, name), []byte(text), 0o644); err != nil {
			return nil, fmt.Errorf("hbase client: %w", err)
		}
	}
	var servers []string
	for _, m := range c.servers {
		servers = append(servers, m.host.Address())
	}
	argv := append([]string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}, jvm17...)
	argv = append(argv, "-cp", conf+":"+filepath.Join(d.Home, "gait-hbase.jar")+":"+filepath.Join(d.Home, "lib", "*"),
		"dev.gait.hbase.Client", table, family, strings.Join(SplitKeys(len(c.servers)), ","), strings.Join(servers, ","))
	logPath := filepath.Join(dir(master), "client.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("hbase client: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(d.Java, argv...)
	cmd.Stderr = logf
	// The client dies with gait, and is not in the terminal's process
	// group: Ctrl-C is gait's to handle.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("hbase client: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("hbase client: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("hbase client: %w", err)
	}
	jc := &javaClient{cmd: cmd, log: logPath, c: c, w: bufio.NewWriterSize(stdin, 1<<16), in: stdin,
		pending: map[uint64]chan answer{}, at: map[uint64]string{}, ready: make(chan string, 1), done: make(chan struct{})}
	go jc.read(bufio.NewReaderSize(stdout, 1<<16))
	wait, cancel := context.WithTimeout(ctx, d.StartTimeout)
	defer cancel()
	select {
	case line := <-jc.ready:
		if line != "ready" {
			jc.Stop()
			return nil, fmt.Errorf("hbase client: %s%s", line, systems.LogTail(jc))
		}
		return jc, nil
	case <-jc.done:
		return nil, fmt.Errorf("hbase client exited while creating the table%s", systems.LogTail(jc))
	case <-wait.Done():
		jc.Stop()
		return nil, fmt.Errorf("hbase client: table %s not placed after %v%s", table, d.StartTimeout, systems.LogTail(jc))
	}
}

// read hands each answer to the request waiting for it, until the JVM's
// output ends; then every waiting request fails with the log's tail.
func (jc *javaClient) read(r *bufio.Reader) {
	defer close(jc.done)
	err := jc.readAnswers(r)
	werr := jc.cmd.Wait()
	jc.mu.Lock()
	defer jc.mu.Unlock()
	jc.err = fmt.Errorf("hbase client exited (%v, %v)%s", err, werr, systems.LogTail(jc))
	for seq, ch := range jc.pending {
		ch <- answer{err: jc.err}
		delete(jc.pending, seq)
	}
}

func (jc *javaClient) readAnswers(r *bufio.Reader) error {
	first, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	jc.ready <- strings.TrimSuffix(first, "\n")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimSuffix(line, "\n")
		if seq, server, ok := parseAt(line); ok {
			jc.mu.Lock()
			if _, waiting := jc.pending[seq]; waiting {
				jc.at[seq] = server
			}
			jc.mu.Unlock()
			continue
		}
		seq, a, n, err := parseAnswer(line)
		if err != nil {
			return err
		}
		if n > 0 {
			a.data = make([]byte, n)
			if _, err := io.ReadFull(r, a.data); err != nil {
				return err
			}
		}
		jc.mu.Lock()
		ch := jc.pending[seq]
		if a.err != nil && jc.at[seq] != "" {
			a.servers = []string{jc.at[seq]}
		}
		delete(jc.pending, seq)
		delete(jc.at, seq)
		jc.mu.Unlock()
		if ch != nil {
			ch <- a
		}
	}
}

// parseAt reads "SEQ at SERVER": the region server an op is about to go to.
func parseAt(line string) (seq uint64, server string, ok bool) {
	f := strings.Fields(line)
	if len(f) != 3 || f[1] != "at" {
		return 0, "", false
	}
	seq, err := strconv.ParseUint(f[0], 10, 64)
	return seq, f[2], err == nil
}

// parseAnswer reads an answer's header: "SEQ ok LEN SERVERS" (n, the
// length of the data that follows) or "SEQ err MESSAGE".
func parseAnswer(line string) (seq uint64, a answer, n int, err error) {
	f := strings.SplitN(line, " ", 3)
	if len(f) != 3 {
		return 0, a, 0, fmt.Errorf("bad answer %q", line)
	}
	if seq, err = strconv.ParseUint(f[0], 10, 64); err != nil {
		return 0, a, 0, fmt.Errorf("bad answer %q", line)
	}
	switch f[1] {
	case "ok":
		size, servers, _ := strings.Cut(f[2], " ")
		if n, err = strconv.Atoi(size); err != nil || n < 0 {
			return 0, a, 0, fmt.Errorf("bad answer %q", line)
		}
		if servers != "" {
			a.servers = strings.Split(servers, ",")
		}
	case "err":
		a.err = errors.New(f[2])
	default:
		return 0, a, 0, fmt.Errorf("bad answer %q", line)
	}
	return seq, a, n, nil
}

// failed says why the JVM stopped answering, or nil.
func (jc *javaClient) failed() error {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	return jc.err
}

// ask sends one request on channel ch and waits for its answer or ctx.
func (jc *javaClient) ask(ctx context.Context, ch uint64, op, row string, data []byte) (answer, error) {
	seq := jc.seq.Add(1)
	wait := make(chan answer, 1)
	jc.mu.Lock()
	if jc.err != nil {
		jc.mu.Unlock()
		return answer{}, jc.err
	}
	jc.pending[seq] = wait
	jc.mu.Unlock()
	jc.wmu.Lock()
	_, err := fmt.Fprintf(jc.w, "%d %d %s %s %d\n", ch, seq, op, row, len(data))
	if err == nil {
		_, err = jc.w.Write(data)
	}
	if err == nil {
		err = jc.w.Flush()
	}
	jc.wmu.Unlock()
	if err != nil {
		jc.mu.Lock()
		delete(jc.pending, seq)
		jc.mu.Unlock()
		return answer{}, fmt.Errorf("hbase client: send %s %s: %w", op, row, err)
	}
	select {
	case a := <-wait:
		if a.err != nil {
			return a, fmt.Errorf("hbase %s %s: %w", op, row, a.err)
		}
		return a, nil
	case <-ctx.Done():
		jc.mu.Lock()
		var a answer
		if at := jc.at[seq]; at != "" {
			a.servers = []string{at}
		}
		delete(jc.pending, seq)
		delete(jc.at, seq)
		jc.mu.Unlock()
		return a, fmt.Errorf("hbase %s %s: %w", op, row, ctx.Err())
	}
}

// clientGrace is how long the client JVM may take to close its channels
// and exit.
const clientGrace = 5 * time.Second

// Stop closes the JVM's input, on which it closes every channel and
// exits; it is killed if it has not within clientGrace.
func (jc *javaClient) Stop() error {
	jc.in.Close()
	select {
	case <-jc.done:
	case <-time.After(clientGrace):
		jc.cmd.Process.Kill()
		<-jc.done
	}
	return nil
}

// The client JVM is a systems.Process, so that its failures quote its log
// as the daemons' do.
var _ systems.Process = (*javaClient)(nil)

func (jc *javaClient) Pid() int        { return jc.cmd.Process.Pid }
func (jc *javaClient) LogPath() string { return jc.log }
func (jc *javaClient) Exited() bool {
	select {
	case <-jc.done:
		return true
	default:
		return false
	}
}

func (jc *javaClient) channel() *channel {
	return &channel{jc: jc, id: jc.chans.Add(1)}
}

// channel is a load.Client: one channel of the client JVM, with its own
// Table there.
type channel struct {
	jc *javaClient
	id uint64
	// touched names the hosts the last op involved beyond the master: the
	// region servers holding its rows and, for a put, the DataNodes of
	// those servers' WALs. Nil after an op that failed before its client
	// said.
	touched []string
}

var (
	_ load.Client   = (*channel)(nil)
	_ load.Involver = (*channel)(nil)
)

// Involved is load.Involver's: the region servers the last op went to and
// the DataNodes a put's WAL sync waited for, so a verdict can tell the
// requests that met a limping host from the rest (all are sent to the
// master's host, the clients' entry).
func (c *channel) Involved() []string { return c.touched }

// Do performs one operation.
func (c *channel) Do(ctx context.Context, op load.Op) error {
	c.touched = nil
	var name string
	var data []byte
	switch op.Kind {
	case opPut:
		name, data = "put", op.Value
	case opGet:
		name = "get"
	case opScan:
		name, data = "scan", []byte(strconv.Itoa(ScanRows))
	default:
		return fmt.Errorf("hbase: unknown operation kind %d", op.Kind)
	}
	a, err := c.jc.ask(ctx, c.id, name, op.Key, data)
	c.touched = c.jc.c.involved(a.servers, op.Kind == opPut)
	return err
}

// involved names the hosts of servers (region server addresses) and, for
// a write, the DataNodes of their WALs; nil when servers is.
func (c *Cluster) involved(servers []string, write bool) []string {
	if servers == nil {
		return nil
	}
	out := []string{}
	for _, addr := range servers {
		h, ok := c.byAddr[addr]
		if !ok {
			continue
		}
		out = append(out, h)
		if write {
			out = append(out, c.pipeline(h)...)
		}
	}
	return out
}

// Close ends the channel's Table in the JVM.
func (c *channel) Close() error {
	_, err := c.jc.ask(context.Background(), c.id, "close", "-", nil)
	if err != nil && c.jc.failed() != nil {
		return nil // the JVM has gone, and its channels with it
	}
	return err
}

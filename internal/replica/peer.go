package replica

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/replica/limp"
	"github.com/hashicorp/raft"
	"github.com/klauspost/compress/s2"
)

// peerMagic starts every agent-to-agent connection on the raft port; raft's
// own connections start with a message type below 16.
const peerMagic = 'G'

// peerOutbox bounds the messages queued for one peer: a slow peer makes the
// agent drop replies to it (the proposer has other replicas' replies) and fail
// requests to it, never build a backlog.
const peerOutbox = 4096

// peerMaxMessage bounds one agent-to-agent message.
const peerMaxMessage = 1 << 30

// streamLayer shares the raft address between raft and agent-to-agent
// messages: it looks at the first byte of each connection.
type streamLayer struct {
	ln     net.Listener
	pacer  *pacer
	conns  chan net.Conn
	peer   func(net.Conn, *bufio.Reader)
	closed chan struct{}
	once   sync.Once
}

func newStreamLayer(ln net.Listener, pacer *pacer, peer func(net.Conn, *bufio.Reader)) *streamLayer {
	s := &streamLayer{ln: ln, pacer: pacer, conns: make(chan net.Conn), peer: peer, closed: make(chan struct{})}
	go s.acceptLoop()
	return s
}

func (s *streamLayer) acceptLoop() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			s.Close()
			return
		}
		go s.sniff(RawIO(c))
	}
}

func (s *streamLayer) sniff(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReaderSize(c, 64<<10)
	first, err := br.Peek(1)
	c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
		return
	}
	if first[0] == peerMagic {
		br.Discard(1)
		s.peer(c, br)
		return
	}
	select {
	case s.conns <- &bufferedConn{Conn: c, r: br}:
	case <-s.closed:
		c.Close()
	}
}

func (s *streamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.closed:
		return nil, net.ErrClosed
	}
}

func (s *streamLayer) Close() error {
	s.once.Do(func() { close(s.closed); s.ln.Close() })
	return nil
}

func (s *streamLayer) Addr() net.Addr { return s.ln.Addr() }

func (s *streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return s.pacer.dial(string(addr), timeout)
}

// bufferedConn reads through the reader that peeked at the first byte.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// peerMsg is one message queued for a peer. A request (id != 0) fails its
// waiter when it cannot be sent.
type peerMsg struct {
	data []byte
	id   uint64
}

// peer sends messages to another agent over one connection and reads that
// agent's answers to requests from it.
type peer struct {
	a    *Agent
	addr string
	out  chan peerMsg
}

func (p *peer) send(m peerMsg) {
	select {
	case p.out <- m:
	default:
		if m.id != 0 {
			p.a.deliver(m.id, result{err: fmt.Errorf("queue to %s full", p.addr)})
		}
	}
}

// run owns the connection: it dials on demand and redials after a failure.
func (p *peer) run() {
	var c net.Conn
	var w *bufio.Writer
	var failedAt time.Time
	for {
		var m peerMsg
		select {
		case m = <-p.out:
		case <-p.a.done:
			if c != nil {
				c.Close()
			}
			return
		}
		if c == nil && time.Since(failedAt) > 200*time.Millisecond {
			var err error
			if c, err = p.dial(); err != nil {
				failedAt = time.Now()
				p.a.logger.Printf("peer %s: %v", p.addr, err)
			} else {
				w = bufio.NewWriterSize(c, 64<<10)
			}
		}
		if c == nil {
			p.fail(m, errors.New("unreachable"))
			continue
		}
		_, err := w.Write(m.data)
		if err == nil && len(p.out) == 0 {
			err = w.Flush()
		}
		if err != nil {
			c.Close()
			c, failedAt = nil, time.Now()
			p.fail(m, err)
			p.a.failVia(p.addr, fmt.Errorf("connection to %s: %w", p.addr, err))
		}
	}
}

func (p *peer) fail(m peerMsg, err error) {
	if m.id != 0 {
		p.a.deliver(m.id, result{err: fmt.Errorf("agent %s: %w", p.addr, err)})
	}
}

func (p *peer) dial() (net.Conn, error) {
	c, err := net.DialTimeout("tcp", p.addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	c = RawIO(c)
	if _, err := c.Write([]byte{peerMagic}); err != nil {
		c.Close()
		return nil, err
	}
	go p.readAnswers(c)
	return c, nil
}

// readAnswers delivers FAIL, INDEX, OK, READOK and LEASEOK messages to the waiting requests.
func (p *peer) readAnswers(c net.Conn) {
	br := bufio.NewReaderSize(c, 64<<10)
	for {
		msg, err := readFrame(br, peerMaxMessage)
		if err != nil {
			c.Close()
			p.a.failVia(p.addr, fmt.Errorf("connection to %s: %w", p.addr, err))
			return
		}
		if len(msg) < 2 {
			continue
		}
		id, _ := strconv.ParseUint(string(msg[1]), 10, 64)
		switch string(msg[0]) {
		case "FAIL":
			r := result{err: errors.New(string(arg(msg, 2)))}
			r.leader = string(arg(msg, 3))
			p.a.deliver(id, r)
		case "INDEX":
			n, _ := strconv.ParseUint(string(arg(msg, 2)), 10, 64)
			p.a.deliver(id, result{index: n})
		case "OK":
			p.a.deliver(id, result{})
		case "READOK":
			p.a.deliver(id, result{raw: arg(msg, 2)})
		case "LEASEOK":
			ns, _ := strconv.ParseInt(string(arg(msg, 3)), 10, 64)
			p.a.deliver(id, result{leader: string(arg(msg, 2)), remaining: time.Duration(ns)})
		}
	}
}

func arg(msg [][]byte, i int) []byte {
	if i < len(msg) {
		return msg[i]
	}
	return nil
}

// servePeer handles one connection from another agent: requests (PROPOSE,
// READINDEX, READ id index payload proto db, JOIN, LEASE), answered on the same connection, and one-way
// messages (REPLY, STATUS, QUARANTINE, ADAPTER). STATUS carries the sender's
// quarantine list too, so an agent that missed a QUARANTINE (it joined
// later, or the message was dropped) still learns it.
func (a *Agent) servePeer(c net.Conn, br *bufio.Reader) {
	defer c.Close()
	select {
	case <-a.raftUp:
	case <-a.done:
		return
	}
	var mu sync.Mutex
	w := bufio.NewWriter(c)
	answer := func(args ...[]byte) {
		mu.Lock()
		defer mu.Unlock()
		w.Write(appendFrame(nil, args...))
		w.Flush()
	}
	fail := func(id []byte, err error) {
		answer([]byte("FAIL"), id, []byte(err.Error()), []byte(a.leaderAddr()))
	}
	names := names{}
	for {
		msg, err := readFrame(br, peerMaxMessage)
		if err != nil {
			return
		}
		if len(msg) < 2 {
			continue
		}
		id := msg[1]
		switch string(msg[0]) {
		case "PROPOSE":
			a.proposeForPeer(id, arg(msg, 2), fail)
		case "REPLY":
			a.peerReply(msg, names)
		case "REPLYS2": // REPLY with its reply compressed (compressReply)
			if len(msg) == 8 {
				raw, err := s2.Decode(nil, msg[7])
				if err != nil {
					continue // malformed, as a REPLY peerReply drops
				}
				msg[7] = raw
			}
			a.peerReply(msg, names)
		case "STATUS":
			a.health.onStatus(parseStatus(msg))
			for i := statusFields; i+1 < len(msg); i += 2 {
				a.health.onQuarantine(string(msg[i]), string(msg[i+1]), "reported by "+string(id))
			}
		case "PROBE":
			stamp, _ := strconv.ParseInt(string(arg(msg, 2)), 10, 64)
			a.health.onProbe(string(id), stamp)
		case "ADAPTER": // Host.Broadcast's
			if h, ok := a.adapter.(PeerHandler); ok {
				go h.OnPeer(arg(msg, 2))
			}
		case "QUARANTINE":
			a.health.onQuarantine(string(id), string(arg(msg, 2)), string(arg(msg, 3)))
		case "LEASE":
			leader, remaining := a.leasePromise()
			answer([]byte("LEASEOK"), id, []byte(leader), strconv.AppendInt(nil, int64(remaining), 10))
		case "READINDEX":
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), a.cfg.WriteTimeout)
				defer cancel()
				n, err := a.indexes.get(ctx)
				if err != nil {
					fail(id, err)
					return
				}
				answer([]byte("INDEX"), id, strconv.AppendUint(nil, n, 10))
			}()
		case "READ":
			index, _ := strconv.ParseUint(string(arg(msg, 2)), 10, 64)
			data := arg(msg, 3)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), a.cfg.WriteTimeout)
				defer cancel()
				raw, err := a.localRead(ctx, data, index)
				if err != nil {
					fail(id, err)
					return
				}
				answer([]byte("READOK"), id, raw)
			}()
		case "JOIN":
			go func() {
				if err := a.addServer(string(arg(msg, 2)), string(arg(msg, 3)), string(arg(msg, 4)) == "voter"); err != nil {
					fail(id, err)
					return
				}
				answer([]byte("OK"), id)
			}()
		}
	}
}

// statusFields is how many fields of STATUS precede its quarantine list.
const statusFields = 14

// parseStatus reads STATUS id incarnation applied append-seconds stamp echo
// hold net-seconds probe-echo probe-hold probe-seconds append-p75
// throttled-share, the fields health.sendStatus writes. A malformed number
// reads as zero, which no check mistakes for limping.
func parseStatus(msg [][]byte) limp.Status {
	u := func(i int) uint64 { v, _ := strconv.ParseUint(string(arg(msg, i)), 10, 64); return v }
	n := func(i int) int64 { v, _ := strconv.ParseInt(string(arg(msg, i)), 10, 64); return v }
	f := func(i int) float64 { v, _ := strconv.ParseFloat(string(arg(msg, i)), 64); return v }
	return limp.Status{ID: string(arg(msg, 1)), Incarnation: string(arg(msg, 2)), Applied: u(3), AppendSecs: f(4),
		Stamp: n(5), Echo: n(6), Hold: n(7), NetSecs: f(8), ProbeEcho: n(9), ProbeHold: n(10), ProbeSecs: f(11),
		AppendP75Secs: f(12), Throttled: f(13)}
}

// peerReply takes REPLY seq incarnation index digest replica replica-incarnation raw.
func (a *Agent) peerReply(msg [][]byte, names names) {
	if len(msg) != 8 {
		return
	}
	seq, err1 := strconv.ParseUint(string(msg[1]), 10, 64)
	index, err2 := strconv.ParseUint(string(msg[3]), 10, 64)
	digest, err3 := strconv.ParseUint(string(msg[4]), 16, 64)
	if errors.Join(err1, err2, err3) != nil {
		return
	}
	a.onReply(seq, string(msg[2]), index, digest, names.of(msg[5]), names.of(msg[6]), msg[7], nil)
}

// names holds the strings one peer connection sends with every reply
// (the replica's ID and incarnation), made once rather than per reply.
type names map[string]string

func (n names) of(b []byte) string {
	if s, ok := n[string(b)]; ok {
		return s
	}
	if len(n) >= 64 {
		clear(n) // a peer sends a few; bounded all the same
	}
	s := string(b)
	n[s] = s
	return s
}

// proposeForPeer appends a follower's entry to the log in arrival order; only
// a failure is answered, the replies come from the replicas.
func (a *Agent) proposeForPeer(id, data []byte, fail func([]byte, error)) {
	if a.raft.State() != raft.Leader {
		fail(id, errors.New("not the raft leader"))
		return
	}
	a.watchApply(a.raft.Apply(data, a.cfg.WriteTimeout), func(err error) { fail(id, err) })
}

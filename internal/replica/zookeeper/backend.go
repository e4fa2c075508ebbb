package zookeeper

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gait-dev/gait/internal/replica"
	"github.com/gait-dev/gait/third_party/zkwire"
)

// Session timeouts are bounded as a ZooKeeper server with a 2 s tick
// bounds them by default (2 to 20 ticks).
const (
	minSessionTimeout = 4000
	maxSessionTimeout = 40000
)

// serverSessionTimeout is what the adapter's own sessions on its server
// ask for; they ping, so only a hung agent lets them expire.
const serverSessionTimeout = 30 * time.Second

// readers is how many sessions on the server serve plain reads, each
// pipelining its requests.
const readers = 4

// sessionIDBase marks the session ids the agents grant (the low bits are
// the log index of the session's connect): ZooKeeper's own put a server id
// in the top byte.
const sessionIDBase = int64(0x67) << 56

// session is one client session as the log knows it.
type session struct {
	timeout int32 // ms
	passwd  []byte
	touched int64 // the log's clock (ms) when its client last showed it was alive
}

// backend applies committed commands to one local ZooKeeper server.
type backend struct {
	addr   string
	events func(session int64, ev zkwire.WatcherEvent)

	// mu guards the state the log changes; Apply holds it while it talks
	// to the server, and reads hold it shared, so a read's stat and the
	// meta written into it are of the same moment.
	mu       sync.RWMutex
	applier  *zkConn
	owners   map[int64]*zkConn // client session → the server session holding its ephemerals
	tree     *tree
	sessions map[int64]*session
	clock    int64 // ms: the largest leader time in the log so far
	applied  atomic.Uint64

	// stale is set once the adapter reconnected to a server that may have
	// lost its data, until the core rebuilds it: reads fail meanwhile.
	stale       atomic.Bool
	reconnected func() // tells the adapter its clients' watches are gone

	rmu      sync.Mutex // guards readers, watchers
	readers  []*zkConn
	next     atomic.Uint32
	watchers map[int64]*zkConn // client session → this server's session for its watches
}

func openBackend(addr string, events func(int64, zkwire.WatcherEvent)) (*backend, error) {
	applier, err := dialZK(addr, serverSessionTimeout, nil)
	if err != nil {
		return nil, err
	}
	b := &backend{addr: addr, events: events, applier: applier, owners: map[int64]*zkConn{},
		tree: newTree(), sessions: map[int64]*session{}, watchers: map[int64]*zkConn{}}
	for range readers {
		r, err := dialZK(addr, serverSessionTimeout, nil)
		if err != nil {
			b.Close()
			return nil, err
		}
		b.readers = append(b.readers, r)
	}
	return b, nil
}

// packet frames a reply header and its body's record (nil: none).
func packet(hdr zkwire.ReplyHeader, body any) []byte {
	records := []any{&hdr}
	if body != nil {
		records = append(records, body)
	}
	p, err := frame(records...)
	if err != nil {
		panic(fmt.Sprintf("zookeeper: encode a reply: %v", err)) // only records this package built
	}
	return p
}

// Apply runs committed commands in log order. A run of setData requests
// is pipelined (setDataRun): the replica does not wait a round trip to its
// server per write.
func (b *backend) Apply(batch []replica.Committed) ([]replica.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]replica.Result, 0, len(batch))
	for len(batch) > 0 {
		n, err := b.setDataRun(batch, &out)
		if err != nil || n > 0 {
			if err != nil {
				return out, err
			}
			batch = batch[n:]
			continue
		}
		reply, err := b.apply(batch[0])
		if err != nil {
			return out, err
		}
		b.applied.Store(batch[0].Index)
		out = append(out, replica.Result{Reply: reply, Digest: reply})
		batch = batch[1:]
	}
	return out, nil
}

// setDataRun applies the setData requests that begin batch, if there are
// at least two, all sent on the applier's session before their replies
// are read, and appends their results to out; it returns how many it
// applied. That is the same as applying them one by one: ZooKeeper runs
// one session's requests in order, a setData's translation (its version
// less the node's base) depends on no earlier setData's outcome, and each
// reply and its meta are made in log order as the replies come. A run
// stops before any other command and before a command at whose time a
// session expires (its ephemeral nodes go through other sessions).
func (b *backend) setDataRun(batch []replica.Committed, out *[]replica.Result) (int, error) {
	type pending struct {
		c     replica.Committed
		cmd   command
		w     write
		clock int64
		reply <-chan reply
	}
	var run []pending
	clock := b.clock
	for _, c := range batch {
		cmd, err := decodeCommand(c.Data)
		if err != nil || cmd.kind != kindRequest || cmd.opcode != zkwire.OpSetData {
			break
		}
		next := max(clock, c.Time.UnixMilli())
		if b.sessions[cmd.session] == nil || b.expiresAt(next) {
			break
		}
		var rec zkwire.SetDataRequest
		if _, err := zkwire.Decode(cmd.record, &rec); err != nil {
			break
		}
		clock = next
		run = append(run, pending{c: c, cmd: cmd, clock: next})
		run[len(run)-1].w, _ = b.translate(cmd.opcode, &rec, cmd.session, b.tree.cversion) // a setData always translates
	}
	if len(run) < 2 {
		return 0, nil
	}
	for i := range run {
		b.sessions[run[i].cmd.session].touched = run[i].clock
		body, err := zkwire.Append(nil, run[i].w.req)
		if err != nil {
			return 0, b.failed(err)
		}
		run[i].reply = b.applier.send(zkwire.OpSetData, body)
	}
	for i, p := range run {
		r := <-p.reply
		if r.err != nil {
			return i, b.failed(r.err)
		}
		b.clock = p.clock
		reply, err := b.finish(p.cmd, p.w, int64(p.c.Index), r.hdr, r.body)
		if err != nil {
			return i, err
		}
		b.applied.Store(p.c.Index)
		*out = append(*out, replica.Result{Reply: reply, Digest: reply})
	}
	return len(run), nil
}

// expiresAt tells whether some session expires at the log's clock ms.
func (b *backend) expiresAt(ms int64) bool {
	for _, s := range b.sessions {
		if ms-s.touched > int64(s.timeout) {
			return true
		}
	}
	return false
}

func (b *backend) apply(c replica.Committed) ([]byte, error) {
	zxid := int64(c.Index)
	b.clock = max(b.clock, c.Time.UnixMilli())
	if err := b.expire(zxid); err != nil {
		return nil, err
	}
	cmd, err := decodeCommand(c.Data)
	if err != nil { // every replica decodes the same bytes alike
		return packet(zkwire.ReplyHeader{Zxid: zxid, Err: zkwire.ErrMarshallingError}, nil), nil
	}
	switch cmd.kind {
	case kindConnect:
		id := sessionIDBase | int64(c.Index)
		sum := sha256.Sum256(append(binary.BigEndian.AppendUint64(nil, uint64(id)), cmd.secret...))
		s := &session{timeout: min(max(cmd.timeout, minSessionTimeout), maxSessionTimeout), passwd: sum[:16], touched: b.clock}
		b.sessions[id] = s
		return connectPacket(id, s), nil
	case kindResume:
		s := b.sessions[cmd.session]
		if s == nil || !bytes.Equal(s.passwd, cmd.secret) {
			return connectPacket(0, nil), nil // expired, as ZooKeeper says it: no session, no timeout
		}
		s.touched = b.clock
		return connectPacket(cmd.session, s), nil
	case kindTouch:
		alive := b.touch(cmd.session)
		return packet(zkwire.ReplyHeader{Xid: zkwire.XidPing, Zxid: zxid, Err: errIf(!alive, zkwire.ErrSessionExpired)}, nil), nil
	case kindTick:
		return packet(zkwire.ReplyHeader{Zxid: zxid}, nil), nil
	case kindClose:
		if b.sessions[cmd.session] != nil {
			if err := b.endSession(cmd.session, zxid); err != nil {
				return nil, err
			}
		}
		return packet(zkwire.ReplyHeader{Xid: cmd.xid, Zxid: zxid}, nil), nil
	}
	if !b.touch(cmd.session) {
		return packet(zkwire.ReplyHeader{Xid: cmd.xid, Zxid: zxid, Err: zkwire.ErrSessionExpired}, nil), nil
	}
	return b.applyRequest(cmd, zxid)
}

func errIf(cond bool, code zkwire.ErrCode) zkwire.ErrCode {
	if cond {
		return code
	}
	return zkwire.ErrOk
}

func connectPacket(id int64, s *session) []byte {
	resp := zkwire.ConnectResponse{SessionID: id, Passwd: make([]byte, 16)}
	if s != nil {
		resp.TimeOut, resp.Passwd = s.timeout, s.passwd
	}
	p, err := frame(&resp)
	if err != nil {
		panic(fmt.Sprintf("zookeeper: encode a connect response: %v", err))
	}
	return p
}

func (b *backend) touch(id int64) bool {
	s := b.sessions[id]
	if s != nil {
		s.touched = b.clock
	}
	return s != nil
}

// expire ends every session whose client has not shown itself alive for
// its timeout, by the log's clock: every replica ends the same sessions
// before the same entry.
func (b *backend) expire(zxid int64) error {
	var gone []int64
	for id, s := range b.sessions {
		if b.clock-s.touched > int64(s.timeout) {
			gone = append(gone, id)
		}
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i] < gone[j] })
	for _, id := range gone {
		if err := b.endSession(id, zxid); err != nil {
			return err
		}
		if b.events != nil {
			b.events(id, zkwire.WatcherEvent{Type: zkwire.EventSession, State: zkwire.StateExpired})
		}
	}
	return nil
}

// endSession closes a session: its server session, which holds its
// ephemeral nodes, ends, and ZooKeeper deletes them.
func (b *backend) endSession(id, zxid int64) error {
	delete(b.sessions, id)
	if c := b.owners[id]; c != nil {
		delete(b.owners, id)
		if err := c.closeSession(); err != nil {
			return fmt.Errorf("zookeeper at %s: close session %#x: %w", b.addr, c.session, err)
		}
	}
	for _, p := range b.tree.ephemerals(id) {
		b.tree.deleted(p, zxid)
	}
	b.dropWatches(id)
	return nil
}

// owner is the server session that creates a client session's ephemeral
// nodes, opened with its first.
func (b *backend) owner(id int64) (*zkConn, error) {
	if c := b.owners[id]; c != nil {
		return c, nil
	}
	c, err := dialZK(b.addr, serverSessionTimeout, nil)
	if err != nil {
		return nil, err
	}
	b.owners[id] = c
	return c, nil
}

// Read serves a read on the local server.
func (b *backend) Read(ctx context.Context, data []byte) ([]byte, error) {
	cmd, err := decodeCommand(data)
	if err != nil || cmd.kind != kindRequest {
		return nil, fmt.Errorf("zookeeper read: not a request")
	}
	if b.stale.Load() {
		return nil, fmt.Errorf("zookeeper at %s: being rebuilt", b.addr)
	}
	if cmd.opcode == zkwire.OpSetWatches {
		return b.setWatches(cmd)
	}
	var req zkwire.PathWatchRequest
	var conn *zkConn
	switch cmd.opcode {
	case zkwire.OpExists, zkwire.OpGetData, zkwire.OpGetChildren, zkwire.OpGetChildren2:
		if _, err := zkwire.Decode(cmd.record, &req); err != nil {
			return packet(zkwire.ReplyHeader{Xid: cmd.xid, Err: zkwire.ErrMarshallingError}, nil), nil
		}
	case zkwire.OpGetACL:
		var p zkwire.PathRequest
		if _, err := zkwire.Decode(cmd.record, &p); err != nil {
			return packet(zkwire.ReplyHeader{Xid: cmd.xid, Err: zkwire.ErrMarshallingError}, nil), nil
		}
		req.Path = p.Path
	default:
		return packet(zkwire.ReplyHeader{Xid: cmd.xid, Err: zkwire.ErrUnimplemented}, nil), nil
	}
	if req.Watch {
		if conn, err = b.watcher(cmd.session); err != nil {
			return nil, err
		}
	} else {
		conn = b.reader()
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	hdr, body, err := conn.call(cmd.opcode, cmd.record)
	if err != nil {
		return nil, fmt.Errorf("zookeeper at %s: %w", b.addr, err)
	}
	out := zkwire.ReplyHeader{Xid: cmd.xid, Zxid: int64(b.applied.Load()), Err: hdr.Err}
	if hdr.Err != zkwire.ErrOk {
		return packet(out, nil), nil
	}
	var resp any
	var stat *zkwire.Stat
	switch cmd.opcode {
	case zkwire.OpExists:
		r := &zkwire.StatResponse{}
		resp, stat = r, &r.Stat
	case zkwire.OpGetData:
		r := &zkwire.GetDataResponse{}
		resp, stat = r, &r.Stat
	case zkwire.OpGetChildren:
		r := &zkwire.GetChildrenResponse{}
		resp = r
	case zkwire.OpGetChildren2:
		r := &zkwire.GetChildren2Response{}
		resp, stat = r, &r.Stat
	case zkwire.OpGetACL:
		r := &zkwire.GetACLResponse{}
		resp, stat = r, &r.Stat
	}
	if _, err := zkwire.Decode(body, resp); err != nil {
		return nil, fmt.Errorf("zookeeper at %s: reply to opcode %d: %w", b.addr, cmd.opcode, err)
	}
	if stat != nil {
		b.tree.present(req.Path, stat)
	}
	switch r := resp.(type) { // ZooKeeper lists children in hash order; every replica lists them sorted
	case *zkwire.GetChildrenResponse:
		sort.Strings(r.Children)
	case *zkwire.GetChildren2Response:
		sort.Strings(r.Children)
	}
	return packet(out, resp), nil
}

func (b *backend) reader() *zkConn {
	b.rmu.Lock()
	defer b.rmu.Unlock()
	return b.readers[b.next.Add(1)%readers]
}

// watcher is the local server session that holds a client session's
// watches: a watch fires where the read that set it was served.
func (b *backend) watcher(id int64) (*zkConn, error) {
	b.rmu.Lock()
	defer b.rmu.Unlock()
	if c := b.watchers[id]; c != nil && c.alive() == nil {
		return c, nil
	}
	c, err := dialZK(b.addr, serverSessionTimeout, func(ev zkwire.WatcherEvent) {
		if b.events != nil {
			b.events(id, ev)
		}
	})
	if err != nil {
		return nil, err
	}
	b.watchers[id] = c
	return c, nil
}

// dropWatches forgets a client session's watches on this server.
func (b *backend) dropWatches(id int64) {
	b.rmu.Lock()
	c := b.watchers[id]
	delete(b.watchers, id)
	b.rmu.Unlock()
	if c != nil {
		go c.closeSession()
	}
}

// Alive tells whether the server answers, reconnecting first if any of
// the adapter's sessions on it failed. A reconnected server may have
// restarted empty: reads fail until the core rebuilds it (Reset or
// Restore), and the clients connected here are hung up on, since their
// watches lived on the old sessions: they reconnect and set them again.
func (b *backend) Alive(ctx context.Context) error {
	if b.broken() {
		if err := b.reconnect(); err != nil {
			return err
		}
	}
	conn := b.reader()
	body, _ := zkwire.Append(nil, &zkwire.PathWatchRequest{Path: "/"})
	select {
	case r := <-conn.send(zkwire.OpExists, body):
		if r.err != nil {
			return fmt.Errorf("zookeeper at %s: %w", b.addr, r.err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("zookeeper at %s: no answer: %w", b.addr, ctx.Err())
	}
}

func (b *backend) broken() bool {
	b.rmu.Lock()
	defer b.rmu.Unlock()
	if b.applier.alive() != nil {
		return true
	}
	for _, r := range b.readers {
		if r.alive() != nil {
			return true
		}
	}
	return false
}

// reconnect replaces every session of the adapter's on the server.
func (b *backend) reconnect() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	applier, err := dialZK(b.addr, serverSessionTimeout, nil)
	if err != nil {
		return err
	}
	var fresh []*zkConn
	for range readers {
		r, err := dialZK(b.addr, serverSessionTimeout, nil)
		if err != nil {
			applier.drop()
			for _, f := range fresh {
				f.drop()
			}
			return err
		}
		fresh = append(fresh, r)
	}
	b.applier.drop()
	b.applier = applier
	for id, c := range b.owners {
		c.drop()
		delete(b.owners, id)
	}
	b.rmu.Lock()
	for _, r := range b.readers {
		r.drop()
	}
	b.readers = fresh
	for id, c := range b.watchers {
		c.drop()
		delete(b.watchers, id)
	}
	b.rmu.Unlock()
	b.stale.Store(true)
	if b.reconnected != nil {
		b.reconnected()
	}
	return nil
}

// Close drops every connection; the server's sessions end when they time
// out (Reset ends them at the next start).
func (b *backend) Close() error {
	b.mu.Lock()
	for _, c := range b.owners {
		c.drop()
	}
	b.applier.drop()
	b.mu.Unlock()
	b.rmu.Lock()
	defer b.rmu.Unlock()
	for _, c := range b.readers {
		c.drop()
	}
	for _, c := range b.watchers {
		c.drop()
	}
	return nil
}

var _ replica.Backend = (*backend)(nil)

// failed wraps a failure talking to the server.
func (b *backend) failed(err error) error {
	return fmt.Errorf("zookeeper at %s: %w", b.addr, err)
}

package zookeeper

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/replica"
	"github.com/gait-dev/gait/internal/systems/loopback"
	zksys "github.com/gait-dev/gait/internal/systems/zookeeper"
	"github.com/gait-dev/gait/third_party/zkwire"
)

// startServers starts n standalone ZooKeeper servers from Debian's
// package, each on a loopback host of its own, and returns their addresses.
func startServers(t *testing.T, n int) []string {
	t.Helper()
	d := zksys.New()
	if err := d.Check(); err != nil {
		t.Skip(err)
	}
	hosts, err := loopback.Hosts(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	addrs := make([]string, n)
	for i, h := range hosts {
		port := freePort(t)
		p, err := d.StartStandalone(context.Background(), h, port)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Stop() })
		addrs[i] = net.JoinHostPort(h.Address(), strconv.Itoa(port))
	}
	return addrs
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func openBackends(t *testing.T, addrs []string) []*backend {
	var bs []*backend
	for _, a := range addrs {
		b, err := openBackend(a, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		if err := b.Reset(); err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	return bs
}

// logBuilder makes committed entries with growing indexes and leader times.
type logBuilder struct {
	index uint64
	now   time.Time
}

func (l *logBuilder) next(c command) replica.Committed {
	l.index++
	l.now = l.now.Add(10 * time.Millisecond)
	return replica.Committed{Index: l.index, Time: l.now, Data: c.encode()}
}

func (l *logBuilder) request(session int64, op int32, rec any) replica.Committed {
	body, err := zkwire.Append(nil, rec)
	if err != nil {
		panic(err)
	}
	return l.next(command{kind: kindRequest, session: session, xid: int32(l.index + 1), opcode: op, record: body})
}

func readCmd(session int64, op int32, rec any) []byte {
	body, _ := zkwire.Append(nil, rec)
	return command{kind: kindRequest, session: session, xid: 7, opcode: op, record: body}.encode()
}

// applyAll applies batch on every backend and checks they replied alike.
func applyAll(t *testing.T, bs []*backend, batch ...replica.Committed) [][]byte {
	t.Helper()
	var first []replica.Result
	for i, b := range bs {
		res, err := b.Apply(batch)
		if err != nil {
			t.Fatalf("backend %d: %v", i, err)
		}
		if i == 0 {
			first = res
			continue
		}
		for j := range res {
			if !bytes.Equal(res[j].Reply, first[j].Reply) {
				t.Fatalf("entry %d: backend %d replied %x, backend 0 %x", batch[j].Index, i, res[j].Reply, first[j].Reply)
			}
		}
	}
	out := make([][]byte, len(first))
	for i, r := range first {
		out[i] = r.Reply
	}
	return out
}

// readAll reads on every backend and checks they answer alike.
func readAll(t *testing.T, bs []*backend, data []byte) []byte {
	t.Helper()
	var first []byte
	for i, b := range bs {
		p, err := b.Read(context.Background(), data)
		if err != nil {
			t.Fatalf("backend %d: %v", i, err)
		}
		if i == 0 {
			first = p
		} else if !bytes.Equal(p, first) {
			t.Fatalf("backend %d read %x, backend 0 %x", i, p, first)
		}
	}
	return first
}

// decodeReply splits a framed reply into its header and decodes its body.
func decodeReply(t *testing.T, p []byte, body any) zkwire.ReplyHeader {
	t.Helper()
	var h zkwire.ReplyHeader
	n, err := zkwire.Decode(p[4:], &h)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil && h.Err == zkwire.ErrOk {
		if _, err := zkwire.Decode(p[4+n:], body); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func TestDuplicatesReplyAlike(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three ZooKeeper servers")
	}
	addrs := startServers(t, 3)
	bs := openBackends(t, addrs[:2])
	l := &logBuilder{now: time.UnixMilli(1_700_000_000_000)}
	acl := []zkwire.ACL{{Perms: zkwire.PermAll, Scheme: "world", ID: "anyone"}}

	r := applyAll(t, bs, l.next(command{kind: kindConnect, timeout: 10000, secret: []byte("0123456789abcdef")}),
		l.next(command{kind: kindConnect, timeout: 100000, secret: []byte("fedcba9876543210")}))
	var c1, c2 zkwire.ConnectResponse
	zkwire.Decode(r[0][4:], &c1)
	zkwire.Decode(r[1][4:], &c2)
	if c1.SessionID != sessionIDBase|1 || c1.TimeOut != 10000 || c2.TimeOut != maxSessionTimeout {
		t.Fatalf("sessions: %+v %+v", c1, c2)
	}
	s1, s2 := c1.SessionID, c2.SessionID

	r = applyAll(t, bs,
		l.request(s1, zkwire.OpCreate2, &zkwire.CreateRequest{Path: "/a", Data: []byte("v0"), ACL: acl}),
		l.request(s2, zkwire.OpCreate, &zkwire.CreateRequest{Path: "/a/q-", ACL: acl, Flags: zkwire.FlagSequence}),
		l.request(s2, zkwire.OpCreate, &zkwire.CreateRequest{Path: "/a/q-", ACL: acl, Flags: zkwire.FlagSequence}),
		l.request(s1, zkwire.OpCreate2, &zkwire.CreateRequest{Path: "/a/e", ACL: acl, Flags: zkwire.FlagEphemeral}),
		l.request(s2, zkwire.OpSetData, &zkwire.SetDataRequest{Path: "/a", Data: []byte("v1"), Version: 0}),
		l.request(s2, zkwire.OpSetData, &zkwire.SetDataRequest{Path: "/a", Data: []byte("v2"), Version: 0}),
	)
	var a zkwire.Create2Response
	if h := decodeReply(t, r[0], &a); h.Zxid != 3 || a.Stat.Czxid != 3 || a.Stat.Ctime != l.now.UnixMilli()-50 {
		t.Fatalf("create /a: %+v %+v", h, a)
	}
	var q zkwire.PathResponse
	decodeReply(t, r[2], &q)
	if q.Path != "/a/q-0000000001" {
		t.Fatalf("second sequential child: %q", q.Path)
	}
	var e zkwire.Create2Response
	decodeReply(t, r[3], &e)
	if e.Stat.EphemeralOwner != s1 {
		t.Fatalf("ephemeral owner %#x, want %#x", e.Stat.EphemeralOwner, s1)
	}
	if h := decodeReply(t, r[5], nil); h.Err != zkwire.ErrBadVersion {
		t.Fatalf("stale setData: %+v", h)
	}

	multi := func(ops ...zkwire.MultiOp) *zkwire.MultiRequest { return &zkwire.MultiRequest{Ops: ops} }
	op := func(t int32, rec any) zkwire.MultiOp {
		return zkwire.MultiOp{Header: zkwire.MultiHeader{Type: t}, Op: rec}
	}
	r = applyAll(t, bs,
		l.request(s2, zkwire.OpMulti, multi(
			op(zkwire.OpCreate, &zkwire.CreateRequest{Path: "/m", ACL: acl}),
			op(zkwire.OpCreate, &zkwire.CreateRequest{Path: "/m/s-", ACL: acl, Flags: zkwire.FlagSequence}),
			op(zkwire.OpCreate, &zkwire.CreateRequest{Path: "/m/s-", ACL: acl, Flags: zkwire.FlagSequence}),
			op(zkwire.OpCheck, &zkwire.PathVersionRequest{Path: "/a", Version: 1}),
			op(zkwire.OpSetData, &zkwire.SetDataRequest{Path: "/a", Data: []byte("v3"), Version: 1}))),
		l.request(s2, zkwire.OpMulti, multi(
			op(zkwire.OpCreate, &zkwire.CreateRequest{Path: "/x", ACL: acl}),
			op(zkwire.OpDelete, &zkwire.PathVersionRequest{Path: "/nothing", Version: -1}))),
		l.request(s2, zkwire.OpDelete, &zkwire.PathVersionRequest{Path: "/a/q-0000000000", Version: -1}),
		l.request(s1, zkwire.OpCreateContainer, &zkwire.CreateRequest{Path: "/c", ACL: acl, Flags: zkwire.FlagContainer}),
		l.request(s1, zkwire.OpCreateTTL, &zkwire.CreateTTLRequest{Path: "/t", ACL: acl, Flags: zkwire.FlagTTL, TTL: 60000}),
	)
	var m zkwire.MultiResponse
	if h := decodeReply(t, r[0], &m); h.Err != zkwire.ErrOk || len(m.Results) != 5 || m.Results[2].Path != "/m/s-0000000001" || m.Results[4].Stat.Version != 2 {
		t.Fatalf("multi: %+v %+v", h, m.Results)
	}
	var failed zkwire.MultiResponse
	decodeReply(t, r[1], nil)
	zkwire.Decode(r[1][4+16:], &failed)
	if len(failed.Results) != 2 || failed.Results[1].Err != zkwire.ErrNoNode {
		t.Fatalf("failed multi: %+v", failed.Results)
	}

	var kids zkwire.GetChildren2Response
	decodeReply(t, readAll(t, bs, readCmd(s2, zkwire.OpGetChildren2, &zkwire.PathWatchRequest{Path: "/a"})), &kids)
	if fmt.Sprint(kids.Children) != "[e q-0000000001]" || kids.Stat.Cversion != 4 || kids.Stat.Pzxid != 11 {
		t.Fatalf("children of /a: %v %+v", kids.Children, kids.Stat)
	}

	// Closing s1 drops its ephemeral node on every duplicate at the same entry.
	applyAll(t, bs, l.next(command{kind: kindClose, session: s1, xid: 99}))
	if h := decodeReply(t, readAll(t, bs, readCmd(s2, zkwire.OpExists, &zkwire.PathWatchRequest{Path: "/a/e"})), nil); h.Err != zkwire.ErrNoNode {
		t.Fatalf("ephemeral node after its session closed: %+v", h)
	}

	// A session whose client stays silent past its timeout expires by the
	// log's clock, on every duplicate, before the same entry.
	r = applyAll(t, bs, l.next(command{kind: kindConnect, timeout: 4000, secret: []byte("s3s3s3s3s3s3s3s3")}))
	var c3 zkwire.ConnectResponse
	zkwire.Decode(r[0][4:], &c3)
	applyAll(t, bs, l.request(c3.SessionID, zkwire.OpCreate, &zkwire.CreateRequest{Path: "/m/e3", ACL: acl, Flags: zkwire.FlagEphemeral}))
	l.now = l.now.Add(3 * time.Second)
	applyAll(t, bs, l.next(command{kind: kindTouch, session: s2}))
	if h := decodeReply(t, readAll(t, bs, readCmd(s2, zkwire.OpExists, &zkwire.PathWatchRequest{Path: "/m/e3"})), nil); h.Err != zkwire.ErrOk {
		t.Fatalf("ephemeral node of a live session: %+v", h)
	}
	l.now = l.now.Add(2 * time.Second)
	r = applyAll(t, bs, l.next(command{kind: kindTick}), l.request(c3.SessionID, zkwire.OpSetData, &zkwire.SetDataRequest{Path: "/m", Version: -1}))
	if h := decodeReply(t, r[1], nil); h.Err != zkwire.ErrSessionExpired {
		t.Fatalf("a write of an expired session: %+v", h)
	}
	if h := decodeReply(t, readAll(t, bs, readCmd(s2, zkwire.OpExists, &zkwire.PathWatchRequest{Path: "/m/e3"})), nil); h.Err != zkwire.ErrNoNode {
		t.Fatalf("ephemeral node of an expired session: %+v", h)
	}

	// A third server rebuilt from the first's snapshot answers as the others
	// and goes on applying alike, versions and sequence numbers included.
	r = applyAll(t, bs, l.request(s2, zkwire.OpCreate, &zkwire.CreateRequest{Path: "/a/e2", ACL: acl, Flags: zkwire.FlagEphemeral}),
		l.request(s2, zkwire.OpSetACL, &zkwire.SetACLRequest{Path: "/m", ACL: []zkwire.ACL{{Perms: zkwire.PermRead | zkwire.PermWrite | zkwire.PermAdmin, Scheme: "world", ID: "anyone"}}, Version: -1}))
	var snap bytes.Buffer
	if err := bs[0].Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	third := openBackends(t, addrs[2:])[0]
	if err := third.Restore(&snap); err != nil {
		t.Fatal(err)
	}
	all := append(bs, third)
	for _, p := range []string{"/", "/a", "/a/e2", "/a/q-0000000001", "/m", "/m/s-0000000000", "/c", "/t"} {
		readAll(t, all, readCmd(s2, zkwire.OpGetData, &zkwire.PathWatchRequest{Path: p}))
		readAll(t, all, readCmd(s2, zkwire.OpGetACL, &zkwire.PathRequest{Path: p}))
		readAll(t, all, readCmd(s2, zkwire.OpGetChildren2, &zkwire.PathWatchRequest{Path: p}))
	}
	r = applyAll(t, all,
		l.request(s2, zkwire.OpSetData, &zkwire.SetDataRequest{Path: "/a", Data: []byte("v4"), Version: 2}),
		l.request(s2, zkwire.OpCreate, &zkwire.CreateRequest{Path: "/a/q-", ACL: acl, Flags: zkwire.FlagSequence}),
		l.request(s2, zkwire.OpSetData, &zkwire.SetDataRequest{Path: "/m", Data: []byte("w"), Version: 0}),
		l.request(s2, zkwire.OpCreate, &zkwire.CreateRequest{Path: "/m/z", ACL: acl}),
		l.next(command{kind: kindClose, session: s2, xid: 5}))
	if h := decodeReply(t, r[0], nil); h.Err != zkwire.ErrOk {
		t.Fatalf("setData with the version before the snapshot, after restore: %+v", h)
	}
	decodeReply(t, r[1], &q)
	if q.Path != "/a/q-0000000006" {
		t.Fatalf("sequential child after restore: %q", q.Path)
	}
	if h := decodeReply(t, r[3], nil); h.Err != zkwire.ErrNoAuth {
		t.Fatalf("create under a node whose ACL denies it, after restore: %+v", h)
	}
	if h := decodeReply(t, readAll(t, all, readCmd(1, zkwire.OpExists, &zkwire.PathWatchRequest{Path: "/a/e2"})), nil); h.Err != zkwire.ErrNoNode {
		t.Fatalf("restored ephemeral node after its session closed: %+v", h)
	}
	// A run of setData is pipelined (setDataRun): the same entries one at
	// a time reply byte for byte alike, a stale version refused among them.
	var c4 zkwire.ConnectResponse
	zkwire.Decode(applyAll(t, bs, l.next(command{kind: kindConnect, timeout: 100000, secret: []byte("0123456789abcdef")}))[0][4:], &c4)
	s1 = c4.SessionID
	run := []replica.Committed{
		l.request(s1, zkwire.OpSetData, &zkwire.SetDataRequest{Path: "/a", Data: []byte("v5"), Version: -1}),
		l.request(s1, zkwire.OpSetData, &zkwire.SetDataRequest{Path: "/a", Data: []byte("v6"), Version: 4}),
		l.request(s1, zkwire.OpSetData, &zkwire.SetDataRequest{Path: "/a", Data: []byte("v7"), Version: 4}),
		l.request(s1, zkwire.OpSetData, &zkwire.SetDataRequest{Path: "/a/q-0000000000", Data: []byte("q"), Version: -1}),
	}
	batched, err := bs[0].Apply(run)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range run {
		one, err := bs[1].Apply([]replica.Committed{c})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(one[0].Reply, batched[i].Reply) {
			t.Fatalf("setData %d: one at a time %x, in a run %x", i, one[0].Reply, batched[i].Reply)
		}
	}
	if h := decodeReply(t, batched[2].Reply, nil); h.Err != zkwire.ErrBadVersion {
		t.Fatalf("stale setData in a run: %+v", h)
	}
}

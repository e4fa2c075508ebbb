package zookeeper

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/gait-dev/gait/third_party/zkwire"
	"github.com/go-zookeeper/zk"
)

// rawClient is a client that speaks the protocol by hand, so a test can
// drop its connection without closing its session, or resume one.
type rawClient struct {
	c    net.Conn
	r    *bufio.Reader
	resp zkwire.ConnectResponse
	xid  int32
}

func dialRaw(t *testing.T, addr string, session int64, passwd []byte, timeout int32) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if passwd == nil {
		passwd = make([]byte, 16)
	}
	p, _ := frame(&zkwire.ConnectRequest{TimeOut: timeout, SessionID: session, Passwd: passwd})
	if _, err := c.Write(p); err != nil {
		t.Fatal(err)
	}
	rc := &rawClient{c: c, r: bufio.NewReader(c)}
	p, err = readPacket(rc.r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zkwire.Decode(p, &rc.resp); err != nil {
		t.Fatal(err)
	}
	return rc
}

func (rc *rawClient) call(t *testing.T, op int32, req any) zkwire.ReplyHeader {
	t.Helper()
	rc.xid++
	p, _ := frame(&zkwire.RequestHeader{Xid: rc.xid, Opcode: op}, req)
	if _, err := rc.c.Write(p); err != nil {
		t.Fatal(err)
	}
	for {
		p, err := readPacket(rc.r, nil)
		if err != nil {
			t.Fatal(err)
		}
		var h zkwire.ReplyHeader
		zkwire.Decode(p, &h)
		if h.Xid == rc.xid {
			return h
		}
	}
}

// A session whose client vanishes expires by the log's clock, on every
// duplicate at once; one whose client reconnects elsewhere in time lives
// on; a wrong password is told the session expired.
func TestSessionsExpireAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two ZooKeeper servers")
	}
	agents := startAgents(t, startServers(t, 2))
	watcher, _ := connect(t, agents[1]) // its pings move the log's clock

	gone := dialRaw(t, agents[0], 0, nil, 4000)
	if h := gone.call(t, zkwire.OpCreate, &zkwire.CreateRequest{Path: "/gone", ACL: openACL, Flags: zkwire.FlagEphemeral}); h.Err != 0 {
		t.Fatalf("create: %+v", h)
	}
	moved := dialRaw(t, agents[0], 0, nil, 4000)
	if h := moved.call(t, zkwire.OpCreate, &zkwire.CreateRequest{Path: "/moved", ACL: openACL, Flags: zkwire.FlagEphemeral}); h.Err != 0 {
		t.Fatalf("create: %+v", h)
	}
	ok, _, ev, err := watcher.ExistsW("/gone")
	if err != nil || !ok {
		t.Fatalf("exists /gone: %v %v", ok, err)
	}
	gone.c.Close() // no closeSession: the session must expire
	moved.c.Close()

	// moved's client comes back through the other agent, with its password.
	back := dialRaw(t, agents[1], moved.resp.SessionID, moved.resp.Passwd, 4000)
	if back.resp.SessionID != moved.resp.SessionID || back.resp.TimeOut != 4000 {
		t.Fatalf("resumed session: %+v, want %#x", back.resp, moved.resp.SessionID)
	}
	if wrong := dialRaw(t, agents[1], moved.resp.SessionID, make([]byte, 16), 4000); wrong.resp.SessionID != 0 {
		t.Fatalf("a wrong password resumed the session: %+v", wrong.resp)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() { // back's client pings, as clients do every third of the timeout
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
				p, _ := frame(&zkwire.RequestHeader{Xid: zkwire.XidPing, Opcode: zkwire.OpPing})
				back.c.Write(p)
			}
		}
	}()

	t0 := time.Now()
	select {
	case e := <-ev:
		if e.Type != zk.EventNodeDeleted {
			t.Fatalf("event: %+v", e)
		}
		if d := time.Since(t0); d < 3*time.Second {
			t.Fatalf("the session expired after %v, before its 4 s timeout", d)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the vanished client's session did not expire")
	}
	for i, a := range agents {
		c, _ := connect(t, a)
		if ok, _, err := c.Exists("/gone"); ok || err != nil {
			t.Fatalf("agent %d: /gone after its session expired: %v %v", i, ok, err)
		}
		if ok, st, err := c.Exists("/moved"); !ok || err != nil || st.EphemeralOwner != moved.resp.SessionID {
			t.Fatalf("agent %d: /moved of the resumed session: %v %+v %v", i, ok, st, err)
		}
	}
}

package redis

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gait-dev/gait/internal/resp"
)

// A subscriber is served by its own agent's redis-server: on the first
// SUBSCRIBE (or PSUBSCRIBE, SSUBSCRIBE...) the agent opens a connection to
// it for the client, sends it the client's subscription commands, and
// copies everything redis sends on it (the answers, then the messages) to
// the client between the replies to its other commands. PUBLISH is an
// ordered write: every replica publishes each message once to its own
// subscribers, in log order, so a message published through any agent
// reaches the subscribers of every agent exactly once, in publish order.

// subscribedContext are the commands a RESP2 client may send while it
// subscribes, as redis allows.
var subscribedContext = map[string]bool{
	"SUBSCRIBE": true, "PSUBSCRIBE": true, "SSUBSCRIBE": true, "UNSUBSCRIBE": true, "PUNSUBSCRIBE": true,
	"SUNSUBSCRIBE": true, "PING": true, "QUIT": true, "RESET": true,
}

// pubsub is a connection's subscription state. conn is used by the
// connection's reply writer only (subscription commands are sent in
// request order, once every earlier reply is out); count is written by the
// goroutine that copies conn's output.
type pubsub struct {
	replies *replyQueue // the connection's, which pushes go to
	subConn *redisConn
	// subClosing is set when the agent closes subConn itself (the client
	// reset or left), so copyPushes tells that from the server going away.
	subClosing *atomic.Bool
	subCount   atomic.Int64 // channels and patterns subscribed, as redis last said; -1 while a SUBSCRIBE is on its way
}

// subscribed says whether the connection is in redis's subscribed context.
func (ps *pubsub) subscribed() bool { return ps.subCount.Load() != 0 }

// subscribeSlot sends a subscription command (or a subscriber's PING) to
// the connection's subscriber connection, opened on first use; its answers
// come back through push.
func (a *agent) subscribeSlot(st *clientState, args [][]byte) slot {
	name := strings.ToUpper(string(args[0]))
	subscribes := strings.HasSuffix(name, "SUBSCRIBE") && !strings.Contains(name, "UNSUB")
	if subscribes && st.subCount.Load() == 0 {
		st.subCount.Store(-1) // later commands of this pipeline are in the subscribed context already
	}
	proto := st.proto.Load()
	payload := resp.AppendCommand(nil, args...)
	return slot{fill: func() []byte {
		if subscribes {
			if err := a.catchUpToSubscribe(st); err != nil {
				st.subCount.CompareAndSwap(-1, 0)
				return resp.Error("ERR gait replica: " + err.Error())
			}
		}
		if st.subConn == nil {
			conn, err := a.dialSubscriber(proto)
			if err != nil {
				st.subCount.Store(0)
				return resp.Error("ERR gait replica: " + err.Error())
			}
			closing := new(atomic.Bool)
			st.subConn, st.subClosing = conn, closing
			go st.copyPushes(conn, func() {
				if !closing.Load() {
					st.conn.Close()
				}
			})
		}
		st.subConn.c.SetWriteDeadline(time.Now().Add(redisTimeout))
		if _, err := st.subConn.w.Write(payload); err != nil || st.subConn.w.Flush() != nil {
			return resp.Error("ERR gait replica: connection to redis for subscriptions lost")
		}
		return nil // redis's answer comes through push
	}}
}

// catchUpToSubscribe waits until this replica has applied every write
// acknowledged before now (the index a read of st waits for), so that a
// subscription it makes next gets no message whose PUBLISH was acknowledged
// before the SUBSCRIBE, as with redis: a replica that lags, or restarted and
// replays the log, would otherwise publish old messages to it as it
// catches up (TestRandomized saw thousands after a restart).
func (a *agent) catchUpToSubscribe(st *clientState) error {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.RequestTimeout)
	defer cancel()
	index, err := a.host.MinIndex(ctx, st.lastIndex.Load())
	if err == nil {
		err = a.host.WaitApplied(ctx, index)
	}
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	return nil
}

// dialSubscriber opens a subscriber connection in protocol proto.
func (a *agent) dialSubscriber(proto int64) (*redisConn, error) {
	conn, err := dialRedis(a.cfg.ServerAddr)
	if err != nil {
		return nil, err
	}
	if proto == 3 {
		if _, err := conn.command("HELLO", "3"); err != nil {
			conn.close()
			return nil, err
		}
	}
	conn.c.SetDeadline(time.Time{}) // a subscriber may wait for messages forever
	return conn, nil
}

// copyPushes copies what redis sends on conn to the client, keeping subCount
// up to date from the subscription answers, until conn closes; then lost
// ends the client's connection unless the agent closed conn itself. A
// redis-server killed behind its agent takes its subscriptions with it, and
// an agent restarts it empty: its client must learn that it subscribes to
// nothing any more, as redis's own clients learn when their server dies
// (the connection closes), or it would wait for messages that never come.
func (ps *pubsub) copyPushes(conn *redisConn, lost func()) {
	for {
		raw, v, err := resp.ReadReply(conn.r)
		if err != nil {
			lost()
			return
		}
		if (v.Kind == '*' || v.Kind == '>') && len(v.Arr) == 3 && v.Arr[2].Kind == ':' &&
			bytes.HasSuffix(bytes.ToLower(v.Arr[0].Str), []byte("subscribe")) {
			ps.subCount.Store(v.Arr[2].Num)
		}
		if !ps.replies.push(raw) {
			return
		}
	}
}

// unsubscribeAll closes the subscriber connection, if any: the connection
// ended or was reset.
func (ps *pubsub) unsubscribeAll() {
	if ps.subConn != nil {
		ps.subClosing.Store(true)
		ps.subConn.close()
		ps.subConn = nil
	}
	ps.subCount.Store(0)
}

package redis

import (
	"context"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
)

// testTracking: CLIENT TRACKING's invalidations reach a client whichever
// agent the write went through, before the reply to its next command.
func testTracking(t *testing.T, cl *cluster) {
	ctx := context.Background()
	writers := []*goredis.Client{client(t, cl.nodes[1].agent.ClientAddr()), client(t, cl.nodes[2].agent.ClientAddr())}
	if err := writers[0].Set(ctx, "ft:k", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}

	// RESP3, default mode: the key read is invalidated by a write through
	// another agent, and the push comes before the next reply.
	c := rawConn(t, cl.nodes[0].agent.ClientAddr())
	c.send("HELLO 3")
	c.expect("%") // the map's entries follow; skipped by reading up to CLIENT TRACKING's +OK
	for line := ""; line != "+OK\r\n"; {
		if line == "" {
			c.send("CLIENT TRACKING ON")
		}
		var err error
		if line, err = c.r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	c.send("GET ft:k")
	c.expect("$1", "1")
	for i, w := range writers {
		if err := w.Set(ctx, "ft:k", "2", 0).Err(); err != nil {
			t.Fatal(err)
		}
		c.send("PING")
		if i == 0 {
			c.expect(">2", "$10", "invalidate", "*1", "$4", "ft:k", "+PONG")
		} else {
			// Not read since: no invalidation.
			c.expect("+PONG")
		}
	}
	c.send("CLIENT TRACKINGINFO")
	c.expect("%3", "$5", "flags", "*1", "$2", "on", "$8", "redirect", ":0", "$8", "prefixes", "*0")

	// RESP2, BCAST with a prefix, redirected to a subscriber of
	// __redis__:invalidate: every matching key written anywhere.
	sub := rawConn(t, cl.nodes[0].agent.ClientAddr())
	sub.send("CLIENT ID")
	line, err := sub.r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, ":") {
		t.Fatalf("CLIENT ID: %q, %v", line, err)
	}
	sub.send("SUBSCRIBE __redis__:invalidate")
	sub.expect("*3", "$9", "subscribe", "$20", "__redis__:invalidate", ":1")
	b := rawConn(t, cl.nodes[0].agent.ClientAddr())
	b.send("CLIENT TRACKING ON BCAST PREFIX ft:p REDIRECT " + strings.TrimSpace(line[1:]))
	b.expect("+OK")
	if err := writers[1].MSet(ctx, "ft:p1", "x", "ft:q", "y").Err(); err != nil {
		t.Fatal(err)
	}
	sub.expect("*3", "$7", "message", "$20", "__redis__:invalidate", "*1", "$5", "ft:p1")
	b.send("CLIENT LIST ID " + strings.TrimSpace(line[1:]))
	b.expect("$")
	if l, _ := b.r.ReadString('\n'); !strings.Contains(l, " redir=-1 ") {
		t.Errorf("the redirect target's CLIENT LIST: %s", l)
	}
	b.expect("\r\n") // the bulk's own end, after the line's newline
	b.send("CLIENT INFO")
	b.expect("$")
	if l, _ := b.r.ReadString('\n'); !strings.Contains(l, " flags=tB ") || !strings.Contains(l, " redir="+strings.TrimSpace(line[1:])+" ") {
		t.Errorf("the tracking client's CLIENT INFO: %s", l)
	}

	// FLUSHALL anywhere: every tracking client drops everything.
	if err := writers[0].FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	sub.expect("*3", "$7", "message", "$20", "__redis__:invalidate", "$-1")
	c.send("PING")
	c.expect(">2", "$10", "invalidate", "_", "+PONG")
}

// BenchmarkTrackedGet: sequential GETs of one RESP3 connection, with CLIENT
// TRACKING off and on, through the leader's agent and a follower's: what
// tracking costs a tracking client.
func BenchmarkTrackedGet(b *testing.B) {
	cl := startCluster(b, 3, 0, nil)
	ctx := context.Background()
	for _, at := range []struct {
		name string
		n    *node
	}{{"leader", cl.waitLeader()}, {"follower", cl.nodes[0]}} {
		if at.name == "follower" && at.n == cl.waitLeader() {
			at.n = cl.nodes[1]
		}
		for _, tracking := range []string{"OFF", "ON"} {
			b.Run(at.name+"/tracking="+tracking, func(b *testing.B) {
				c := goredis.NewClient(&goredis.Options{Addr: at.n.agent.ClientAddr(), Protocol: 3, PoolSize: 1})
				defer c.Close()
				if err := c.Do(ctx, "CLIENT", "TRACKING", tracking).Err(); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := c.Get(ctx, "bt:k").Err(); err != goredis.Nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

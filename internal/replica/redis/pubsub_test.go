package redis

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// TestSubscriberLosesItsServer stops the redis-server behind an agent while
// a client subscribes through it: the client's connection must close, as a
// redis-server's own subscribers' do when it stops, rather than stay open
// subscribed to nothing (what TestRandomized's pub/sub checker caught).
func TestSubscriberLosesItsServer(t *testing.T) {
	cl := startCluster(t, 1, 0, nil)
	n := cl.nodes[0]
	ctx := context.Background()
	rdb := goredis.NewClient(&goredis.Options{Addr: n.agent.ClientAddr(), Protocol: 2, MaxRetries: -1})
	defer rdb.Close()
	ps := rdb.Subscribe(ctx, "lost:ch")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	if err := client(t, n.agent.ClientAddr()).Publish(ctx, "lost:ch", "m1").Err(); err != nil {
		t.Fatal(err)
	}
	if m, err := ps.ReceiveMessage(ctx); err != nil || m.Payload != "m1" {
		t.Fatalf("before the server stopped: %v %v", m, err)
	}
	if err := n.redis.Close(); err != nil {
		t.Fatal(err)
	}
	n.redis = nil
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := ps.Receive(rctx)
	if err == nil || rctx.Err() != nil {
		t.Fatalf("after the server stopped, the subscriber got %v, %v; want its connection closed", m, err)
	}
}

package linearize_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/linearize"
	"github.com/gait-dev/gait/internal/systems/redis"
	goredis "github.com/redis/go-redis/v9"
)

// TestFinalReadOfQueueFails checks that a final LRANGE that gets no answer
// is an error, not an empty queue: go-redis's ScanSlice drops the
// command's error, and a timed-out final read of a queue once showed up in
// the history as LRANGE -> [] (a stale read porcupine rejected).
func TestFinalReadOfQueueFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // read nothing, answer nothing
		}
	}()
	rdb := goredis.NewClient(redis.Options(ln.Addr().String()))
	defer rdb.Close()
	for _, in := range []linearize.Input{{Kind: linearize.Range, Key: "q"}, {Kind: linearize.Get, Key: "r"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		out, err := finalRead(ctx, rdb, in)
		cancel()
		if err == nil {
			t.Errorf("final %s of a server that never answers: no error, answered %s", in.Kind, linearize.Model.DescribeOperation(in, out))
		}
	}
}

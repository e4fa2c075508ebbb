package redis

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/resp"
)

// TestMuxMatchesReplies reads from many goroutines at once through one
// mux, so their requests share writes to redis, and kills the mux's
// connections half-way: a call may fail then, but every answer must be
// the call's own, and the mux must serve again after.
func TestMuxMatchesReplies(t *testing.T) {
	srv := plainRedis(t)
	m := newRedisMux(srv.Addr, 2)
	defer m.close()
	// echo fails the test on another call's answer; err is a failed call.
	echo := func(s string) error {
		raw, err := m.do(defaultMode, resp.AppendCommand(nil, []byte("ECHO"), []byte(s)))
		if err != nil {
			return err
		}
		if want := string(resp.AppendBulk(nil, []byte(s))); string(raw) != want {
			t.Errorf("ECHO %s answered %q, want %q", s, raw, want)
		}
		return nil
	}
	var served, failed atomic.Int64
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for i := range 300 {
				if err := echo(fmt.Sprintf("g%d-%d", g, i)); err != nil {
					failed.Add(1) // the connection was killed under it
				} else {
					served.Add(1)
				}
			}
		})
	}
	time.Sleep(20 * time.Millisecond)
	killer, err := dialRedis(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer killer.close()
	if _, err := killer.command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	t.Logf("%d served, %d failed with the killed connections", served.Load(), failed.Load())
	deadline := time.Now().Add(5 * time.Second)
	for err := echo("after"); err != nil; err = echo("after") {
		if time.Now().After(deadline) {
			t.Fatalf("the mux does not serve again after its connections were killed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

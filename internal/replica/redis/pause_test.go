package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testPause: CLIENT PAUSE WRITE holds the agent's clients' writes, not their
// reads, counts them blocked, and CLIENT UNPAUSE lets them go.
func testPause(t *testing.T, cl *cluster) {
	ctx := context.Background()
	addr := cl.nodes[1].agent.ClientAddr()
	admin, writer := client(t, addr), client(t, addr)
	if err := admin.Do(ctx, "CLIENT", "PAUSE", "10000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- writer.Set(ctx, "fpause:k", "v", 0).Err() }()
	select {
	case err := <-done:
		t.Fatalf("SET answered during CLIENT PAUSE WRITE: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := admin.Get(ctx, "fpause:k").Err(); err == nil || err.Error() != "redis: nil" {
		t.Errorf("GET during the pause: %v, want nil (the write not yet applied)", err)
	}
	if info := admin.Info(ctx, "clients").Val(); !strings.Contains(info, "blocked_clients:1") {
		t.Errorf("INFO during the pause: %q, want blocked_clients:1", info)
	}
	if err := admin.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("SET after CLIENT UNPAUSE: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("SET still held 5 s after CLIENT UNPAUSE")
	}

	// Inside MULTI, CLIENT PAUSE is queued and starts when the transaction
	// ends, as in redis: the transaction's own writes go through.
	tx := admin.Conn()
	defer tx.Close()
	for _, cmd := range [][]any{{"MULTI"}, {"SET", "fpause:a", "1"}, {"CLIENT", "PAUSE", "10000", "WRITE"}, {"SET", "fpause:b", "2"}} {
		if err := tx.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	if got, err := tx.Do(ctx, "EXEC").Result(); fmt.Sprint(got) != "[OK OK OK]" || err != nil {
		t.Fatalf("EXEC of SET, CLIENT PAUSE, SET: %v, %v", got, err)
	}
	go func() { done <- writer.Set(ctx, "fpause:c", "3", 0).Err() }()
	select {
	case err := <-done:
		t.Fatalf("SET answered after a CLIENT PAUSE WRITE in a transaction: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if got := admin.MGet(ctx, "fpause:a", "fpause:b", "fpause:c").Val(); fmt.Sprint(got) != "[1 2 <nil>]" {
		t.Errorf("during the pause: %v, want the transaction's writes and not the held one", got)
	}
	// CLIENT UNPAUSE inside MULTI; a malformed PAUSE's error in EXEC's array.
	for _, cmd := range [][]any{{"MULTI"}, {"CLIENT", "PAUSE", "10", "SOMETIMES"}, {"CLIENT", "UNPAUSE"}} {
		if err := tx.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	if got, err := tx.Do(ctx, "EXEC").Result(); fmt.Sprint(got) != "[ERR CLIENT PAUSE mode must be WRITE or ALL OK]" || err != nil {
		t.Errorf("EXEC of a malformed CLIENT PAUSE and CLIENT UNPAUSE: %v, %v", got, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("SET after CLIENT UNPAUSE in a transaction: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("SET still held 5 s after CLIENT UNPAUSE in a transaction")
	}
	testPauseExpiry(t, cl)
	// A PAUSE of the wrong arity is refused when queued, as redis does.
	tx.Do(ctx, "MULTI")
	if err := tx.Do(ctx, "CLIENT", "PAUSE").Err(); err == nil || !strings.Contains(err.Error(), "wrong number of arguments for 'client|pause'") {
		t.Errorf("CLIENT PAUSE without a timeout in MULTI: %v", err)
	}
	if err := tx.Do(ctx, "EXEC").Err(); err == nil || !strings.HasPrefix(err.Error(), "EXECABORT") {
		t.Errorf("EXEC after a refused CLIENT PAUSE: %v, want EXECABORT", err)
	}
}

// testPauseExpiry: while an agent's CLIENT PAUSE holds, its redis-server
// expires no key, actively or when it is read (its expired_keys stays), yet
// its reader sees the key gone, and another agent's writes still apply
// there; once the pause ends, reading the key expires it.
func testPauseExpiry(t *testing.T, cl *cluster) {
	ctx := context.Background()
	c, other := client(t, cl.nodes[1].agent.ClientAddr()), client(t, cl.nodes[0].agent.ClientAddr())
	expired := func() int {
		t.Helper()
		for _, line := range strings.Split(c.Info(ctx, "stats").Val(), "\r\n") {
			if v, ok := strings.CutPrefix(line, "expired_keys:"); ok {
				n, _ := strconv.Atoi(v)
				return n
			}
		}
		t.Fatal("INFO stats without expired_keys")
		return 0
	}
	before := expired()
	if err := c.Set(ctx, "fpause:ttl", "v", time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "CLIENT", "PAUSE", "20000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond) // past the TTL: redis's active expiry would have run
	// A snapshot reads the paused server on the applier's connection too.
	if err := cl.nodes[1].agent.Snapshot(); err != nil {
		t.Fatalf("snapshot during the pause: %v", err)
	}
	if err := other.Set(ctx, "fpause:other", "w", 0).Err(); err != nil {
		t.Fatalf("SET through another agent during the pause: %v", err)
	}
	if got := c.MGet(ctx, "fpause:ttl", "fpause:other").Val(); fmt.Sprint(got) != "[<nil> w]" {
		t.Errorf("GET during the pause: %v, want the expired key gone and the other agent's write", got)
	}
	if n := expired(); n != before {
		t.Errorf("expired_keys %d during the pause, want %d as before it", n, before)
	}
	if err := c.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	c.Get(ctx, "fpause:ttl")
	if n := expired(); n < before+1 {
		t.Errorf("expired_keys %d after the pause, want at least %d", n, before+1)
	}
}

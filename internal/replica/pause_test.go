package replica

import (
	"context"
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
}

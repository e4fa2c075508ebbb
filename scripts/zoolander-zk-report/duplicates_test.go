package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// A scrape's shape, as an agent serves it: two replicas' replies and the
// first reply, with the leader line naming the clients' agent.
const before = `gait_replica_follows{leader="r1"} 1
gait_replica_commit_seconds_bucket{le="0.001"} 1
gait_replica_commit_seconds_bucket{le="0.002"} 1
gait_replica_commit_seconds_bucket{le="+Inf"} 1
gait_replica_reply_seconds_bucket{replica="r1",le="0.001"} 1
gait_replica_reply_seconds_bucket{replica="r1",le="0.002"} 1
gait_replica_reply_seconds_bucket{replica="r1",le="+Inf"} 1
gait_replica_reply_seconds_bucket{replica="r2",le="0.001"} 0
gait_replica_reply_seconds_bucket{replica="r2",le="0.002"} 1
gait_replica_reply_seconds_bucket{replica="r2",le="+Inf"} 1
`

const after = `gait_replica_follows{leader="r1"} 1
gait_replica_commit_seconds_bucket{le="0.001"} 5
gait_replica_commit_seconds_bucket{le="0.002"} 9
gait_replica_commit_seconds_bucket{le="+Inf"} 11
gait_replica_reply_seconds_bucket{replica="r1",le="0.001"} 3
gait_replica_reply_seconds_bucket{replica="r1",le="0.002"} 7
gait_replica_reply_seconds_bucket{replica="r1",le="+Inf"} 11
gait_replica_reply_seconds_bucket{replica="r2",le="0.001"} 2
gait_replica_reply_seconds_bucket{replica="r2",le="0.002"} 6
gait_replica_reply_seconds_bucket{replica="r2",le="+Inf"} 11
`

func TestAgentView(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "d2")
	for name, text := range map[string]string{".metrics0": before, ".metrics": after} {
		if err := os.WriteFile(base+name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v, ok := readAgentView(base)
	if !ok || v.self != "r1" || len(v.replicas) != 2 {
		t.Fatalf("view %+v, %v; want r1's, two replicas", v, ok)
	}
	// Ten writes measured: r1 2 within 1 ms and 6 within 2 ms, r2 2 and 5.
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	if got := v.replicas["r1"].cdf(0.0015); !near(got, 0.4) {
		t.Errorf("r1 within 1.5 ms: %g, want 0.4 (halfway from 0.2 to 0.6)", got)
	}
	if got := v.replicas["r2"].cdf(0.002); !near(got, 0.5) {
		t.Errorf("r2 within 2 ms: %g, want 0.5", got)
	}
	if got := v.first.cdf(0.001); !near(got, 0.4) {
		t.Errorf("first reply within 1 ms: %g, want 0.4", got)
	}
	if got := v.first.cdf(1); !near(got, 0.8) {
		t.Errorf("first reply within 1 s: %g, want 0.8 (the rest past the last finite edge)", got)
	}
	if got := v.first.quantile(60); !near(got, 0.0015) {
		t.Errorf("first reply p60: %g, want 1.5 ms", got)
	}
	if _, ok := readAgentView(filepath.Join(dir, "d4")); ok {
		t.Error("a D without metrics gave a view")
	}
}

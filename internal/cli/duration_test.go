package cli

import (
	"strings"
	"testing"
)

// TestDurationsNeedAUnit: a bare number where gait reads a duration is
// refused everywhere with the same error, rather than taken for seconds
// in one place (model --bound 10 was 10 s, a 100% SLA) and refused in
// another (analyze --bound 10).
func TestDurationsNeedAUnit(t *testing.T) {
	const want = `"10": a duration needs a unit, such as 10ms or 10s`
	for _, args := range [][]string{
		{"model", "predict", "--service", "exp:2ms", "--bound", "10", "--utilization", "0.1"},
		{"model", "predict", "--service", "exp:10", "--bound", "10ms", "--utilization", "0.1"},
		{"model", "predict", "--service", "10", "--bound", "10ms", "--utilization", "0.1"},
		{"model", "predict", "--service", "exp:2ms", "--net", "10", "--bound", "10ms", "--utilization", "0.1"},
		{"model", "plan", "--service", "exp:1ms", "--target", "99.9%@10", "--rate", "100"},
		{"analyze", "../../testdata/traces/redis-loopback.csv", "--bound", "10"},
		{"load", "--addr", "127.0.0.1:1", "--out", t.TempDir() + "/x", "--duration", "10"},
		{"emulate", "mount", t.TempDir(), "--store", t.TempDir(), "--latency", "10"},
	} {
		_, stderr, err := runGait(args...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("gait %s: %v %s\nwant the error %s", strings.Join(args, " "), err, stderr, want)
		}
	}
}

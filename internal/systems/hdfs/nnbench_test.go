package hdfs

import (
	"testing"
	"time"
)

func TestParseNNBench(t *testing.T) {
	out := `08:30:01.000 INFO NNThroughputBenchmark: Starting benchmark: create
08:30:05.000 INFO NNThroughputBenchmark: --- create inputs ---
08:30:05.000 INFO NNThroughputBenchmark: nrFiles = 1000
08:30:05.000 INFO NNThroughputBenchmark: --- create stats  ---
08:30:05.000 INFO NNThroughputBenchmark: # operations: 1000
08:30:05.000 INFO NNThroughputBenchmark: Elapsed Time: 250
08:30:05.000 INFO NNThroughputBenchmark:  Ops per sec: 4000.0
08:30:05.000 INFO NNThroughputBenchmark: Average Time: 3
`
	r, err := parseNNBench(out)
	if err != nil {
		t.Fatal(err)
	}
	want := NNBenchResult{Op: "create", Ops: 1000, Elapsed: 250 * time.Millisecond, OpsPerSec: 4000, AvgTime: 3 * time.Millisecond}
	if r != want {
		t.Errorf("got %+v, want %+v", r, want)
	}
	for name, bad := range map[string]string{
		"no stats":     "08:30:01.000 INFO NNThroughputBenchmark: Starting benchmark: create\n",
		"cut short":    out[:len(out)-60],
		"not a number": "--- open stats  ---\n# operations: 1000\nElapsed Time: 250\n Ops per sec: NaNx\nAverage Time: 3\n",
		"no ops":       "--- open stats  ---\n# operations: 0\nElapsed Time: 0\n Ops per sec: 0\nAverage Time: 0\n",
	} {
		if _, err := parseNNBench(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

package hdfs

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gait-dev/gait/internal/systems"
)

// nnBenchClass is Hadoop's own NameNode benchmark, from hadoop-hdfs's test
// jar (java/hadoop/pom.xml fetches it). Given -fs hdfs://..., it drives a
// running NameNode over RPC from many threads, with no DataNode and no data
// path: what it measures is the NameNode alone.
const nnBenchClass = "org.apache.hadoop.hdfs.server.namenode.NNThroughputBenchmark"

// NNBenchConf is what a NameNode needs for NNThroughputBenchmark to run
// against it remotely: the benchmark's files have 16-byte blocks, below
// Hadoop's default minimum (its usage text says the same). Its blockReport
// op must also be given -blockSize 16: its simulated DataNodes offer 100 MB
// each, and a block of Hadoop's default 128 MiB fits on none of them.
var NNBenchConf = map[string]string{"dfs.namenode.fs-limits.min-block-size": "16"}

// NNBenchResult is what NNThroughputBenchmark printed for one operation.
type NNBenchResult struct {
	Op        string
	Ops       int64         // "# operations"
	Elapsed   time.Duration // "Elapsed Time", the wall time of all threads' ops
	OpsPerSec float64       // "Ops per sec"
	AvgTime   time.Duration // "Average Time", per op per thread
}

var nnBenchRuns atomic.Int64 // names each run's process (and its log) apart

// NNBench runs NNThroughputBenchmark with args (for example "-op",
// "create", "-threads", "16", "-files", "100000") on the NameNode's host
// against the NameNode, waits for it to end, and returns its results. The
// NameNode must have been started with NNBenchConf. The benchmark's JVM
// shares the NameNode's host and CPUs; its RPCs stay inside that host.
func (c *Cluster) NNBench(ctx context.Context, args ...string) (NNBenchResult, error) {
	h := c.nn.host
	argv := append([]string{c.d.Java}, JVMFlags...)
	argv = append(argv, "-Xmx2g", "-XX:+UseParallelGC", systems.JavaTmpFlag(dir(h)), "-cp", c.d.classPath(h), nnBenchClass, "-fs", FSURI(h))
	argv = append(argv, args...)
	p, err := h.Start(fmt.Sprintf("nnbench-%d", nnBenchRuns.Add(1)), argv, nil)
	if err != nil {
		return NNBenchResult{}, fmt.Errorf("hdfs NNThroughputBenchmark: %w", err)
	}
	for !p.Exited() {
		select {
		case <-ctx.Done():
			p.Stop()
			return NNBenchResult{}, fmt.Errorf("hdfs NNThroughputBenchmark %s: %w", strings.Join(args, " "), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	// Its stats are in its log, on the NameNode host's machine.
	_, out, err := systems.Output(h, p)
	if err != nil {
		return NNBenchResult{}, fmt.Errorf("hdfs NNThroughputBenchmark: %w", err)
	}
	r, err := parseNNBench(out)
	if err != nil {
		return r, fmt.Errorf("hdfs NNThroughputBenchmark %s: %w%s%s", strings.Join(args, " "), err, firstException(out), systems.LogTail(p))
	}
	return r, nil
}

// parseNNBench reads the stats block NNThroughputBenchmark logs at the end
// of an operation:
//
//	--- create stats  ---
//	# operations: 10000
//	Elapsed Time: 1874
//	 Ops per sec: 5336.179295624333
//	Average Time: 5
//
// each line behind the logger's prefix. Only the last block counts (one
// operation per run).
func parseNNBench(out string) (NNBenchResult, error) {
	var r NNBenchResult
	seen := 0
	for _, line := range strings.Split(out, "\n") {
		if i := strings.Index(line, "--- "); i >= 0 && strings.HasSuffix(strings.TrimSpace(line), "stats  ---") {
			r = NNBenchResult{Op: strings.Fields(line[i+4:])[0]}
			seen = 0
			continue
		}
		for _, f := range []struct {
			label string
			set   func(float64)
		}{
			{"# operations:", func(v float64) { r.Ops = int64(v) }},
			{"Elapsed Time:", func(v float64) { r.Elapsed = time.Duration(v * float64(time.Millisecond)) }},
			{"Ops per sec:", func(v float64) { r.OpsPerSec = v }},
			{"Average Time:", func(v float64) { r.AvgTime = time.Duration(v * float64(time.Millisecond)) }},
		} {
			i := strings.Index(line, f.label)
			if i < 0 || r.Op == "" {
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(line[i+len(f.label):]), 64)
			if err != nil {
				return r, fmt.Errorf("its line %q: %w", strings.TrimSpace(line), err)
			}
			f.set(v)
			seen++
		}
	}
	if r.Op == "" || seen < 4 {
		return r, fmt.Errorf("no results in its output (a stats block with 4 lines)")
	}
	if r.Ops <= 0 {
		return r, fmt.Errorf("it ran no %s operations", r.Op)
	}
	return r, nil
}

// firstException is the first line of out naming an exception: the cause,
// which a stack trace's last lines do not show.
func firstException(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "Exception") {
			return "; first exception: " + strings.TrimSpace(line)
		}
	}
	return ""
}

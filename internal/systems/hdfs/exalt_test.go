package hdfs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/testbed"
)

// The Exalt case study's NameNode measurements, with Hadoop's own
// NNThroughputBenchmark as the load (so no DataNode or client data path
// shares the CPU with the NameNode). They are measurements, not part of
// make test: each runs only when GAIT_EXALT names it (ops, dir, heap) and
// writes its rows as JSON lines to $GAIT_EXALT_OUT/<name>.jsonl, which
// scripts/exalt-figures draws. scripts/exalt-nnbench.sh runs them.

// exaltPeer is one NameNode configuration compared.
type exaltPeer struct {
	Handlers int  `json:"handlers"`
	FGL      bool `json:"fgl"`
}

func (p exaltPeer) String() string {
	lock := "global"
	if p.FGL {
		lock = "fgl"
	}
	return fmt.Sprintf("%s lock, %d handlers", lock, p.Handlers)
}

// exaltWants says whether GAIT_EXALT names part; the rows go to the file
// it returns.
func exaltWants(t *testing.T, part string) *os.File {
	t.Helper()
	if !slices.Contains(strings.Split(os.Getenv("GAIT_EXALT"), ","), part) {
		t.Skipf("GAIT_EXALT does not name %q: a measurement, not part of make test", part)
	}
	dir := os.Getenv("GAIT_EXALT_OUT")
	if dir == "" {
		t.Fatal("GAIT_EXALT_OUT unset: the directory for the results")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, part+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func emit(t *testing.T, f *os.File, row any) {
	t.Helper()
	b, err := json.Marshal(row)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive whole number", name, s)
	}
	return n
}

// exaltTestbed is two testbed hosts, one for the NameNode (and the
// benchmark, which talks to it inside that host) and one for a DataNode,
// since the driver starts none without. Peers reuse them: Start formats a
// new namespace each time.
func exaltTestbed(t *testing.T) []systems.Host {
	t.Helper()
	// GAIT_EXALT_TESTBED keeps the hosts' logs in that directory.
	_, hosts := upTestbed(t, testbed.Options{Hosts: 2, Dir: os.Getenv("GAIT_EXALT_TESTBED")})
	return hosts
}

// exaltStart starts a NameNode configured as p, with conf added, and one
// DataNode.
func exaltStart(t *testing.T, hosts []systems.Host, p exaltPeer, heap string, conf map[string]string) *Cluster {
	t.Helper()
	d := driver(t)
	d.Handlers, d.FineGrainedLock = p.Handlers, p.FGL
	d.NameNodeJVM = []string{"-Xms256m", "-Xmx" + heap, "-XX:+UseParallelGC"}
	d.Conf = map[string]string{}
	for k, v := range NNBenchConf {
		d.Conf[k] = v
	}
	for k, v := range conf {
		d.Conf[k] = v
	}
	c, err := d.Start(context.Background(), hosts)
	if err != nil {
		t.Fatal(err)
	}
	return c.(*Cluster)
}

func nnBench(t *testing.T, c *Cluster, args ...string) NNBenchResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	r, err := c.NNBench(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var exaltPeers = []exaltPeer{{10, false}, {256, false}, {10, true}, {256, true}}

// TestExaltOps measures the NameNode's operations per second under
// NNThroughputBenchmark for every peer (10 and 256 handlers, global and
// fine-grained lock), GAIT_EXALT_ROUNDS rounds, the peers' order rotated
// each round so that none always runs first or last on a shared machine.
func TestExaltOps(t *testing.T) {
	f := exaltWants(t, "ops")
	rounds := envInt(t, "GAIT_EXALT_ROUNDS", 2)
	n := strconv.Itoa(envInt(t, "GAIT_EXALT_FILES", 20000))
	threads := strconv.Itoa(envInt(t, "GAIT_EXALT_THREADS", 256))
	ops := [][]string{
		{"-op", "create", "-threads", threads, "-files", n, "-close"},
		{"-op", "mkdirs", "-threads", threads, "-dirs", n},
		{"-op", "open", "-threads", threads, "-files", n},
		{"-op", "fileStatus", "-threads", threads, "-files", n},
		{"-op", "delete", "-threads", threads, "-files", n},
	}
	if only := os.Getenv("GAIT_EXALT_OPS"); only != "" {
		ops = slices.DeleteFunc(ops, func(op []string) bool { return !slices.Contains(strings.Split(only, ","), op[1]) })
	}
	hosts := exaltTestbed(t)
	for round := range rounds {
		for i := range exaltPeers {
			p := exaltPeers[(i+round)%len(exaltPeers)]
			c := exaltStart(t, hosts, p, "2g", nil)
			for _, op := range ops {
				r := nnBench(t, c, op...)
				t.Logf("round %d, %v: %s %d ops, %.0f ops/s", round, p, r.Op, r.Ops, r.OpsPerSec)
				emit(t, f, map[string]any{"round": round, "handlers": p.Handlers, "fgl": p.FGL, "op": r.Op, "ops": r.Ops, "ops_per_sec": r.OpsPerSec, "elapsed_ms": r.Elapsed.Milliseconds()})
			}
			c.Stop()
		}
	}
}

// TestExaltOneDirectory creates GAIT_EXALT_DIR_FILES empty files (create
// and close) in ONE directory with NNThroughputBenchmark, and samples the
// NameNode's FilesTotal once a second while it runs: the creates per
// second as the directory grows, for the global and the fine-grained lock
// (256 handlers), one after the other.
func TestExaltOneDirectory(t *testing.T) {
	f := exaltWants(t, "dir")
	n := strconv.Itoa(envInt(t, "GAIT_EXALT_DIR_FILES", 1000000))
	hosts := exaltTestbed(t)
	for _, p := range []exaltPeer{{256, false}, {256, true}} {
		c := exaltStart(t, hosts, p, "4g", nil)
		done := make(chan NNBenchResult, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			r, err := c.NNBench(ctx, "-op", "create", "-threads", "64", "-files", n, "-filesPerDir", n, "-close")
			if err != nil {
				t.Error(err)
			}
			done <- r
		}()
		t0 := time.Now()
		var r NNBenchResult
	sample:
		for {
			select {
			case r = <-done:
				break sample
			case <-time.After(time.Second):
			}
			ts := time.Since(t0).Seconds()
			m, err := nameNodeMetrics1(c)
			if err != nil {
				continue // a missed sample: the NameNode was too busy to answer in time
			}
			emit(t, f, map[string]any{"handlers": p.Handlers, "fgl": p.FGL, "t": ts, "files": m["FilesTotal"], "heap_mb": m["MemHeapUsedM"], "rpc_queue_ms": m["RpcQueueTimeAvgTime"], "rpc_processing_ms": m["RpcProcessingTimeAvgTime"]})
		}
		t.Logf("%v: %d creates in one directory, %.0f/s overall", p, r.Ops, r.OpsPerSec)
		emit(t, f, map[string]any{"handlers": p.Handlers, "fgl": p.FGL, "total_ops": r.Ops, "ops_per_sec": r.OpsPerSec, "elapsed_ms": r.Elapsed.Milliseconds()})
		c.Stop()
	}
}

// TestExaltHeap writes files of small blocks (GAIT_EXALT_HEAP_BLOCK bytes,
// default 4 KiB) through HDFS's client to 3 DataNodes with replication 3
// on emulating stores (a scenario's storage: emulated), in
// GAIT_EXALT_HEAP_STEPS steps of GAIT_EXALT_HEAP_FILES 1 MiB files, and
// after each step forces two full GCs of the NameNode (jcmd GC.run) and
// reads the heap it uses and its BlocksTotal: NameNode heap against
// blocks, and so against stored capacity at any block size. The blocks
// are small so that this machine reaches many of them; a block's heap in
// the NameNode does not depend on its length.
func TestExaltHeap(t *testing.T) {
	f := exaltWants(t, "heap")
	blockSize := envInt(t, "GAIT_EXALT_HEAP_BLOCK", 4096)
	steps := envInt(t, "GAIT_EXALT_HEAP_STEPS", 3)
	files := envInt(t, "GAIT_EXALT_HEAP_FILES", 12)
	d := driver(t)
	d.BlockSize = int64(blockSize)
	d.Conf = map[string]string{"dfs.namenode.fs-limits.min-block-size": strconv.Itoa(blockSize)}
	d.NameNodeJVM = []string{"-Xms256m", "-Xmx4g", "-XX:+UseParallelGC"}
	c, _, hosts := startOn(t, d, testbed.Options{Hosts: 4, Emulate: true, Dir: os.Getenv("GAIT_EXALT_TESTBED")})
	const clients = 8
	cls := make([]load.Client, clients)
	for i := range cls {
		cl, err := c.Client(hosts[0].Name())
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		cls[i] = cl
	}
	for step := range steps + 1 {
		if step > 0 {
			t0 := time.Now()
			var wg sync.WaitGroup
			errs := make([]error, clients)
			for w, cl := range cls {
				wg.Go(func() {
					for i := w; i < files && errs[w] == nil; i += clients {
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
						errs[w] = cl.Do(ctx, loadOp(opWrite, fmt.Sprintf("s%d-%d", step, i), 1<<20))
						cancel()
					}
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			t.Logf("step %d: %d files of 1 MiB in %d-byte blocks written in %v", step, files, blockSize, time.Since(t0).Round(time.Millisecond))
		}
		heap, m := nameNodeHeap(t, c)
		classes := blockClasses(t, c)
		t.Logf("step %d: BlocksTotal %.0f, FilesTotal %.0f, CapacityUsed %.0f, heap used after full GC %d bytes; %v", step, m["BlocksTotal"], m["FilesTotal"], m["CapacityUsed"], heap, classes)
		emit(t, f, map[string]any{"step": step, "block_size": blockSize, "blocks": m["BlocksTotal"], "files": m["FilesTotal"], "capacity_used": m["CapacityUsed"], "heap_bytes": heap, "classes": classes})
	}
}

// nameNodeHeap forces two full GCs of c's NameNode (the first may leave
// what finalizers free), then returns the heap it uses, read live from the
// JVM's Memory bean, and its metrics. Hadoop's own metrics (BlocksTotal)
// are cached for 10 s behind JMX, so it waits that long first.
func nameNodeHeap(t *testing.T, c *Cluster) (int64, map[string]float64) {
	t.Helper()
	time.Sleep(11 * time.Second)
	for range 2 {
		if out, err := exec.Command("jcmd", strconv.Itoa(c.nn.Current().Pid()), "GC.run").CombinedOutput(); err != nil {
			t.Fatalf("jcmd GC.run: %v: %s", err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	beans, err := jmx(ctx, httpAddr(c.nn), "java.lang:type=Memory")
	if err != nil || len(beans) != 1 {
		t.Fatalf("java.lang:type=Memory: %v (%d beans)", err, len(beans))
	}
	var mem struct{ HeapMemoryUsage struct{ Used int64 } }
	if err := json.Unmarshal(beans[0], &mem); err != nil {
		t.Fatal(err)
	}
	m, err := nameNodeMetrics1(c)
	if err != nil {
		t.Fatal(err)
	}
	return mem.HeapMemoryUsage.Used, m
}

// nameNodeMetrics1 is the NameNode's part of Metrics, without the host
// label: DataNodes too busy to answer /jmx in time (on two cores shared
// with other work) must not cost a NameNode sample.
func nameNodeMetrics1(c *Cluster) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), jmxTimeout)
	defer cancel()
	m := map[string]float64{}
	for _, w := range nameNodeMetrics {
		beans, err := jmx(ctx, httpAddr(c.nn), w.query)
		if err != nil {
			return nil, err
		}
		pick(beans, w.attrs, "", m)
	}
	out := map[string]float64{}
	for k, v := range m {
		out[strings.TrimSuffix(k, "{host=}")] = v
	}
	return out, nil
}

// blockClasses is the live bytes, from a class histogram of the NameNode
// (jcmd GC.class_histogram, after a full GC), of the classes that grow
// with blocks: the block itself (BlockInfoContiguous), its replica
// triplets (Object[]: a storage and two list links per replica), and the
// files' block arrays (BlockInfo[]). Their growth per block is the heap a
// block costs, exactly, where the heap used as a whole moves by more than
// that between samples on a busy machine.
func blockClasses(t *testing.T, c *Cluster) map[string]int64 {
	t.Helper()
	out, err := exec.Command("jcmd", strconv.Itoa(c.nn.Current().Pid()), "GC.class_histogram").CombinedOutput()
	if err != nil {
		t.Fatalf("jcmd GC.class_histogram: %v: %s", err, out)
	}
	want := map[string]string{
		"org.apache.hadoop.hdfs.server.blockmanagement.BlockInfoContiguous": "BlockInfoContiguous",
		"[Ljava.lang.Object;": "Object[]",
		"[Lorg.apache.hadoop.hdfs.server.blockmanagement.BlockInfo;": "BlockInfo[]",
		"org.apache.hadoop.hdfs.server.namenode.INodeFile":           "INodeFile",
	}
	classes := map[string]int64{}
	for _, line := range strings.Split(string(out), "\n") {
		// "  36:   743   47552  org.apache...BlockInfoContiguous (module)"
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		if name, ok := want[f[3]]; ok {
			if b, err := strconv.ParseInt(f[2], 10, 64); err == nil {
				classes[name] = b
			}
		}
	}
	return classes
}

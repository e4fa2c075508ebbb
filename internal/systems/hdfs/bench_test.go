package hdfs

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/load"
)

// The Exalt case study on this machine's real HDFS (docs/hdfs.md): these
// benchmarks start a cluster per case, in a parent benchmark that runs
// once, so that the timed sub-benchmark's b.N rounds share it, and time
// b.N operations issued by benchClients clients at once. Run them on purpose, e.g.
//
//	go test -run '^$' -bench 'Write' -benchtime 64x ./internal/systems/hdfs/
//
// GAIT_HDFS_BENCH_DATANODES lists the DataNode counts (default 3,9).

const benchClients = 16

func benchDataNodes(b *testing.B) []int {
	spec := os.Getenv("GAIT_HDFS_BENCH_DATANODES")
	if spec == "" {
		spec = "3,9"
	}
	var out []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			b.Fatalf("GAIT_HDFS_BENCH_DATANODES: %q is not a DataNode count", f)
		}
		out = append(out, n)
	}
	return out
}

// drive issues b.N ops of kind, size bytes each, spread over benchClients
// clients of c, and times them.
func drive(b *testing.B, c *Cluster, kind, size int) {
	b.Helper()
	var next atomic.Int64
	errs := make([]error, benchClients)
	clients := make([]load.Client, benchClients)
	for i := range clients {
		cl, err := c.Client(c.nn.host.Name())
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		clients[i] = cl
	}
	b.SetBytes(int64(size))
	b.ResetTimer()
	var wg sync.WaitGroup
	for w, cl := range clients {
		wg.Go(func() {
			for errs[w] == nil {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				errs[w] = cl.Do(ctx, loadOp(kind, fmt.Sprintf("b%d", i), size))
				cancel()
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkWrite: aggregate write throughput of 1 MiB files against the
// number of DataNodes, with the NameNode's 10 RPC handlers (Hadoop's
// default) and with 256.
func BenchmarkWrite(b *testing.B) {
	for _, dns := range benchDataNodes(b) {
		for _, handlers := range []int{10, 256} {
			b.Run(fmt.Sprintf("datanodes=%d/handlers=%d", dns, handlers), func(b *testing.B) {
				d := driver(b)
				d.Handlers = handlers
				c, _ := start(b, d, dns+1)
				b.Run("1MiB", func(b *testing.B) { drive(b, c, opWrite, 1<<20) })
			})
		}
	}
}

// BenchmarkCreate: creates of small files, all in one directory, with the
// NameNode's global namesystem lock and with the fine-grained one
// (HDFS-17366), 10 and 256 handlers.
func BenchmarkCreate(b *testing.B) {
	for _, fgl := range []bool{false, true} {
		for _, handlers := range []int{10, 256} {
			b.Run(fmt.Sprintf("fgl=%v/handlers=%d", fgl, handlers), func(b *testing.B) {
				d := driver(b)
				d.Handlers, d.FineGrainedLock = handlers, fgl
				c, _ := start(b, d, 4)
				b.Run("1B", func(b *testing.B) { drive(b, c, opCreate, 1) })
			})
		}
	}
}

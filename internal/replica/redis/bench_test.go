package redis

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/replica"
	"github.com/gait-dev/gait/internal/resp"
	goredis "github.com/redis/go-redis/v9"
)

// BenchmarkWrite sets keys through the leader of 3 voters from parallel
// clients (-cpu sets how many per core) and reports the group commit: log
// entries per append and per redis batch on the leader.
func BenchmarkWrite(b *testing.B) {
	benchDeployment(b, replica.DurableDisk, func(ctx context.Context, c *goredis.Client, i int) error {
		return c.Set(ctx, "k"+strconv.Itoa(i%1000), i, 0).Err()
	})
}

// BenchmarkLinearizableRead gets keys through the leader with linearizable reads.
func BenchmarkLinearizableRead(b *testing.B) {
	benchDeployment(b, "", func(ctx context.Context, c *goredis.Client, i int) error {
		err := c.Get(ctx, "k"+strconv.Itoa(i%1000)).Err()
		if err == goredis.Nil {
			return nil
		}
		return err
	})
}

// BenchmarkWriteReplicated is BenchmarkWrite with --durability replicated.
func BenchmarkWriteReplicated(b *testing.B) {
	benchDeployment(b, replica.DurableReplicated, func(ctx context.Context, c *goredis.Client, i int) error {
		return c.Set(ctx, "k"+strconv.Itoa(i%1000), i, 0).Err()
	})
}

// BenchmarkPipelinedSet sends SETs in pipelines of 1000 through the
// leader from one client, as redis-cli --pipe does (--durability
// replicated): the agents' CPU per pipelined command.
func BenchmarkPipelinedSet(b *testing.B) {
	leader := startCluster(b, 3, 0, func(c *replica.Config) { c.Durability = replica.DurableReplicated }).nodes[0].agent
	c := goredis.NewClient(&goredis.Options{Addr: leader.ClientAddr(), PoolSize: 1, MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	cpu := cpuTime(b)
	b.ResetTimer()
	for i := 0; i < b.N; i += 1000 {
		p := c.Pipeline()
		for j := i; j < min(i+1000, b.N); j++ {
			p.Set(ctx, "k"+strconv.Itoa(j), "v", 0)
		}
		if _, err := p.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N)/1e3, "cpu-µs/op")
}

// benchDeployment runs op from parallel clients through the leader of 3
// voters; durability is "" for reads.
func benchDeployment(b *testing.B, durability replica.Durability, op func(context.Context, *goredis.Client, int) error) {
	leader := startCluster(b, 3, 0, func(c *replica.Config) { c.Durability = durability }).nodes[0].agent
	b.SetParallelism(4)
	cpu := cpuTime(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := goredis.NewClient(&goredis.Options{Addr: leader.ClientAddr(), PoolSize: 1, MaxRetries: -1})
		defer c.Close()
		for i := 0; pb.Next(); i++ {
			if err := op(context.Background(), c, i); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	// The process's CPU (three agents and the clients, not the
	// redis-servers) per operation: less disturbed than time by whatever
	// else shares the machine.
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N)/1e3, "cpu-µs/op")
	if durability == "" {
		return
	}
	mean := func(name, stage string) float64 { _, v := metric(b, leader, name, stage); return v }
	b.ReportMetric(mean("log_append_entries", ""), "entries/append")
	b.ReportMetric(mean("apply_entries", ""), "entries/apply")
	// Where a write's time goes on the leader (docs/replica.md's stages).
	for _, s := range []string{"request_read", "commit", "apply_queue", "server", "reply"} {
		b.ReportMetric(1e6*mean("write_stage_seconds", s), s+"-µs")
	}
}

// cpuTime is the CPU time this process used so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReadBulks reads a pipelined 3-argument request of 1 KiB values,
// the request path's hot loop, through readCommand.
func BenchmarkReadBulks(b *testing.B) {
	value := strings.Repeat("v", 1024)
	req := "*3\r\n$3\r\nSET\r\n$8\r\nkey:1234\r\n$1024\r\n" + value + "\r\n"
	stream := strings.Repeat(req, 1000)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		rd := resp.NewReader(strings.NewReader(stream), 32<<20, 1<<20)
		for range 1000 {
			if _, err := rd.ReadCommand(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

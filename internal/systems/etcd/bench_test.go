package etcd

import (
	"context"
	"testing"

	"github.com/gait-dev/gait/internal/load"
)

// BenchmarkOps times one request of each kind, one at a time, through a
// follower of a 3-member loopback cluster.
func BenchmarkOps(b *testing.B) {
	c, _ := startCluster(b, 3)
	_, followers := roles(b, c)
	cl, err := c.Client(followers[0])
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	value := make([]byte, 1024)
	for kind, name := range Ops {
		b.Run(name, func(b *testing.B) {
			op := load.Op{Kind: uint8(kind), Key: "key:1", Value: value}
			for b.Loop() {
				if err := cl.Do(context.Background(), op); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMetrics times one scrape of all three members.
func BenchmarkMetrics(b *testing.B) {
	c, _ := startCluster(b, 3)
	for b.Loop() {
		if _, err := c.Metrics(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

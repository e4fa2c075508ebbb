package redis

import (
	"io"
	"log"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/replica"
	"github.com/gait-dev/gait/internal/resp"
)

// BenchmarkApplyBacklog applies a backlog of 20,000 committed writes to a
// redis-server through the backend, as the core's applier does when a
// restarted replica, or one behind a limping link, catches up: six SETs,
// an RPUSH and a BLPOP attempt that pops it, over and over (the attempt
// goes to redis alone, so runs are four entries long on average). It
// reports the entries applied per second.
func BenchmarkApplyBacklog(b *testing.B) {
	srv := plainRedis(b)
	reads := newRedisMux(srv.Addr, 1)
	defer reads.close()
	be, err := openRedis(srv.Addr, new(atomic.Int64), reads, log.New(io.Discard, "", 0))
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	const backlog = 20000
	blpop := words("BLPOP q 0")
	_, n, after := (&attempt{md: defaultMode}).payload(blpop)
	batch := make([]replica.Committed, backlog)
	entries := 0
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		proposer := "p#" + strconv.Itoa(i) // a new client each round: no attempt is seen twice
		for j := range batch {
			rec := redisRecord{replies: 1, payload: resp.AppendCommand(nil, []byte("SET"), []byte("k"+strconv.Itoa(j%100)), []byte("v"))}
			switch j % 8 {
			case 6:
				rec.payload = resp.AppendCommand(nil, []byte("RPUSH"), []byte("q"), []byte("v"))
			case 7:
				rec = redisRecord{replies: n, after: after, block: &attempt{at: time.Now().UnixMilli(), md: defaultMode, args: blpop}}
			}
			batch[j] = replica.Committed{Index: uint64(i*backlog + j + 1), Proposer: proposer, Seq: uint64(j + 1), Data: rec.encode()}
		}
		b.StartTimer()
		for rest := batch; len(rest) > 0; {
			res, err := be.Apply(rest)
			if err != nil {
				b.Fatal(err)
			}
			rest = rest[len(res):]
		}
		entries += backlog
	}
	b.ReportMetric(float64(entries)/b.Elapsed().Seconds(), "entries/s")
}

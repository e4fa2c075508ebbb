package replica

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/gait-dev/gait/internal/replica/limp"
	"github.com/hashicorp/raft"
)

// timedLogStore measures how long appends to the raft log take (each ends
// with an fsync): the agents compare these times to find a limping disk.
type timedLogStore struct {
	raft.LogStore
	observe func(d time.Duration, entries int)
	mean    atomic.Uint64 // float64 bits: smoothed seconds per append
}

func (s *timedLogStore) StoreLogs(logs []*raft.Log) error {
	start := time.Now()
	err := s.LogStore.StoreLogs(logs)
	d := time.Since(start)
	s.mean.Store(math.Float64bits(limp.EWMA(s.meanSeconds(), d.Seconds())))
	if s.observe != nil {
		s.observe(d, len(logs))
	}
	return err
}

func (s *timedLogStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// meanSeconds is the smoothed time of one append; 0 before the first.
func (s *timedLogStore) meanSeconds() float64 {
	if s == nil {
		return 0
	}
	return math.Float64frombits(s.mean.Load())
}

package replica

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
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
	s.smooth(d)
	if s.observe != nil {
		s.observe(d, len(logs))
	}
	return err
}

// smooth adds one append's time to the mean: with DurableReplicated, that
// of each background fsync, so that a slow disk still shows.
func (s *timedLogStore) smooth(d time.Duration) {
	s.mean.Store(math.Float64bits(limp.EWMA(s.meanSeconds(), d.Seconds())))
}

// logDir holds raft's log (wal.go) in the data directory, apart from
// raft.db (raft's stable store: terms and votes, always fsynced, since a
// voter that forgot its vote could elect two leaders in one term). Either
// durability may reopen a directory the other made: the log's records are
// checked on open, and a torn tail is cut off.
const logDir = "log"

// openLog opens raft's log, fsynced on every append with DurableDisk.
func (a *Agent) openLog(dir string) (*walLog, error) {
	_, err := os.Stat(filepath.Join(dir, "raft-log.db"))
	last, lerr := a.store.LastIndex()
	if err == nil || lerr != nil || last > 0 {
		return nil, fmt.Errorf("data directory %s holds a raft log in BoltDB, as gait before the log in %s/ kept it; start the agent with a fresh directory", dir, logDir)
	}
	return openWAL(filepath.Join(dir, logDir), a.cfg.Durability == DurableDisk)
}

// syncLog fsyncs the unsynced log every syncInterval until the agent closes.
func (a *Agent) syncLog() {
	t := time.NewTicker(syncInterval)
	defer t.Stop()
	for {
		select {
		case <-a.done:
			return
		case <-t.C:
			start := time.Now()
			if err := a.logStore.Sync(); err != nil {
				a.logger.Printf("fsync raft log: %v", err)
				continue
			}
			a.logs.smooth(time.Since(start))
		}
	}
}

func (s *timedLogStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// meanSeconds is the smoothed time of one append; 0 before the first.
func (s *timedLogStore) meanSeconds() float64 {
	if s == nil {
		return 0
	}
	return math.Float64frombits(s.mean.Load())
}

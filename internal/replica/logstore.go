package replica

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/replica/limp"
	"github.com/hashicorp/raft"
)

// timedLogStore measures how long appends to the raft log take (each ends
// with an fsync): the agents compare these times to find a limping disk.
type timedLogStore struct {
	raft.LogStore
	observe func(d time.Duration, entries int)
	// syncedLater is set with DurableReplicated: an append is then a write
	// to the page cache, and only the background fsyncs tell the disk's
	// speed. Counting appends too would let the least time hide a slow disk.
	syncedLater bool
	mu          sync.Mutex
	least       *limp.Least    // the least append of the last 1 to 2 s (appendWindow)
	p75         *limp.DiskTime // appends' 75th percentile (p75Window)
	grows       *limp.Rate     // bytes appended per second (logRateWindow)
	// busySince is when the disk operation in flight began (zero when
	// none): an append slower than the window leaves nothing in it, and a
	// disk at 1000x, whose appends take seconds, read as idle and fine.
	busySince time.Time
	// writeStart and written are the first start and the entries of the
	// WriteLogs not yet handed to a SyncLogs, and syncEnd is when the last
	// SyncLogs returned: raft's leader writes in its leader loop and syncs
	// in a goroutine of its own, one sync at a time, each covering what
	// was written before it began.
	writeStart, syncEnd time.Time
	written             int
}

// appendWindow is how long the least append time is kept: longer than the
// limp tracker's hold would only delay finding a limping disk.
const appendWindow = time.Second

// logRateWindow is the window of the log's byte rate: a leader paces a
// limping follower by it (limp.Tracker.ObserveLogRate), so it follows a
// change of load a second or two later.
const logRateWindow = time.Second

// p75Window is the window of the appends' 75th percentile: the limp
// tracker's hold confirms it over two.
const p75Window = 500 * time.Millisecond

func (s *timedLogStore) StoreLogs(logs []*raft.Log) error {
	start := time.Now()
	s.mu.Lock()
	s.countBytesLocked(logs, start)
	if !s.syncedLater {
		s.busySince = start // as diskBusy, under the same lock
	}
	s.mu.Unlock()
	err := s.LogStore.StoreLogs(logs)
	d := time.Since(start)
	if !s.syncedLater {
		s.observeDisk(d)
	}
	if s.observe != nil {
		s.observe(d, len(logs))
	}
	return err
}

// DeferredSync, WriteLogs and SyncLogs pass raft.DeferredSyncLogStore on to
// the log, timed as one append from the first write a sync covers to the
// end of that sync (raft's leader sends the entries in between), less the
// time the write waited for the sync before it: the disk's time, as
// StoreLogs times it.
func (s *timedLogStore) DeferredSync() bool {
	d, ok := s.LogStore.(raft.DeferredSyncLogStore)
	return ok && d.DeferredSync()
}

func (s *timedLogStore) WriteLogs(logs []*raft.Log) error {
	now := time.Now()
	s.mu.Lock()
	s.countBytesLocked(logs, now)
	if s.written == 0 {
		s.writeStart = now
		if s.busySince.IsZero() {
			s.busySince = now
		}
	}
	s.written += len(logs)
	s.mu.Unlock()
	return s.LogStore.(raft.DeferredSyncLogStore).WriteLogs(logs)
}

func (s *timedLogStore) SyncLogs() error {
	s.mu.Lock()
	start, n := s.writeStart, s.written
	if s.syncEnd.After(start) {
		start = s.syncEnd
	}
	s.written = 0
	s.mu.Unlock()
	err := s.LogStore.(raft.DeferredSyncLogStore).SyncLogs()
	if n == 0 {
		return err // the last sync took these writes: no disk time here
	}
	end := time.Now()
	d := end.Sub(start)
	s.observeDisk(d)
	s.mu.Lock()
	s.syncEnd = end
	if s.written > 0 {
		s.busySince = end // written meanwhile: the next sync begins now
	}
	s.mu.Unlock()
	if s.observe != nil {
		s.observe(d, n)
	}
	return err
}

// observeDisk adds one time the disk took to the least kept over
// appendWindow and the 75th percentile over p75Window: an fsynced
// append's, or with DurableReplicated a background fsync's.
func (s *timedLogStore) observeDisk(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.least == nil {
		s.least = limp.NewLeast(appendWindow)
	}
	if s.p75 == nil {
		s.p75 = limp.NewDiskTime(p75Window)
	}
	now := time.Now()
	s.least.Observe(d.Seconds(), now)
	s.p75.Observe(d.Seconds(), now)
	s.busySince = time.Time{}
}

// countBytesLocked adds the entries' bytes to the log's byte rate; called
// with mu held, inside the lock an append takes anyway.
func (s *timedLogStore) countBytesLocked(logs []*raft.Log, now time.Time) {
	n := 0
	for _, l := range logs {
		n += len(l.Data)
	}
	if s.grows == nil {
		s.grows = limp.NewRate(logRateWindow)
	}
	s.grows.Observe(float64(n), now)
}

// bytesPerSec is how fast the log grew over the last whole logRateWindow.
func (s *timedLogStore) bytesPerSec(now time.Time) float64 {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.grows == nil {
		return 0
	}
	return s.grows.Value(now)
}

// p75Seconds is the 75th percentile of the appends (limp.DiskTime), or the
// age of the one in flight when it is older than p75Window. The disk's
// operations run one at a time, so one that old has left the window
// empty, and it will end as an append at least that slow: a leader's
// merged sync at 1000x ends only seconds later, and until it does, the
// percentile alone said nothing and the leader was marked only on its
// least append, after the full hold.
func (s *timedLogStore) p75Seconds() float64 {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p75 == nil {
		return 0
	}
	now := time.Now()
	v := s.p75.Value(now)
	if age := s.busyFor(now); age > p75Window {
		v = max(v, age.Seconds())
	}
	return v
}

// busyFor is how long the disk operation in flight has run; 0 when none.
// Called with mu held.
func (s *timedLogStore) busyFor(now time.Time) time.Duration {
	if s.busySince.IsZero() {
		return 0
	}
	return now.Sub(s.busySince)
}

// diskBusy notes that a disk operation observeDisk will time began at
// start. One that fails is never observed and stays busy: a log that
// cannot be written limps.
func (s *timedLogStore) diskBusy(start time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busySince = start
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
			if !a.logStore.unsynced() {
				continue // idle: no fsync, and no disk time to observe
			}
			start := time.Now()
			a.logs.diskBusy(start)
			if err := a.logStore.Sync(); err != nil {
				a.logger.Printf("fsync raft log: %v", err)
				continue
			}
			a.logs.observeDisk(time.Since(start))
		}
	}
}

func (s *timedLogStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// leastSeconds is the least time of one append over the last 1 to 2 s, or
// the age of the one in flight when none finished in that time or it is
// older than appendWindow; 0 when there was none.
func (s *timedLogStore) leastSeconds() float64 {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.least == nil {
		return 0
	}
	now := time.Now()
	v := s.least.Value(now)
	if age := s.busyFor(now); age > 0 && (v == 0 || age > appendWindow) {
		v = max(v, age.Seconds())
	}
	return v
}

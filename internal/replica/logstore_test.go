package replica

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// heldSyncStore is a log whose SyncLogs waits for release: a leader's
// disk stuck in one fdatasync.
type heldSyncStore struct {
	*raft.InmemStore
	release chan struct{}
}

func (h heldSyncStore) DeferredSync() bool               { return true }
func (h heldSyncStore) WriteLogs(logs []*raft.Log) error { return h.StoreLogs(logs) }
func (h heldSyncStore) SyncLogs() error                  { <-h.release; return nil }

// A leader's sync that has run longer than the percentile's window reads
// as an append at least that slow, in the percentile and the least append
// alike, and stops counting once it returns.
func TestStuckSyncShowsInDiskTimes(t *testing.T) {
	store := heldSyncStore{raft.NewInmemStore(), make(chan struct{})}
	s := &timedLogStore{LogStore: store}
	for i := range 8 { // limp.DiskTime needs 8 appends to say anything
		s.observeDisk(time.Duration(i+1) * 100 * time.Microsecond)
	}
	if err := s.WriteLogs([]*raft.Log{{Index: 1, Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	synced := make(chan error)
	go func() { synced <- s.SyncLogs() }()

	if p75 := s.p75Seconds(); p75 > 0.01 {
		t.Fatalf("p75 %.3fs with a sync just begun; want the healthy appends' (under 1 ms)", p75)
	}
	time.Sleep(p75Window + 100*time.Millisecond)
	stuck := (p75Window + 100*time.Millisecond).Seconds()
	if p75 := s.p75Seconds(); p75 < stuck {
		t.Errorf("p75 %.3fs with a sync in flight for %.1fs; want at least its age", p75, stuck)
	}
	if least := s.leastSeconds(); least > 0.01 {
		t.Errorf("least %.3fs before appendWindow passed; want the healthy appends' least", least)
	}

	close(store.release)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if age := s.busyFor(time.Now()); age != 0 {
		t.Errorf("disk busy for %v after the sync returned; want idle", age)
	}
}

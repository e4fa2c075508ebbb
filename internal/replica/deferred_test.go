package replica

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestWALDeferredSync writes entries readable at once and durable only
// after SyncLogs, and breaks the log for good when a SyncLogs fails.
func TestWALDeferredSync(t *testing.T) {
	w, err := openWAL(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if !w.DeferredSync() {
		t.Fatal("a log fsynced on every append does not defer its syncs to raft's leader")
	}
	if err := w.WriteLogs([]*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("a")}}); err != nil {
		t.Fatal(err)
	}
	var l raft.Log
	if err := w.GetLog(1, &l); err != nil || string(l.Data) != "a" {
		t.Fatalf("written, not synced: %+v, %v", l, err)
	}
	if !w.unsynced() {
		t.Error("WriteLogs left nothing to sync")
	}
	if err := w.SyncLogs(); err != nil || w.unsynced() {
		t.Fatalf("SyncLogs: %v, unsynced %v", err, w.unsynced())
	}
	// A failed fdatasync: the segment's file is closed under the log.
	if err := w.WriteLogs([]*raft.Log{{Index: 2, Term: 1, Type: raft.LogCommand, Data: []byte("b")}}); err != nil {
		t.Fatal(err)
	}
	w.segs[len(w.segs)-1].f.Close()
	if err := w.SyncLogs(); err == nil {
		t.Fatal("SyncLogs on a closed file succeeded")
	}
	if err := w.StoreLogs([]*raft.Log{{Index: 3, Term: 1, Type: raft.LogCommand}}); err == nil {
		t.Error("an append after a failed sync succeeded")
	}
	if err := w.GetLog(2, &l); err == nil {
		t.Error("a read after a failed sync succeeded: raft would take the unsynced entry as held")
	}
}

// heldSyncs is a DeferredSyncLogStore whose SyncLogs waits for release.
type heldSyncs struct {
	*raft.InmemStore
	syncing chan struct{}
	release chan struct{}
}

func (s *heldSyncs) DeferredSync() bool               { return true }
func (s *heldSyncs) WriteLogs(logs []*raft.Log) error { return s.StoreLogs(logs) }
func (s *heldSyncs) SyncLogs() error {
	s.syncing <- struct{}{}
	<-s.release
	return nil
}

type nopFSM struct{ applied chan uint64 }

func (f nopFSM) Apply(l *raft.Log) interface{}     { f.applied <- l.Index; return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, errors.New("no snapshots") }
func (nopFSM) Restore(io.ReadCloser) error         { return nil }

// TestLeaderSendsBeforeSync runs three voters: the leader's followers get
// an entry while the leader's own SyncLogs of it is held, and no replica
// applies it until that returns (the leader counts itself only then, and
// commits are decided in the loop that syncs).
func TestLeaderSendsBeforeSync(t *testing.T) {
	ids := []raft.ServerID{"a", "b", "c"}
	stores := map[raft.ServerID]*heldSyncs{}
	trans := map[raft.ServerID]*raft.InmemTransport{}
	var boot raft.Configuration
	for _, id := range ids {
		stores[id] = &heldSyncs{InmemStore: raft.NewInmemStore(), syncing: make(chan struct{}), release: make(chan struct{})}
		_, trans[id] = raft.NewInmemTransport(raft.ServerAddress(id))
		boot.Servers = append(boot.Servers, raft.Server{ID: id, Address: trans[id].LocalAddr()})
	}
	for _, x := range ids {
		for _, y := range ids {
			trans[x].Connect(trans[y].LocalAddr(), trans[y])
		}
	}
	applied := make(chan uint64, 16)
	var rafts []*raft.Raft
	for _, id := range ids {
		conf := raft.DefaultConfig()
		conf.LocalID = id
		conf.LogOutput = io.Discard
		conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
		if err := raft.BootstrapCluster(conf, stores[id], stores[id], raft.NewInmemSnapshotStore(), trans[id], boot); err != nil {
			t.Fatal(err)
		}
		r, err := raft.NewRaft(conf, nopFSM{applied}, stores[id], stores[id], raft.NewInmemSnapshotStore(), trans[id])
		if err != nil {
			t.Fatal(err)
		}
		rafts = append(rafts, r)
	}
	// syncs answers the SyncLogs of whichever replica leads, until done.
	done := make(chan struct{})
	held := make(chan *heldSyncs)
	for _, s := range stores {
		go func() {
			for {
				select {
				case <-s.syncing:
					held <- s
				case <-done:
					return
				}
			}
		}()
	}
	defer func() {
		close(done)
		go func() { // shutting down may still sync
			for s := range held {
				s.release <- struct{}{}
			}
		}()
		for _, r := range rafts {
			r.Shutdown().Error()
		}
	}()
	// The new leader's own no-op entry goes through SyncLogs first.
	var leader *heldSyncs
	select {
	case leader = <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("no leader synced its log")
	}
	leader.release <- struct{}{}
	var r *raft.Raft
	for _, x := range rafts {
		if x.State() == raft.Leader {
			r = x
		}
	}
	if r == nil {
		t.Fatal("no leader")
	}
	want, _ := leader.LastIndex()
	want++
	f := r.Apply([]byte("x"), 10*time.Second)
	if s := <-held; s != leader {
		t.Fatal("a follower synced through the leader's path")
	}
	// Written and sent, its sync held: both followers get it.
	deadline := time.Now().Add(10 * time.Second)
	for _, id := range ids {
		for s := stores[id]; s != leader; {
			if last, _ := s.LastIndex(); last >= want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("follower %s did not get log index %d while the leader synced it", id, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	select {
	case i := <-applied:
		t.Fatalf("log index %d applied while the leader's sync of it was running", i)
	case <-time.After(100 * time.Millisecond):
	}
	leader.release <- struct{}{}
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	if got := <-applied; got != want {
		t.Fatalf("applied log index %d, want %d", got, want)
	}
}

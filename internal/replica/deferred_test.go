package replica

import (
	"errors"
	"io"
	"strconv"
	"sync/atomic"
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

// TestWALDeferredWritesReopen hands batches to WriteLogs while another
// goroutine syncs, across new segments, as raft's leader loop and its sync
// goroutine do: every entry reads back at once, and from disk after a
// reopen.
func TestWALDeferredWritesReopen(t *testing.T) {
	dir := t.TempDir()
	w, err := openWAL(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	w.segBytes = 4 << 10
	const n = 400
	kick, synced := make(chan struct{}, 1), make(chan error)
	go func() {
		for range kick {
			if err := w.SyncLogs(); err != nil {
				synced <- err
				return
			}
		}
		synced <- w.SyncLogs()
	}()
	var l raft.Log
	for i := uint64(1); i <= n; i += 4 {
		var batch []*raft.Log
		for j := i; j < i+4; j++ {
			batch = append(batch, &raft.Log{Index: j, Term: 1, Type: raft.LogCommand, Data: []byte(strconv.FormatUint(j, 10))})
		}
		if err := w.WriteLogs(batch); err != nil {
			t.Fatal(err)
		}
		select {
		case kick <- struct{}{}:
		default:
		}
		if err := w.GetLog(i+2, &l); err != nil || string(l.Data) != strconv.FormatUint(i+2, 10) {
			t.Fatalf("index %d written, not yet synced: %q, %v", i+2, l.Data, err)
		}
	}
	close(kick)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if len(w.segs) < 3 {
		t.Fatalf("%d segments: the test meant to cross into new ones", len(w.segs))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w, err = openWAL(dir, true); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := uint64(1); i <= n; i++ {
		if err := w.GetLog(i, &l); err != nil || string(l.Data) != strconv.FormatUint(i, 10) {
			t.Fatalf("index %d after a reopen: %q, %v", i, l.Data, err)
		}
	}
}

// heldStore is a DeferredSyncLogStore whose SyncLogs, and whose StoreLogs
// while holdStores is set, wait for the test's answer: a disk's sync that
// has not returned yet.
type heldStore struct {
	*raft.InmemStore
	holdStores atomic.Bool
	syncs      chan chan error    // each SyncLogs sends the channel it waits on
	stores     chan chan struct{} // each held StoreLogs, likewise
	end        chan struct{}      // closed when the test ends: nothing waits
}

func (s *heldStore) DeferredSync() bool               { return true }
func (s *heldStore) WriteLogs(logs []*raft.Log) error { return s.InmemStore.StoreLogs(logs) }

func (s *heldStore) SyncLogs() error {
	answer := make(chan error)
	select {
	case s.syncs <- answer:
	case <-s.end:
		return nil
	}
	select {
	case err := <-answer:
		return err
	case <-s.end:
		return nil
	}
}

func (s *heldStore) StoreLogs(logs []*raft.Log) error {
	if s.holdStores.Load() {
		answer := make(chan struct{})
		select {
		case s.stores <- answer:
			select {
			case <-answer:
			case <-s.end:
			}
		case <-s.end:
		}
	}
	return s.InmemStore.StoreLogs(logs)
}

type nopFSM struct{ applied chan uint64 }

func (f nopFSM) Apply(l *raft.Log) interface{}     { f.applied <- l.Index; return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, errors.New("no snapshots") }
func (nopFSM) Restore(io.ReadCloser) error         { return nil }

// heldCluster is three voters over heldStores and an in-memory transport.
type heldCluster struct {
	stores  map[raft.ServerID]*heldStore
	applied map[raft.ServerID]chan uint64
	leader  *raft.Raft
	// lead is the leader's id; b and c are its followers.
	lead, b, c raft.ServerID
}

// startHeld starts three voters, waits for a leader and answers its first
// sync (of its no-op entry), and waits until every voter holds that entry.
func startHeld(t *testing.T) *heldCluster {
	t.Helper()
	ids := []raft.ServerID{"a", "b", "c"}
	c := &heldCluster{stores: map[raft.ServerID]*heldStore{}, applied: map[raft.ServerID]chan uint64{}}
	trans := map[raft.ServerID]*raft.InmemTransport{}
	var boot raft.Configuration
	for _, id := range ids {
		c.stores[id] = &heldStore{InmemStore: raft.NewInmemStore(), syncs: make(chan chan error),
			stores: make(chan chan struct{}), end: make(chan struct{})}
		c.applied[id] = make(chan uint64, 16)
		_, trans[id] = raft.NewInmemTransport(raft.ServerAddress(id))
		boot.Servers = append(boot.Servers, raft.Server{ID: id, Address: trans[id].LocalAddr()})
	}
	for _, x := range ids {
		for _, y := range ids {
			trans[x].Connect(trans[y].LocalAddr(), trans[y])
		}
	}
	rafts := map[raft.ServerID]*raft.Raft{}
	t.Cleanup(func() {
		for _, s := range c.stores {
			close(s.end)
		}
		for _, r := range rafts {
			r.Shutdown().Error()
		}
	})
	for _, id := range ids {
		conf := raft.DefaultConfig()
		conf.LocalID = id
		conf.LogOutput = io.Discard
		// Long enough that no election happens on a loaded machine while a
		// test holds a disk.
		conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = 500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
		if err := raft.BootstrapCluster(conf, c.stores[id], c.stores[id], raft.NewInmemSnapshotStore(), trans[id], boot); err != nil {
			t.Fatal(err)
		}
		r, err := raft.NewRaft(conf, nopFSM{c.applied[id]}, c.stores[id], c.stores[id], raft.NewInmemSnapshotStore(), trans[id])
		if err != nil {
			t.Fatal(err)
		}
		rafts[id] = r
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.leader == nil {
		for _, id := range ids {
			if rafts[id].State() == raft.Leader {
				c.leader, c.lead = rafts[id], id
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		time.Sleep(time.Millisecond)
	}
	for _, id := range ids {
		if id != c.lead {
			c.b, c.c = c.c, id
		}
	}
	c.nextSync(t) <- nil
	last, _ := c.stores[c.lead].LastIndex()
	c.waitStored(t, c.b, last)
	c.waitStored(t, c.c, last)
	return c
}

// nextSync is the answer channel of the leader's next SyncLogs.
func (c *heldCluster) nextSync(t *testing.T) chan error {
	t.Helper()
	select {
	case a := <-c.stores[c.lead].syncs:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("the leader did not sync its log")
		return nil
	}
}

// nextStore is the answer channel of id's next held StoreLogs.
func (c *heldCluster) nextStore(t *testing.T, id raft.ServerID) chan struct{} {
	t.Helper()
	select {
	case a := <-c.stores[id].stores:
		return a
	case <-time.After(10 * time.Second):
		t.Fatalf("follower %s did not store", id)
		return nil
	}
}

// waitStored waits until id's log holds index.
func (c *heldCluster) waitStored(t *testing.T, id raft.ServerID, index uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if last, _ := c.stores[id].LastIndex(); last >= index {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's log did not get index %d", id, index)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitApplied waits until id applied index, the next entry it applies.
func (c *heldCluster) waitApplied(t *testing.T, id raft.ServerID, index uint64) {
	t.Helper()
	select {
	case got := <-c.applied[id]:
		if got != index {
			t.Fatalf("%s applied index %d, want %d", id, got, index)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not apply index %d", id, index)
	}
}

// noneApplied fails if any voter applies an entry within a tenth of a
// second: what is not committed must not be applied.
func (c *heldCluster) noneApplied(t *testing.T, why string) {
	t.Helper()
	timeout := time.After(100 * time.Millisecond)
	for {
		select {
		case i := <-c.applied["a"]:
			t.Fatalf("a applied index %d %s", i, why)
		case i := <-c.applied["b"]:
			t.Fatalf("b applied index %d %s", i, why)
		case i := <-c.applied["c"]:
			t.Fatalf("c applied index %d %s", i, why)
		case <-timeout:
			return
		}
	}
}

// answer is f's outcome, or a failure if it has none within 10 s.
func answer(t *testing.T, f raft.ApplyFuture) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("a proposal was not answered")
		return nil
	}
}

// applyOneStored holds follower b's appends, proposes an entry, and
// returns once follower c stored it: only one replica of three holds it
// durably while the leader's sync (leaderSync) and b's append (follower)
// wait for the test to release them.
func (c *heldCluster) applyOneStored(t *testing.T) (f raft.ApplyFuture, index uint64, leaderSync chan error, follower chan struct{}) {
	c.stores[c.b].holdStores.Store(true)
	f, index = c.apply("x")
	leaderSync = c.nextSync(t)
	follower = c.nextStore(t, c.b)
	c.waitStored(t, c.c, index)
	return f, index, leaderSync, follower
}

// apply proposes one entry on the leader; it is the log index returned.
func (c *heldCluster) apply(data string) (raft.ApplyFuture, uint64) {
	last, _ := c.stores[c.lead].LastIndex()
	return c.leader.Apply([]byte(data), 10*time.Second), last + 1
}

// TestLeaderSendsBeforeSync runs three voters, one follower's appends held:
// the other follower gets an entry while the leader's own SyncLogs of it is
// held, and no replica applies it (one durable copy of three) until the
// leader's sync returns.
func TestLeaderSendsBeforeSync(t *testing.T) {
	c := startHeld(t)
	f, want, leaderSync, follower := c.applyOneStored(t)
	c.noneApplied(t, "while the leader's sync of it and one follower's append were held")
	leaderSync <- nil
	if err := answer(t, f); err != nil {
		t.Fatal(err)
	}
	c.waitApplied(t, c.lead, want)
	c.waitApplied(t, c.c, want)
	c.stores[c.b].holdStores.Store(false)
	close(follower)
	c.waitApplied(t, c.b, want)
}

// TestFollowersCommitWithoutLeaderSync: the fastest majority. While the
// leader's sync is held, a write that both followers stored is committed,
// acknowledged and applied everywhere; with one follower's append held too,
// nothing commits until that append returns.
func TestFollowersCommitWithoutLeaderSync(t *testing.T) {
	c := startHeld(t)
	f, x := c.apply("x")
	leaderSync := c.nextSync(t) // held to the end of the test
	if err := answer(t, f); err != nil {
		t.Fatal(err)
	}
	for _, id := range []raft.ServerID{c.lead, c.b, c.c} {
		c.waitApplied(t, id, x)
	}
	c.stores[c.b].holdStores.Store(true)
	f, y := c.apply("y")
	follower := c.nextStore(t, c.b)
	c.waitStored(t, c.c, y)
	c.noneApplied(t, "with the leader's sync and one follower's append held")
	c.stores[c.b].holdStores.Store(false)
	close(follower)
	if err := answer(t, f); err != nil {
		t.Fatal(err)
	}
	for _, id := range []raft.ServerID{c.lead, c.b, c.c} {
		c.waitApplied(t, id, y)
	}
	leaderSync <- nil
}

// TestLeaderSyncFailureNotCounted: a leader whose SyncLogs fails does not
// count itself towards the entries', fails their proposals with the sync's
// error and steps down; with one follower's append held, nothing commits.
func TestLeaderSyncFailureNotCounted(t *testing.T) {
	c := startHeld(t)
	f, _, leaderSync, follower := c.applyOneStored(t)
	errDisk := errors.New("disk failed")
	leaderSync <- errDisk
	if err := answer(t, f); !errors.Is(err, errDisk) {
		t.Fatalf("a proposal whose leader's sync failed: %v, want %v", err, errDisk)
	}
	c.noneApplied(t, "after the leader's sync of it failed, one follower's append held")
	if c.leader.State() == raft.Leader {
		t.Error("a leader whose sync failed kept leading")
	}
	c.stores[c.b].holdStores.Store(false)
	close(follower)
}

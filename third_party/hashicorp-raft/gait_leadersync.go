package raft

import "sync"

// leaderSync runs a leader's SyncLogs in a goroutine of its own (gait:
// added), so that its leader loop goes on taking its followers' answers
// and new entries while its own disk syncs: a majority of followers that
// hold an entry durably commit it without the leader's disk, and a leader
// whose disk limps holds no write for its own fsync. The leader counts
// itself towards a commit only once a sync that covers the entries
// returned (leaderSynced). One SyncLogs runs at a time; entries written
// while it runs are synced by the next one, together.
type leaderSync struct {
	store   DeferredSyncLogStore
	mu      sync.Mutex
	written uint64 // the last index written and not yet handed to a SyncLogs
	kick    chan struct{}
	done    chan syncResult // to the leader loop; unbuffered, so nothing stale reaches a later term
	stop    chan struct{}
	stopped chan struct{}
}

// syncResult is one SyncLogs's outcome: index and every entry before it
// are durable unless err is set.
type syncResult struct {
	index uint64
	err   error
}

// startLeaderSync starts a leader's sync goroutine; stopAndWait ends it.
func (r *Raft) startLeaderSync(s DeferredSyncLogStore) *leaderSync {
	ls := &leaderSync{store: s, kick: make(chan struct{}, 1), done: make(chan syncResult),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	r.goFunc(func() { r.runLeaderSync(ls) })
	return ls
}

// wrote tells the sync goroutine that the entries up to index are written.
func (ls *leaderSync) wrote(index uint64) {
	ls.mu.Lock()
	ls.written = index
	ls.mu.Unlock()
	asyncNotifyCh(ls.kick)
}

// take returns the last index written since the last take, 0 if none.
func (ls *leaderSync) take() uint64 {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	index := ls.written
	ls.written = 0
	return index
}

// results is the leader loop's channel of sync outcomes: nil (never ready)
// without a DeferredSyncLogStore.
func (ls *leaderSync) results() <-chan syncResult {
	if ls == nil {
		return nil
	}
	return ls.done
}

func (r *Raft) runLeaderSync(ls *leaderSync) {
	defer close(ls.stopped)
	for {
		select {
		case <-ls.kick:
		case <-ls.stop:
			r.finalLeaderSync(ls)
			return
		}
		index := ls.take()
		if index == 0 {
			continue
		}
		res := syncResult{index: index, err: ls.store.SyncLogs()}
		select {
		case ls.done <- res:
		case <-ls.stop:
			r.finalLeaderSync(ls)
			return
		}
	}
}

// finalLeaderSync makes what the leader wrote and did not sync durable
// before this server, no longer leading, tells a new leader that it holds
// those entries: its answers count towards commits.
func (r *Raft) finalLeaderSync(ls *leaderSync) {
	if ls.take() == 0 {
		return
	}
	if err := ls.store.SyncLogs(); err != nil {
		r.logger.Error("failed to sync logs on leaving leadership", "error", err)
	}
}

// stopAndWait ends the sync goroutine, after its last SyncLogs.
func (ls *leaderSync) stopAndWait() {
	close(ls.stop)
	<-ls.stopped
}

// leaderSynced counts the leader towards the commit of the entries a sync
// made durable; a failed sync fails them, as a failed StoreLogs does, and
// the leader steps down (the followers may still hold and commit them).
// Called from the leader loop.
func (r *Raft) leaderSynced(res syncResult) {
	if res.err != nil {
		r.logger.Error("failed to commit logs", "error", res.err)
		for e := r.leaderState.inflight.Front(); e != nil; e = e.Next() {
			if f := e.Value.(*logFuture); f.log.Index <= res.index {
				f.respond(res.err)
			}
		}
		r.setState(Follower)
		return
	}
	r.leaderState.commitment.match(r.localID, res.index)
}

package redis

import (
	"sync"
	"time"
)

// replyQueue is what a connection owes its client: the reply slots, in
// request order, and the pushes (subscription messages, invalidations),
// which go out between them as they come. Its writer goroutine runs only
// while the connection is busy and ends once the queue stayed empty for
// writerLinger, and the queue's slices grow with the pipeline and are let
// go when it empties: an idle connection holds one goroutine, its reader,
// where two goroutines and two channels of pipelineDepth entries (72 KiB)
// were held before.
type replyQueue struct {
	mu      sync.Mutex
	room    sync.Cond // broadcast when a full queue gave room, or it closed
	slots   []slot
	pushes  [][]byte
	running bool // a writer goroutine is on the queue
	idle    bool // the writer waits for the queue to fill (kick wakes it)
	closed  bool // no more slots: the writer closes the connection when it is done
	kick    chan struct{}
	linger  *time.Timer // the writer's, made on its first wait
	write   func(*replyQueue)
	// done is closed once the queue is closed and everything in it is out.
	done chan struct{}
}

func newReplyQueue(write func(*replyQueue)) *replyQueue {
	q := &replyQueue{write: write, done: make(chan struct{}), kick: make(chan struct{}, 1)}
	q.room.L = &q.mu
	return q
}

// put queues a reply slot; it waits while pipelineDepth are queued.
func (q *replyQueue) put(s slot) {
	q.mu.Lock()
	for len(q.slots) >= pipelineDepth && !q.closed {
		q.room.Wait()
	}
	q.slots = append(q.slots, s)
	q.wake()
	q.mu.Unlock()
}

// push queues a push; it waits while pipelineDepth are queued, and says
// false (nothing queued) once the connection has ended.
func (q *replyQueue) push(b []byte) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.pushes) >= pipelineDepth && !q.closed {
		q.room.Wait()
	}
	if q.closed {
		return false
	}
	q.pushes = append(q.pushes, b)
	q.wake()
	return true
}

// close says no slot follows; done closes once the writer is through.
func (q *replyQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.room.Broadcast()
	q.wake()
	q.mu.Unlock()
}

// writerLinger is how long a connection's writer goroutine waits for the
// next reply once its queue is empty, before it ends. A client that sends
// one request at a time empties the queue with every reply: a writer that
// ended then was started again for the next request, and a new goroutine
// grows its stack anew (awaitWrite needs more than it starts with), which
// was about 3 % of the agents' CPU in SET c=8.
const writerLinger = 250 * time.Millisecond

// wake starts a writer unless one runs, or wakes the one that waits;
// called with mu held.
func (q *replyQueue) wake() {
	switch {
	case !q.running:
		q.running = true
		go q.write(q)
	case q.idle:
		q.idle = false
		select {
		case q.kick <- struct{}{}:
		default: // a kick is pending already
		}
	}
}

// take is the writer's next item: a push if one waits, else a slot, and
// whether no slot is left after it (the writer then flushes); ok false
// when the queue stayed empty for writerLinger, or closed, and then the
// writer ends (end true: the queue closed, so the connection is done).
func (q *replyQueue) take() (s slot, push []byte, last, ok, end bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for lingered := false; ; {
		switch {
		case len(q.pushes) > 0:
			if len(q.pushes) >= pipelineDepth {
				q.room.Broadcast()
			}
			push, q.pushes[0] = q.pushes[0], nil
			if q.pushes = q.pushes[1:]; len(q.pushes) == 0 {
				q.pushes = nil
			}
			return slot{}, push, len(q.slots) == 0, true, false
		case len(q.slots) > 0:
			if len(q.slots) >= pipelineDepth {
				q.room.Broadcast()
			}
			s, q.slots[0] = q.slots[0], slot{}
			if q.slots = q.slots[1:]; len(q.slots) == 0 {
				q.slots = nil
			}
			return s, nil, len(q.slots) == 0, true, false
		case q.closed || lingered:
			q.running, q.idle = false, false
			return slot{}, nil, true, false, q.closed
		}
		lingered = q.wait()
	}
}

// wait waits, with mu held on entry and on return, for wake's kick or
// for writerLinger to pass, and says whether it passed.
func (q *replyQueue) wait() (lingered bool) {
	q.idle = true
	q.mu.Unlock()
	if q.linger == nil {
		q.linger = time.NewTimer(writerLinger)
	} else {
		q.linger.Reset(writerLinger)
	}
	select {
	case <-q.kick:
	case <-q.linger.C:
		lingered = true
	}
	q.mu.Lock()
	q.idle = false
	return lingered
}

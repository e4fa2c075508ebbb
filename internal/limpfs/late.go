package limpfs

import (
	"errors"
	"io/fs"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/tardis"
)

// Literal bytes looked at again after their commit. A file may be
// committed (closed, fsynced) before the data its bytes describe reaches
// the server: an HDFS DataNode closes a block's .meta checksum file
// before its block file, whose last pages the kernel writes back only
// at that close, so at the .meta file's commit the mount's checksum
// index has not seen the data yet. The ranges a commit leaves literal
// are therefore kept (as ranges, not bytes) and looked at again, with
// the file loaded as on an open, whenever the index has learnt more
// since; they are dropped once the index has forgotten everything it
// held when they were written, or when the file is gone. Nothing here
// knows HDFS: any literal range may turn out to be a checksum run.

// lateMax bounds the literal bytes a mount keeps to look at again: the
// checksum files of 2 GiB of 512-byte-chunked data, far more than the
// index remembers (512 MiB), so no range the index could still match
// is dropped for room while writers keep ahead of their checksums.
const lateMax = 16 << 20

// latePause is the least time between two passes: commits come in
// bursts (every block and checksum file of every writer), one pass
// serves them all.
const latePause = 100 * time.Millisecond

// lateFile is a file's literal ranges to look at again.
type lateFile struct {
	id     identity
	ranges [][2]int64
	bytes  int64
	born   uint64 // the index's Learnt when the oldest range was written
	looked uint64 // the index's Learnt when they were last looked at
}

// late is a mount's literal ranges to look at again, and the goroutine
// that looks.
type late struct {
	sums *tardis.SumIndex

	mu    sync.Mutex
	files map[*emuNode]*lateFile
	bytes int64

	wake, stop, done chan struct{}
	closing          sync.Once
}

func newLate(sums *tardis.SumIndex) *late {
	l := &late{sums: sums, files: map[*emuNode]*lateFile{}, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	return l
}

// keep records ranges of n's file id left literal by a commit when the
// index had learnt born checksums, replacing what was kept for n (the
// commit looked at that too); within lateMax, whatever does not fit is
// left literal for good.
func (l *late) keep(n *emuNode, id identity, ranges [][2]int64, born uint64) {
	looked := l.sums.Learnt()
	l.mu.Lock()
	defer l.mu.Unlock()
	if old := l.files[n]; old != nil {
		l.bytes -= old.bytes
		delete(l.files, n)
	}
	f := &lateFile{id: id, born: born, looked: looked}
	for _, r := range ranges {
		if l.bytes+f.bytes+r[1]-r[0] > lateMax {
			break
		}
		f.ranges = append(f.ranges, r)
		f.bytes += r[1] - r[0]
	}
	if len(f.ranges) > 0 {
		l.files[n] = f
		l.bytes += f.bytes
	}
}

// take removes and returns what was kept for n's file id.
func (l *late) take(n *emuNode, id identity) (ranges [][2]int64, born uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.files[n]
	if f == nil {
		return nil, 0
	}
	delete(l.files, n)
	l.bytes -= f.bytes
	if f.id != id {
		return nil, 0 // another file now has the node's path
	}
	return f.ranges, f.born
}

// poke asks for a pass soon: a commit fed the index.
func (l *late) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *late) run() {
	defer close(l.done)
	for {
		select {
		case <-l.stop:
			return
		case <-l.wake:
		}
		l.pass()
		select {
		case <-l.stop:
			return
		case <-time.After(latePause):
		}
	}
}

// close stops the goroutine and makes a last pass, so that what the
// index learnt from the last writes before an unmount counts.
func (l *late) close() {
	l.closing.Do(func() {
		close(l.stop)
		<-l.done
		l.pass()
	})
}

// pass looks again at every file kept whose ranges the index has learnt
// something since, dropping those it can no longer help.
func (l *late) pass() {
	learnt := l.sums.Learnt()
	var todo []*emuNode
	l.mu.Lock()
	for n, f := range l.files {
		switch {
		case l.sums.Forgot(f.born):
			delete(l.files, n)
			l.bytes -= f.bytes
		case f.looked < learnt:
			todo = append(todo, n)
		}
	}
	l.mu.Unlock()
	for _, n := range todo {
		if err := n.lookAgain(); err != nil {
			n.fail(err)
		}
	}
}

// lookAgain loads the file, if it is not open, and commits it, which
// looks at its kept ranges (acquire takes them). A file gone meanwhile
// has nothing to look at.
func (n *emuNode) lookAgain() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.opens == 0 && n.c == nil {
		c, err := n.load(n.path())
		if err != nil {
			n.em.late.take(n, identity{})
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		n.c = c
	}
	n.opens++
	n.c.takeLate(n)
	return n.release()
}

package zookeeper

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/gait-dev/gait/internal/linearize"
	"github.com/go-zookeeper/zk"
)

// zkWorkload is a Jepsen-style workload on ZooKeeper's own operations:
// compare-and-set registers (getData, then setData with the version read)
// and queues of sequential nodes (create with FlagSequence; a pop lists
// the children, takes the smallest and deletes it), every written value
// unique, so that a version check is a value check. Clients are spread
// over the agents; a client whose operation failed reconnects under a new
// id (its operation stays in the history with an unknown outcome).
type zkWorkload struct {
	agents  []string
	clients int
	keys    int
	pause   time.Duration // between a client's operations: a history porcupine checks in minutes
	h       *linearize.History

	mu       sync.Mutex
	counts   map[string]int
	errors   map[string]int // why operations failed
	failures int
}

// zkQueues is how many queues the clients share: each is a key of its own
// to porcupine, and a queue's pops under faults are what makes its search
// long, so two halves of the traffic check far sooner than one.
const zkQueues = 2

func queuePath(q int) string { return fmt.Sprintf("/queue%d", q) }

func regPath(k int) string { return fmt.Sprintf("/reg%d", k) }

func (w *zkWorkload) count(what string) {
	w.mu.Lock()
	w.counts[what]++
	w.mu.Unlock()
}

// setup creates the registers (at 0) and the queues' parents.
func (w *zkWorkload) setup(t *testing.T) {
	c, _ := connect(t, w.agents[0])
	for k := range w.keys {
		call := w.h.Now()
		if _, err := c.Create(regPath(k), []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		w.h.Done(-1, linearize.Input{Kind: linearize.Set, Key: regPath(k)}, call, linearize.Output{}, w.h.Now())
	}
	for q := range zkQueues {
		if _, err := c.Create(queuePath(q), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
}

// run drives the clients until stop closes.
func (w *zkWorkload) run(t *testing.T, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for i := range w.clients {
		wg.Go(func() { w.client(i, stop) })
	}
	wg.Wait()
}

// dial connects client i through agent i+gen (a client that failed moves
// on to the next agent) and waits for its session.
func (w *zkWorkload) dial(i, gen int, stop <-chan struct{}) *zk.Conn {
	for try := gen; ; try++ {
		c, _, err := zk.Connect([]string{w.agents[(i+try)%len(w.agents)]}, 4*time.Second, zk.WithLogInfo(false))
		if err == nil {
			deadline := time.Now().Add(3 * time.Second)
			for c.State() != zk.StateHasSession && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if c.State() == zk.StateHasSession {
				return c
			}
			c.Close()
		}
		select {
		case <-stop:
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// failed notes why an operation's outcome is unknown.
func (w *zkWorkload) failed(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failures++
	w.errors[err.Error()]++
}

func (w *zkWorkload) client(i int, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	id, gen, seq := i*1000, 0, int64(0)
	c := w.dial(i, gen, stop)
	if c == nil {
		return
	}
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	unique := func() int64 { seq++; return int64(i+1)*1_000_000_000 + seq }
	for {
		select {
		case <-stop:
			return
		case <-time.After(w.pause):
		}
		var err error
		switch r := rng.IntN(10); {
		case r < 3:
			err = w.get(c, id, rng.IntN(w.keys))
		case r < 4:
			err = w.set(c, id, rng.IntN(w.keys), unique())
		case r < 7:
			err = w.cas(c, id, rng.IntN(w.keys), unique())
		case r < 8 || (r < 9 && rng.IntN(2) == 0):
			err = w.enqueue(c, id, rng.IntN(zkQueues), unique())
		default:
			err = w.pop(c, id, rng.IntN(zkQueues))
		}
		if err != nil { // its outcome is unknown: a new client id, a new session
			w.failed(err)
			gen++
			id = i*1000 + gen
			c.Close()
			if c = w.dial(i, gen, stop); c == nil {
				return
			}
		}
	}
}

func parse(b []byte) int64 { v, _ := strconv.ParseInt(string(b), 10, 64); return v }

func (w *zkWorkload) get(c *zk.Conn, id, k int) error {
	in := linearize.Input{Kind: linearize.Get, Key: regPath(k)}
	call := w.h.Now()
	d, _, err := c.Get(regPath(k))
	if err != nil {
		w.h.Failed(id, in, call)
		return err
	}
	w.h.Done(id, in, call, linearize.Output{Value: parse(d), Exists: true}, w.h.Now())
	w.count("get")
	return nil
}

func (w *zkWorkload) set(c *zk.Conn, id, k int, v int64) error {
	in := linearize.Input{Kind: linearize.Set, Key: regPath(k), Value: v}
	call := w.h.Now()
	if _, err := c.Set(regPath(k), []byte(strconv.FormatInt(v, 10)), -1); err != nil {
		w.h.Failed(id, in, call)
		return err
	}
	w.h.Done(id, in, call, linearize.Output{}, w.h.Now())
	w.count("set")
	return nil
}

// cas reads the register (a Get of its own in the history), then sets it
// if its version is still the one read: with unique values, exactly when
// it still holds the value read.
func (w *zkWorkload) cas(c *zk.Conn, id, k int, v int64) error {
	p := regPath(k)
	call := w.h.Now()
	d, st, err := c.Get(p)
	if err != nil {
		w.h.Failed(id, linearize.Input{Kind: linearize.Get, Key: p}, call)
		return err
	}
	w.h.Done(id, linearize.Input{Kind: linearize.Get, Key: p}, call, linearize.Output{Value: parse(d), Exists: true}, w.h.Now())
	in := linearize.Input{Kind: linearize.ScriptCas, Key: p, Value: v, Expect: parse(d)}
	call = w.h.Now()
	_, err = c.Set(p, []byte(strconv.FormatInt(v, 10)), st.Version)
	switch {
	case err == nil:
		w.h.Done(id, in, call, linearize.Output{Swapped: true}, w.h.Now())
		w.count("cas-swapped")
	case errors.Is(err, zk.ErrBadVersion):
		w.h.Done(id, in, call, linearize.Output{}, w.h.Now())
		w.count("cas-refused")
	default:
		w.h.Failed(id, in, call)
		return err
	}
	return nil
}

func (w *zkWorkload) enqueue(c *zk.Conn, id, q int, v int64) error {
	zkQueue := queuePath(q)
	in := linearize.Input{Kind: linearize.Enqueue, Key: zkQueue, Value: v}
	call := w.h.Now()
	if _, err := c.Create(zkQueue+"/item-", []byte(strconv.FormatInt(v, 10)), zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		w.h.Failed(id, in, call)
		return err
	}
	w.h.Done(id, in, call, linearize.Output{}, w.h.Now())
	w.count("enqueue")
	return nil
}

// pop takes the queue's head: the smallest child it lists that it can
// delete. Sequence numbers only grow, so no smaller one can appear after
// the listing: the one it deletes is the head when it deletes it.
func (w *zkWorkload) pop(c *zk.Conn, id, q int) error {
	zkQueue := queuePath(q)
	in := linearize.Input{Kind: linearize.Pop, Key: zkQueue}
	call := w.h.Now()
	kids, _, err := c.Children(zkQueue)
	if err != nil {
		w.h.Failed(id, in, call)
		return err
	}
	sort.Strings(kids)
	for _, k := range kids {
		d, _, err := c.Get(zkQueue + "/" + k)
		if errors.Is(err, zk.ErrNoNode) {
			continue // someone else took it
		}
		if err == nil {
			err = c.Delete(zkQueue+"/"+k, -1)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
		}
		if err != nil {
			w.h.Failed(id, in, call)
			return err
		}
		w.h.Done(id, in, call, linearize.Output{Value: parse(d), Exists: true}, w.h.Now())
		w.count("pop")
		return nil
	}
	w.h.Done(id, in, call, linearize.Output{}, w.h.Now())
	w.count("pop-empty")
	return nil
}

// check runs porcupine over the history and fails the test on a violation.
func (w *zkWorkload) check(t *testing.T) {
	t.Helper()
	ops := linearize.Prune(w.h.Operations())
	res, vs := linearize.Check(ops, 4*time.Minute)
	done, unknown, dropped := w.h.Counts()
	t.Logf("porcupine: %s; %d operations (%d done, %d unknown, %d failed reads dropped), %d client failures; %v; failures: %v",
		linearize.Verdict(res), len(ops), done, unknown, dropped, w.failures, w.counts, w.errors)
	for _, v := range vs {
		t.Errorf("%s: %s", v.Key, v.Text)
	}
	if res != porcupine.Ok {
		t.Fatalf("not linearizable: %s", linearize.Verdict(res))
	}
}

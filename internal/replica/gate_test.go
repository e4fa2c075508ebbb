package replica

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// proposals records what a gate proposes, in order, and the size of each
// group it sends.
type proposals struct {
	mu     sync.Mutex
	ids    []uint64
	groups []int
}

func (p *proposals) propose(ws []*write) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range ws {
		p.ids = append(p.ids, w.id)
	}
	p.groups = append(p.groups, len(ws))
}

func (p *proposals) count() int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.ids) }

func TestGate(t *testing.T) {
	var p proposals
	g := newGate(p.propose)
	w := func(id uint64) *write { return &write{id: id} }
	// One client: every write goes at once.
	g.add(w(1))
	if p.count() != 1 {
		t.Fatalf("a write with nothing in raft was held: %v", p.ids)
	}
	g.answered()
	g.add(w(2))
	if p.count() != 2 {
		t.Fatalf("one client's next write was held: %v", p.ids)
	}
	g.answered()
	// Three clients: 5 goes at once, 3 and 4 arrive while it is in raft.
	g.add(w(5))
	g.add(w(3))
	g.add(w(4))
	if p.count() != 3 {
		t.Fatalf("writes arriving while a group is in raft were sent: %v", p.ids)
	}
	g.answered() // 5 answered: its client comes back, so three are expected
	if p.count() != 3 {
		t.Fatalf("the held writes went before 5's client came back: %v", p.ids)
	}
	g.add(w(6))
	if got := p.ids; len(got) != 6 || got[3] != 3 || got[4] != 4 || got[5] != 6 {
		t.Fatalf("want 3, 4, 6 sent together in order after 5's client came back, got %v", got)
	}
	if g := p.groups; len(g) != 4 || g[3] != 3 {
		t.Fatalf("want 3, 4, 6 in one group, got groups of %v", g)
	}
	// A client that does not come back costs at most holdMax.
	for range 3 {
		g.answered()
	}
	g.add(w(7))
	if p.count() != 6 {
		t.Fatalf("7 went before the clients of its predecessors' group: %v", p.ids)
	}
	deadline := time.Now().Add(time.Second)
	for p.count() != 7 && time.Now().Before(deadline) {
		time.Sleep(holdMax / 4)
	}
	if p.count() != 7 {
		t.Fatalf("7 was held past %v: %v", holdMax, p.ids)
	}
}

// TestGateProposesInOrder: a group the timer sends while the goroutine
// of the group before it has not yet proposed it (descheduled between
// leaving the gate and raft.Apply) is proposed after it, not before: one
// connection's pipelined batches must enter the log in order.
func TestGateProposesInOrder(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var order []uint64
	calls := 0
	g := newGate(func(ws []*write) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			<-release
		}
		mu.Lock()
		for _, w := range ws {
			order = append(order, w.id)
		}
		mu.Unlock()
	})
	go g.add(&write{id: 1}) // nothing in raft: sent at once, its proposal held up
	for deadline := time.Now().Add(5 * time.Second); ; {
		mu.Lock()
		c := calls
		mu.Unlock()
		if c == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first write was not sent")
		}
		time.Sleep(time.Millisecond)
	}
	g.add(&write{id: 2}) // held while 1 is open; the timer sends it after holdMax
	time.Sleep(20 * holdMax)
	mu.Lock()
	early := slices.Clone(order)
	mu.Unlock()
	close(release)
	if len(early) != 0 {
		t.Fatalf("proposed %v while the group before it was still being proposed", early)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		mu.Lock()
		n := len(order)
		mu.Unlock()
		if n == 2 {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(order, []uint64{1, 2}) {
		t.Fatalf("proposed in the order %v, want [1 2]", order)
	}
}

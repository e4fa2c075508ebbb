package replica

import (
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

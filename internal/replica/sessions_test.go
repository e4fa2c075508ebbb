package replica

import (
	"bufio"
	"bytes"
	"fmt"
	"testing"
)

func TestSessionsApplyEachWriteOnce(t *testing.T) {
	s := newSessions()
	steps := []struct {
		proposer   string
		seq, floor uint64
		want       bool
	}{
		{"a#1", 1, 1, true},
		{"a#1", 2, 1, true},
		{"a#1", 1, 1, false}, // the re-sent copy of 1, committed after the original
		{"b#1", 1, 1, true},  // another proposer's numbers are its own
		{"a#1", 4, 3, true},  // 3 was proposed before 4, still unanswered
		{"a#1", 3, 3, true},
		{"a#1", 3, 3, false},
		{"a#1", 2, 5, false}, // below the floor: answered long ago
		{"", 7, 0, true},     // no proposer: nobody re-sends it
		{"", 7, 0, true},
	}
	for i, st := range steps {
		if got := s.admit(st.proposer, st.seq, st.floor, uint64(i+1)); got != st.want {
			t.Errorf("step %d: admit(%q, seq %d, floor %d) = %v, want %v", i, st.proposer, st.seq, st.floor, got, st.want)
		}
	}
	for seq := uint64(10); seq < 1000; seq++ {
		s.admit("a#1", seq, seq, 100+seq) // one write in flight at a time
	}
	if n := len(s.byProposer["a#1"].applied); n > 200 {
		t.Errorf("%d sequence numbers kept for one write in flight, want them swept", n)
	}
	if s.admit("a#1", 500, 999, 2000) || s.admit("a#1", 999, 999, 2001) {
		t.Error("a swept or kept sequence number was admitted again")
	}
}

func TestSessionsForgetTheOldestProposer(t *testing.T) {
	s := newSessions()
	for i := range maxSessions + 10 {
		s.admit(fmt.Sprintf("p%d", i), 1, 1, uint64(i+1))
	}
	if len(s.byProposer) != maxSessions {
		t.Fatalf("%d sessions, want %d", len(s.byProposer), maxSessions)
	}
	if s.byProposer["p0"] != nil || s.byProposer[fmt.Sprintf("p%d", maxSessions+9)] == nil {
		t.Error("evicted a recent proposer before the oldest")
	}
}

func TestSessionsSnapshotRoundTrip(t *testing.T) {
	s := newSessions()
	s.admit("a#1", 5, 3, 10)
	s.admit("a#1", 3, 3, 11)
	s.admit("b#2", 1, 1, 12)
	b := s.appendTo(nil)
	got, err := readSessions(bufio.NewReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.appendTo(nil), b) {
		t.Error("decoded table encodes differently")
	}
	if got.admit("a#1", 5, 3, 13) || !got.admit("a#1", 4, 3, 14) {
		t.Error("decoded table forgot which writes were applied")
	}
	for cut := range len(b) {
		if _, err := readSessions(bufio.NewReader(bytes.NewReader(b[:cut]))); err == nil {
			t.Errorf("table cut to %d of %d bytes: no error", cut, len(b))
		}
	}
}

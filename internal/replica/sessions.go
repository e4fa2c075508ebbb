package replica

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
)

// maxSessions bounds the proposers whose sequence numbers replicas
// remember. Each agent incarnation is one proposer; the one whose last
// entry is oldest in the log is forgotten first, which every replica
// decides alike because it depends on the log only.
const maxSessions = 1024

// sessions makes a re-proposed write apply once (Raft dissertation §6.3).
// An agent that loses its leader re-sends its unanswered writes to the new
// one, and the original may still commit: replicas apply only the first
// entry of each (proposer, seq) and skip later copies. It is part of the
// replicated state, so it lives in snapshots, and it changes only as log
// entries are applied.
type sessions struct {
	byProposer map[string]*session
}

type session struct {
	floor uint64 // seqs below it are never applied again
	// applied holds the seqs already applied; those below floor are swept
	// out only once the set doubled since the last sweep, so that a sweep
	// costs amortized constant time per entry.
	applied map[uint64]struct{}
	kept    int    // len(applied) after the last sweep
	last    uint64 // log index of the session's latest entry
}

func newSessions() *sessions { return &sessions{byProposer: map[string]*session{}} }

// admit tells whether the entry at index, written by proposer with seq and
// floor, is the first copy of that write and must be applied.
func (s *sessions) admit(proposer string, seq, floor, index uint64) bool {
	if proposer == "" {
		return true // nobody re-sends an entry no client waits for
	}
	ss := s.byProposer[proposer]
	if ss == nil {
		ss = &session{applied: map[uint64]struct{}{}, last: index}
		s.byProposer[proposer] = ss
		s.evict()
	}
	ss.last = max(ss.last, index)
	ss.floor = max(ss.floor, floor)
	if len(ss.applied) > 2*ss.kept+64 {
		ss.sweep()
	}
	if _, dup := ss.applied[seq]; dup || seq < ss.floor {
		return false
	}
	ss.applied[seq] = struct{}{}
	return true
}

func (ss *session) sweep() {
	for q := range ss.applied {
		if q < ss.floor {
			delete(ss.applied, q)
		}
	}
	ss.kept = len(ss.applied)
}

func (s *sessions) evict() {
	for len(s.byProposer) > maxSessions {
		oldest := ""
		for p, ss := range s.byProposer {
			if oldest == "" || ss.last < s.byProposer[oldest].last || (ss.last == s.byProposer[oldest].last && p < oldest) {
				oldest = p
			}
		}
		delete(s.byProposer, oldest)
	}
}

// appendTo encodes the table in a fixed order, so equal tables encode alike.
func (s *sessions) appendTo(b []byte) []byte {
	names := slices.Sorted(maps.Keys(s.byProposer))
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, p := range names {
		ss := s.byProposer[p]
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
		b = binary.AppendUvarint(b, ss.floor)
		b = binary.AppendUvarint(b, ss.last)
		ss.sweep()
		seqs := slices.Sorted(maps.Keys(ss.applied))
		b = binary.AppendUvarint(b, uint64(len(seqs)))
		for _, q := range seqs {
			b = binary.AppendUvarint(b, q)
		}
	}
	return b
}

// readSessions decodes what appendTo wrote.
func readSessions(r *bufio.Reader) (*sessions, error) {
	s := newSessions()
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", noEOF(err))
	}
	if n > maxSessions {
		return nil, fmt.Errorf("sessions: %d proposers, at most %d", n, maxSessions)
	}
	for range n {
		var fields [3]uint64
		l, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, fmt.Errorf("sessions: %w", noEOF(err))
		}
		p, err := readN(r, l)
		if err != nil {
			return nil, fmt.Errorf("sessions: %w", err)
		}
		for i := range 3 {
			if fields[i], err = binary.ReadUvarint(r); err != nil {
				return nil, fmt.Errorf("sessions of %s: %w", p, noEOF(err))
			}
		}
		ss := &session{floor: fields[0], last: fields[1], applied: map[uint64]struct{}{}, kept: int(fields[2])}
		if fields[2] > 1<<24 {
			return nil, errors.New("sessions: too many sequence numbers")
		}
		for range fields[2] {
			q, err := binary.ReadUvarint(r)
			if err != nil {
				return nil, fmt.Errorf("sessions of %s: %w", p, noEOF(err))
			}
			ss.applied[q] = struct{}{}
		}
		s.byProposer[p] = ss
	}
	return s, nil
}

// readN reads n bytes.
func readN(r *bufio.Reader, n uint64) (string, error) {
	if n > 1<<32 {
		return "", errors.New("record length out of range")
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return string(b), noEOF(err)
}

package replica

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/klauspost/compress/s2"
)

// entryVersion marks an entry of the core's format: the proposer, its
// request number and floor, then the adapter's data (adapter.go).
// groupVersion marks a group of one proposer's writes in one entry: the
// proposer, the floor, the number of writes, and each write's request
// number and data (its length first), applied in that order.
// compressedVersion wraps another entry's encoding, compressed. Versions 4
// to 6 are the format from before the adapter seam, when the core knew
// Redis: the same header, and after it what is now the Redis adapter's
// record with its kind (those same numbers) in front; they decode as that.
const (
	oldestVersion     = 4
	compressedVersion = 7
	entryVersion      = 8
	groupVersion      = 9
)

// compressAbove is the size from which an entry is stored and sent
// compressed (s2): a pipelined batch of a thousand small writes, which at
// 100 Mbit/s the leader's link carried to each follower in full, shrinks
// several times (the commands' names and framing repeat), while a single
// write, whose latency is the point, is far below it and pays nothing.
const compressAbove = 8 << 10

// entry is one raft log entry: a command for every replica's server.
type entry struct {
	// proposer is the raft address of the agent whose client waits for the
	// reply; every replica sends it the reply it got. Empty: nobody waits.
	proposer string
	seq      uint64 // the proposer's request number
	// floor is the proposer's lowest write still waiting for its first
	// reply when this entry was proposed: no entry of the proposer below it
	// will ever be proposed again, so replicas forget those sequence numbers.
	floor uint64
	// data is the adapter's encoding of the command (Command.Data); empty
	// marks a no-op entry, which only moves the applied index.
	data []byte
	// group, when not empty, holds the writes of a group entry in place of
	// seq and data: one raft entry for the writes the gate sends together
	// (gate.go), when the adapter lets writes share a log index (Grouping).
	group []member
}

// member is one write of a group entry.
type member struct {
	seq  uint64
	data []byte
}

func (e entry) encode() []byte {
	b := e.encodePlain()
	if len(b) < compressAbove {
		return b
	}
	c := make([]byte, 1+s2.MaxEncodedLen(len(b)))
	c[0] = compressedVersion
	c = c[:1+len(s2.Encode(c[1:], b))]
	if len(c) >= len(b) {
		return b // incompressible (a large random value): as it is
	}
	return c
}

func (e entry) encodePlain() []byte {
	if len(e.group) > 0 {
		return e.encodeGroup()
	}
	b := make([]byte, 0, 1+3*binary.MaxVarintLen64+len(e.proposer)+len(e.data))
	b = append(b, entryVersion)
	b = binary.AppendUvarint(b, uint64(len(e.proposer)))
	b = append(b, e.proposer...)
	b = binary.AppendUvarint(b, e.seq)
	b = binary.AppendUvarint(b, e.floor)
	return append(b, e.data...)
}

func (e entry) encodeGroup() []byte {
	n := 1 + 3*binary.MaxVarintLen64 + len(e.proposer)
	for _, m := range e.group {
		n += 2*binary.MaxVarintLen64 + len(m.data)
	}
	b := make([]byte, 0, n)
	b = append(b, groupVersion)
	b = binary.AppendUvarint(b, uint64(len(e.proposer)))
	b = append(b, e.proposer...)
	b = binary.AppendUvarint(b, e.floor)
	b = binary.AppendUvarint(b, uint64(len(e.group)))
	for _, m := range e.group {
		b = binary.AppendUvarint(b, m.seq)
		b = binary.AppendUvarint(b, uint64(len(m.data)))
		b = append(b, m.data...)
	}
	return b
}

// compressReplyAbove is the size from which a replica's reply to another
// agent's write goes compressed (REPLYS2): every replica sends the
// proposer its replies, so a pipelined batch's thousand "+OK" came back
// twice, in full, over the proposer's link, beside its clients' requests.
const compressReplyAbove = 1 << 10

// compressReply is raw compressed (s2), if it is large enough to bother
// and that makes it smaller.
func compressReply(raw []byte) ([]byte, bool) {
	if len(raw) < compressReplyAbove {
		return nil, false
	}
	c := s2.Encode(nil, raw)
	return c, len(c) < len(raw)
}

func decodeEntry(b []byte) (entry, error) {
	if len(b) > 0 && b[0] == compressedVersion {
		plain, err := s2.Decode(nil, b[1:])
		if err != nil {
			return entry{}, fmt.Errorf("log entry: decompress: %w", err)
		}
		if len(plain) > 0 && plain[0] == compressedVersion {
			return entry{}, errors.New("log entry: compressed twice")
		}
		b = plain
	}
	if len(b) == 0 || b[0] < oldestVersion || b[0] > groupVersion {
		return entry{}, errors.New("log entry: unknown version")
	}
	var e entry
	version := b[0]
	b = b[1:]
	n, err := uvarint(&b)
	if err != nil || n > uint64(len(b)) {
		return entry{}, fmt.Errorf("log entry: bad proposer length")
	}
	e.proposer, b = string(b[:n]), b[n:]
	if version == groupVersion {
		return decodeGroup(e, b)
	}
	if e.seq, err = uvarint(&b); err != nil {
		return entry{}, fmt.Errorf("log entry: bad sequence number")
	}
	if e.floor, err = uvarint(&b); err != nil {
		return entry{}, fmt.Errorf("log entry: bad floor")
	}
	if version < compressedVersion {
		// The Redis record of the format before the seam: its kind was the version.
		e.data = append([]byte{version}, b...)
		return e, nil
	}
	e.data = b
	return e, nil
}

// decodeGroup reads a group entry's floor and writes, after its proposer.
func decodeGroup(e entry, b []byte) (entry, error) {
	var err error
	if e.floor, err = uvarint(&b); err != nil {
		return entry{}, fmt.Errorf("log entry: bad floor")
	}
	n, err := uvarint(&b)
	if err != nil || n == 0 || n > uint64(len(b)) {
		return entry{}, fmt.Errorf("log entry: bad group size")
	}
	e.group = make([]member, n)
	for i := range e.group {
		m := &e.group[i]
		if m.seq, err = uvarint(&b); err != nil {
			return entry{}, fmt.Errorf("log entry: bad sequence number in group")
		}
		size, err := uvarint(&b)
		if err != nil || size > uint64(len(b)) {
			return entry{}, fmt.Errorf("log entry: bad data length in group")
		}
		m.data, b = b[:size:size], b[size:]
	}
	if len(b) > 0 {
		return entry{}, fmt.Errorf("log entry: %d bytes after the group", len(b))
	}
	return e, nil
}

func uvarint(b *[]byte) (uint64, error) {
	v, n := binary.Uvarint(*b)
	if n <= 0 {
		return 0, errors.New("bad varint")
	}
	*b = (*b)[n:]
	return v, nil
}

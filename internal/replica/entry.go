package replica

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/klauspost/compress/s2"
)

// entryVersion marks an entry whose client gets the last reply but after;
// batchVersion one whose client gets every reply, in order (a pipelined
// batch of one connection's commands), and which names its reads;
// attemptVersion a blocking command's attempt, whose payload the applier
// builds (blockorder.go).
// compressedVersion wraps another entry's encoding, compressed.
const (
	entryVersion      = 4
	batchVersion      = 5
	attemptVersion    = 6
	compressedVersion = 7
)

// compressAbove is the size from which an entry is stored and sent
// compressed (s2): a pipelined batch of a thousand small writes, which at
// 100 Mbit/s the leader's link carried to each follower in full, shrinks
// several times (the commands' names and framing repeat), while a single
// write, whose latency is the point, is far below it and pays nothing.
const compressAbove = 8 << 10

// entry is one raft log entry: commands to send to every replica's redis.
type entry struct {
	// proposer is the raft address of the agent whose client waits for the
	// reply; every replica sends it the reply it got. Empty: nobody waits.
	proposer string
	seq      uint64 // the proposer's request number
	// floor is the proposer's lowest write still waiting for its first
	// reply when this entry was proposed: no entry of the proposer below it
	// will ever be proposed again, so replicas forget those sequence numbers.
	floor uint64
	// replies is how many replies payload makes redis send; the client gets
	// the last but after (EXEC's, for a transaction; the command's, when the
	// payload ends by switching the connection back to RESP2 and database
	// 0). Zero marks a no-op entry. In a batch, after is the frame: as many
	// replies before the client's as after them.
	replies, after int
	// volatile marks a reply that differs between replicas though their
	// data agree (PUBLISH counts the local server's subscribers): the
	// digest leaves it out, and the proposer answers with its own replica's.
	volatile bool
	// batch: the client gets every reply, concatenated in order. reads are
	// the positions (from 0) of the batch's replies that come from reads:
	// they stay out of the digest, since a read may answer differently on
	// each replica (TTL, RANDOMKEY) without the replicas diverging.
	batch   bool
	reads   []int
	payload []byte // RESP commands, sent to redis as they are
	// block, in a blocking command's attempt, stands for payload.
	block *attempt
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
	b := make([]byte, 0, 1+4*binary.MaxVarintLen64+len(e.proposer)+len(e.payload))
	switch {
	case e.block != nil:
		b = append(b, attemptVersion)
	case e.batch:
		b = append(b, batchVersion)
	default:
		b = append(b, entryVersion)
	}
	b = binary.AppendUvarint(b, uint64(len(e.proposer)))
	b = append(b, e.proposer...)
	b = binary.AppendUvarint(b, e.seq)
	b = binary.AppendUvarint(b, e.floor)
	b = binary.AppendUvarint(b, uint64(e.replies))
	b = binary.AppendUvarint(b, uint64(e.after))
	if e.volatile {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	if e.batch {
		b = binary.AppendUvarint(b, uint64(len(e.reads)))
		for _, r := range e.reads {
			b = binary.AppendUvarint(b, uint64(r))
		}
	}
	if e.block != nil {
		return e.block.appendTo(b)
	}
	return append(b, e.payload...)
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
	if len(b) == 0 || b[0] < entryVersion || b[0] > attemptVersion {
		return entry{}, errors.New("log entry: unknown version")
	}
	var e entry
	version := b[0]
	e.batch, b = version == batchVersion, b[1:]
	n, err := uvarint(&b)
	if err != nil || n > uint64(len(b)) {
		return entry{}, fmt.Errorf("log entry: bad proposer length")
	}
	e.proposer, b = string(b[:n]), b[n:]
	if e.seq, err = uvarint(&b); err != nil {
		return entry{}, fmt.Errorf("log entry: bad sequence number")
	}
	if e.floor, err = uvarint(&b); err != nil {
		return entry{}, fmt.Errorf("log entry: bad floor")
	}
	r, err := uvarint(&b)
	if err != nil || r > uint64(len(b)) {
		return entry{}, fmt.Errorf("log entry: bad reply count")
	}
	a, err := uvarint(&b)
	if err != nil || a >= max(r, 1) {
		return entry{}, fmt.Errorf("log entry: bad count of replies after the client's")
	}
	if len(b) == 0 || b[0] > 1 {
		return entry{}, fmt.Errorf("log entry: bad flags")
	}
	e.replies, e.after, e.volatile, b = int(r), int(a), b[0] == 1, b[1:]
	if e.batch {
		n, err := uvarint(&b)
		if err != nil || n > r {
			return entry{}, fmt.Errorf("log entry: bad read count")
		}
		for range n {
			p, err := uvarint(&b)
			if err != nil || p >= r {
				return entry{}, fmt.Errorf("log entry: bad read position")
			}
			e.reads = append(e.reads, int(p))
		}
	}
	if version == attemptVersion {
		if e.block, err = decodeAttempt(&b); err != nil {
			return entry{}, fmt.Errorf("log entry: %w", err)
		}
		return e, nil
	}
	e.payload = b
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

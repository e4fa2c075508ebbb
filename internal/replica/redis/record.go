package redis

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The kinds of a Redis record: a command or transaction whose client gets
// the last reply but after; a pipelined batch of one connection's commands,
// whose client gets every reply in order, and which names its reads; a
// blocking command's attempt, whose payload the applier builds
// (blockorder.go). They are the entry versions of the format before the
// adapter seam (entry.go), so old logs decode.
const (
	commandRecord = 4
	batchRecord   = 5
	attemptRecord = 6
)

// redisRecord is the Redis adapter's command as the log carries it (an entry's
// data): RESP commands to send to every replica's redis-server.
type redisRecord struct {
	// replies is how many replies payload makes redis send; the client gets
	// the last but after (EXEC's, for a transaction; the command's, when the
	// payload ends by switching the connection back to RESP2 and database
	// 0). Zero marks a no-op. In a batch, after is the frame: as many
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

func (r redisRecord) encode() []byte {
	b := make([]byte, 0, 1+2*binary.MaxVarintLen64+1+len(r.payload))
	switch {
	case r.block != nil:
		b = append(b, attemptRecord)
	case r.batch:
		b = append(b, batchRecord)
	default:
		b = append(b, commandRecord)
	}
	b = binary.AppendUvarint(b, uint64(r.replies))
	b = binary.AppendUvarint(b, uint64(r.after))
	if r.volatile {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	if r.batch {
		b = binary.AppendUvarint(b, uint64(len(r.reads)))
		for _, p := range r.reads {
			b = binary.AppendUvarint(b, uint64(p))
		}
	}
	if r.block != nil {
		return r.block.appendTo(b)
	}
	return append(b, r.payload...)
}

func decodeRedisRecord(b []byte) (redisRecord, error) {
	if len(b) == 0 || b[0] < commandRecord || b[0] > attemptRecord {
		return redisRecord{}, errors.New("redis record: unknown kind")
	}
	var r redisRecord
	kind := b[0]
	r.batch, b = kind == batchRecord, b[1:]
	n, err := uvarint(&b)
	if err != nil || n > uint64(len(b)) {
		return redisRecord{}, fmt.Errorf("redis record: bad reply count")
	}
	a, err := uvarint(&b)
	if err != nil || a >= max(n, 1) {
		return redisRecord{}, fmt.Errorf("redis record: bad count of replies after the client's")
	}
	if len(b) == 0 || b[0] > 1 {
		return redisRecord{}, fmt.Errorf("redis record: bad flags")
	}
	r.replies, r.after, r.volatile, b = int(n), int(a), b[0] == 1, b[1:]
	if r.batch {
		k, err := uvarint(&b)
		if err != nil || k > n {
			return redisRecord{}, fmt.Errorf("redis record: bad read count")
		}
		for range k {
			p, err := uvarint(&b)
			if err != nil || p >= n {
				return redisRecord{}, fmt.Errorf("redis record: bad read position")
			}
			r.reads = append(r.reads, int(p))
		}
	}
	if kind == attemptRecord {
		if r.block, err = decodeAttempt(&b); err != nil {
			return redisRecord{}, fmt.Errorf("redis record: %w", err)
		}
		return r, nil
	}
	r.payload = b
	return r, nil
}

// uvarint takes one uvarint off the front of *b.
func uvarint(b *[]byte) (uint64, error) {
	v, n := binary.Uvarint(*b)
	if n <= 0 {
		return 0, errors.New("bad varint")
	}
	*b = (*b)[n:]
	return v, nil
}

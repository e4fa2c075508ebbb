package replica

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Agents talk to each other (peer.go) in frames of their own: a frame's
// length, the number of its fields, and each field with its length, all
// as uvarints. A frame is read whole into one buffer, which its fields
// share; nothing in it is any client's protocol.

// appendFrame appends a frame of fields to dst.
func appendFrame(dst []byte, fields ...[]byte) []byte {
	n := uvarintLen(uint64(len(fields)))
	for _, f := range fields {
		n += uvarintLen(uint64(len(f))) + len(f)
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	dst = binary.AppendUvarint(dst, uint64(len(fields)))
	for _, f := range fields {
		dst = binary.AppendUvarint(dst, uint64(len(f)))
		dst = append(dst, f...)
	}
	return dst
}

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// readFrame reads one frame of at most max bytes from r.
func readFrame(r *bufio.Reader, max int) ([][]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > uint64(max) {
		return nil, fmt.Errorf("agent message of %d bytes: the limit is %d", n, max)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, noEOF(err)
	}
	count, err := uvarint(&body)
	if err != nil || count > uint64(len(body)) {
		return nil, errors.New("agent message: bad field count")
	}
	fields := make([][]byte, count)
	for i := range fields {
		l, err := uvarint(&body)
		if err != nil || l > uint64(len(body)) {
			return nil, errors.New("agent message: bad field length")
		}
		fields[i], body = body[:l:l], body[l:]
	}
	return fields, nil
}

package raft

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// gait: AppendEntries and its answer travel in a plain binary form of
// their own, not through msgpack. msgpack's reflection-driven codec, at
// every entry's six fields (AppendedAt a time.Time extension), was 10 % of
// gait's agents' CPU in SET at 8 clients, the decoder on the followers two
// thirds of it (pprof of the three agents, docs/results/replica-cpu-per-set.md).
// The other RPCs, rare, stay msgpack.
//
// A request is rpcGaitAppendEntries, a uvarint length and that many bytes:
// the header (protocol version, ID, Addr), Term, Leader, PrevLogEntry,
// PrevLogTerm, LeaderCommitIndex, the number of entries, and per entry
// Index, Term, Type, Data, Extensions and AppendedAt (Unix ns, or none),
// then GaitSent (gait_freshness.go).
// The answer: a uvarint length and that many bytes: the error text, the
// header, Term, LastLog and a byte of flags (Success, NoRetryBackoff).
// Byte strings carry their length plus one, 0 for nil, so nil and empty
// stay apart as msgpack kept them.
const rpcGaitAppendEntries uint8 = 'g'

// maxGaitRPC bounds a frame's length as read: a corrupt length must not
// make the reader allocate without bound.
const maxGaitRPC = 1 << 30

const (
	flagSuccess        = 1
	flagNoRetryBackoff = 2
)

func appendBytes(b, v []byte) []byte {
	if v == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(v))+1)
	return append(b, v...)
}

func appendHeader(b []byte, h RPCHeader) []byte {
	b = binary.AppendVarint(b, int64(h.ProtocolVersion))
	b = appendBytes(b, h.ID)
	return appendBytes(b, h.Addr)
}

// encodeAppendEntries appends req's frame body to body.
func encodeAppendEntries(body []byte, req *AppendEntriesRequest) []byte {
	body = appendHeader(body, req.RPCHeader)
	body = binary.AppendUvarint(body, req.Term)
	body = appendBytes(body, req.Leader)
	body = binary.AppendUvarint(body, req.PrevLogEntry)
	body = binary.AppendUvarint(body, req.PrevLogTerm)
	body = binary.AppendUvarint(body, req.LeaderCommitIndex)
	body = binary.AppendUvarint(body, uint64(len(req.Entries)))
	for _, l := range req.Entries {
		body = binary.AppendUvarint(body, l.Index)
		body = binary.AppendUvarint(body, l.Term)
		body = append(body, byte(l.Type))
		body = appendBytes(body, l.Data)
		body = appendBytes(body, l.Extensions)
		body = appendTime(body, l.AppendedAt)
	}
	return binary.AppendVarint(body, req.GaitSent)
}

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, 0)
	}
	b = append(b, 1)
	return binary.AppendVarint(b, t.UnixNano())
}

// encodeAppendEntriesResponse appends the answer's frame body to body.
func encodeAppendEntriesResponse(body []byte, errText string, resp *AppendEntriesResponse) []byte {
	body = binary.AppendUvarint(body, uint64(len(errText)))
	body = append(body, errText...)
	if resp == nil {
		resp = &AppendEntriesResponse{}
	}
	body = appendHeader(body, resp.RPCHeader)
	body = binary.AppendUvarint(body, resp.Term)
	body = binary.AppendUvarint(body, resp.LastLog)
	var flags byte
	if resp.Success {
		flags |= flagSuccess
	}
	if resp.NoRetryBackoff {
		flags |= flagNoRetryBackoff
	}
	return append(body, flags)
}

// writeFrame writes a frame: its body's length, then the body.
func writeFrame(w *bufio.Writer, body []byte) error {
	var n [binary.MaxVarintLen64]byte
	if _, err := w.Write(n[:binary.PutUvarint(n[:], uint64(len(body)))]); err != nil {
		return err
	}
	_, err := w.Write(body)
	return err
}

// readFrame reads one frame's body. The entries' Data alias it, so it is
// a fresh slice every time.
func readFrame(r *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > maxGaitRPC {
		return nil, fmt.Errorf("append entries: frame of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// frameReader takes a frame's fields in order; the first malformed one
// sets err and every later read returns zero.
type frameReader struct {
	b   []byte
	err error
}

var errBadFrame = errors.New("append entries: malformed frame")

func (f *frameReader) uvarint() uint64 {
	if f.err != nil {
		return 0
	}
	v, n := binary.Uvarint(f.b)
	if n <= 0 {
		f.err = errBadFrame
		return 0
	}
	f.b = f.b[n:]
	return v
}

func (f *frameReader) varint() int64 {
	if f.err != nil {
		return 0
	}
	v, n := binary.Varint(f.b)
	if n <= 0 {
		f.err = errBadFrame
		return 0
	}
	f.b = f.b[n:]
	return v
}

func (f *frameReader) byte() byte {
	if f.err != nil || len(f.b) == 0 {
		f.err = errBadFrame
		return 0
	}
	c := f.b[0]
	f.b = f.b[1:]
	return c
}

// bytes returns a byte string of the frame, aliasing it, capped so that
// an append to it never writes over what follows.
func (f *frameReader) bytes() []byte {
	n := f.uvarint()
	if f.err != nil || n == 0 {
		return nil
	}
	n--
	if n > uint64(len(f.b)) {
		f.err = errBadFrame
		return nil
	}
	v := f.b[:n:n]
	f.b = f.b[n:]
	return v
}

func (f *frameReader) header() RPCHeader {
	return RPCHeader{ProtocolVersion: ProtocolVersion(f.varint()), ID: f.bytes(), Addr: f.bytes()}
}

func (f *frameReader) time() time.Time {
	if f.byte() == 0 {
		return time.Time{}
	}
	return time.Unix(0, f.varint())
}

func decodeAppendEntries(body []byte, req *AppendEntriesRequest) error {
	f := frameReader{b: body}
	req.RPCHeader = f.header()
	req.Term = f.uvarint()
	req.Leader = f.bytes()
	req.PrevLogEntry = f.uvarint()
	req.PrevLogTerm = f.uvarint()
	req.LeaderCommitIndex = f.uvarint()
	n := f.uvarint()
	if f.err == nil && n > uint64(len(f.b)) {
		return errBadFrame // every entry takes bytes: a count past them is corrupt
	}
	if n > 0 {
		logs := make([]Log, n)
		req.Entries = make([]*Log, n)
		for i := range logs {
			l := &logs[i]
			l.Index, l.Term, l.Type = f.uvarint(), f.uvarint(), LogType(f.byte())
			l.Data, l.Extensions, l.AppendedAt = f.bytes(), f.bytes(), f.time()
			req.Entries[i] = l
		}
	}
	req.GaitSent = f.varint()
	if f.err == nil && len(f.b) != 0 {
		return errBadFrame
	}
	return f.err
}

// decodeAppendEntriesResponse fills resp and returns the error text.
func decodeAppendEntriesResponse(body []byte, resp *AppendEntriesResponse) (string, error) {
	f := frameReader{b: body}
	errText := string(f.bytesN(f.uvarint()))
	resp.RPCHeader = f.header()
	resp.Term = f.uvarint()
	resp.LastLog = f.uvarint()
	flags := f.byte()
	resp.Success, resp.NoRetryBackoff = flags&flagSuccess != 0, flags&flagNoRetryBackoff != 0
	if f.err == nil && len(f.b) != 0 {
		return "", errBadFrame
	}
	return errText, f.err
}

// bytesN takes the next n bytes.
func (f *frameReader) bytesN(n uint64) []byte {
	if f.err != nil {
		return nil
	}
	if n > uint64(len(f.b)) {
		f.err = errBadFrame
		return nil
	}
	v := f.b[:n:n]
	f.b = f.b[n:]
	return v
}

// sendAppendEntries writes req on conn in the binary form.
func sendAppendEntries(conn *netConn, req *AppendEntriesRequest) error {
	conn.scratch = encodeAppendEntries(conn.scratch[:0], req)
	if err := conn.w.WriteByte(rpcGaitAppendEntries); err != nil {
		return err
	}
	if err := writeFrame(conn.w, conn.scratch); err != nil {
		return err
	}
	if cap(conn.scratch) > connSendBufferSize {
		conn.scratch = nil // a backlog's batch is left to the collector
	}
	return nil
}

// readAppendEntriesResponse reads the answer to a binary AppendEntries.
func readAppendEntriesResponse(conn *netConn, resp *AppendEntriesResponse) (bool, error) {
	body, err := readFrame(conn.r)
	if err != nil {
		conn.Release()
		return false, err
	}
	errText, err := decodeAppendEntriesResponse(body, resp)
	if err != nil {
		conn.Release()
		return false, err
	}
	if errText != "" {
		return true, errors.New(errText)
	}
	return true, nil
}

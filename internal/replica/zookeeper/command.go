package zookeeper

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A command's Data, as the core logs it and hands it back to every
// replica: a kind byte, then fixed big-endian fields, then for requests
// the client's request record as it sent it (every replica translates it
// for its own server when it applies it, since that depends on the state).
const (
	kindRequest = 'q' // session, xid, opcode, record: a client's write or read
	kindConnect = 'c' // timeout, seed: a new session; its id is the log index
	kindResume  = 'r' // session, timeout, password: a client reconnects to its session
	kindTouch   = 't' // session: the session is alive (its client pinged)
	kindClose   = 'x' // session, xid: the client closes its session
	kindTick    = 'k' // nothing: moves the log's clock (sync)
)

// command is a decoded Data.
type command struct {
	kind    byte
	session int64
	xid     int32
	opcode  int32
	timeout int32
	secret  []byte // kindConnect: the proposer's random seed; kindResume: the client's password
	record  []byte
}

func (c command) encode() []byte {
	b := []byte{c.kind}
	switch c.kind {
	case kindRequest:
		b = binary.BigEndian.AppendUint64(b, uint64(c.session))
		b = binary.BigEndian.AppendUint32(b, uint32(c.xid))
		b = binary.BigEndian.AppendUint32(b, uint32(c.opcode))
		b = append(b, c.record...)
	case kindConnect:
		b = binary.BigEndian.AppendUint32(b, uint32(c.timeout))
		b = append(b, c.secret...)
	case kindResume:
		b = binary.BigEndian.AppendUint64(b, uint64(c.session))
		b = binary.BigEndian.AppendUint32(b, uint32(c.timeout))
		b = append(b, c.secret...)
	case kindTouch:
		b = binary.BigEndian.AppendUint64(b, uint64(c.session))
	case kindClose:
		b = binary.BigEndian.AppendUint64(b, uint64(c.session))
		b = binary.BigEndian.AppendUint32(b, uint32(c.xid))
	}
	return b
}

var errShortCommand = errors.New("zookeeper command: too short")

func decodeCommand(b []byte) (command, error) {
	if len(b) == 0 {
		return command{}, errShortCommand
	}
	c := command{kind: b[0]}
	b = b[1:]
	need := func(n int) bool { return len(b) >= n }
	u64 := func() int64 { v := int64(binary.BigEndian.Uint64(b)); b = b[8:]; return v }
	u32 := func() int32 { v := int32(binary.BigEndian.Uint32(b)); b = b[4:]; return v }
	switch c.kind {
	case kindRequest:
		if !need(16) {
			return c, errShortCommand
		}
		c.session = u64()
		c.xid = u32()
		c.opcode = u32()
		c.record = b
	case kindConnect:
		if !need(4) {
			return c, errShortCommand
		}
		c.timeout = u32()
		c.secret = b
	case kindResume:
		if !need(12) {
			return c, errShortCommand
		}
		c.session = u64()
		c.timeout = u32()
		c.secret = b
	case kindTouch:
		if !need(8) {
			return c, errShortCommand
		}
		c.session = u64()
	case kindClose:
		if !need(12) {
			return c, errShortCommand
		}
		c.session = u64()
		c.xid = u32()
	case kindTick:
	default:
		return c, fmt.Errorf("zookeeper command: unknown kind %q", c.kind)
	}
	return c, nil
}

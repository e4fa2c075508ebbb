package zookeeper

import (
	"fmt"

	"github.com/gait-dev/gait/third_party/zkwire"
)

// write is one write operation as the server is to run it: the client's
// request with the adapter's translations (sequential names chosen here,
// versions less the node's base), and what it changes once it succeeds.
type write struct {
	opcode int32 // as the client sent it
	path   string
	req    any // the record to send
	// owner is the node's ephemeralOwner as presented, for a create.
	owner     int64
	ephemeral bool
}

// translate prepares one write op for the server. cv is the cversion the
// operation's parent has when it runs (within a multi, after the ops
// before it); session is the client's.
func (b *backend) translate(opcode int32, rec any, session int64, cv func(string) (int32, bool)) (write, error) {
	w := write{opcode: opcode, req: rec}
	switch r := rec.(type) {
	case *zkwire.CreateRequest:
		r.Path, r.Flags = b.name(r.Path, r.Flags, cv)
		w.path = r.Path
		switch {
		case zkwire.IsEphemeral(r.Flags):
			w.owner, w.ephemeral = session, true
		case opcode == zkwire.OpCreateContainer || r.Flags == zkwire.FlagContainer:
			w.owner = containerOwner
		}
	case *zkwire.CreateTTLRequest:
		r.Path, r.Flags = b.name(r.Path, r.Flags, cv)
		w.path, w.owner = r.Path, ttlOwner(r.TTL)
	case *zkwire.PathVersionRequest: // delete, check
		w.path = r.Path
		r.Version = b.tree.serverVersion(r.Path, r.Version)
	case *zkwire.SetDataRequest:
		w.path = r.Path
		r.Version = b.tree.serverVersion(r.Path, r.Version)
	case *zkwire.SetACLRequest:
		w.path = r.Path
		r.Version = b.tree.serverAversion(r.Path, r.Version)
	default:
		return w, fmt.Errorf("opcode %d: not a write", opcode)
	}
	return w, nil
}

// name chooses a sequential node's name from its parent's cversion as the
// log counts it, as ZooKeeper would, and asks the server for a plain node
// of that name: the server's own counter differs once it was rebuilt.
func (b *backend) name(path string, flags int32, cv func(string) (int32, bool)) (string, int32) {
	if !zkwire.IsSequential(flags) {
		return path, flags
	}
	n, ok := cv(parentOf(path))
	if !ok {
		return path, flags // no such parent: the server says so
	}
	switch flags {
	case zkwire.FlagSequence:
		flags = zkwire.FlagPersistent
	case zkwire.FlagEphemeralSequential:
		flags = zkwire.FlagEphemeral
	case zkwire.FlagPersistentSequentialWithTTL:
		flags = zkwire.FlagTTL
	}
	return sequentialName(path, n), flags
}

// done changes the meta for a write the server ran.
func (b *backend) done(w write, zxid int64) {
	switch w.opcode {
	case zkwire.OpCreate, zkwire.OpCreate2, zkwire.OpCreateContainer, zkwire.OpCreateTTL:
		b.tree.created(w.path, zxid, b.clock, w.owner, w.ephemeral)
	case zkwire.OpDelete:
		b.tree.deleted(w.path, zxid)
	case zkwire.OpSetData:
		b.tree.dataSet(w.path, zxid, b.clock)
	}
}

// serverOp is the opcode the server gets: a create always as create2, for
// the stat the client may want.
func serverOp(op int32) int32 {
	if op == zkwire.OpCreate {
		return zkwire.OpCreate2
	}
	return op
}

// applyRequest runs one client write on the server and builds the reply.
func (b *backend) applyRequest(cmd command, zxid int64) ([]byte, error) {
	hdr := zkwire.ReplyHeader{Xid: cmd.xid, Zxid: zxid}
	rec := zkwire.RequestForOp(cmd.opcode)
	if rec == nil || !isWrite(cmd.opcode) {
		hdr.Err = zkwire.ErrUnimplemented
		return packet(hdr, nil), nil
	}
	if _, err := zkwire.Decode(cmd.record, rec); err != nil {
		hdr.Err = zkwire.ErrMarshallingError
		return packet(hdr, nil), nil
	}
	if cmd.opcode == zkwire.OpMulti {
		return b.applyMulti(cmd, rec.(*zkwire.MultiRequest), hdr)
	}
	w, err := b.translate(cmd.opcode, rec, cmd.session, b.tree.cversion)
	if err != nil {
		hdr.Err = zkwire.ErrUnimplemented
		return packet(hdr, nil), nil
	}
	conn := b.applier
	if w.ephemeral {
		if conn, err = b.owner(cmd.session); err != nil {
			return nil, b.failed(err)
		}
	}
	sh, body, err := conn.callRecord(serverOp(cmd.opcode), w.req)
	if err != nil {
		return nil, b.failed(err)
	}
	return b.finish(cmd, w, zxid, sh, body)
}

// finish builds the reply to a client write the server answered with sh
// and body, and changes the meta once it succeeded.
func (b *backend) finish(cmd command, w write, zxid int64, sh zkwire.ReplyHeader, body []byte) ([]byte, error) {
	hdr := zkwire.ReplyHeader{Xid: cmd.xid, Zxid: zxid}
	hdr.Err = sh.Err
	if sh.Err != zkwire.ErrOk {
		return packet(hdr, nil), nil
	}
	b.done(w, zxid)
	switch cmd.opcode {
	case zkwire.OpCreate, zkwire.OpCreate2, zkwire.OpCreateContainer, zkwire.OpCreateTTL:
		var r zkwire.Create2Response
		if _, err := zkwire.Decode(body, &r); err != nil {
			return nil, b.failed(fmt.Errorf("create reply: %w", err))
		}
		if cmd.opcode == zkwire.OpCreate {
			return packet(hdr, &zkwire.PathResponse{Path: r.Path}), nil
		}
		b.tree.present(r.Path, &r.Stat)
		return packet(hdr, &r), nil
	case zkwire.OpSetData, zkwire.OpSetACL:
		var r zkwire.StatResponse
		if _, err := zkwire.Decode(body, &r); err != nil {
			return nil, b.failed(fmt.Errorf("reply to opcode %d: %w", cmd.opcode, err))
		}
		b.tree.present(w.path, &r.Stat)
		return packet(hdr, &r), nil
	}
	return packet(hdr, nil), nil // delete, check
}

func isWrite(op int32) bool {
	switch op {
	case zkwire.OpCreate, zkwire.OpCreate2, zkwire.OpCreateContainer, zkwire.OpCreateTTL,
		zkwire.OpDelete, zkwire.OpSetData, zkwire.OpSetACL, zkwire.OpCheck, zkwire.OpMulti:
		return true
	}
	return false
}

// applyMulti runs a multi: every operation translated against the state
// the ones before it leave, all run by one server session (the client's
// own if any creates an ephemeral node), and the meta changed only if the
// whole multi succeeded, as ZooKeeper applies it.
func (b *backend) applyMulti(cmd command, m *zkwire.MultiRequest, hdr zkwire.ReplyHeader) ([]byte, error) {
	delta := map[string]int32{}
	created := map[string]bool{}
	cv := func(p string) (int32, bool) {
		n, ok := b.tree.cversion(p)
		if !ok && !created[p] {
			return 0, false
		}
		return n + delta[p], true
	}
	ws := make([]write, len(m.Ops))
	ephemeral := false
	for i, op := range m.Ops {
		w, err := b.translate(op.Header.Type, op.Op, cmd.session, cv)
		if err != nil {
			hdr.Err = zkwire.ErrUnimplemented
			return packet(hdr, nil), nil
		}
		switch w.opcode {
		case zkwire.OpCreate, zkwire.OpCreate2, zkwire.OpCreateContainer, zkwire.OpCreateTTL:
			delta[parentOf(w.path)]++
			created[w.path] = true
		case zkwire.OpDelete:
			delta[parentOf(w.path)]++
		}
		ephemeral = ephemeral || w.ephemeral
		ws[i] = w
	}
	conn := b.applier
	if ephemeral {
		var err error
		if conn, err = b.owner(cmd.session); err != nil {
			return nil, b.failed(err)
		}
	}
	sh, body, err := conn.callRecord(zkwire.OpMulti, m)
	if err != nil {
		return nil, b.failed(err)
	}
	hdr.Err = sh.Err
	var r zkwire.MultiResponse
	if _, err := zkwire.Decode(body, &r); err != nil {
		return packet(hdr, nil), nil // a multi refused as a whole (a marshalling error) has no results
	}
	ok := len(r.Results) == len(ws)
	for _, res := range r.Results {
		ok = ok && res.Type != zkwire.OpError
	}
	if ok {
		for _, w := range ws {
			b.done(w, hdr.Zxid)
		}
		for i := range r.Results {
			if s := r.Results[i].Stat; s != nil {
				b.tree.present(ws[i].path, s)
			}
		}
	}
	return packet(hdr, &r), nil
}

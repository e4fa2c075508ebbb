package zookeeper

import (
	"encoding/gob"
	"fmt"
	"io"
	"reflect"
	"sort"

	"github.com/gait-dev/gait/third_party/zkwire"
)

// snapshot is a replica's whole state: every node as clients see it, the
// sessions and the log's clock.
type snapshot struct {
	Magic    string
	Applied  uint64 // the last log index the snapshot holds
	Clock    int64
	Sessions []snapSession
	Root     snapNode
	Nodes    []snapNode // parents before children
}

const snapshotMagic = "gait-zookeeper-1"

type snapSession struct {
	ID      int64
	Timeout int32
	Passwd  []byte
	Touched int64
}

type snapNode struct {
	Path string
	Data []byte
	ACL  []zkwire.ACL
	Stat zkwire.Stat // as presented: the log's fields
	TTL  int64       // a TTL node's, from its owner mark
}

var openACL = []zkwire.ACL{{Perms: zkwire.PermAll, Scheme: "world", ID: "anyone"}}

// Snapshot writes every node the log made, with its data, ACL and stat as
// clients see them, then the sessions.
func (b *backend) Snapshot(w io.Writer) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := snapshot{Magic: snapshotMagic, Applied: b.applied.Load(), Clock: b.clock}
	for id, ss := range b.sessions {
		s.Sessions = append(s.Sessions, snapSession{id, ss.timeout, ss.passwd, ss.touched})
	}
	sort.Slice(s.Sessions, func(i, j int) bool { return s.Sessions[i].ID < s.Sessions[j].ID })
	paths := make([]string, 0, len(b.tree.nodes))
	for p := range b.tree.nodes {
		paths = append(paths, p)
	}
	sort.Strings(paths) // a parent is a prefix of its children's paths, so it sorts first
	for _, p := range paths {
		n, err := b.readNode(p)
		if err != nil {
			return err
		}
		if p == "/" {
			s.Root = n
		} else {
			s.Nodes = append(s.Nodes, n)
		}
	}
	if err := gob.NewEncoder(w).Encode(&s); err != nil {
		return fmt.Errorf("zookeeper snapshot: %w", err)
	}
	return nil
}

func (b *backend) readNode(path string) (snapNode, error) {
	n := snapNode{Path: path}
	var d zkwire.GetDataResponse
	if err := b.ask(zkwire.OpGetData, &zkwire.PathWatchRequest{Path: path}, &d); err != nil {
		return n, err
	}
	var a zkwire.GetACLResponse
	if err := b.ask(zkwire.OpGetACL, &zkwire.PathRequest{Path: path}, &a); err != nil {
		return n, err
	}
	b.tree.present(path, &d.Stat)
	n.Data, n.ACL, n.Stat = d.Data, a.ACL, d.Stat
	if o := n.Stat.EphemeralOwner; o != containerOwner && o>>56 == -1 {
		n.TTL = o &^ (-1 << 56)
	}
	return n, nil
}

// ask runs one request on the applier's session and decodes its reply.
func (b *backend) ask(opcode int32, req, resp any) error {
	hdr, body, err := b.applier.callRecord(opcode, req)
	if err != nil {
		return b.failed(err)
	}
	if hdr.Err != zkwire.ErrOk {
		return b.failed(fmt.Errorf("opcode %d: error %d", opcode, hdr.Err))
	}
	if resp == nil {
		return nil
	}
	if _, err := zkwire.Decode(body, resp); err != nil {
		return b.failed(fmt.Errorf("reply to opcode %d: %w", opcode, err))
	}
	return nil
}

// Restore rebuilds the server from a snapshot: every node created again
// (ephemeral ones by their sessions' server sessions) with an open ACL,
// then the ACLs set, children first; the meta records what the server's
// fresh counters lack.
func (b *backend) Restore(r io.Reader) error {
	var s snapshot
	if err := gob.NewDecoder(r).Decode(&s); err != nil {
		return fmt.Errorf("zookeeper restore: %w", err)
	}
	if s.Magic != snapshotMagic {
		return fmt.Errorf("zookeeper restore: not a gait zookeeper snapshot (%q)", s.Magic)
	}
	if err := b.Reset(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clock = s.Clock
	for _, ss := range s.Sessions {
		b.sessions[ss.ID] = &session{ss.Timeout, ss.Passwd, ss.Touched}
	}
	for _, n := range s.Nodes {
		if err := b.restoreNode(n); err != nil {
			return err
		}
	}
	root, err := b.rootStat()
	if err != nil {
		return err
	}
	m := metaOf(s.Root.Stat)
	m.versionBase -= root.Version
	m.aversionBase -= root.Aversion
	b.tree.nodes["/"] = m
	b.applied.Store(s.Applied)
	b.stale.Store(false)
	all := append([]snapNode{s.Root}, s.Nodes...)
	for i := len(all) - 1; i >= 0; i-- {
		n := all[i]
		if reflect.DeepEqual(n.ACL, openACL) {
			continue
		}
		if err := b.ask(zkwire.OpSetACL, &zkwire.SetACLRequest{Path: n.Path, ACL: n.ACL, Version: -1}, nil); err != nil {
			return err
		}
		b.tree.nodes[n.Path].aversionBase-- // the server counted this setACL
	}
	return nil
}

func metaOf(s zkwire.Stat) *meta {
	return &meta{czxid: s.Czxid, ctime: s.Ctime, mzxid: s.Mzxid, mtime: s.Mtime, pzxid: s.Pzxid,
		cversion: s.Cversion, owner: s.EphemeralOwner, versionBase: s.Version, aversionBase: s.Aversion}
}

func (b *backend) restoreNode(n snapNode) error {
	owner := n.Stat.EphemeralOwner
	req := &zkwire.CreateRequest{Path: n.Path, Data: n.Data, ACL: openACL}
	op, conn, ephemeral := int32(zkwire.OpCreate), b.applier, false
	var rec any = req
	switch {
	case owner == containerOwner:
		op = zkwire.OpCreateContainer
		req.Flags = zkwire.FlagContainer
	case n.TTL != 0:
		op = zkwire.OpCreateTTL
		rec = &zkwire.CreateTTLRequest{Path: n.Path, Data: n.Data, ACL: openACL, Flags: zkwire.FlagTTL, TTL: n.TTL}
	case owner != 0:
		var err error
		if conn, err = b.owner(owner); err != nil {
			return b.failed(err)
		}
		req.Flags, ephemeral = zkwire.FlagEphemeral, true
	}
	hdr, _, err := conn.callRecord(op, rec)
	if err == nil && hdr.Err != zkwire.ErrOk {
		err = fmt.Errorf("error %d", hdr.Err)
	}
	if err != nil {
		return b.failed(fmt.Errorf("restore %s: %w", n.Path, err))
	}
	b.tree.nodes[n.Path] = metaOf(n.Stat)
	if ephemeral {
		if b.tree.owned[owner] == nil {
			b.tree.owned[owner] = map[string]bool{}
		}
		b.tree.owned[owner][n.Path] = true
	}
	return nil
}

// Reset empties the server: every session of the adapter's ends, and
// every node but ZooKeeper's own /zookeeper is deleted, children first.
func (b *backend) Reset() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, c := range b.owners {
		c.closeSession() // a failed connection's session ends by its timeout
		delete(b.owners, id)
	}
	b.rmu.Lock()
	for id, c := range b.watchers {
		c.drop()
		delete(b.watchers, id)
	}
	b.rmu.Unlock()
	if err := b.deleteChildren("/"); err != nil {
		return err
	}
	if err := b.ask(zkwire.OpSetACL, &zkwire.SetACLRequest{Path: "/", ACL: openACL, Version: -1}, nil); err != nil {
		return err
	}
	root, err := b.rootStat()
	if err != nil {
		return err
	}
	b.tree, b.sessions, b.clock = newTree(), map[int64]*session{}, 0
	// The root outlives every reset, its counters with it: the log's
	// count begins at zero.
	b.tree.nodes["/"].versionBase, b.tree.nodes["/"].aversionBase = -root.Version, -root.Aversion
	b.applied.Store(0)
	b.stale.Store(false)
	return nil
}

func (b *backend) rootStat() (zkwire.Stat, error) {
	var r zkwire.StatResponse
	err := b.ask(zkwire.OpExists, &zkwire.PathWatchRequest{Path: "/"}, &r)
	return r.Stat, err
}

func (b *backend) deleteChildren(path string) error {
	var c zkwire.GetChildrenResponse
	if err := b.ask(zkwire.OpGetChildren, &zkwire.PathWatchRequest{Path: path}, &c); err != nil {
		return err
	}
	for _, name := range c.Children {
		child := path + "/" + name
		if path == "/" {
			if name == "zookeeper" {
				continue
			}
			child = "/" + name
		}
		if err := b.deleteChildren(child); err != nil {
			return err
		}
		hdr, _, err := b.applier.callRecord(zkwire.OpDelete, &zkwire.PathVersionRequest{Path: child, Version: -1})
		if err != nil {
			return b.failed(err)
		}
		if hdr.Err != zkwire.ErrOk && hdr.Err != zkwire.ErrNoNode {
			return b.failed(fmt.Errorf("delete %s: error %d", child, hdr.Err))
		}
	}
	return nil
}

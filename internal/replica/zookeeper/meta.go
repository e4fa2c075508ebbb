package zookeeper

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gait-dev/gait/third_party/zkwire"
)

// Every replica's ZooKeeper numbers its own transactions, keeps its own
// clock and its own session ids, so the same node carries different zxids,
// times and owners on each. The adapter does not ask ZooKeeper for them:
// it keeps, beside each node, the fields the log decides (meta), changes
// them as it applies each write, and writes them into every stat it
// returns. zxids are log indexes, times the leader's clock carried in the
// log, owners the agents' session ids; so duplicates reply byte for byte
// alike. The rest of a stat (dataLength, numChildren) ZooKeeper gives, the
// same on every replica. Version and aversion come from ZooKeeper plus a
// base, zero until a replica is rebuilt from a snapshot (its server then
// counts from zero again); cversion is kept here outright, since it also
// names sequential children: the adapter names them itself.
type meta struct {
	czxid, ctime, mzxid, mtime, pzxid int64
	cversion                          int32
	owner                             int64 // ephemeralOwner as presented: agent session, container or TTL mark
	versionBase, aversionBase         int32
}

// containerOwner and ttlOwner are how ZooKeeper marks containers and TTL
// nodes in ephemeralOwner (EphemeralType).
const containerOwner = math.MinInt64

func ttlOwner(ttl int64) int64 { return -1<<56 | ttl }

// tree is the meta of every node but ZooKeeper's own /zookeeper.
type tree struct {
	nodes map[string]*meta
	owned map[int64]map[string]bool // session → its ephemeral nodes
}

func newTree() *tree {
	return &tree{nodes: map[string]*meta{"/": {}}, owned: map[int64]map[string]bool{}}
}

func parentOf(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

// cversion is a node's cversion, for naming a sequential child; ok false
// when the adapter does not know the node (it is missing, or ZooKeeper's own).
func (t *tree) cversion(path string) (int32, bool) {
	m := t.nodes[path]
	if m == nil {
		return 0, false
	}
	return m.cversion, true
}

// sequentialName is the name ZooKeeper would give a sequential child
// created when its parent's cversion is cv.
func sequentialName(path string, cv int32) string {
	return fmt.Sprintf("%s%010d", path, cv)
}

func (t *tree) created(path string, zxid, ms, owner int64, isEphemeral bool) {
	t.nodes[path] = &meta{czxid: zxid, ctime: ms, mzxid: zxid, mtime: ms, pzxid: zxid, owner: owner}
	if isEphemeral {
		if t.owned[owner] == nil {
			t.owned[owner] = map[string]bool{}
		}
		t.owned[owner][path] = true
	}
	t.childChanged(path, zxid)
}

func (t *tree) childChanged(path string, zxid int64) {
	if p := t.nodes[parentOf(path)]; p != nil {
		p.cversion++
		p.pzxid = zxid
	}
}

func (t *tree) deleted(path string, zxid int64) {
	if m := t.nodes[path]; m != nil {
		if s := t.owned[m.owner]; s != nil {
			delete(s, path)
			if len(s) == 0 {
				delete(t.owned, m.owner)
			}
		}
	}
	delete(t.nodes, path)
	t.childChanged(path, zxid)
}

func (t *tree) dataSet(path string, zxid, ms int64) {
	if m := t.nodes[path]; m != nil {
		m.mzxid, m.mtime = zxid, ms
	}
}

// ephemerals are a session's ephemeral nodes, deepest first.
func (t *tree) ephemerals(session int64) []string {
	var out []string
	for p := range t.owned[session] {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] > out[j] })
	return out
}

// present writes the log's fields into a stat ZooKeeper returned for path.
func (t *tree) present(path string, s *zkwire.Stat) {
	m := t.nodes[path]
	if m == nil { // ZooKeeper's own nodes: created before any log entry
		s.Czxid, s.Mzxid, s.Pzxid, s.Ctime, s.Mtime, s.EphemeralOwner = 0, 0, 0, 0, 0, 0
		return
	}
	s.Czxid, s.Ctime, s.Mzxid, s.Mtime, s.Pzxid = m.czxid, m.ctime, m.mzxid, m.mtime, m.pzxid
	s.Cversion = m.cversion
	s.Version += m.versionBase
	s.Aversion += m.aversionBase
	s.EphemeralOwner = m.owner
}

// serverVersion is the version to send ZooKeeper for one a client
// expects: its own, less the node's base. -1 (any) stays -1; a version
// that cannot match must not become -1 by the subtraction.
func serverVersion(v, base int32) int32 {
	if v == -1 || base == 0 {
		return v
	}
	if w := v - base; w >= 0 {
		return w
	}
	return math.MinInt32
}

func (t *tree) serverVersion(path string, v int32) int32 {
	if m := t.nodes[path]; m != nil {
		return serverVersion(v, m.versionBase)
	}
	return v
}

func (t *tree) serverAversion(path string, v int32) int32 {
	if m := t.nodes[path]; m != nil {
		return serverVersion(v, m.aversionBase)
	}
	return v
}

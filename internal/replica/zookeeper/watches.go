package zookeeper

import (
	"fmt"

	"github.com/gait-dev/gait/third_party/zkwire"
)

// setWatches re-registers a reconnecting client's watches on this
// replica's server, as ZooKeeper's DataTree.setWatches does: a watch whose
// node changed after the client's last zxid (a log index here) fires at
// once; the others are set where they will fire. The events that fire at
// once come before the reply, in the same bytes.
func (b *backend) setWatches(cmd command) ([]byte, error) {
	var req zkwire.SetWatchesRequest
	if _, err := zkwire.Decode(cmd.record, &req); err != nil {
		return packet(zkwire.ReplyHeader{Xid: zkwire.XidSetWatches, Err: zkwire.ErrMarshallingError}, nil), nil
	}
	conn, err := b.watcher(cmd.session)
	if err != nil {
		return nil, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []byte
	fire := func(t zkwire.EventType, path string) {
		out = append(out, packet(zkwire.ReplyHeader{Xid: zkwire.XidNotification, Zxid: -1},
			&zkwire.WatcherEvent{Type: t, State: zkwire.StateSyncConnected, Path: path})...)
	}
	set := func(op int32, path string) (zkwire.ErrCode, error) {
		hdr, _, err := conn.callRecord(op, &zkwire.PathWatchRequest{Path: path, Watch: true})
		if err != nil {
			return 0, fmt.Errorf("zookeeper at %s: set a watch on %s: %w", b.addr, path, err)
		}
		return hdr.Err, nil
	}
	rel := req.RelativeZxid
	for _, p := range req.DataWatches {
		m := b.tree.nodes[p]
		switch {
		case m == nil && p != "/zookeeper" && !under(p, "/zookeeper"):
			fire(zkwire.EventNodeDeleted, p)
		case m != nil && m.mzxid > rel:
			fire(zkwire.EventNodeDataChanged, p)
		default:
			code, err := set(zkwire.OpGetData, p)
			if err != nil {
				return nil, err
			}
			if code == zkwire.ErrNoNode {
				fire(zkwire.EventNodeDeleted, p)
			}
		}
	}
	for _, p := range req.ExistWatches {
		if m := b.tree.nodes[p]; m != nil {
			fire(zkwire.EventNodeCreated, p)
			continue
		}
		if _, err := set(zkwire.OpExists, p); err != nil {
			return nil, err
		}
	}
	for _, p := range req.ChildWatches {
		m := b.tree.nodes[p]
		switch {
		case m == nil && p != "/zookeeper" && !under(p, "/zookeeper"):
			fire(zkwire.EventNodeDeleted, p)
		case m != nil && m.pzxid > rel:
			fire(zkwire.EventNodeChildrenChanged, p)
		default:
			code, err := set(zkwire.OpGetChildren, p)
			if err != nil {
				return nil, err
			}
			if code == zkwire.ErrNoNode {
				fire(zkwire.EventNodeDeleted, p)
			}
		}
	}
	return append(out, packet(zkwire.ReplyHeader{Xid: zkwire.XidSetWatches, Zxid: int64(b.applied.Load())}, nil)...), nil
}

func under(path, dir string) bool {
	return len(path) > len(dir) && path[:len(dir)] == dir && path[len(dir)] == '/'
}

package hdfs

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"syscall"
	"time"
)

// fsState is what the NameNode's FSNamesystemState bean says of its
// DataNodes and of the blocks short of replicas. The bean is a plain
// MBean: each read asks the NameNode's block manager, where the metrics
// beans (FSNamesystem) are cached for up to ten seconds.
type fsState struct {
	NumLiveDataNodes, NumDeadDataNodes               int
	LowRedundancyBlocks, PendingReconstructionBlocks int64
}

func (c *Cluster) fsState(ctx context.Context) (fsState, error) {
	ctx, cancel := context.WithTimeout(ctx, jmxTimeout)
	defer cancel()
	beans, err := jmx(ctx, httpAddr(c.nn), "Hadoop:service=NameNode,name=FSNamesystemState")
	if err != nil {
		return fsState{}, err
	}
	if len(beans) != 1 {
		return fsState{}, fmt.Errorf("%w: no FSNamesystemState bean", errNoNameNode)
	}
	var s fsState
	if err := json.Unmarshal(beans[0], &s); err != nil {
		return fsState{}, fmt.Errorf("FSNamesystemState: %w", err)
	}
	return s, nil
}

// blocksOn is how many blocks the NameNode lists on m's DataNode.
func (c *Cluster) blocksOn(ctx context.Context, m *member) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, jmxTimeout)
	defer cancel()
	beans, err := jmx(ctx, httpAddr(c.nn), "Hadoop:service=NameNode,name=NameNodeInfo")
	if err != nil {
		return 0, err
	}
	if len(beans) != 1 {
		return 0, fmt.Errorf("%w: no NameNodeInfo bean", errNoNameNode)
	}
	var info nameNodeInfo
	if err := json.Unmarshal(beans[0], &info); err != nil {
		return 0, fmt.Errorf("NameNodeInfo: %w", err)
	}
	var nodes map[string]struct{ NumBlocks int }
	if err := json.Unmarshal([]byte(info.LiveNodes), &nodes); err != nil {
		return 0, fmt.Errorf("NameNodeInfo LiveNodes: %w", err)
	}
	for addr, n := range nodes {
		if host, _, err := net.SplitHostPort(addr); err == nil && host == m.host.Address() {
			return n.NumBlocks, nil
		}
	}
	return 0, fmt.Errorf("the NameNode does not count %s's DataNode live", m.host.Name())
}

// statePoll is how often regenerate asks the NameNode.
const statePoll = 100 * time.Millisecond

// waitState polls the NameNode until done says yes of its state, or ctx
// ends; a failed poll is tried again (the NameNode may be busy).
func (c *Cluster) waitState(ctx context.Context, what string, done func(fsState) bool) error {
	var last error
	for {
		s, err := c.fsState(ctx)
		if err == nil && done(s) {
			return nil
		}
		if err != nil {
			last = err
		} else {
			last = fmt.Errorf("%d live, %d dead, %d blocks low on replicas, %d being copied", s.NumLiveDataNodes, s.NumDeadDataNodes, s.LowRedundancyBlocks, s.PendingReconstructionBlocks)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s (last: %v): %w", what, last, ctx.Err())
		case <-time.After(statePoll):
		}
	}
}

// regenerate is the regenerate op: one death of the last DataNode and
// the NameNode's regeneration of its replicas. The DataNode is stopped
// (SIGSTOP): it sends no more heartbeats and answers nothing, which is
// all the NameNode sees of a crash, and it comes back with SIGCONT
// without the seconds a new JVM takes to start. The op waits until the
// NameNode has declared it dead (Driver.DeadAfter after its last
// heartbeat) and has no block short of replicas and none being copied,
// then resumes it and waits until the NameNode counts every DataNode live,
// nothing short, and the DataNode's replicas listed again (the excess ones,
// a block's fourth, the NameNode then deletes: some of them the returning
// node's). Regenerations of a cluster run one at a time.
func (c *Cluster) regenerate(ctx context.Context) error {
	c.regenMu.Lock()
	defer c.regenMu.Unlock()
	dataNodes := len(c.members) - 1
	victim := c.members[dataNodes]
	p, ok := victim.Current().(interface{ Signal(syscall.Signal) error })
	if !ok || victim.Current().Exited() {
		return fmt.Errorf("hdfs regenerate: the DataNode on %s is not running", victim.host.Name())
	}
	held, err := c.blocksOn(ctx, victim)
	if err != nil {
		return fmt.Errorf("hdfs regenerate: %w", err)
	}
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("hdfs regenerate: %w", err)
	}
	stopped := true
	defer func() {
		if stopped {
			p.Signal(syscall.SIGCONT)
		}
	}()
	// NumDeadDataNodes counts a DataNode dead as soon as its last
	// heartbeat is older than the dead interval; the NameNode takes its
	// replicas off its books only at its next heartbeat check, up to a
	// recheck interval later, and only then counts their blocks short.
	dead := func(s fsState) bool {
		return s.NumDeadDataNodes > 0 && (held == 0 || s.LowRedundancyBlocks+s.PendingReconstructionBlocks > 0)
	}
	if err := c.waitState(ctx, victim.host.Name()+"'s DataNode declared dead and its blocks short", dead); err != nil {
		return fmt.Errorf("hdfs regenerate: %w", err)
	}
	regenerated := func(s fsState) bool { return s.LowRedundancyBlocks == 0 && s.PendingReconstructionBlocks == 0 }
	if err := c.waitState(ctx, "its blocks regenerated", regenerated); err != nil {
		return fmt.Errorf("hdfs regenerate: %w", err)
	}
	stopped = false
	if err := p.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("hdfs regenerate: %w", err)
	}
	// A DataNode that registers again is listed with no blocks until the
	// NameNode has processed its full block report; the next op must see
	// them to know it has replicas to lose.
	back := func(s fsState) bool {
		if s.NumLiveDataNodes != dataNodes || !regenerated(s) {
			return false
		}
		n, err := c.blocksOn(ctx, victim)
		return held == 0 || err == nil && n > 0
	}
	if err := c.waitState(ctx, victim.host.Name()+"'s DataNode live again", back); err != nil {
		return fmt.Errorf("hdfs regenerate: %w", err)
	}
	return nil
}

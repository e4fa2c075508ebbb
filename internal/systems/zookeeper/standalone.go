package zookeeper

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/systems"
)

// StartStandalone starts one standalone ZooKeeper server on h listening
// at port, as gait replica's ZooKeeper adapter fronts it (a duplicate of
// RP ZooKeeper's Figure 10), and returns once it answers.
//
// Its settings serve a server whose data the adapter owns: no fsync per
// transaction (gait's raft log makes writes durable; a server that loses
// its tail is rebuilt from a snapshot and the log), TTL nodes enabled, and
// the container manager, which reaps empty containers and expired TTL
// nodes on each server's own clock (so duplicates would diverge), never
// running. The data directory is emptied first.
func (d *Driver) StartStandalone(ctx context.Context, h systems.Host, port int) (systems.Process, error) {
	if err := systems.CheckHere([]systems.Host{h}, d.Check); err != nil {
		return nil, err
	}
	base := filepath.Join(h.DataDir(), "zookeeper")
	if err := h.RemoveAll(base); err != nil {
		return nil, fmt.Errorf("zookeeper on %s: %w", h.Name(), err)
	}
	if err := h.MkdirAll(filepath.Join(base, "data")); err != nil {
		return nil, fmt.Errorf("zookeeper on %s: %w", h.Name(), err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\n", d.TickTime.Milliseconds())
	fmt.Fprintf(&b, "dataDir=%s\n", filepath.Join(base, "data"))
	fmt.Fprintf(&b, "clientPort=%d\nclientPortAddress=%s\n", port, h.Address())
	b.WriteString("admin.enableServer=false\n4lw.commands.whitelist=mntr,stat,srvr,ruok\n")
	b.WriteString("maxClientCnxns=0\nforceSync=no\n")
	conf := filepath.Join(base, "zoo.cfg")
	if err := h.WriteFile(conf, []byte(b.String())); err != nil {
		return nil, fmt.Errorf("zookeeper on %s: %w", h.Name(), err)
	}
	argv := append([]string{d.Java}, d.JVMFlags...)
	argv = append(argv,
		"-Dzookeeper.log.dir="+base,
		"-Dzookeeper.extendedTypesEnabled=true",
		"-Dznode.container.checkIntervalMs=2147483647",
		"-cp", strings.Join(d.ClassPath, ":"),
		"org.apache.zookeeper.server.ZooKeeperServerMain", conf)
	proc, err := h.Start("zookeeper", argv, nil)
	if err != nil {
		return nil, fmt.Errorf("zookeeper on %s: %w", h.Name(), err)
	}
	if err := d.WaitServes(ctx, h, net.JoinHostPort(h.Address(), strconv.Itoa(port)), proc); err != nil {
		proc.Stop()
		return nil, err
	}
	return proc, nil
}

// WaitServes waits, up to the driver's StartTimeout, until the server
// proc on h serves at addr, standalone or as a member of its ensemble
// (after StartStandalone, or once restarted in place), or fails with the
// tail of its log.
func (d *Driver) WaitServes(ctx context.Context, h systems.Host, addr string, proc systems.Process) error {
	members := func() []systems.Starting { return []systems.Starting{{Host: h.Name(), Proc: proc}} }
	return systems.WaitReady(ctx, "zookeeper", d.StartTimeout, members, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		s, err := flw(ctx, addr, "srvr")
		if err != nil {
			return err
		}
		if !strings.Contains(s, "Mode: standalone") && !strings.Contains(s, "Mode: leader") && !strings.Contains(s, "Mode: follower") {
			return fmt.Errorf("srvr: not serving yet")
		}
		return nil
	})
}

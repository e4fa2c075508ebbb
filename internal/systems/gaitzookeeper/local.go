// Package gaitzookeeper runs gait replica in front of unmodified ZooKeeper
// servers (RP ZooKeeper without its repeater; docs/systems/gait-zookeeper.md):
// every replica an agent with ZooKeeper's adapter
// (internal/replica/zookeeper) and its own ZooKeeper, a standalone server
// (the thesis's Figure 10) or a 3-server ensemble (its Figure 13).
package gaitzookeeper

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/gait-dev/gait/internal/replica"
	"github.com/gait-dev/gait/internal/replica/zookeeper"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/gaitredis"
	zksys "github.com/gait-dev/gait/internal/systems/zookeeper"
)

// CheckGroupSize checks how many ZooKeeper servers each replica runs.
func CheckGroupSize(n int) error {
	if n != 1 && n != 3 {
		return fmt.Errorf("group size %d: want 1 (a standalone server per replica) or 3 (an ensemble per replica)", n)
	}
	return nil
}

// LocalServer is the server behind every agent of a loopback deployment
// (gaitredis.StartLocalWith): a standalone ZooKeeper server, or with
// groupSize 3 an ensemble of three, each replica's its own.
func LocalServer(groupSize int) (*gaitredis.Server, error) {
	if err := CheckGroupSize(groupSize); err != nil {
		return nil, err
	}
	start := startStandalone
	if groupSize == 3 {
		start = startLocalEnsemble
	}
	return &gaitredis.Server{Start: start, Adapter: func() replica.Adapter { return &zookeeper.Adapter{} }}, nil
}

func startStandalone(ctx context.Context, h systems.Host) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	if _, err := zksys.New().StartStandalone(ctx, h, port); err != nil {
		return "", err
	}
	return net.JoinHostPort(h.Address(), strconv.Itoa(port)), nil
}

// startLocalEnsemble starts a loopback replica's ensemble on free ports
// and returns the first server's client address.
func startLocalEnsemble(ctx context.Context, h systems.Host) (string, error) {
	var ports [3][3]int
	for i := range ports {
		for j := range ports[i] {
			p, err := freePort()
			if err != nil {
				return "", err
			}
			ports[i][j] = p
		}
	}
	if _, err := startEnsemble(ctx, zksys.New(), h, ports); err != nil {
		return "", err
	}
	return net.JoinHostPort(h.Address(), strconv.Itoa(ports[0][0])), nil
}

// startEnsemble starts a replica's three ZooKeeper servers on h's address,
// server i at ports[i] (client, quorum, election), and returns the first
// server's process once the ensemble serves: the agent's sessions all go
// to that server, and it forwards writes to the ensemble's leader.
func startEnsemble(ctx context.Context, d *zksys.Driver, h systems.Host, ports [3][3]int) (systems.Process, error) {
	// As for a standalone backend (zookeeper.Driver.StartStandalone): the
	// container manager, which reaps on each server's own clock, never
	// runs, and TTL nodes are enabled.
	d.JVMFlags = append(slices.Clone(d.JVMFlags), "-Dzookeeper.extendedTypesEnabled=true", "-Dznode.container.checkIntervalMs=2147483647")
	var first systems.Process
	var members []systems.Host
	for i, p := range ports {
		dir := filepath.Join(h.DataDir(), fmt.Sprintf("zk%d", i+1))
		if err := h.MkdirAll(dir); err != nil {
			return nil, fmt.Errorf("zookeeper ensemble on %s: %w", h.Name(), err)
		}
		m := member{Host: h, name: fmt.Sprintf("%s-zk%d", h.Name(), i+1), dir: dir, ports: p}
		if i == 0 {
			m.started = &first
		}
		members = append(members, m)
	}
	if _, err := d.Start(ctx, members); err != nil {
		return nil, err
	}
	return first, nil
}

// member is one server of a replica's ensemble: ports and a directory of
// its own on the replica's host, its processes started (and so recorded)
// there.
type member struct {
	systems.Host
	name, dir string
	ports     [3]int           // client, quorum, election
	started   *systems.Process // where its process goes once started, if set
}

var _ zksys.PortsHost = member{}

func (m member) Name() string    { return m.name }
func (m member) DataDir() string { return m.dir }

func (m member) ZooKeeperPorts() (client, quorum, election int) {
	return m.ports[0], m.ports[1], m.ports[2]
}

func (m member) Start(name string, argv []string, env []string) (systems.Process, error) {
	p, err := m.Host.Start(name+"-"+m.name, argv, env)
	if err == nil && m.started != nil {
		*m.started = p
	}
	return p, err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

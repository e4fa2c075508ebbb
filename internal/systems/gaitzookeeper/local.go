// Package gaitzookeeper runs gait replica in front of unmodified ZooKeeper
// servers (RP ZooKeeper without its repeater; docs/systems/gait-zookeeper.md):
// every replica an agent with ZooKeeper's adapter
// (internal/replica/zookeeper) and its own ZooKeeper, a standalone server
// (the thesis's Figure 10) or a 3-server ensemble (its Figure 13).
package gaitzookeeper

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
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
		start = startEnsemble
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

// startEnsemble starts three servers on addresses of their own in one
// loopback /24 (their quorum and election ports are the same on each) and
// returns the first's client address: the agent's sessions all go to it,
// and it forwards writes to the ensemble's leader.
func startEnsemble(ctx context.Context, h systems.Host) (string, error) {
	d := zksys.New()
	ports := make([]int, 3)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return "", err
		}
		ports[i] = p
	}
	d.ClientPort, d.QuorumPort, d.ElectionPort = ports[0], ports[1], ports[2]
	// As for a standalone backend (zookeeper.Driver.StartStandalone): the
	// container manager, which reaps on each server's own clock, never
	// runs, and TTL nodes are enabled.
	d.JVMFlags = append(d.JVMFlags, "-Dzookeeper.extendedTypesEnabled=true", "-Dznode.container.checkIntervalMs=2147483647")
	b, c := 16+rand.IntN(240), rand.IntN(256)
	var members []systems.Host
	for i := range 3 {
		dir := filepath.Join(h.DataDir(), fmt.Sprintf("zk%d", i+1))
		if err := h.MkdirAll(dir); err != nil {
			return "", fmt.Errorf("zookeeper ensemble on %s: %w", h.Name(), err)
		}
		members = append(members, member{Host: h, name: fmt.Sprintf("%s-zk%d", h.Name(), i+1),
			addr: fmt.Sprintf("127.%d.%d.%d", b, c, i+1), dir: dir})
	}
	if _, err := d.Start(ctx, members); err != nil {
		return "", err
	}
	return net.JoinHostPort(members[0].Address(), strconv.Itoa(d.ClientPort)), nil
}

// member is one server of a replica's ensemble: an address and directory
// of its own, its processes started (and so recorded) on the replica's host.
type member struct {
	systems.Host
	name, addr, dir string
}

func (m member) Name() string    { return m.name }
func (m member) Address() string { return m.addr }
func (m member) DataDir() string { return m.dir }

func (m member) Start(name string, argv []string, env []string) (systems.Process, error) {
	return m.Host.Start(name+"-"+m.name, argv, env)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

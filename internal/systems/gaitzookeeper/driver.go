package gaitzookeeper

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/gaitredis"
	zksys "github.com/gait-dev/gait/internal/systems/zookeeper"
)

// New returns the driver of system gait-zookeeper: gait-redis's driver
// (agents, raft roles, metrics, restarts, testbed deployments) with an
// unmodified standalone ZooKeeper behind every agent instead of a
// redis-server. Clients speak ZooKeeper's protocol to the agents at port
// 2181, the ZooKeeper servers listen on 2281.
func New() *gaitredis.Driver { return NewGroup(1) }

// NewGroup is New with groupSize ZooKeeper servers per replica (1, or 3:
// an ensemble on the replica's host, at client ports 2281 to 2283, quorum
// ports 2888 to 2890 and election ports 3888 to 3890; its agent talks to
// the first). groupSize is checked by CheckGroupSize.
func NewGroup(groupSize int) *gaitredis.Driver {
	d := gaitredis.New()
	d.Backend = Backend{ZooKeeper: zksys.New(), GroupSize: groupSize}
	d.ServerPort, d.ClientPort = 2281, 2181
	// A JVM per host starts in seconds, tens of them on a busy machine.
	d.StartTimeout = 90 * time.Second
	return d
}

// Backend is a standalone ZooKeeper server, or with GroupSize 3 an
// ensemble of three, behind every agent of a testbed deployment
// (gaitredis.Backend).
type Backend struct {
	ZooKeeper *zksys.Driver
	GroupSize int
}

var _ gaitredis.Backend = Backend{}

func (Backend) System() string { return "gait-zookeeper" }

func (b Backend) Check() error { return b.ZooKeeper.Check() }

// Needs are ZooKeeper's java and jars.
func (b Backend) Needs() []string { return b.ZooKeeper.Needs() }

// Start starts the replica's server on h at port, or its ensemble, the
// first server at port and the others at the next two; the process it
// returns is the server the agent talks to (the one a test kills behind
// its agent).
func (b Backend) Start(ctx context.Context, h systems.Host, port int) (systems.Process, error) {
	if b.GroupSize != 3 {
		return b.ZooKeeper.StartStandalone(ctx, h, port)
	}
	var ports [3][3]int
	for i := range ports {
		ports[i] = [3]int{port + i, ensembleQuorumPort + i, ensembleElectionPort + i}
	}
	d := *b.ZooKeeper
	return startEnsemble(ctx, &d, h, ports)
}

// The quorum and election ports of a replica's ensemble on its testbed
// host, ZooKeeper's usual ones and the next two.
const (
	ensembleQuorumPort   = 2888
	ensembleElectionPort = 3888
)

func (b Backend) Answers(ctx context.Context, h systems.Host, addr string, p systems.Process) error {
	return b.ZooKeeper.WaitServes(ctx, h, addr, p)
}

func (Backend) AgentFlags(addr string) []string {
	return []string{"--server", "zookeeper", "--zookeeper", addr}
}

func (b Backend) Dial(_ context.Context, addr string) (load.Client, error) {
	return b.ZooKeeper.DialAddr(addr)
}

// Probe sets znode /KEY to val through the agent at addr (creating it if
// needed) and reads it back, in one session of its own, dialled from
// inside h when h can so that a limping link does not hide an agent that
// serves.
func (b Backend) Probe(ctx context.Context, h systems.Host, addr, key, val string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	if ld, ok := h.(systems.LocalDialer); ok {
		dial = ld.DialLocal
	}
	conn, _, err := zk.Connect([]string{addr}, b.ZooKeeper.SessionTimeout, zk.WithLogger(quiet{}), zk.WithLogInfo(false),
		zk.WithDialer(func(_, addr string, timeout time.Duration) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			return dial(ctx, addr)
		}))
	if err != nil {
		return err
	}
	defer conn.Close()
	done := make(chan error, 1)
	go func() { done <- setAndGet(conn, "/"+key, []byte(val)) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func setAndGet(conn *zk.Conn, path string, val []byte) error {
	_, err := conn.Set(path, val, -1)
	if errors.Is(err, zk.ErrNoNode) {
		_, err = conn.Create(path, val, 0, zk.WorldACL(zk.PermAll))
	}
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	got, _, err := conn.Get(path)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if string(got) != string(val) {
		return fmt.Errorf("read %q after writing %q", got, val)
	}
	return nil
}

// quiet silences go-zookeeper's logger: the driver reports errors itself.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

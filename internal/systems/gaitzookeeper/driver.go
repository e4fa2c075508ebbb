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
func New() *gaitredis.Driver {
	d := gaitredis.New()
	d.Backend = Backend{ZooKeeper: zksys.New()}
	d.ServerPort, d.ClientPort = 2281, 2181
	// A JVM per host starts in seconds, tens of them on a busy machine.
	d.StartTimeout = 90 * time.Second
	return d
}

// Backend is a standalone ZooKeeper server behind every agent of a
// testbed deployment (gaitredis.Backend).
type Backend struct {
	ZooKeeper *zksys.Driver
}

var _ gaitredis.Backend = Backend{}

func (Backend) System() string { return "gait-zookeeper" }

func (b Backend) Check() error { return b.ZooKeeper.Check() }

// Needs are ZooKeeper's java and jars.
func (b Backend) Needs() []string { return b.ZooKeeper.Needs() }

func (b Backend) Start(ctx context.Context, h systems.Host, port int) (systems.Process, error) {
	return b.ZooKeeper.StartStandalone(ctx, h, port)
}

func (b Backend) Answers(ctx context.Context, h systems.Host, addr string, p systems.Process) error {
	return b.ZooKeeper.WaitStandalone(ctx, h, addr, p)
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

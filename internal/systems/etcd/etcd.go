// Package etcd drives etcd clusters: Debian's etcd server (3.4), one member
// per host, reached with the official v3 client.
package etcd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/gait-dev/gait/internal/systems"
)

// Driver starts etcd clusters. The zero value is not ready; use New.
type Driver struct {
	Binary      string // the etcd server program
	ClientPort  int
	PeerPort    int
	MetricsPort int // /metrics is served here, apart from client traffic
	// QuotaBackendBytes caps the backend database; writes fail with a
	// NOSPACE alarm beyond it.
	QuotaBackendBytes int64
	// CompactionRetention is how many revisions the periodic (every 5
	// minutes) revision compaction keeps, so long runs stay under the quota.
	CompactionRetention int
	StartTimeout        time.Duration // until every member agrees on a leader
	// RangeLimit is how many keys a "range" operation reads.
	RangeLimit int64
	// LeaseTTL is the time to live, in seconds, of the lease a "lease"
	// operation keeps alive: short, so a leader stalled for a few seconds
	// outlives it (etcd-io/etcd#15247), and above etcd's minimum of 1.5
	// election timeouts (1.5 s at the default 1 s).
	LeaseTTL int64
}

// New returns a driver with etcd's usual ports and settings for a small testbed.
func New() *Driver {
	return &Driver{
		Binary:              "/usr/bin/etcd",
		ClientPort:          2379,
		PeerPort:            2380,
		MetricsPort:         2381,
		QuotaBackendBytes:   2 << 30,
		CompactionRetention: 100000,
		StartTimeout:        30 * time.Second,
		RangeLimit:          100,
		LeaseTTL:            3,
	}
}

func (d *Driver) Name() string { return "etcd" }

// Ops are the operations of this driver's clients, in load.Op kind order.
var Ops = []string{"put", "get", "range", "lease"}

const (
	opPut = iota
	opGet
	opRange
	opLease
)

// member is one etcd server of a cluster.
type member struct {
	host systems.Host

	mu     sync.Mutex // guards the rest: Restart may run beside Roles and Metrics
	argv   []string
	proc   systems.Process
	id     uint64           // raft member ID, known once the member answered
	status *clientv3.Client // talks to this member only, for Status
}

// current returns the member's process and its status connection.
func (m *member) current() (systems.Process, *clientv3.Client) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc, m.status
}

func (m *member) memberID() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.id
}

// launch starts the member with argv, unless it is running, with a fresh
// status connection (an old one backs off redialling a dead member and would
// notice the new one late).
func (m *member) launch(d *Driver, argv []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil && !m.proc.Exited() {
		return fmt.Errorf("etcd on %s: still running (pid %d)", m.host.Name(), m.proc.Pid())
	}
	if err := m.host.MkdirAll(m.host.DataDir()); err != nil {
		return fmt.Errorf("etcd on %s: %w", m.host.Name(), err)
	}
	cli, err := d.client(m.host)
	if err != nil {
		return err
	}
	proc, err := m.host.Start("etcd", argv, nil)
	if err != nil {
		cli.Close()
		return fmt.Errorf("etcd on %s: %w", m.host.Name(), err)
	}
	if m.status != nil {
		m.status.Close()
	}
	m.argv, m.proc, m.status = argv, proc, cli
	return nil
}

func (d *Driver) url(h systems.Host, port int) string {
	return "http://" + net.JoinHostPort(h.Address(), strconv.Itoa(port))
}

// argv is the command line of the member on h. state is "new" or "existing".
func (d *Driver) argv(h systems.Host, initialCluster, token, state string) []string {
	return []string{
		d.Binary,
		"--name=" + h.Name(),
		"--data-dir=" + filepath.Join(h.DataDir(), "etcd"),
		"--listen-client-urls=" + d.url(h, d.ClientPort),
		"--advertise-client-urls=" + d.url(h, d.ClientPort),
		"--listen-peer-urls=" + d.url(h, d.PeerPort),
		"--initial-advertise-peer-urls=" + d.url(h, d.PeerPort),
		"--listen-metrics-urls=" + d.url(h, d.MetricsPort),
		"--initial-cluster=" + initialCluster,
		"--initial-cluster-token=" + token,
		"--initial-cluster-state=" + state,
		"--quota-backend-bytes=" + strconv.FormatInt(d.QuotaBackendBytes, 10),
		"--auto-compaction-mode=revision",
		"--auto-compaction-retention=" + strconv.Itoa(d.CompactionRetention),
		"--logger=zap",
		"--log-outputs=stderr",
	}
}

// Start starts one member per host and returns once every member is up and
// agrees on a leader, or fails with the tail of a member's log.
// Needs is the server program.
func (d *Driver) Needs() []string { return []string{d.Binary} }

func (d *Driver) check() error {
	if _, err := os.Stat(d.Binary); err != nil {
		return fmt.Errorf("etcd: server program: %w (install Debian's etcd-server)", err)
	}
	return nil
}

func (d *Driver) Start(ctx context.Context, hosts []systems.Host) (systems.Cluster, error) {
	if len(hosts) == 0 {
		return nil, errors.New("etcd: no hosts")
	}
	if err := systems.CheckHere(hosts, d.check); err != nil {
		return nil, err
	}
	peers := make([]string, len(hosts))
	seen := map[string]bool{}
	for i, h := range hosts {
		if seen[h.Name()] {
			return nil, fmt.Errorf("etcd: two hosts named %q", h.Name())
		}
		seen[h.Name()] = true
		peers[i] = h.Name() + "=" + d.url(h, d.PeerPort)
	}
	token, err := clusterToken()
	if err != nil {
		return nil, err
	}
	c := &Cluster{d: d, byName: map[string]*member{}, http: &http.Client{}}
	for _, h := range hosts {
		m := &member{host: h}
		c.members = append(c.members, m)
		c.byName[h.Name()] = m
		if err := m.launch(d, d.argv(h, strings.Join(peers, ","), token, "new")); err != nil {
			c.Stop()
			return nil, err
		}
	}
	if err := c.waitReady(ctx, c.members); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// clusterToken is unique per cluster, so members of a stale cluster at the
// same addresses cannot join this one.
func clusterToken() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("etcd: cluster token: %w", err)
	}
	return "gait-" + hex.EncodeToString(b), nil
}

// redial is how a client retries a member it lost. gRPC's default waits a
// second before the first retry, which would show as a second of extra
// downtime after every restart.
var redial = grpc.WithConnectParams(grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
	MinConnectTimeout: time.Second,
})

// client returns a v3 client talking to the member on h only. Creating it
// does not dial, so it works before the member is up.
func (d *Driver) client(h systems.Host) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{d.url(h, d.ClientPort)},
		DialTimeout: 2 * time.Second,
		DialOptions: []grpc.DialOption{redial},
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %s: %w", h.Name(), err)
	}
	return cli, nil
}

// statusOf asks one member for its raft state.
func (m *member) statusOf(ctx context.Context) (*pb.StatusResponse, error) {
	_, cli := m.current()
	if cli == nil {
		return nil, errors.New("not started")
	}
	st, err := pb.NewMaintenanceClient(cli.ActiveConnection()).Status(ctx, &pb.StatusRequest{})
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.id = st.Header.MemberId
	m.mu.Unlock()
	return st, nil
}

// waitReady polls the members in ms until each reports the same leader and a
// linearizable read through the first succeeds.
func (c *Cluster) waitReady(ctx context.Context, ms []*member) error {
	members := func() []systems.Starting {
		out := make([]systems.Starting, len(ms))
		for i, m := range ms {
			p, _ := m.current()
			out[i] = systems.Starting{Host: m.host.Name(), Proc: p}
		}
		return out
	}
	return systems.WaitReady(ctx, "etcd", c.d.StartTimeout, members, func(ctx context.Context) error { return c.ready(ctx, ms) })
}

// notReady says m is not ready, and why.
func (m *member) notReady(err error) error {
	proc, _ := m.current()
	return &systems.NotReady{Host: m.host.Name(), Proc: proc, Err: err}
}

func (c *Cluster) ready(ctx context.Context, ms []*member) error {
	var leader uint64
	for _, m := range ms {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := m.statusOf(sctx)
		cancel()
		if err != nil {
			return m.notReady(err)
		}
		if st.Leader == 0 {
			return m.notReady(errors.New("no leader"))
		}
		if leader != 0 && st.Leader != leader {
			return m.notReady(fmt.Errorf("leader %x, others say %x", st.Leader, leader))
		}
		leader = st.Leader
	}
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, cli := ms[0].current(); cli == nil {
		return ms[0].notReady(errors.New("not started"))
	} else if _, err := cli.Get(rctx, "gait-ready"); err != nil {
		return ms[0].notReady(fmt.Errorf("read: %w", err))
	}
	return nil
}

// Package zookeeper drives ZooKeeper ensembles: Debian's zookeeper 3.8 jars
// run directly on the JVM, one server per host, reached with
// github.com/go-zookeeper/zk and observed through the mntr four-letter word.
package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/clip"
	"github.com/gait-dev/gait/internal/systems"
)

// Driver starts ZooKeeper ensembles. The zero value is not ready; use New.
type Driver struct {
	Java      string   // the java program
	ClassPath []string // jars: Debian's zookeeper.jar names its dependencies in its manifest
	// JVMFlags are given to java before the main class: heap and GC.
	JVMFlags     []string
	ClientPort   int
	QuorumPort   int // followers talk to the leader here
	ElectionPort int
	// TickTime is ZooKeeper's time unit; InitLimit and SyncLimit count ticks
	// (how long a follower may take to sync with, and lag behind, the leader).
	TickTime             time.Duration
	InitLimit, SyncLimit int
	StartTimeout         time.Duration // until a leader is elected and every server answers
	// SessionTimeout is the clients' session timeout.
	SessionTimeout time.Duration
}

// New returns a driver with ZooKeeper's usual ports and timing, and a heap
// small enough for five servers on a small machine.
func New() *Driver {
	return &Driver{
		Java:      "/usr/bin/java",
		ClassPath: []string{"/usr/share/java/zookeeper.jar", "/usr/share/java/slf4j-simple.jar"},
		JVMFlags: []string{
			"-Xms64m", "-Xmx128m",
			"-XX:+UseSerialGC", // one thread, no concurrent collector: suits a 128 MB heap
			"-Xss512k",
			"-XX:-UsePerfData",
			"-Djava.net.preferIPv4Stack=true",
			"-Dorg.slf4j.simpleLogger.showDateTime=true",
			"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
		},
		ClientPort:     2181,
		QuorumPort:     2888,
		ElectionPort:   3888,
		TickTime:       2 * time.Second,
		InitLimit:      10,
		SyncLimit:      5,
		StartTimeout:   60 * time.Second,
		SessionTimeout: 10 * time.Second,
	}
}

func (d *Driver) Name() string { return "zookeeper" }

// Ops are the operations of this driver's clients, in load.Op kind order.
var Ops = []string{"create", "set", "get", "delete"}

const (
	opCreate = iota
	opSet
	opGet
	opDelete
)

// member is one ZooKeeper server of an ensemble.
type member struct {
	host systems.Host
	id   int // myid, from 1

	systems.Daemon
	gc gcLog
}

func (m *member) exited() bool {
	p := m.Current()
	return p == nil || p.Exited()
}

// PortsHost is a host whose server listens at ports of its own rather than
// the driver's: the servers of one ensemble sharing one address (each
// replica's ensemble on its testbed host, internal/systems/gaitzookeeper).
type PortsHost interface {
	systems.Host
	ZooKeeperPorts() (client, quorum, election int)
}

// ports are the client, quorum and election ports of the server on h.
func (d *Driver) ports(h systems.Host) (client, quorum, election int) {
	if p, ok := h.(PortsHost); ok {
		return p.ZooKeeperPorts()
	}
	return d.ClientPort, d.QuorumPort, d.ElectionPort
}

func (d *Driver) clientAddr(h systems.Host) string {
	client, _, _ := d.ports(h)
	return net.JoinHostPort(h.Address(), strconv.Itoa(client))
}

func dir(h systems.Host) string { return filepath.Join(h.DataDir(), "zookeeper") }

func confPath(h systems.Host) string { return filepath.Join(dir(h), "zoo.cfg") }

func gcPath(h systems.Host) string { return filepath.Join(dir(h), "gc.log") }

// config is the zoo.cfg of every server of the ensemble on hosts but for
// dataDir, which is the host's own. Four-letter words stay on the client
// port; the AdminServer is off (Debian's jars lack the servlet API it needs).
func (d *Driver) config(h systems.Host, hosts []systems.Host) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\n", d.TickTime.Milliseconds())
	fmt.Fprintf(&b, "initLimit=%d\nsyncLimit=%d\n", d.InitLimit, d.SyncLimit)
	fmt.Fprintf(&b, "dataDir=%s\n", filepath.Join(dir(h), "data"))
	b.WriteString("standaloneEnabled=false\n") // one server is its own leader, as in etcd
	b.WriteString("reconfigEnabled=false\n")
	b.WriteString("admin.enableServer=false\n")
	b.WriteString("4lw.commands.whitelist=mntr,stat,srvr,ruok\n")
	b.WriteString("jvm.pause.monitor=true\n")
	b.WriteString("autopurge.purgeInterval=1\nautopurge.snapRetainCount=3\n")
	b.WriteString("maxClientCnxns=0\n")
	for i, p := range hosts {
		_, quorum, election := d.ports(p)
		fmt.Fprintf(&b, "server.%d=%s:%d:%d;%s\n", i+1, p.Address(), quorum, election, d.clientAddr(p))
	}
	return b.String()
}

// argv runs the server on h with the configuration file written by Start.
func (d *Driver) argv(h systems.Host) []string {
	argv := []string{d.Java}
	argv = append(argv, d.JVMFlags...)
	argv = append(argv,
		"-Xlog:gc:file="+gcPath(h)+":uptime",
		"-Dzookeeper.log.dir="+dir(h),
		"-cp", strings.Join(d.ClassPath, ":"),
		"org.apache.zookeeper.server.quorum.QuorumPeerMain",
		confPath(h))
	return argv
}

// Needs are java and the class path's jars.
func (d *Driver) Needs() []string { return append([]string{d.Java}, d.ClassPath...) }

// Check says what is missing to run ZooKeeper.
func (d *Driver) Check() error {
	return systems.CheckJava("zookeeper", d.Java, d.ClassPath, "install Debian's zookeeper")
}

// Start writes a configuration per host, starts one server per host and
// returns once a leader is elected and every server serves, or fails with
// the tail of a server's log.
func (d *Driver) Start(ctx context.Context, hosts []systems.Host) (systems.Cluster, error) {
	if len(hosts) == 0 {
		return nil, errors.New("zookeeper: no hosts")
	}
	if err := systems.CheckHere(hosts, d.Check); err != nil {
		return nil, err
	}
	c := &Cluster{d: d, byName: map[string]*member{}}
	for i, h := range hosts {
		if c.byName[h.Name()] != nil {
			return nil, fmt.Errorf("zookeeper: two hosts named %q", h.Name())
		}
		m := &member{host: h, id: i + 1}
		c.members = append(c.members, m)
		c.byName[h.Name()] = m
	}
	for _, m := range c.members {
		if err := d.prepare(m, hosts); err != nil {
			return nil, err
		}
	}
	for _, m := range c.members {
		if err := m.launch(d); err != nil {
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

// prepare writes m's configuration and myid, over whatever an earlier
// ensemble left.
func (d *Driver) prepare(m *member, hosts []systems.Host) error {
	data := filepath.Join(dir(m.host), "data")
	if err := m.host.RemoveAll(dir(m.host)); err != nil {
		return fmt.Errorf("zookeeper on %s: %w", m.host.Name(), err)
	}
	if err := m.host.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(m.id)+"\n")); err != nil {
		return fmt.Errorf("zookeeper on %s: %w", m.host.Name(), err)
	}
	if err := m.host.WriteFile(confPath(m.host), []byte(d.config(m.host, hosts))); err != nil {
		return fmt.Errorf("zookeeper on %s: %w", m.host.Name(), err)
	}
	return nil
}

// launch starts m's server unless it is running.
func (m *member) launch(d *Driver) error {
	err := m.Launch("zookeeper on "+m.host.Name(), func() (systems.Process, error) {
		return m.host.Start("zookeeper", d.argv(m.host), nil)
	})
	if err == nil {
		m.gc.restarted()
	}
	return err
}

// waitReady polls the members ms until each serves, one of the ensemble
// leads, and a read through the first of ms succeeds.
func (c *Cluster) waitReady(ctx context.Context, ms []*member) error {
	members := func() []systems.Starting {
		out := make([]systems.Starting, len(ms))
		for i, m := range ms {
			p := m.Current()
			out[i] = systems.Starting{Host: m.host.Name(), Proc: p}
		}
		return out
	}
	return systems.WaitReady(ctx, "zookeeper", c.d.StartTimeout, members, func(ctx context.Context) error { return c.ready(ctx, ms) })
}

// notReady says m is not ready, and why.
func (m *member) notReady(err error) error {
	proc := m.Current()
	return &systems.NotReady{Host: m.host.Name(), Proc: proc, Err: err}
}

func (c *Cluster) ready(ctx context.Context, ms []*member) error {
	leaders := 0
	for _, m := range c.members {
		st, err := c.state(ctx, m)
		if err != nil {
			if containsMember(ms, m) {
				return m.notReady(err)
			}
			continue
		}
		if st == "leader" {
			leaders++
		}
	}
	if leaders != 1 {
		return ms[0].notReady(fmt.Errorf("%d servers lead", leaders))
	}
	return c.probe(ctx, ms[0])
}

func containsMember(ms []*member, m *member) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// probe reads the root znode through m with a fresh session.
func (c *Cluster) probe(ctx context.Context, m *member) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	cl, err := c.d.dial(m.host)
	if err != nil {
		return m.notReady(err)
	}
	defer cl.Close()
	if err := cl.do(ctx, func() error { _, _, err := cl.conn.Exists("/"); return err }); err != nil {
		return m.notReady(fmt.Errorf("read: %w", err))
	}
	return nil
}

// state asks m for its zk_server_state (leader, follower, ...) within ctx.
func (c *Cluster) state(ctx context.Context, m *member) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	s, err := flw(ctx, c.d.clientAddr(m.host), "srvr")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(s, "\n") {
		if mode, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(mode), nil
		}
	}
	return "", fmt.Errorf("srvr: no Mode in %s", clip.Quote(s))
}

// Package cassandra drives Cassandra clusters: the unmodified
// CassandraDaemon of cassandra-all from Maven Central (fetched by
// scripts/fetch-jars.sh cassandra) runs on the JVM, one node per host, every
// key on every node (replication factor 3 on three nodes), reached with
// github.com/gocql/gocql and observed through the node-local virtual
// tables of system_views: the outbound queue to each peer, thread pools,
// pending hints.
//
// The first host is the coordinator, the node the clients talk to; the
// others are replicas (each also holds every key). Gets and puts run at a
// consistency level set in the scenario's config (one, quorum or all), as
// the Limplock paper's C1-C3 do.
package cassandra

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"path/filepath"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/systems"
)

// Version is the Cassandra release java/cassandra/pom.xml names (4.x does
// not run on Java 17).
const Version = "5.0.8"

// Roles.
const (
	RoleCoordinator = "coordinator"
	RoleReplica     = "replica"
)

// The nodes' ports: Cassandra's defaults. Every host has its own address.
const (
	storagePort = 7000
	nativePort  = 9042
)

// jvm17 are the flags of Cassandra's conf/jvm17-server.options (module
// openings its code and its jamm agent need on Java 17), and Netty's.
var jvm17 = []string{
	"-Djdk.attach.allowAttachSelf=true",
	"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
	"--add-exports", "java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
	"--add-exports", "java.rmi/sun.rmi.registry=ALL-UNNAMED",
	"--add-exports", "java.rmi/sun.rmi.server=ALL-UNNAMED",
	"--add-exports", "java.sql/java.sql=ALL-UNNAMED",
	"--add-exports", "java.base/java.lang.ref=ALL-UNNAMED",
	"--add-exports", "jdk.unsupported/sun.misc=ALL-UNNAMED",
	"--add-exports", "jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
	"--add-exports", "jdk.attach/sun.tools.attach=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang.module=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.loader=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.reflect=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.math=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.module=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.util.jar=ALL-UNNAMED",
	"--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED",
	"--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens", "java.base/java.io=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens", "jdk.compiler/com.sun.tools.javac=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang=ALL-UNNAMED",
	"--add-opens", "java.base/java.util=ALL-UNNAMED",
	"-Dio.netty.tryReflectionSetAccessible=true",
}

// Driver starts Cassandra clusters. The zero value is not ready; use New.
type Driver struct {
	Java string
	Home string // holds lib/, the jars
	// JVMFlags set the heap and collector of each node.
	JVMFlags []string
	// Replication is the keyspace's replication factor, at most the
	// number of nodes.
	Replication int
	// Read and Write are the consistency levels of gets and puts: one,
	// quorum or all.
	Read, Write string
	// CommitlogSync is periodic (Cassandra's default: a write returns
	// before its commit log is synced) or batch (it waits for the sync).
	CommitlogSync string
	// StartTimeout bounds a small cluster's start; StartPerNode is what
	// one more node may add on one CPU (systems.Fleet).
	StartTimeout, StartPerNode time.Duration
}

// New returns a driver with Cassandra's defaults but for the heap (small
// enough for several nodes on a small machine), quorum reads and writes,
// and replication factor 3.
func New() *Driver {
	home := systems.JarHome("cassandra")
	return &Driver{
		Java: "/usr/bin/java",
		Home: home,
		JVMFlags: []string{
			// 256 MB: a node up in 8 s at 460-630 MB resident; Serial GC
			// suits a heap this size on 2 cores.
			"-Xms256m", "-Xmx256m", "-Xmn64m", "-XX:+UseSerialGC",
			// The client compiler alone: a node starts on far less CPU,
			// which several starting together on 2 cores lack.
			"-XX:TieredStopAtLevel=1",
			"-Xss512k", "-XX:-UsePerfData", "-XX:+ExitOnOutOfMemoryError",
			"-Djava.net.preferIPv4Stack=true",
		},
		Replication:   3,
		Read:          "quorum",
		Write:         "quorum",
		CommitlogSync: "periodic",
		StartTimeout:  300 * time.Second,
		StartPerNode:  60 * time.Second,
	}
}

func (d *Driver) Name() string { return "cassandra" }

// Needs are java and Cassandra's jar.
func (d *Driver) Needs() []string { return []string{d.Java, d.jar()} }

func (d *Driver) jar() string { return filepath.Join(d.Home, "lib", "cassandra-all-"+Version+".jar") }

// Check says what is missing to run Cassandra.
func (d *Driver) Check() error {
	return systems.CheckJava("cassandra", d.Java, []string{d.jar()}, "run scripts/fetch-jars.sh cassandra, or make deps")
}

func dir(h systems.Host) string { return filepath.Join(h.DataDir(), "cassandra") }

// Token is the initial token of node i of n: the Murmur3 ring split in n
// equal ranges, so the nodes need not bootstrap one by one to place
// themselves and start together.
func Token(i, n int) string {
	span := new(big.Int).Lsh(big.NewInt(1), 64)
	t := new(big.Int).Mul(span, big.NewInt(int64(i)))
	t.Div(t, big.NewInt(int64(n)))
	t.Add(t, big.NewInt(math.MinInt64))
	return t.String()
}

// config is the cassandra.yaml of node i of the cluster on hosts.
func (d *Driver) config(i int, hosts []systems.Host) string {
	h := hosts[i]
	base := dir(h)
	var b strings.Builder
	fmt.Fprintf(&b, "cluster_name: gait\nnum_tokens: 1\ninitial_token: %s\n", Token(i, len(hosts)))
	b.WriteString("partitioner: org.apache.cassandra.dht.Murmur3Partitioner\n")
	fmt.Fprintf(&b, "seed_provider:\n  - class_name: org.apache.cassandra.locator.SimpleSeedProvider\n    parameters:\n      - seeds: \"%s:%d\"\n",
		hosts[0].Address(), storagePort)
	fmt.Fprintf(&b, "listen_address: %s\nrpc_address: %s\n", h.Address(), h.Address())
	fmt.Fprintf(&b, "storage_port: %d\nnative_transport_port: %d\n", storagePort, nativePort)
	b.WriteString("endpoint_snitch: SimpleSnitch\nauto_bootstrap: false\nstart_native_transport: true\n")
	if d.CommitlogSync == "batch" {
		b.WriteString("commitlog_sync: batch\n")
	} else {
		b.WriteString("commitlog_sync: periodic\ncommitlog_sync_period: 10000ms\n")
	}
	for _, k := range []string{"commitlog", "saved_caches", "hints", "cdc_raw"} {
		fmt.Fprintf(&b, "%s_directory: %s\n", k, filepath.Join(base, k))
	}
	fmt.Fprintf(&b, "data_file_directories: [%s]\n", filepath.Join(base, "data"))
	// Small caches and one flush writer and compactor: a small heap on 2 cores.
	b.WriteString("concurrent_compactors: 1\nmemtable_flush_writers: 1\n")
	// The request timeouts of the paper's Cassandra 1.2 (10 s; 5.0 has 2 s
	// for a write, 5 s for a read): a coordinator gives up on a slow
	// replica, and drops its outstanding request, after 10 s (§5.4.1), and
	// a healthy write on a loaded machine is not cut at 2 s.
	b.WriteString("write_request_timeout: 10000ms\nread_request_timeout: 10000ms\ncounter_write_request_timeout: 10000ms\n")
	return b.String()
}

// logback keeps Cassandra's log on the node's standard error (where
// systems.LogTail reads it): warnings, and the daemon's start and stop.
const logback = `<configuration>
  <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level [%thread] %logger{0}: %msg%n</pattern></encoder>
  </appender>
  <logger name="org.apache.cassandra.service" level="INFO"/>
  <logger name="org.apache.cassandra.gms" level="INFO"/>
  <root level="WARN"><appender-ref ref="OUT"/></root>
</configuration>
`

// argv runs the node on h with the files prepare wrote.
func (d *Driver) argv(h systems.Host) ([]string, error) {
	jars, err := filepath.Glob(filepath.Join(d.Home, "lib", "*.jar"))
	if err != nil || len(jars) == 0 {
		return nil, fmt.Errorf("cassandra: no jars in %s (run scripts/fetch-jars.sh cassandra)", filepath.Join(d.Home, "lib"))
	}
	jamm, _ := filepath.Glob(filepath.Join(d.Home, "lib", "jamm-*.jar"))
	argv := append([]string{d.Java}, d.JVMFlags...)
	argv = append(argv, jvm17...)
	if len(jamm) > 0 {
		argv = append(argv, "-javaagent:"+jamm[0])
	}
	base := dir(h)
	argv = append(argv,
		"-Dcassandra.config=file://"+filepath.Join(base, "cassandra.yaml"),
		"-Dlogback.configurationFile="+filepath.Join(base, "logback.xml"),
		"-Dcassandra.storagedir="+base,
		"-Dcassandra.logdir="+base,
		systems.JavaTmpFlag(base),
		"-Dcassandra-foreground=yes",
		// The nodes start together with tokens gait gave them: no need to
		// wait 30 s for gossip to settle before serving.
		"-Dcassandra.skip_wait_for_gossip_to_settle=0",
		"-cp", strings.Join(jars, ":"),
		"org.apache.cassandra.service.CassandraDaemon")
	return argv, nil
}

// member is one Cassandra node.
type member struct {
	host systems.Host
	role string

	systems.Daemon
}

// launch starts m's node unless it is running.
func (m *member) launch(d *Driver) error {
	return m.Launch("cassandra on "+m.host.Name(), func() (systems.Process, error) {
		argv, err := d.argv(m.host)
		if err != nil {
			return nil, err
		}
		return m.host.Start("cassandra", argv, nil)
	})
}

// prepare writes node i's files over whatever an earlier cluster left.
func (d *Driver) prepare(i int, hosts []systems.Host) error {
	h := hosts[i]
	base := dir(h)
	if err := h.RemoveAll(base); err != nil {
		return fmt.Errorf("cassandra on %s: %w", h.Name(), err)
	}
	for _, sub := range []string{"data", "commitlog", "saved_caches", "hints", "cdc_raw"} {
		if err := h.MkdirAll(filepath.Join(base, sub)); err != nil {
			return fmt.Errorf("cassandra on %s: %w", h.Name(), err)
		}
	}
	if err := h.MkdirAll(systems.JavaTmpDir(base)); err != nil {
		return fmt.Errorf("cassandra on %s: %w", h.Name(), err)
	}
	for name, text := range map[string]string{"cassandra.yaml": d.config(i, hosts), "logback.xml": logback} {
		if err := h.WriteFile(filepath.Join(base, name), []byte(text)); err != nil {
			return fmt.Errorf("cassandra on %s: %w", h.Name(), err)
		}
	}
	return nil
}

// Start writes each node's configuration, starts every node at once, and
// returns once each serves CQL, the keyspace exists on all of them, and a
// write at consistency all succeeds through the coordinator: every node
// is up in the coordinator's view. A node that exits or a start that
// times out fails with the tail of a node's log.
func (d *Driver) Start(ctx context.Context, hosts []systems.Host) (systems.Cluster, error) {
	if len(hosts) == 0 {
		return nil, errors.New("cassandra: no hosts")
	}
	if err := systems.CheckHere(hosts, d.Check); err != nil {
		return nil, err
	}
	if d.Replication > len(hosts) {
		return nil, fmt.Errorf("cassandra: replication %d on %d nodes: at most one copy per node", d.Replication, len(hosts))
	}
	c := &Cluster{d: d, byName: map[string]*member{}, byAddr: map[string]string{}}
	for i, h := range hosts {
		if c.byName[h.Name()] != nil {
			return nil, fmt.Errorf("cassandra: two hosts named %q", h.Name())
		}
		m := &member{host: h, role: RoleReplica}
		if i == 0 {
			m.role = RoleCoordinator
		}
		c.members = append(c.members, m)
		c.byName[h.Name()] = m
		c.byAddr[h.Address()] = h.Name()
		if err := d.prepare(i, hosts); err != nil {
			return nil, err
		}
	}
	if err := c.fleet().Start(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	// The metrics sessions open now, before any fault: over a limping
	// link the handshake alone takes seconds.
	for _, m := range c.members {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c.scrapeSession(ctx, m) // one that fails is tried again at the next scrape
		cancel()
	}
	return c, nil
}

// fleet starts the coordinator, the seed, and the replicas at once after
// it (a replica retries the seed until it answers, and nodes with tokens
// given need not join one by one); the cluster is ready once the
// coordinator knows every replica (system.peers_v2), has created the
// keyspace, and a write at consistency all succeeds through it: every
// node is up in its view.
func (c *Cluster) fleet() *systems.Fleet {
	co := c.members[0]
	launch := func(m *member) func() error { return func() error { return m.launch(c.d) } }
	f := &systems.Fleet{System: "cassandra", Noun: "replicas",
		Masters: []systems.Member{{Host: co.host.Name(), Launch: launch(co), Proc: co.Current}},
		Base:    c.d.StartTimeout, PerWorker: c.d.StartPerNode}
	for _, m := range c.members[1:] {
		f.Workers = append(f.Workers, systems.Member{Host: m.host.Name(), Launch: launch(m), Proc: m.Current})
	}
	blame := func(err error) error { return &systems.NotReady{Host: co.host.Name(), Proc: co.Current(), Err: err} }
	f.Registered = func(ctx context.Context) (map[string]bool, error) {
		s, err := session(co.host.Address(), "", 2*time.Second)
		if err != nil {
			return nil, blame(err)
		}
		defer s.Close()
		known := map[string]bool{}
		var peer string
		it := s.Query("SELECT peer FROM system.peers_v2").WithContext(ctx).Iter()
		for it.Scan(&peer) {
			known[c.peer(peer)] = true
		}
		if err := it.Close(); err != nil {
			return nil, blame(fmt.Errorf("read system.peers_v2: %w", err))
		}
		return known, nil
	}
	created := false
	f.Settled = func(ctx context.Context) error {
		if !created {
			if err := c.createSchema(ctx); err != nil {
				return blame(err)
			}
			created = true
		}
		return c.writeAll(ctx)
	}
	return f
}

// waitReady polls until each of ms serves CQL (after a restart).
func (c *Cluster) waitReady(ctx context.Context, ms []*member) error {
	members := func() []systems.Starting {
		out := make([]systems.Starting, len(ms))
		for i, m := range ms {
			out[i] = systems.Starting{Host: m.host.Name(), Proc: m.Current()}
		}
		return out
	}
	return systems.WaitReady(ctx, "cassandra", c.d.StartTimeout, members, func(ctx context.Context) error {
		for _, m := range ms {
			if err := c.serves(ctx, m); err != nil {
				return err
			}
		}
		return nil
	})
}

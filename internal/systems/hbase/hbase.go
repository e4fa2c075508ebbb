// Package hbase drives HBase clusters: the unmodified HMaster and
// HRegionServers of hbase-server from Maven Central (fetched by
// scripts/fetch-jars.sh hbase), one JVM per daemon, on gait's own HDFS
// (internal/systems/hdfs) and a standalone ZooKeeper
// (internal/systems/zookeeper) started on the same testbed hosts. HBase's
// own Java client serves gait's load clients (see client.go); white-box
// metrics come from each daemon's /jmx servlet.
//
// The first host runs the HMaster, ZooKeeper and HDFS's NameNode; the next
// RegionServers hosts (3 by default) a region server each; every other
// host a DataNode. The table the clients use is split into one region per
// region server, each on its own server, so a slow region server holds a
// share of the keys, as in the Limplock paper's B1-B3.
package hbase

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/hdfs"
	"github.com/gait-dev/gait/internal/systems/zookeeper"
)

// Version is the HBase release java/hbase/pom.xml names. Its -hadoop3
// build brings Hadoop 3.4.2's client jars, which the daemons and the
// client run on; HDFS's own daemons run Hadoop 3.5.0 (hdfs.Version).
const Version = "2.6.4-hadoop3"

// Roles. A datanode in the write-ahead log's current pipeline of the
// first region server is an hlog-datanode (the paper's Data-H).
const (
	RoleMaster       = "master"
	RoleRegionServer = "regionserver"
	RoleDataNode     = "datanode"
	RoleHLogDataNode = "hlog-datanode"
)

// The daemons' ports: HBase's defaults. Every host has its own address.
const (
	masterPort     = 16000
	masterInfoPort = 16010
	rsPort         = 16020
	rsInfoPort     = 16030
	zkPort         = 2181
	// nameNodePort and nameNodeHTTPPort are HDFS's NameNode's, as the
	// hdfs driver starts it (Hadoop's defaults).
	nameNodePort     = 8020
	nameNodeHTTPPort = 9870
)

// jvm17 are the flags HBase's bin/hbase gives a JVM of Java 11 and later:
// the module openings its shaded Netty, its async WAL writer (which
// reaches into HDFS's client) and its off-heap buffers need.
var jvm17 = []string{
	"-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true",
	"--add-modules", "jdk.unsupported",
	"--add-opens", "java.base/java.nio=ALL-UNNAMED",
	"--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang=ALL-UNNAMED",
	"--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
	"--add-opens", "java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens", "java.base/java.util=ALL-UNNAMED",
	"--add-opens", "java.base/java.util.concurrent=ALL-UNNAMED",
	"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
	"--add-exports", "java.security.jgss/sun.security.krb5=ALL-UNNAMED",
	"--add-exports", "java.base/sun.net.dns=ALL-UNNAMED",
	"--add-exports", "java.base/sun.net.util=ALL-UNNAMED",
	"-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true",
}

// Driver starts HBase clusters. The zero value is not ready; use New.
type Driver struct {
	Java string
	Home string // holds lib/ (HBase and its dependencies) and gait-hbase.jar
	// MasterJVM and RegionServerJVM set the daemons' heaps and collectors.
	MasterJVM, RegionServerJVM []string
	// RegionServers is how many hosts after the first run a region
	// server; the table has a region on each.
	RegionServers int
	// Handlers is hbase.regionserver.handler.count: a region server's RPC
	// handler threads, which a write waiting for a slow WAL sync holds
	// (the paper's B4).
	Handlers int
	// HDFS and ZooKeeper start the cluster's file system and coordination.
	HDFS      *hdfs.Driver
	ZooKeeper *zookeeper.Driver
	// StartTimeout bounds the master's start and a small cluster's;
	// StartPerServer is what one more region server may add on one CPU
	// (systems.Fleet).
	StartTimeout, StartPerServer time.Duration
}

// New returns a driver with HBase's defaults but for the heaps, small
// enough for a master and three region servers beside HDFS on a small
// machine.
func New() *Driver {
	home := systems.JarHome("hbase")
	small := []string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k", "-XX:+ExitOnOutOfMemoryError"}
	return &Driver{
		Java:            "/usr/bin/java",
		Home:            home,
		MasterJVM:       append([]string{"-Xms64m", "-Xmx256m"}, small...),
		RegionServerJVM: append([]string{"-Xms128m", "-Xmx384m"}, small...),
		RegionServers:   3,
		Handlers:        30,
		HDFS:            hdfs.New(),
		ZooKeeper:       zookeeper.New(),
		// A region server took over 5 minutes to open its RPC and info
		// servers on this 2-core machine at load average 150-200, where
		// a start of the whole stack takes 1.5 minutes at 35.
		StartTimeout:   10 * time.Minute,
		StartPerServer: 60 * time.Second,
	}
}

func (d *Driver) Name() string { return "hbase" }

// Needs are java, the jars Check looks for, and HDFS's and ZooKeeper's.
func (d *Driver) Needs() []string {
	return slices.Concat([]string{d.Java}, d.jars(), d.HDFS.Needs(), d.ZooKeeper.Needs())
}

func (d *Driver) jars() []string {
	return []string{filepath.Join(d.Home, "lib/hbase-server-"+Version+".jar"), filepath.Join(d.Home, "gait-hbase.jar")}
}

// Check says what is missing to run HBase (and its HDFS and ZooKeeper).
func (d *Driver) Check() error {
	if err := systems.CheckJava("hbase", d.Java, d.jars(), "run scripts/fetch-jars.sh hbase, or make deps"); err != nil {
		return err
	}
	return errors.Join(d.HDFS.Check(), d.ZooKeeper.Check())
}

// Layout is which hosts run what: the first the master, the next
// regionServers a region server each, the rest DataNodes. It fails when
// there are too few hosts for one DataNode.
func Layout(n, regionServers int) (rs, dns []int, err error) {
	if regionServers < 1 {
		return nil, nil, fmt.Errorf("hbase: %d region servers: want at least 1", regionServers)
	}
	if n < regionServers+2 {
		return nil, nil, fmt.Errorf("hbase: %d hosts: want at least %d (a master, %d region servers, a DataNode)", n, regionServers+2, regionServers)
	}
	for i := 1; i < n; i++ {
		if i <= regionServers {
			rs = append(rs, i)
		} else {
			dns = append(dns, i)
		}
	}
	return rs, dns, nil
}

// SplitKeys are the table's split points for regions regions over gait's
// keys ("key:N"), which sort as strings: N's digits read as a fraction
// (0.N) spread evenly from 0.1 to 1 when N runs from 0 to below a power of
// ten, so the points are 0.1 + 0.9 i/regions, to three digits.
func SplitKeys(regions int) []string {
	var out []string
	for i := 1; i < regions; i++ {
		digits := strconv.Itoa(100 + 900*i/regions)
		out = append(out, "key:"+strings.TrimRight(digits, "0"))
	}
	return out
}

func hostPort(addr string, port int) string { return net.JoinHostPort(addr, strconv.Itoa(port)) }

func dir(h systems.Host) string     { return filepath.Join(h.DataDir(), "hbase") }
func confDir(h systems.Host) string { return filepath.Join(dir(h), "conf") }

// conf is the hbase-site.xml of the daemon on h in a cluster whose master
// (and ZooKeeper and NameNode) is on master.
func (d *Driver) conf(h, master systems.Host, dataNodes int) map[string]string {
	a := h.Address()
	return map[string]string{
		"hbase.cluster.distributed":           "true",
		"hbase.rootdir":                       "hdfs://" + hostPort(master.Address(), nameNodePort) + "/hbase",
		"hbase.zookeeper.quorum":              master.Address(),
		"hbase.zookeeper.property.clientPort": strconv.Itoa(zkPort),
		"hbase.tmp.dir":                       filepath.Join(dir(h), "tmp"),
		// Testbed addresses have no reverse DNS: each daemon names itself
		// by its address and binds to it.
		"hbase.master.hostname":               master.Address(),
		"hbase.master.ipc.address":            a,
		"hbase.master.info.bindAddress":       a,
		"hbase.unsafe.regionserver.hostname":  a,
		"hbase.regionserver.ipc.address":      a,
		"hbase.regionserver.info.bindAddress": a,
		"hbase.regionserver.handler.count":    strconv.Itoa(d.Handlers),
		// The master assigns the table's regions once every region
		// server has registered, not to the first alone.
		"hbase.master.wait.on.regionservers.mintostart": strconv.Itoa(d.RegionServers),
		// The WAL and HFiles with HDFS's replication here (3, or fewer
		// DataNodes).
		"dfs.replication": strconv.Itoa(min(3, dataNodes)),
		// Nothing moves a region behind a measurement's back.
		"hbase.balancer.period":                        "2147483647",
		"hbase.master.balancer.stochastic.runMaxSteps": "false",
		"hbase.regionserver.info.port":                 strconv.Itoa(rsInfoPort),
		"hbase.master.info.port":                       strconv.Itoa(masterInfoPort),
	}
}

// log4j sends a daemon's log to its standard error, which its host keeps:
// HBase's warnings, and the lines that say what it did (starts, region
// opens, WAL rolls), not the info servers' access log (gait's own /jmx
// scrapes). The jars log through reload4j (log4j 1.2's API), which finds
// log4j.properties on the class path.
const log4j = `log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.err
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{HH:mm:ss.SSS} %p [%t] %c{1}: %m%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.org.apache.hadoop=WARN
log4j.logger.org.apache.hadoop.hbase=INFO
log4j.logger.http.requests=WARN
`

// writeConf writes h's configuration directory, first on its class path.
func writeConf(h systems.Host, props map[string]string) error {
	// The daemons' HTTP servers (which serve /jmx) look for their web
	// application directories on the class path; HBase's jars on Maven
	// Central do not carry them (its binary tarball does), and gait needs
	// none of their pages.
	for _, app := range []string{"master", "regionserver", "static"} {
		if err := h.MkdirAll(filepath.Join(confDir(h), "hbase-webapps", app)); err != nil {
			return err
		}
	}
	if err := h.MkdirAll(systems.JavaTmpDir(dir(h))); err != nil {
		return err
	}
	for name, text := range map[string]string{"hbase-site.xml": hdfs.SiteXML(props), "log4j.properties": log4j} {
		if err := h.WriteFile(filepath.Join(confDir(h), name), []byte(text)); err != nil {
			return err
		}
	}
	return nil
}

// classPath is h's configuration directory, then HBase's jars.
func (d *Driver) classPath(h systems.Host) string {
	return confDir(h) + ":" + filepath.Join(d.Home, "lib", "*")
}

const (
	masterClass       = "org.apache.hadoop.hbase.master.HMaster"
	regionServerClass = "org.apache.hadoop.hbase.regionserver.HRegionServer"
)

// member is one HBase daemon.
type member struct {
	host systems.Host
	role string // master or regionserver

	systems.Daemon
}

func (m *member) exited() bool {
	p := m.Current()
	return p == nil || p.Exited()
}

func (m *member) infoAddr() string {
	if m.role == RoleMaster {
		return hostPort(m.host.Address(), masterInfoPort)
	}
	return hostPort(m.host.Address(), rsInfoPort)
}

// launch starts m's daemon unless it is running.
func (m *member) launch(d *Driver) error {
	class, flags := regionServerClass, d.RegionServerJVM
	if m.role == RoleMaster {
		class, flags = masterClass, d.MasterJVM
	}
	argv := append([]string{d.Java}, flags...)
	argv = append(argv, jvm17...)
	argv = append(argv, "-Dhbase.log.dir="+dir(m.host), systems.JavaTmpFlag(dir(m.host)),
		"-cp", d.classPath(m.host), class, "start")
	return m.Launch(fmt.Sprintf("hbase %s on %s", m.role, m.host.Name()), func() (systems.Process, error) {
		return m.host.Start("hbase-"+m.role, argv, []string{"MALLOC_ARENA_MAX=2"})
	})
}

// Start starts ZooKeeper and HDFS (its NameNode beside the master, a
// DataNode on each host after the region servers'), then the master and
// the region servers (systems.Fleet), then gait's client, which creates
// the table with a region on each region server. It returns once the
// client has placed the regions, or fails naming the member that did not
// start and quoting its log.
func (d *Driver) Start(ctx context.Context, hosts []systems.Host) (systems.Cluster, error) {
	rsIdx, dnIdx, err := Layout(len(hosts), d.RegionServers)
	if err != nil {
		return nil, err
	}
	if err := d.Check(); err != nil {
		return nil, err
	}
	c := &Cluster{d: d, byName: map[string]*member{}, byAddr: map[string]string{}, roles: map[string]string{}}
	for _, h := range hosts {
		if c.byAddr[h.Address()] != "" {
			return nil, fmt.Errorf("hbase: two hosts at %s", h.Address())
		}
		c.byAddr[h.Address()] = h.Name()
	}
	master := hosts[0]
	c.master = &member{host: master, role: RoleMaster}
	c.byName[master.Name()] = c.master
	for _, i := range rsIdx {
		m := &member{host: hosts[i], role: RoleRegionServer}
		c.servers = append(c.servers, m)
		c.byName[hosts[i].Name()] = m
	}
	for _, i := range dnIdx {
		c.dataNodes = append(c.dataNodes, hosts[i])
		c.roles[hosts[i].Name()] = RoleDataNode
	}
	for _, h := range append([]systems.Host{master}, hostsOf(c.servers)...) {
		if err := h.RemoveAll(dir(h)); err != nil {
			return nil, fmt.Errorf("hbase on %s: %w", h.Name(), err)
		}
		if err := writeConf(h, d.conf(h, master, len(dnIdx))); err != nil {
			return nil, fmt.Errorf("hbase on %s: %w", h.Name(), err)
		}
	}
	if c.zk, err = d.ZooKeeper.StartStandalone(ctx, master, zkPort); err != nil {
		return nil, fmt.Errorf("hbase: %w", err)
	}
	fs, err := d.HDFS.Start(ctx, append([]systems.Host{master}, c.dataNodes...))
	if err != nil {
		c.Stop()
		return nil, fmt.Errorf("hbase: %w", err)
	}
	c.fs = fs.(*hdfs.Cluster)
	if err := c.fleet(true).Start(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	if c.client, err = startClient(ctx, c); err != nil {
		c.Stop()
		return nil, err
	}
	if err := c.waitPipeline(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func hostsOf(ms []*member) []systems.Host {
	out := make([]systems.Host, len(ms))
	for i, m := range ms {
		out[i] = m.host
	}
	return out
}

// Package hdfs drives HDFS clusters: the unmodified NameNode and DataNodes
// of the Hadoop release that java/hadoop/pom.xml names (fetched by
// scripts/fetch-jars.sh hadoop), one JVM per daemon, configured by generated
// core-site.xml and hdfs-site.xml. The first host runs the NameNode, every
// other host a DataNode. Clients go through HDFS's own Java client (see
// client.go); white-box metrics come from each daemon's /jmx servlet.
package hdfs

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/systems"
)

// Driver starts HDFS clusters. The zero value is not ready; use New.
type Driver struct {
	Java string // the java program
	// Home holds lib/*.jar (Hadoop and its dependencies) and gait-hdfs.jar
	// (the client), as scripts/fetch-jars.sh hadoop leaves them.
	Home string
	// NameNodeJVM and DataNodeJVM are given to java before the main class:
	// heap, GC, stacks. The DataNodes' are small so that a hundred fit on
	// one machine.
	NameNodeJVM, DataNodeJVM []string
	// Handlers is dfs.namenode.handler.count: the NameNode's RPC handler
	// threads (the Exalt case study compares 10, Hadoop's default, and 256).
	Handlers int
	// FineGrainedLock selects the NameNode's fine-grained namesystem lock
	// (HDFS-17366) instead of the global one.
	FineGrainedLock bool
	// Replication is dfs.replication, capped at the number of DataNodes.
	Replication int
	// BlockSize is dfs.blocksize in bytes; 0 leaves Hadoop's (128 MiB).
	BlockSize int64
	// DataNodeCapacity is the capacity each DataNode reports, in bytes:
	// its data directory's file system less dfs.datanode.du.reserved. 0
	// leaves the whole file system, which every DataNode of a testbed
	// shares, so no few-MiB difference between them is an imbalance.
	DataNodeCapacity int64
	// DeadAfter is how long the NameNode hears nothing from a DataNode
	// before it declares it dead: 2 x the heartbeat recheck interval + 10
	// heartbeats of 1 s. More than 10 s.
	DeadAfter time.Duration
	// Conf is added to hdfs-site.xml last, overriding the driver's values.
	Conf map[string]string
	// ClassArchive has the DataNodes share one class-data archive of
	// Hadoop's classes, made by the first DataNode of the first cluster
	// (see cds.go).
	ClassArchive bool
	// StartTimeout bounds the NameNode's start and a small cluster's;
	// StartPerDataNode is what each DataNode adds on one CPU (see
	// systems.Fleet).
	StartTimeout, StartPerDataNode time.Duration
}

// The daemons' ports: Hadoop 3's defaults. Every host has its own address,
// so they never collide.
const (
	nnRPCPort  = 8020
	nnHTTPPort = 9870
	dnXferPort = 9866
	dnHTTPPort = 9864
	dnIPCPort  = 9867
)

// JVMFlags are the JVM flags of every daemon and of the client: IPv4 (the
// testbed's addresses), no perf data file per JVM, and the module openings
// Hadoop needs on Java 17 (its own scripts add the same).
var JVMFlags = append([]string{
	"-XX:-UsePerfData",
	"-Djava.net.preferIPv4Stack=true",
	"--add-opens=java.base/java.lang=ALL-UNNAMED",
	"--add-opens=java.base/java.nio=ALL-UNNAMED",
	"--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens=java.base/java.util=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
	"--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens=java.base/java.net=ALL-UNNAMED",
}, archiveFlags...)

// New returns a driver with Hadoop's defaults but where a small machine
// needs others (heaps, threads, timeouts; see conf).
func New() *Driver {
	home := systems.JarHome("hadoop")
	return &Driver{
		Java: "/usr/bin/java",
		Home: home,
		NameNodeJVM: []string{
			"-Xms256m", "-Xmx1g", "-XX:+UseParallelGC",
		},
		DataNodeJVM: []string{
			// A DataNode's heap holds its replica map and packet
			// buffers: it starts at 8 MB and follows what it holds
			// (grown when less than a tenth is free after a GC, shrunk
			// when more than 30%), up to 96 MB. Serial GC, a single
			// compiler tier, small stacks and the shared class-data
			// archive (cds.go) keep each JVM's own footprint (threads,
			// code cache, classes) low.
			"-Xms8m", "-Xmx96m", "-XX:MinHeapFreeRatio=10", "-XX:MaxHeapFreeRatio=30",
			"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:CICompilerCount=1",
			"-XX:ReservedCodeCacheSize=32m", "-XX:MaxMetaspaceSize=96m",
			"-Xss256k", "-XX:+UseCompressedOops",
		},
		ClassArchive:     true,
		Handlers:         10,
		Replication:      3,
		DeadAfter:        30 * time.Second,
		StartTimeout:     5 * time.Minute,
		StartPerDataNode: 20 * time.Second,
	}
}

func (d *Driver) Name() string { return "hdfs" }

// Needs are java and the jars Check looks for.
func (d *Driver) Needs() []string { return append([]string{d.Java}, d.jars()...) }

func (d *Driver) jars() []string {
	return []string{filepath.Join(d.Home, "lib/hadoop-hdfs-"+Version+".jar"), filepath.Join(d.Home, "gait-hdfs.jar")}
}

// Check says what is missing to run HDFS.
func (d *Driver) Check() error {
	return systems.CheckJava("hdfs", d.Java, d.jars(), "run scripts/fetch-jars.sh hadoop, or make deps")
}

// Version is the Hadoop release java/hadoop/pom.xml names.
const Version = "3.5.0"

// role of a member: the first host's is the NameNode.
const (
	RoleNameNode = "namenode"
	RoleDataNode = "datanode"
)

// member is one daemon of a cluster.
type member struct {
	host systems.Host
	role string

	systems.Daemon
}

func (m *member) exited() bool {
	p := m.Current()
	return p == nil || p.Exited()
}

// hostPort is addr:port.
func hostPort(addr string, port int) string { return net.JoinHostPort(addr, strconv.Itoa(port)) }

func dir(h systems.Host) string     { return filepath.Join(h.DataDir(), "hdfs") }
func confDir(h systems.Host) string { return filepath.Join(dir(h), "conf") }

// excludeFile lists the DataNodes the NameNode on h is to decommission.
func excludeFile(h systems.Host) string { return filepath.Join(confDir(h), "exclude") }

func httpAddr(m *member) string {
	port := dnHTTPPort
	if m.role == RoleNameNode {
		port = nnHTTPPort
	}
	return hostPort(m.host.Address(), port)
}

// FSURI is the address of the file system whose NameNode is on nn: hdfs://namenode:port.
func FSURI(nn systems.Host) string {
	return "hdfs://" + hostPort(nn.Address(), nnRPCPort)
}

// conf is the hdfs-site.xml of the daemon on h in a cluster whose NameNode
// is on nn and which has dns DataNodes.
func (d *Driver) conf(h, nn systems.Host, dns int) map[string]string {
	a := h.Address()
	c := map[string]string{
		"fs.defaultFS":    FSURI(nn),
		"hadoop.tmp.dir":  filepath.Join(dir(h), "tmp"),
		"dfs.replication": strconv.Itoa(min(d.Replication, dns)),
		// the NameNode
		"dfs.namenode.name.dir":           filepath.Join(dir(h), "name"),
		"dfs.namenode.rpc-address":        hostPort(nn.Address(), nnRPCPort),
		"dfs.namenode.http-address":       hostPort(nn.Address(), nnHTTPPort),
		"dfs.namenode.handler.count":      strconv.Itoa(d.Handlers),
		"dfs.namenode.safemode.extension": "0",
		// Testbed addresses have no reverse DNS.
		"dfs.namenode.datanode.registration.ip-hostname-check": "false",
		"dfs.namenode.lock.detailed-metrics.enabled":           "true",
		// A DataNode is declared dead after 2*recheck + 10*heartbeat
		// (DeadAfter, 30 s by default) rather than 10.5 min, so that
		// regeneration rows finish.
		"dfs.heartbeat.interval":                   "1",
		"dfs.namenode.heartbeat.recheck-interval":  strconv.FormatInt((d.DeadAfter-heartbeats).Milliseconds()/2, 10),
		"dfs.permissions.enabled":                  "false",
		"dfs.namenode.redundancy.interval.seconds": "1",
		// Decommissioning (the decommission op) is through this file,
		// checked once a second rather than every 30 s.
		"dfs.hosts.exclude":                  excludeFile(h),
		"dfs.namenode.decommission.interval": "1",
		// The checkpoint op's Secondary NameNode uploads an image per op;
		// the NameNode refuses one unless 3/4 of this period (1 hour by
		// default) or dfs.namenode.checkpoint.txns (a million) passed
		// since the last. Nothing else checkpoints here.
		"dfs.namenode.checkpoint.period": "1",
		// the DataNodes
		"dfs.datanode.data.dir":      filepath.Join(dir(h), "data"),
		"dfs.datanode.hostname":      a,
		"dfs.datanode.address":       hostPort(a, dnXferPort),
		"dfs.datanode.http.address":  hostPort(a, dnHTTPPort),
		"dfs.datanode.ipc.address":   hostPort(a, dnIPCPort),
		"dfs.datanode.handler.count": "3",
		"dfs.datanode.du.reserved":   "0",
		// Background scans would compete with the workload for the
		// shared disk; block reports stay at their defaults.
		"dfs.datanode.directoryscan.interval": "-1",
		"dfs.datanode.scan.period.hours":      "-1",
		"ipc.server.read.threadpool.size":     "1",
		// A DataNode's used space from its replica map, rather than a
		// du process it forks every 10 minutes and at start (a hundred
		// JVMs forking du over FUSE at once).
		"fs.getspaceused.classname": "org.apache.hadoop.hdfs.server.datanode.fsdataset.impl.ReplicaCachingGetSpaceUsed",
	}
	if d.BlockSize > 0 {
		c["dfs.blocksize"] = strconv.FormatInt(d.BlockSize, 10)
	}
	if d.DataNodeCapacity > 0 {
		c["dfs.datanode.du.reserved"] = strconv.FormatInt(reserved(h, d.DataNodeCapacity), 10)
		// A volume takes a block only with 1 GiB to spare beyond it by
		// default: no block at all at a capacity under 1 GiB.
		c["dfs.datanode.round-robin-volume-choosing-policy.additional-available-space"] = "0"
	}
	if d.FineGrainedLock {
		c["dfs.namenode.lock.model.provider.class"] = "org.apache.hadoop.hdfs.server.namenode.fgl.FineGrainedFSNamesystemLock"
	}
	for k, v := range d.Conf {
		c[k] = v
	}
	return c
}

// reserved is what a DataNode with its data in h's data directory must
// set aside for its capacity to be capacity. A DataNode's free space is
// then its file system's less what the reservation leaves unused by
// others' files (FsVolumeImpl.getAvailable): capacity less its own
// blocks, while the file system (tmpfs for the testbed's hosts) has
// room. The file system is the one on h's machine.
func reserved(h systems.Host, capacity int64) int64 {
	size, err := h.FileSystemSize(h.DataDir())
	if err != nil {
		return 0 // the DataNode fails on the same directory, and says so
	}
	return max(0, size-capacity)
}

// SiteXML writes props as a Hadoop configuration file (HDFS's, YARN's,
// HBase's), its properties in name order.
func SiteXML(props map[string]string) string {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<configuration>\n")
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "  <property><name>%s</name><value>%s</value></property>\n", html.EscapeString(k), html.EscapeString(props[k]))
	}
	b.WriteString("</configuration>\n")
	return b.String()
}

// Log4j sends a daemon's log to its output, which its host keeps.
const Log4j = `log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.err
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{HH:mm:ss.SSS} %p %c{1}: %m%n
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
`

// writeConf writes the configuration directory of h: it goes first on the
// class path, where Hadoop's Configuration finds the site files.
func writeConf(h systems.Host, props map[string]string) error {
	// The daemons' HTTP servers (which serve /jmx) look for their web
	// application directories on the class path; Hadoop's jars on Maven
	// Central do not carry them (its binary tarball does), and gait needs
	// none of their pages.
	for _, app := range []string{"hdfs", "datanode", "static"} {
		if err := h.MkdirAll(filepath.Join(confDir(h), "webapps", app)); err != nil {
			return err
		}
	}
	if err := h.MkdirAll(systems.JavaTmpDir(dir(h))); err != nil {
		return err
	}
	site := SiteXML(props)
	for name, text := range map[string]string{"core-site.xml": site, "hdfs-site.xml": site, "log4j.properties": Log4j, "exclude": ""} {
		if err := h.WriteFile(filepath.Join(confDir(h), name), []byte(text)); err != nil {
			return err
		}
	}
	return nil
}

// classPath is Hadoop's jars, then h's configuration directory: the jars
// hold no site files nor log4j.properties, and a class-data archive made
// on one host matches another's class path only where the two are the
// same, the jars.
func (d *Driver) classPath(h systems.Host) string {
	return filepath.Join(d.Home, "lib", "*") + ":" + confDir(h)
}

// argv runs class on h with args.
func (d *Driver) argv(h systems.Host, role string, args ...string) []string {
	argv := []string{d.Java}
	argv = append(argv, JVMFlags...)
	if role == RoleNameNode {
		argv = append(argv, d.NameNodeJVM...)
	} else {
		argv = append(argv, d.DataNodeJVM...)
	}
	argv = append(argv, "-Dhadoop.log.dir="+dir(h), systems.JavaTmpFlag(dir(h)), "-cp", d.classPath(h))
	return append(argv, args...)
}

const (
	nameNodeClass = "org.apache.hadoop.hdfs.server.namenode.NameNode"
	dataNodeClass = "org.apache.hadoop.hdfs.server.datanode.DataNode"
)

// Start formats a new namespace on the first host, starts the NameNode
// there and, once it answers, a DataNode on every other host, a wave at a
// time (systems.Fleet), and returns once every DataNode has registered
// and the NameNode has left safe mode, or fails with the tail of a
// daemon's log.
func (d *Driver) Start(ctx context.Context, hosts []systems.Host) (systems.Cluster, error) {
	if len(hosts) < 2 {
		return nil, fmt.Errorf("hdfs: needs at least 2 hosts (a NameNode and a DataNode), got %d", len(hosts))
	}
	if err := d.Check(); err != nil {
		return nil, err
	}
	if d.ClassArchive && systems.CountElsewhere(hosts) > 0 {
		// The archive is made and kept under Home on this machine;
		// a DataNode on another would name a file missing there.
		without := *d
		without.ClassArchive = false
		d = &without
		systems.Progress(ctx)("DataNodes' class-data archive: not used, the hosts span machines")
	}
	c := &Cluster{d: d, byName: map[string]*member{}}
	for i, h := range hosts {
		if c.byName[h.Name()] != nil {
			return nil, fmt.Errorf("hdfs: two hosts named %q", h.Name())
		}
		role := RoleDataNode
		if i == 0 {
			role = RoleNameNode
		}
		m := &member{host: h, role: role}
		c.members = append(c.members, m)
		c.byName[h.Name()] = m
		if err := h.RemoveAll(dir(h)); err != nil {
			return nil, fmt.Errorf("hdfs on %s: %w", h.Name(), err)
		}
		if err := writeConf(h, d.conf(h, hosts[0], len(hosts)-1)); err != nil {
			return nil, fmt.Errorf("hdfs on %s: %w", h.Name(), err)
		}
	}
	c.nn = c.members[0]
	nameDir := d.conf(hosts[0], hosts[0], len(hosts)-1)["dfs.namenode.name.dir"]
	if err := d.format(ctx, c.nn, nameDir); err != nil {
		return nil, err
	}
	if _, missing := d.archive(); missing != "" {
		// The first DataNode makes the archive, with the NameNode
		// started for it; then every DataNode starts with it.
		if err := c.nn.launch(d); err != nil {
			return nil, err
		}
		c.trainArchive(ctx, c.members[1], missing)
	}
	f := c.fleet(c.members[1:])
	for i, m := range c.members {
		if !m.exited() {
			continue // the NameNode, started for the archive
		}
		launch := func() error { return m.launch(d) }
		if i == 0 {
			f.Masters[0].Launch = launch
		} else {
			f.Workers[i-1].Launch = launch
		}
	}
	if err := f.Start(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// format makes a new, empty namespace in nameDir: a copy of the one gait
// keeps per Hadoop and JDK under Home, else by "NameNode -format" on nn's
// host, whose result is kept. Formatting is a JVM's start, seconds of
// CPU before the NameNode's own (a minute at a load average of 80); the
// namespace it writes (its VERSION's IDs, an empty image) is the same
// for every cluster but for random IDs no DataNode has seen before.
func (d *Driver) format(ctx context.Context, nn *member, nameDir string) error {
	kept := ""
	if digest, err := d.digest("NameNode -format"); err == nil {
		kept = filepath.Join(d.Home, "namespace", digest)
		if _, err := os.Stat(filepath.Join(kept, "current", "VERSION")); err == nil {
			if err := copyTo(nn.host, nameDir, kept); err == nil {
				return nil
			}
			nn.host.RemoveAll(nameDir) // and format it anew
		}
	}
	if err := d.formatByHadoop(ctx, nn, nameDir); err != nil {
		return err
	}
	if _, elsewhere := nn.host.(systems.Elsewhere); kept != "" && !elsewhere {
		keep(nameDir, kept)
	}
	return nil
}

// copyTo copies the directory src of this machine into dir on h's
// machine, through h.
func copyTo(h systems.Host, dir, src string) error {
	return fs.WalkDir(os.DirFS(src), ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(filepath.Join(src, path))
		if err != nil {
			return err
		}
		return h.WriteFile(filepath.Join(dir, path), data)
	})
}

// keep copies dir to kept, whole or not at all; best effort (a namespace
// not kept is made again next time).
func keep(dir, kept string) {
	tmp := fmt.Sprintf("%s.%d.tmp", kept, os.Getpid())
	defer os.RemoveAll(tmp)
	if os.MkdirAll(filepath.Dir(kept), 0o755) != nil || os.CopyFS(tmp, os.DirFS(dir)) != nil {
		return
	}
	os.Rename(tmp, kept) // fails if another gait kept one first: either will do
}

// formatByHadoop runs "NameNode -format" on nn's host and waits for it to
// end; it succeeded if the namespace's VERSION file is in nameDir.
func (d *Driver) formatByHadoop(ctx context.Context, nn *member, nameDir string) error {
	p, err := nn.host.Start("namenode-format", d.argv(nn.host, RoleNameNode, nameNodeClass, "-format", "-force", "-nonInteractive"), nil)
	if err != nil {
		return fmt.Errorf("hdfs: format the namespace: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, d.StartTimeout)
	defer cancel()
	if err := waitExit(ctx, p); err != nil {
		return fmt.Errorf("hdfs: format the namespace on %s: %w%s", nn.host.Name(), err, systems.LogTail(p))
	}
	if _, err := nn.host.ReadFile(filepath.Join(nameDir, "current", "VERSION")); err != nil {
		return fmt.Errorf("hdfs: format the namespace on %s failed%s", nn.host.Name(), systems.LogTail(p))
	}
	return nil
}

// launch starts m's daemon unless it is running, with the DataNodes'
// class-data archive if there is one, and the JVM flags extra.
func (m *member) launch(d *Driver, extra ...string) error {
	return m.Launch(fmt.Sprintf("hdfs %s on %s", m.role, m.host.Name()), func() (systems.Process, error) {
		return m.start(d, extra)
	})
}

func (m *member) start(d *Driver, extra []string) (systems.Process, error) {
	class := dataNodeClass
	if m.role == RoleNameNode {
		class = nameNodeClass
	}
	argv := d.argv(m.host, m.role, class)
	var env []string
	if m.role == RoleDataNode {
		if have, _ := d.archive(); have != "" {
			extra = append(extra, "-XX:SharedArchiveFile="+have)
		}
		// Two malloc arenas rather than eight per CPU: a DataNode's
		// forty threads each touching an arena of its own costs
		// resident memory for nothing the DataNode needs.
		env = []string{"MALLOC_ARENA_MAX=2"}
	}
	argv = slices.Insert(argv, 1, extra...)
	return m.host.Start(m.role, argv, env)
}

var errNoNameNode = errors.New("hdfs: the NameNode does not answer")

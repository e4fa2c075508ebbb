// Package mapreduce drives Hadoop MapReduce on YARN: the unmodified
// ResourceManager, NodeManagers (with MapReduce's shuffle service) and
// MapReduce application masters of the Hadoop release java/mapreduce/pom.xml
// names (fetched by scripts/fetch-jars.sh mapreduce), one JVM per daemon,
// over an HDFS cluster that gait's hdfs driver starts on the same hosts.
// A job's completion time, from its submission by Hadoop's own job client,
// is the latency sample; the jobs are Hadoop's WordCount and its
// GenericMRLoadGenerator (a synthetic job in the spirit of the SWIM
// workloads the Limplock paper ran), with speculative execution on.
//
// The first host runs the NameNode and the ResourceManager; every other
// host a DataNode and a NodeManager. With placement split (the default,
// as the paper: "we do not collocate mappers and reducers") YARN's node
// labels keep each kind of container on hosts of its own: the second host
// runs every job's application master, the rest are split into mapper
// hosts (label map) and reducer hosts (label reduce). A fault aimed at a
// mapper is then aimed at a host that will run maps, known before any job
// runs; the limp schedule resolves roles when a fault strikes, which is
// before the first job at 0 s. With placement shared every NodeManager
// runs any container, as a plain YARN cluster does, and the roles are
// nodemanager (and appmaster for the host of a running job's master).
package mapreduce

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/hdfs"
)

// Version is the YARN and MapReduce release java/mapreduce/pom.xml names
// (its examples jar is 3.4.2's: 3.5.0's is not on Maven Central).
const Version = "3.5.0"

// Roles.
const (
	RoleResourceManager = "resourcemanager"
	RoleNodeManager     = "nodemanager"
	RoleAppMaster       = "appmaster"
	RoleMapper          = "mapper"
	RoleReducer         = "reducer"
)

// Placements.
const (
	Split  = "split"
	Shared = "shared"
)

// Node labels of the split placement: YARN's partitions of map and reduce
// containers. Application masters go to the default partition (no label).
const (
	labelMap    = "map"
	labelReduce = "reduce"
)

// The daemons' ports: YARN's and MapReduce's defaults. Every host has its
// own address.
const (
	rmPort        = 8032
	rmSchedPort   = 8030
	rmTrackerPort = 8031
	rmAdminPort   = 8033
	rmWebPort     = 8088
	nmPort        = 8041
	nmLocPort     = 8040
	nmWebPort     = 8042
	shufflePort   = 13562
)

// Driver starts MapReduce clusters. The zero value is not ready; use New.
type Driver struct {
	Java string
	Home string // holds lib/*.jar, as scripts/fetch-jars.sh mapreduce leaves them
	// HDFS starts the file system the jobs read and write.
	HDFS *hdfs.Driver
	// ResourceManagerJVM and NodeManagerJVM are given to java before the
	// main class; TaskJVM to each container's (maps, reduces, masters).
	ResourceManagerJVM, NodeManagerJVM, TaskJVM []string
	// Placement is Split or Shared (see the package's comment).
	Placement string
	// Job is the job each op runs: wordcount or loadgen.
	Job string
	// Input is the bytes of text the jobs read, written once at start;
	// Split its split size, one map per split; Reduces the reduces per job.
	Input, SplitSize int64
	Reduces          int
	// Containers is how many task containers a NodeManager runs at once
	// (the paper's Hadoop: two map and two reduce slots a node), each of
	// ContainerMB.
	Containers, ContainerMB int
	// LostAfter is how long the ResourceManager hears nothing from a
	// NodeManager before it declares it lost (YARN's default: 10 min).
	LostAfter time.Duration
	// StartTimeout bounds the ResourceManager's start and a small
	// cluster's; StartPerNode is what each NodeManager adds on one CPU.
	StartTimeout, StartPerNode time.Duration
}

// New returns a driver with YARN's defaults but where a small machine
// needs others: heaps, container sizes, the time a node is lost after.
func New() *Driver {
	home := systems.JarHome("mapreduce")
	small := []string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:CICompilerCount=1", "-Xss256k"}
	return &Driver{
		Java:               "/usr/bin/java",
		Home:               home,
		HDFS:               hdfs.New(),
		ResourceManagerJVM: append([]string{"-Xms64m", "-Xmx384m"}, small...),
		NodeManagerJVM:     append([]string{"-Xms32m", "-Xmx192m", "-XX:MinHeapFreeRatio=10", "-XX:MaxHeapFreeRatio=30"}, small...),
		// 256 MB containers, as WordCount ran in 17 s here.
		TaskJVM:     append([]string{"-Xmx180m"}, small...),
		Placement:   Split,
		Job:         "wordcount",
		Input:       16 << 20,
		SplitSize:   2 << 20,
		Reduces:     2,
		Containers:  2,
		ContainerMB: 256,
		LostAfter:   30 * time.Second,
		// A NodeManager took over 8 minutes to start on the shared
		// 2-core machine at load average 140.
		StartTimeout: 10 * time.Minute,
		StartPerNode: 20 * time.Second,
	}
}

func (d *Driver) Name() string { return "mapreduce" }

// jars that must be in Home's lib for the daemons and the jobs.
var jars = []string{
	"hadoop-yarn-server-resourcemanager-" + Version + ".jar",
	"hadoop-yarn-server-nodemanager-" + Version + ".jar",
	"hadoop-mapreduce-client-app-" + Version + ".jar",
	"hadoop-mapreduce-client-jobclient-" + Version + "-tests.jar",
	"hadoop-mapreduce-examples-3.4.2.jar",
}

// Needs are java, the jars Check looks for, and HDFS's.
func (d *Driver) Needs() []string {
	out := []string{d.Java}
	for _, j := range jars {
		out = append(out, filepath.Join(d.Home, "lib", j))
	}
	return append(out, d.HDFS.Needs()...)
}

// Check says what is missing to run MapReduce and its HDFS.
func (d *Driver) Check() error {
	var files []string
	for _, j := range jars {
		files = append(files, filepath.Join(d.Home, "lib", j))
	}
	if err := systems.CheckJava("mapreduce", d.Java, files, "run scripts/fetch-jars.sh mapreduce, or make deps"); err != nil {
		return err
	}
	return d.HDFS.Check()
}

// javaHome is the JDK the containers' launch scripts run java from.
func (d *Driver) javaHome() string {
	java, err := filepath.EvalSymlinks(d.Java)
	if err != nil {
		java = d.Java
	}
	return filepath.Dir(filepath.Dir(java))
}

// layout gives each host its role: the first the ResourceManager's; with
// placement split the second the application masters', then the mappers'
// (the first half of the rest, rounded up) and the reducers'; with shared,
// every other host a NodeManager's.
func layout(placement string, n int) []string {
	roles := make([]string, n)
	roles[0] = RoleResourceManager
	if placement == Shared {
		for i := 1; i < n; i++ {
			roles[i] = RoleNodeManager
		}
		return roles
	}
	roles[1] = RoleAppMaster
	rest := n - 2
	for i := 2; i < n; i++ {
		roles[i] = RoleReducer
		if i-2 < (rest+1)/2 {
			roles[i] = RoleMapper
		}
	}
	return roles
}

// minNodes is the smallest cluster of a placement: split needs a host for
// the masters, a mapper and a reducer beside the ResourceManager's.
func minNodes(placement string) int {
	if placement == Shared {
		return 2
	}
	return 4
}

// label is the node label of a NodeManager with role, "" for none.
func label(role string) string {
	switch role {
	case RoleMapper:
		return labelMap
	case RoleReducer:
		return labelReduce
	}
	return ""
}

func dir(h systems.Host) string     { return filepath.Join(h.DataDir(), "yarn") }
func confDir(h systems.Host) string { return filepath.Join(dir(h), "conf") }

// nodeAttributeDir is where the ResourceManager on h keeps its node
// attributes' store.
func nodeAttributeDir(h systems.Host) string { return filepath.Join(dir(h), "node-attribute") }

func hostPort(addr string, port int) string { return addr + ":" + strconv.Itoa(port) }

// conf is the yarn-site.xml (also core-site.xml and mapred-site.xml) of
// the daemon on h, in a cluster whose NameNode and ResourceManager are on
// rm; role is h's.
func (d *Driver) conf(h, rm systems.Host, role string) map[string]string {
	a, r := h.Address(), rm.Address()
	classPath := confDir(h) + "," + filepath.Join(d.Home, "lib", "*")
	c := map[string]string{
		"fs.defaultFS":   hdfs.FSURI(rm),
		"hadoop.tmp.dir": filepath.Join(dir(h), "tmp"),
		// the ResourceManager
		"yarn.resourcemanager.hostname":                           r,
		"yarn.resourcemanager.address":                            hostPort(r, rmPort),
		"yarn.resourcemanager.scheduler.address":                  hostPort(r, rmSchedPort),
		"yarn.resourcemanager.resource-tracker.address":           hostPort(r, rmTrackerPort),
		"yarn.resourcemanager.admin.address":                      hostPort(r, rmAdminPort),
		"yarn.resourcemanager.webapp.address":                     hostPort(r, rmWebPort),
		"yarn.resourcemanager.scheduler.class":                    "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler",
		"yarn.nm.liveness-monitor.expiry-interval-ms":             strconv.FormatInt(d.LostAfter.Milliseconds(), 10),
		"yarn.resourcemanager.nodemanagers.heartbeat-interval-ms": "1000",
		"yarn.scheduler.minimum-allocation-mb":                    "128",
		"yarn.scheduler.maximum-allocation-mb":                    strconv.Itoa(d.ContainerMB * 4),
		"yarn.timeline-service.enabled":                           "false",
		"yarn.resourcemanager.system-metrics-publisher.enabled":   "false",
		"yarn.log-aggregation-enable":                             "false",
		"yarn.webapp.ui2.enable":                                  "false",
		// in the host's directory, which the testbed removes, not the
		// default /tmp/hadoop-yarn-USER, which outlives every run
		"yarn.node-attribute.fs-store.root-dir": "file://" + nodeAttributeDir(h),
		// the NodeManagers
		"yarn.nodemanager.hostname":                             a,
		"yarn.nodemanager.address":                              hostPort(a, nmPort),
		"yarn.nodemanager.localizer.address":                    hostPort(a, nmLocPort),
		"yarn.nodemanager.webapp.address":                       hostPort(a, nmWebPort),
		"yarn.nodemanager.local-dirs":                           filepath.Join(dir(h), "local"),
		"yarn.nodemanager.log-dirs":                             filepath.Join(dir(h), "logs"),
		"yarn.nodemanager.resource.memory-mb":                   strconv.Itoa(d.nodeMB(role)),
		"yarn.nodemanager.resource.cpu-vcores":                  "8",
		"yarn.nodemanager.vmem-check-enabled":                   "false",
		"yarn.nodemanager.pmem-check-enabled":                   "false",
		"yarn.nodemanager.disk-health-checker.enable":           "false",
		"yarn.nodemanager.aux-services":                         "mapreduce_shuffle",
		"yarn.nodemanager.aux-services.mapreduce_shuffle.class": "org.apache.hadoop.mapred.ShuffleHandler",
		"yarn.nodemanager.env-whitelist":                        "JAVA_HOME,HADOOP_CONF_DIR,PATH,LANG,TZ",
		"yarn.nodemanager.delete.debug-delay-sec":               "0",
		"yarn.nodemanager.recovery.enabled":                     "false",
		"yarn.application.classpath":                            classPath,
		"mapreduce.shuffle.port":                                strconv.Itoa(shufflePort),
		// MapReduce (the jobs read these from the client's copy)
		"mapreduce.framework.name":                      "yarn",
		"mapreduce.application.classpath":               classPath,
		"mapreduce.jvm.add-opens-as-default":            "true",
		"yarn.app.mapreduce.am.staging-dir":             "/tmp/staging",
		"yarn.app.mapreduce.am.resource.mb":             strconv.Itoa(d.ContainerMB),
		"yarn.app.mapreduce.am.command-opts":            strings.Join(d.TaskJVM, " "),
		"mapreduce.map.memory.mb":                       strconv.Itoa(d.ContainerMB),
		"mapreduce.reduce.memory.mb":                    strconv.Itoa(d.ContainerMB),
		"mapreduce.map.java.opts":                       strings.Join(d.TaskJVM, " "),
		"mapreduce.reduce.java.opts":                    strings.Join(d.TaskJVM, " "),
		"mapreduce.task.io.sort.mb":                     "32",
		"mapreduce.map.speculative":                     "true",
		"mapreduce.reduce.speculative":                  "true",
		"mapreduce.job.ubertask.enable":                 "false",
		"mapreduce.input.fileinputformat.split.maxsize": strconv.FormatInt(d.SplitSize, 10),
		"mapreduce.job.reduces":                         strconv.Itoa(d.Reduces),
		// The jobs' outputs, one copy each: they are never read.
		"dfs.replication":                  "1",
		"dfs.permissions.enabled":          "false",
		"dfs.client.use.datanode.hostname": "false",
	}
	if d.Placement == Split {
		c["yarn.node-labels.enabled"] = "true"
		c["yarn.node-labels.fs-store.root-dir"] = "file://" + filepath.Join(dir(rm), "node-labels")
		c["yarn.node-labels.configuration-type"] = "distributed"
		c["yarn.nodemanager.node-labels.provider"] = "config"
		c["yarn.nodemanager.node-labels.provider.configured-node-partition"] = label(role)
		c["yarn.nodemanager.node-labels.resync-interval-ms"] = "1000"
		c["mapreduce.map.node-label-expression"] = labelMap
		c["mapreduce.reduce.node-label-expression"] = labelReduce
	}
	return c
}

// nodeMB is the memory a NodeManager offers: its task containers', and
// on the masters' host room for one master per client and more.
func (d *Driver) nodeMB(role string) int {
	if role == RoleAppMaster {
		return 4 * d.ContainerMB
	}
	return d.Containers * d.ContainerMB
}

// capacityScheduler is the one queue, default, with the whole cluster
// and every partition, and as many masters as fit.
func (d *Driver) capacityScheduler() map[string]string {
	c := map[string]string{
		"yarn.scheduler.capacity.root.queues":                   "default",
		"yarn.scheduler.capacity.root.default.capacity":         "100",
		"yarn.scheduler.capacity.root.default.maximum-capacity": "100",
		"yarn.scheduler.capacity.maximum-am-resource-percent":   "1.0",
		"yarn.scheduler.capacity.node-locality-delay":           "-1",
	}
	if d.Placement == Split {
		for _, q := range []string{"root", "root.default"} {
			c["yarn.scheduler.capacity."+q+".accessible-node-labels"] = labelMap + "," + labelReduce
			for _, l := range []string{labelMap, labelReduce} {
				c["yarn.scheduler.capacity."+q+".accessible-node-labels."+l+".capacity"] = "100"
				c["yarn.scheduler.capacity."+q+".accessible-node-labels."+l+".maximum-capacity"] = "100"
			}
		}
	}
	return c
}

// writeConf writes h's configuration directory, first on its class path.
func (d *Driver) writeConf(h, rm systems.Host, role string) error {
	// The daemons' web servers (the REST API gait reads) look for these
	// on the class path; the jars on Maven Central do not carry them all.
	for _, app := range []string{"cluster", "node", "yarn", "static", "proxy"} {
		if err := h.MkdirAll(filepath.Join(confDir(h), "webapps", app)); err != nil {
			return err
		}
	}
	if err := h.MkdirAll(systems.JavaTmpDir(dir(h))); err != nil {
		return err
	}
	site := hdfs.SiteXML(d.conf(h, rm, role))
	files := map[string]string{"core-site.xml": site, "yarn-site.xml": site, "mapred-site.xml": site, "hdfs-site.xml": site,
		"capacity-scheduler.xml": hdfs.SiteXML(d.capacityScheduler()), "log4j.properties": hdfs.Log4j}
	for name, text := range files {
		if err := h.WriteFile(filepath.Join(confDir(h), name), []byte(text)); err != nil {
			return err
		}
	}
	return nil
}

const (
	rmClass = "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager"
	nmClass = "org.apache.hadoop.yarn.server.nodemanager.NodeManager"
)

// argv runs class on h with the JVM flags jvm.
func (d *Driver) argv(h systems.Host, jvm []string, class string, args ...string) []string {
	argv := append([]string{d.Java}, hdfs.JVMFlags...)
	argv = append(argv, jvm...)
	argv = append(argv, "-Dhadoop.log.dir="+filepath.Join(dir(h), "logs"), "-Dyarn.log.dir="+filepath.Join(dir(h), "logs"),
		systems.JavaTmpFlag(dir(h)), "-cp", confDir(h)+":"+filepath.Join(d.Home, "lib", "*"), class)
	return append(argv, args...)
}

// member is one YARN daemon: the ResourceManager or a NodeManager.
type member struct {
	host systems.Host
	role string // as laid out: a NodeManager's is its partition's

	systems.Daemon
}

func (m *member) exited() bool {
	p := m.Current()
	return p == nil || p.Exited()
}

// launch starts m's daemon unless it is running.
func (m *member) launch(d *Driver) error {
	argv := d.argv(m.host, d.NodeManagerJVM, nmClass)
	name := "nodemanager"
	if m.role == RoleResourceManager {
		argv = d.argv(m.host, d.ResourceManagerJVM, rmClass)
		name = "resourcemanager"
	}
	// The NodeManager runs its containers' launch scripts with this JDK.
	env := []string{"JAVA_HOME=" + d.javaHome(), "MALLOC_ARENA_MAX=2", "HADOOP_CONF_DIR=" + confDir(m.host)}
	return m.Launch(fmt.Sprintf("mapreduce %s on %s", name, m.host.Name()), func() (systems.Process, error) {
		return m.host.Start(name, argv, env)
	})
}

// Start starts HDFS on hosts (gait's hdfs driver: the NameNode on the
// first, a DataNode on each other), then the ResourceManager on the first
// and a NodeManager on each other (systems.Fleet), and writes the jobs'
// input; it returns once every NodeManager is running in the
// ResourceManager's view (in its partition, for placement split), or
// fails naming the daemon and quoting its log.
func (d *Driver) Start(ctx context.Context, hosts []systems.Host) (systems.Cluster, error) {
	if n := minNodes(d.Placement); len(hosts) < n {
		return nil, fmt.Errorf("mapreduce: placement %s needs at least %d hosts, got %d", d.Placement, n, len(hosts))
	}
	if err := d.Check(); err != nil {
		return nil, err
	}
	c := &Cluster{d: d, byName: map[string]*member{}, byAddr: map[string]string{}}
	roles := layout(d.Placement, len(hosts))
	for i, h := range hosts {
		if c.byName[h.Name()] != nil {
			return nil, fmt.Errorf("mapreduce: two hosts named %q", h.Name())
		}
		m := &member{host: h, role: roles[i]}
		c.members = append(c.members, m)
		c.byName[h.Name()] = m
		c.byAddr[h.Address()] = h.Name()
		if err := h.RemoveAll(dir(h)); err != nil {
			return nil, fmt.Errorf("mapreduce on %s: %w", h.Name(), err)
		}
		if err := d.writeConf(h, hosts[0], roles[i]); err != nil {
			return nil, fmt.Errorf("mapreduce on %s: %w", h.Name(), err)
		}
	}
	c.rm = c.members[0]
	fs, err := d.HDFS.Start(ctx, hosts)
	if err != nil {
		return nil, fmt.Errorf("mapreduce: %w", err)
	}
	c.fs = fs
	if err := c.fleet(c.members[1:], true).Start(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	if err := c.writeInput(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

var errNoRM = errors.New("the ResourceManager does not answer")

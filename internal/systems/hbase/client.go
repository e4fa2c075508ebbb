package hbase

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/hdfs"
	"github.com/gait-dev/gait/internal/systems/javapipe"
)

// Ops are the operations of this driver's clients, in load.Op kind order:
//
//	put   the row KEY's one cell set to Value
//	get   the row KEY's cell read (a missing row is a success)
//	scan  ScanRows rows read from KEY on
var Ops = []string{"put", "get", "scan"}

const (
	opPut = iota
	opGet
	opScan
)

// ScanRows is how many rows a scan reads: a short range scan, in the
// region of its first row but for the last rows of a region.
const ScanRows = 100

// The table the clients use and its one column family.
const (
	table  = "gait"
	family = "f"
)

// clientTimeout bounds a request on HBase's side: an operation that has
// not succeeded within it, retries included, fails (HBase's default is
// 20 minutes). The load engine's own timeout is shorter still.
const clientTimeout = 60 * time.Second

// startClient runs dev.gait.hbase.Client (java/hbase), HBase's own client
// serving every load client of the cluster as a channel of its own over
// one HBase connection (javapipe), with its configuration and output in
// the master host's directory. The JVM first creates the table, a region
// per region server, and moves each region to its server; startClient
// returns once it says so.
func startClient(ctx context.Context, c *Cluster) (*javapipe.Client, error) {
	d, master := c.d, c.master.host
	conf := filepath.Join(dir(master), "client-conf")
	props := map[string]string{
		"hbase.zookeeper.quorum":              master.Address(),
		"hbase.zookeeper.property.clientPort": strconv.Itoa(zkPort),
		"hbase.client.operation.timeout":      strconv.FormatInt(clientTimeout.Milliseconds(), 10),
	}
	if err := os.MkdirAll(systems.JavaTmpDir(conf), 0o755); err != nil {
		return nil, fmt.Errorf("hbase client: %w", err)
	}
	for name, text := range map[string]string{"hbase-site.xml": hdfs.SiteXML(props), "log4j.properties": strings.Replace(log4j, "rootLogger=INFO", "rootLogger=WARN", 1)} {
		if err := os.WriteFile(filepath.Join(conf, name), []byte(text), 0o644); err != nil {
			return nil, fmt.Errorf("hbase client: %w", err)
		}
	}
	var servers []string
	for _, m := range c.servers {
		servers = append(servers, m.host.Address())
	}
	args := append([]string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", systems.JavaTmpFlag(conf)}, jvm17...)
	args = append(args, "-cp", conf+":"+filepath.Join(d.Home, "gait-hbase.jar")+":"+filepath.Join(d.Home, "lib", "*"),
		"dev.gait.hbase.Client", table, family, strings.Join(SplitKeys(len(c.servers)), ","), strings.Join(servers, ","))
	jc, err := javapipe.Start(javapipe.Options{Name: "hbase client", Java: d.Java, Args: args,
		Log: filepath.Join(dir(master), "client.log"), Greeting: true})
	if err != nil {
		return nil, err
	}
	wait, cancel := context.WithTimeout(ctx, d.StartTimeout)
	defer cancel()
	line, err := jc.Greeting(wait)
	if err == nil && line != "ready" {
		err = fmt.Errorf("hbase client: %s%s", line, systems.LogTail(jc))
	}
	if err != nil {
		jc.Stop()
		return nil, fmt.Errorf("hbase: table %s not placed: %w", table, err)
	}
	return jc, nil
}

// channel is a load.Client: one channel of the client JVM, with its own
// Table there.
type channel struct {
	c  *Cluster
	id uint64
	// touched names the hosts the last op involved beyond the master: the
	// region servers holding its rows and, for a put, the DataNodes of
	// those servers' WALs. Nil after an op that failed before its client
	// said.
	touched []string
}

var (
	_ load.Client   = (*channel)(nil)
	_ load.Involver = (*channel)(nil)
)

// Involved is load.Involver's: the region servers the last op went to and
// the DataNodes a put's WAL sync waited for, so a verdict can tell the
// requests that met a limping host from the rest (all are sent to the
// master's host, the clients' entry).
func (ch *channel) Involved() []string { return ch.touched }

// Do performs one operation.
func (ch *channel) Do(ctx context.Context, op load.Op) error {
	ch.touched = nil
	var name string
	var data []byte
	switch op.Kind {
	case opPut:
		name, data = "put", op.Value
	case opGet:
		name = "get"
	case opScan:
		name, data = "scan", []byte(strconv.Itoa(ScanRows))
	default:
		return fmt.Errorf("hbase: unknown operation kind %d", op.Kind)
	}
	a, err := ch.c.client.Ask(ctx, ch.id, name, op.Key, data)
	ch.touched = ch.c.involved(servers(a), op.Kind == opPut)
	if err != nil {
		return fmt.Errorf("hbase %s %s: %w", name, op.Key, err)
	}
	return nil
}

// servers are the region servers' addresses an answer names: those its
// ok line lists, else those its op said it went to ("at SERVER", a scan's
// for each region it went on to), nil when it said neither.
func servers(a javapipe.Answer) []string {
	if a.Err == nil && a.Rest != "" {
		return strings.Split(a.Rest, ",")
	}
	var out []string
	for _, s := range a.Seen {
		if at, ok := strings.CutPrefix(s, "at "); ok {
			out = append(out, at)
		}
	}
	return out
}

// involved names the hosts of servers (region server addresses) and, for
// a write, the DataNodes of their WALs; nil when servers is.
func (c *Cluster) involved(servers []string, write bool) []string {
	if servers == nil {
		return nil
	}
	out := []string{}
	for _, addr := range servers {
		h, ok := c.byAddr[addr]
		if !ok {
			continue
		}
		out = append(out, h)
		if write {
			out = append(out, c.pipeline(h)...)
		}
	}
	return out
}

// closeWait bounds a channel's close: a closed loop's clients close as
// the workload ends, and a scan cut at gait's timeout at 1000x would
// otherwise hold its client, and the run, until HBase's own clientTimeout.
const closeWait = 2 * time.Second

// Close ends the channel's Table in the JVM.
func (ch *channel) Close() error { return ch.c.client.CloseChannel(ch.id, closeWait) }

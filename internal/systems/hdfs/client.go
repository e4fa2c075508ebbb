package hdfs

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/javapipe"
	"github.com/gait-dev/gait/internal/tardis"
)

// Ops are the operations of this driver's clients, in load.Op kind order:
//
//	create  a new file of Value's length in one directory, /gait/new (so
//	        the directory grows as the Exalt case study has it)
//	write   /gait/keys/KEY (its colons made underscores) replaced by Value's length of data
//	read    /gait/keys/KEY read whole, and checked
//	append  Value's length of data added to /gait/keys/KEY in a block of
//	        its own (the Exalt case study's file whose block list grows)
//	mkdir   a new directory in /gait/dirs
//	stat    /gait/keys/KEY's status (getFileInfo: the NameNode answers from
//	        memory, no DataNode and no edit log involved)
//	setrep  /gait/keys/KEY's replication doubled (at most to every
//	        DataNode) and, once every block has that many replicas, set
//	        back and waited for again: the Limplock paper's F9, a file
//	        scaled from 2 to 4 replicas
//	decommission  a new file of Value's length in /gait/decommission
//	        with a replica on the first DataNode, then that DataNode
//	        decommissioned (through the NameNode's exclude file) and, once
//	        the NameNode has moved its replicas away, taken back into
//	        service: F11. The file gives every decommission a block to
//	        move: when the node comes back the NameNode deletes excess
//	        replicas, often the returning node's.
//	checkpoint  checkpointTxns new directories in /gait/checkpoint (namespace
//	        transactions), then one checkpoint by Hadoop's own Secondary
//	        NameNode (SecondaryNameNode -checkpoint force) run on the last
//	        host, beside its DataNode, with its checkpoint directory in that
//	        host's data directory: it fetches the NameNode's new edits (and
//	        image, the first time), merges them, saves the new image to its
//	        disk and uploads it: F5. Checkpoints of a cluster run one at a
//	        time (two would share the Secondary's storage).
//	balance  Value's length of data put into a new file of /gait/balance
//	        with one replica, by Hadoop's own shell (FsShell -put) run on
//	        the first DataNode's host, so that HDFS places every block on
//	        that DataNode (the writer's own); then Hadoop's Balancer
//	        (-threshold 1, the least it takes) run on the last host until
//	        it says the cluster is balanced: F10. With datanode_capacity
//	        small, the new file is an imbalance. Balancings of a cluster
//	        run one at a time (HDFS refuses a second balancer).
//	regenerate  the last DataNode dies (stopped) and the NameNode
//	        re-replicates its blocks from the survivors; the op ends once
//	        the NameNode has no block short of replicas and the DataNode is
//	        back (see Cluster.regenerate): F8. Regenerations of a cluster
//	        run one at a time.
//
// The data is tardis's synthetic stream named by the file's path, from
// offset 0: gait generates it and hands it to the Java client, so what the
// DataNodes store is what gait's emulating file system recognises.
var Ops = []string{"create", "write", "read", "append", "mkdir", "stat", "setrep", "decommission", "checkpoint", "balance", "regenerate"}

const (
	opCreate = iota
	opWrite
	opRead
	opAppend
	opMkdir
	opStat
	opSetrep
	opDecommission
	opCheckpoint
	opBalance
	opRegenerate
)

// The directories the operations work in.
const (
	NewDir  = "/gait/new"
	KeysDir = "/gait/keys"
	DirsDir = "/gait/dirs"
	// DecommissionDir holds the files decommission writes.
	DecommissionDir = "/gait/decommission"
	// CheckpointDir holds the directories checkpoint makes.
	CheckpointDir = "/gait/checkpoint"
	// BalanceDir holds the files balance puts on the first DataNode.
	BalanceDir = "/gait/balance"
)

// checkpointTxns is how many namespace transactions (mkdirs) a checkpoint
// op makes before it checkpoints. The paper checkpointed 60,000; on 2
// shared cores that many round trips would take minutes per op, and a
// verdict wants 20 baseline ops.
const checkpointTxns = 200

// javaClient is one JVM running dev.gait.hdfs.Client (java/hadoop), which
// serves every load client of a cluster as a channel of its own: gait's
// load engine is Go, HDFS's client is Java. Requests and answers are
// framed on the JVM's stdin and stdout by javapipe (see Client.java); what
// an op involved is the ADDRS of its ok line and of its "pipe" progress
// lines (see involvement).
type javaClient struct {
	*javapipe.Client
	// replication is the cluster's, dataNodes how many it has; setrep
	// raises the one towards the other.
	replication, dataNodes int
	// exclude is the NameNode's exclude file, decommissioned the first
	// DataNode's transfer address, which decommission writes into it.
	exclude, decommissioned string
	// secondary is the host checkpoints run on, with d's Java and jars;
	// nameDir the NameNode's storage directory, where a checkpoint's new
	// image arrives; ckptMu makes checkpoints run one at a time.
	d         *Driver
	secondary systems.Host
	nameDir   string
	ckptMu    sync.Mutex
	// first is the first DataNode's host, where balance puts its files;
	// balMu makes balancings run one at a time.
	first systems.Host
	balMu sync.Mutex
	// dataNodeHosts names the DataNodes' hosts by address, for what an
	// op says it involved.
	dataNodeHosts map[string]string
	// drops counts the ops whose pipeline dropped each DataNode: the
	// cluster's, kept across client JVMs.
	drops *dropCounts
	// cluster runs the ops that stop and resume its daemons.
	cluster *Cluster
}

type answer struct {
	data    []byte
	touched []string // the DataNodes' addresses the op involved
	dropped []string // those of them a pipeline recovery dropped (see involvement)
}

// startClient runs the client JVM in gait's own namespace (it reaches the
// testbed's hosts as gait's Go clients do), with its configuration and
// output in the NameNode host's directory, for a cluster of the DataNodes
// on dns.
func startClient(d *Driver, nn systems.Host, dns []systems.Host) (*javaClient, error) {
	dataNodes := len(dns)
	conf := filepath.Join(dir(nn), "client-conf")
	if err := os.MkdirAll(systems.JavaTmpDir(conf), 0o755); err != nil {
		return nil, fmt.Errorf("hdfs client: %w", err)
	}
	props := map[string]string{"fs.defaultFS": FSURI(nn), "dfs.client.use.datanode.hostname": "false"}
	// Replication and block size are the client's to choose when it
	// creates a file: it takes the cluster's.
	site := d.conf(nn, nn, dataNodes)
	for _, k := range []string{"dfs.replication", "dfs.blocksize"} {
		if v, ok := site[k]; ok {
			props[k] = v
		}
	}
	// In hdfs-site.xml too: HDFS's client loads hdfs-default.xml after
	// core-site.xml, so a dfs.* key only in core-site.xml is overridden by
	// its default (128 MiB blocks, replication 3).
	for name, text := range map[string]string{"core-site.xml": SiteXML(props), "hdfs-site.xml": SiteXML(props), "log4j.properties": strings.Replace(Log4j, "INFO", "WARN", 1)} {
		if err := os.WriteFile(filepath.Join(conf, name), []byte(text), 0o644); err != nil {
			return nil, fmt.Errorf("hdfs client: %w", err)
		}
	}
	argv := append(append([]string{}, JVMFlags...), "-Xmx512m", "-XX:+UseParallelGC", systems.JavaTmpFlag(conf),
		"-cp", conf+":"+filepath.Join(d.Home, "gait-hdfs.jar")+":"+filepath.Join(d.Home, "lib", "*"),
		"dev.gait.hdfs.Client", FSURI(nn))
	pipe, err := javapipe.Start(javapipe.Options{Name: "hdfs client", Java: d.Java, Args: argv,
		Log: filepath.Join(dir(nn), "client.log"), Check: checkLine})
	if err != nil {
		return nil, err
	}
	jc := &javaClient{Client: pipe, replication: min(d.Replication, dataNodes), dataNodes: dataNodes,
		exclude: excludeFile(nn), decommissioned: hostPort(dns[0].Address(), dnXferPort),
		d: d, secondary: dns[len(dns)-1], first: dns[0], nameDir: filepath.Join(site["dfs.namenode.name.dir"], "current")}
	jc.dataNodeHosts = map[string]string{}
	for _, h := range dns {
		jc.dataNodeHosts[h.Address()] = h.Name()
	}
	return jc, nil
}

// checkLine vets what the JVM says an op involved, on its ok line and its
// "pipe" progress lines (the pipelines it has met while it runs): it
// says nothing else.
func checkLine(kind, rest string) error {
	if kind != "ok" && kind != progressKind {
		return fmt.Errorf("unknown kind %q", kind)
	}
	_, _, err := involvement(rest)
	return err
}

// progressKind is the kind of the JVM's progress lines.
const progressKind = "pipe"

// call sends one request on channel ch and waits for its answer or ctx.
func (jc *javaClient) call(ctx context.Context, ch uint64, op, path string, data []byte) ([]byte, error) {
	a, err := jc.ask(ctx, ch, op, path, data)
	return a.data, err
}

// ask is call with the whole answer: the DataNodes the op involved too.
// When ctx ends first, the answer holds what the op involved until then
// (which pipelines it was waiting on), with ctx's error.
func (jc *javaClient) ask(ctx context.Context, ch uint64, op, path string, data []byte) (answer, error) {
	a, err := jc.Ask(ctx, ch, op, path, data)
	// What the JVM said passed checkLine as it came.
	var r answer
	switch {
	case err == nil:
		r.data = a.Data
		r.touched, r.dropped, _ = involvement(a.Rest)
	case ctx.Err() != nil:
		var groups []string
		for _, s := range a.Seen {
			groups = append(groups, strings.TrimPrefix(s, progressKind+" "))
		}
		r.touched, r.dropped, _ = involvement(strings.Join(groups, ";"))
	}
	if err != nil {
		return r, fmt.Errorf("hdfs %s %s: %w", op, path, err)
	}
	return r, nil
}

// clientGrace is how long a channel may take to close.
const clientGrace = 5 * time.Second

func (jc *javaClient) channel(id uint64) *channel {
	return &channel{jc: jc, id: id}
}

// channel is a load.Client: one channel of the client JVM, with its own
// FileSystem there.
type channel struct {
	jc   *javaClient
	id   uint64
	n    int    // names created so far, for unique names
	data []byte // the last generated data, reused while its path's seed is the same
	// touched names the hosts the last op involved beyond the NameNode:
	// the DataNodes of a create's, write's or append's pipelines, where a
	// read read from (of one cut at its timeout, those it had met by
	// then), the host a checkpoint ran on. Nil after any other op, and
	// after one that failed before it met any.
	touched []string
}

var (
	_ load.Client   = (*channel)(nil)
	_ load.Involver = (*channel)(nil)
)

// Involved is load.Involver's: the hosts of the DataNodes the last op
// involved, so a verdict can tell the writes whose pipeline held a
// limping DataNode from the rest (all are sent to the NameNode).
func (c *channel) Involved() []string { return c.touched }

// transfer runs an op that moves a file's data and keeps which DataNodes'
// hosts it involved.
func (c *channel) transfer(ctx context.Context, op, path string, data []byte) ([]byte, error) {
	a, err := c.jc.ask(ctx, c.id, op, path, data)
	// An op cut at its timeout involved what it was waiting on.
	c.touched = c.jc.hosts(a.touched)
	c.jc.drops.add(c.jc.hosts(a.dropped))
	return a.data, err
}

// hosts names the hosts of the DataNodes at addrs.
func (jc *javaClient) hosts(addrs []string) []string {
	var out []string
	for _, addr := range addrs {
		name, ok := jc.dataNodeHosts[addr]
		if !ok {
			name = addr // not a DataNode gait started: kept, and left out by the engine
		}
		out = append(out, name)
	}
	return out
}

// seed names the tardis stream of the file at path.
func seed(path string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(path))
	return h.Sum64()
}

// content is n bytes of path's stream from offset 0.
func (c *channel) content(path string, n int) []byte {
	c.data = tardis.AppendGenerate(c.data[:0], seed(path), 0, n)
	return c.data
}

// Do issues op: see Ops.
func (c *channel) Do(ctx context.Context, op load.Op) error {
	c.touched = nil
	switch op.Kind {
	case opCreate:
		c.n++
		p := fmt.Sprintf("%s/c%d-%d", NewDir, c.id, c.n)
		_, err := c.transfer(ctx, "create", p, c.content(p, len(op.Value)))
		return err
	case opWrite, opAppend:
		p := keyPath(op.Key)
		_, err := c.transfer(ctx, Ops[op.Kind], p, c.content(p, len(op.Value)))
		return err
	case opRead:
		p := keyPath(op.Key)
		got, err := c.transfer(ctx, "read", p, nil)
		if err != nil {
			return err
		}
		return c.check(p, got)
	case opStat:
		_, err := c.jc.call(ctx, c.id, "stat", keyPath(op.Key), nil)
		return err
	case opSetrep:
		up := min(2*c.jc.replication, c.jc.dataNodes)
		if up <= c.jc.replication {
			return fmt.Errorf("hdfs setrep: replication %d cannot grow with %d DataNodes", c.jc.replication, c.jc.dataNodes)
		}
		_, err := c.jc.call(ctx, c.id, "setrep", keyPath(op.Key), fmt.Appendf(nil, "%d %d", up, c.jc.replication))
		return err
	case opDecommission:
		c.n++
		p := fmt.Sprintf("%s/c%d-%d", DecommissionDir, c.id, c.n)
		req := fmt.Appendf(nil, "%s %s\n", c.jc.exclude, c.jc.decommissioned)
		_, err := c.jc.call(ctx, c.id, "decommission", p, append(req, c.content(p, len(op.Value))...))
		return err
	case opCheckpoint:
		for range checkpointTxns {
			c.n++
			if _, err := c.jc.call(ctx, c.id, "mkdir", fmt.Sprintf("%s/c%d-%d", CheckpointDir, c.id, c.n), nil); err != nil {
				return err
			}
		}
		// The checkpoint runs on the Secondary's host, whose disk it
		// reads and writes: an op cut there involved it too.
		c.touched = []string{c.jc.secondary.Name()}
		return c.jc.checkpoint(ctx)
	case opBalance:
		c.n++
		p := fmt.Sprintf("%s/c%d-%d", BalanceDir, c.id, c.n)
		return c.balance(ctx, p, c.content(p, len(op.Value)))
	case opRegenerate:
		return c.jc.cluster.regenerate(ctx)
	case opMkdir:
		c.n++
		_, err := c.jc.call(ctx, c.id, "mkdir", fmt.Sprintf("%s/c%d-%d", DirsDir, c.id, c.n), nil)
		return err
	default:
		return fmt.Errorf("hdfs: operation kind %d: not one of %v", op.Kind, Ops)
	}
}

// secondaryClass is Hadoop's Secondary NameNode; with "-checkpoint force"
// it takes one checkpoint and exits.
const secondaryClass = "org.apache.hadoop.hdfs.server.namenode.SecondaryNameNode"

// checkpoint runs one Secondary NameNode checkpoint on jc.secondary and
// waits for it to end. Its exit status is not known here, so it
// succeeded if the NameNode received a newer image than it had (its JMX
// LastCheckpointTime would say so only seconds later: /jmx caches).
func (jc *javaClient) checkpoint(ctx context.Context) error {
	jc.ckptMu.Lock()
	defer jc.ckptMu.Unlock()
	before, err := newestImage(jc.nameDir)
	if err != nil {
		return err
	}
	h := jc.secondary
	p, err := h.Start("secondarynamenode", jc.d.argv(h, RoleDataNode, secondaryClass, "-checkpoint", "force"), nil)
	if err != nil {
		return fmt.Errorf("hdfs checkpoint on %s: %w", h.Name(), err)
	}
	if err := waitExit(ctx, p); err != nil {
		return fmt.Errorf("hdfs checkpoint on %s: %w", h.Name(), err)
	}
	after, err := newestImage(jc.nameDir)
	if err != nil {
		return err
	}
	if after <= before {
		return fmt.Errorf("hdfs checkpoint on %s: the NameNode received no new image (its newest is of transaction %d)%s", h.Name(), before, systems.LogTail(p))
	}
	return nil
}

// The classes balance runs: Hadoop's shell and its Balancer.
const (
	fsShellClass  = "org.apache.hadoop.fs.FsShell"
	balancerClass = "org.apache.hadoop.hdfs.server.balancer.Balancer"
)

// balanced is what the Balancer prints when it ends because every
// DataNode's use is within the threshold of the average; its other ends
// (no block can be moved, no progress, another balancer) are failures.
const balanced = "The cluster is balanced. Exiting"

// balance puts data into path from the first DataNode's host, checks
// that it arrived, then runs the Balancer on the last host until it ends.
func (c *channel) balance(ctx context.Context, path string, data []byte) error {
	jc := c.jc
	jc.balMu.Lock()
	defer jc.balMu.Unlock()
	src := filepath.Join(dir(jc.first), "balance-src")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		return fmt.Errorf("hdfs balance: %w", err)
	}
	defer os.Remove(src)
	// The shell puts into an existing directory only.
	if _, err := jc.call(ctx, c.id, "mkdir", BalanceDir, nil); err != nil {
		return fmt.Errorf("hdfs balance: %w", err)
	}
	put := jc.d.argv(jc.first, RoleDataNode, fsShellClass, "-D", "dfs.replication=1", "-put", src, path)
	if _, _, err := run(ctx, jc.first, fmt.Sprintf("balance-put-%d-%d", c.id, c.n), put); err != nil {
		return fmt.Errorf("hdfs balance: put %s: %w", path, err)
	}
	// The shell writes path._COPYING_ and renames it when it is whole.
	if _, err := jc.call(ctx, c.id, "stat", path, nil); err != nil {
		return fmt.Errorf("hdfs balance: the shell on %s did not put it: %w", jc.first.Name(), err)
	}
	bal := jc.d.argv(jc.secondary, RoleDataNode, balancerClass,
		// Blocks under 10 MB are not moved by default.
		"-D", "dfs.balancer.getBlocks.min-block-size=1", "-threshold", "1")
	out, log, err := run(ctx, jc.secondary, fmt.Sprintf("balancer-%d-%d", c.id, c.n), bal)
	switch {
	case err != nil:
		return fmt.Errorf("hdfs balance: %w", err)
	case !strings.Contains(out, balanced):
		return fmt.Errorf("hdfs balance: the Balancer on %s ended without balancing: %q", jc.secondary.Name(), lastLine(out))
	case !strings.Contains(log, moved):
		// Then the op measured no balancing at all.
		return fmt.Errorf("hdfs balance: the Balancer on %s moved no block: %d bytes on one DataNode were no imbalance (is datanode_capacity small enough?)", jc.secondary.Name(), len(data))
	}
	return nil
}

// moved is what the Balancer logs for each block it moved.
const moved = "Successfully moved"

// run starts argv on h as name (a name of its own, so its output is only
// its own) and waits for it to exit; it returns the process's standard
// output and its log (standard error), or on ctx's end stops it.
func run(ctx context.Context, h systems.Host, name string, argv []string) (out, log string, err error) {
	p, err := h.Start(name, argv, nil)
	if err != nil {
		return "", "", fmt.Errorf("on %s: %w", h.Name(), err)
	}
	if err := waitExit(ctx, p); err != nil {
		return "", "", fmt.Errorf("%s on %s: %w", name, h.Name(), err)
	}
	out, log, err = systems.Output(h, p)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", name, err)
	}
	return out, log, nil
}

// waitExit waits for p to exit, or stops it when ctx ends.
func waitExit(ctx context.Context, p systems.Process) error {
	for !p.Exited() {
		select {
		case <-ctx.Done():
			p.Stop()
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// lastLine is out's last non-empty line.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// newestImage is the transaction id of the newest fsimage_TXID in the
// NameNode's storage directory dir, 0 if there is none.
func newestImage(dir string) (uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("hdfs checkpoint: the NameNode's images: %w", err)
	}
	var newest uint64
	for _, e := range entries {
		if txid, ok := strings.CutPrefix(e.Name(), "fsimage_"); ok {
			if n, err := strconv.ParseUint(txid, 10, 64); err == nil {
				newest = max(newest, n)
			}
		}
	}
	return newest, nil
}

// keyPath is the file of key: HDFS forbids ':' in a name, which gait's
// keys ("key:12") have.
func keyPath(key string) string { return KeysDir + "/" + strings.ReplaceAll(key, ":", "_") }

// check says whether got, read from path, is what writes and appends of
// one length put there: that many bytes of path's stream from offset 0,
// once or more. The stream matches got up to the first repetition or a
// few bytes past it (where the restarted stream happens to agree with the
// continuing one), so the chunk length is the largest one at or below the
// first mismatch that divides the file and repeats.
func (c *channel) check(path string, got []byte) error {
	gen := c.content(path, len(got))
	i := 0
	for i < len(got) && got[i] == gen[i] {
		i++
	}
	if i == len(got) && i > 0 {
		return nil
	}
	for n := i; n > 0; n-- {
		if len(got)%n == 0 && repeats(got, gen[:n]) {
			return nil
		}
	}
	return fmt.Errorf("hdfs read %s: %d bytes that are not the data written", path, len(got))
}

// repeats says whether got is chunk, over and over.
func repeats(got, chunk []byte) bool {
	for off := 0; off < len(got); off += len(chunk) {
		if !bytes.Equal(got[off:off+len(chunk)], chunk) {
			return false
		}
	}
	return true
}

// Close closes the channel and its FileSystem in the JVM.
func (c *channel) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), clientGrace)
	defer cancel()
	_, err := c.jc.call(ctx, c.id, "close", "/", nil)
	return err
}

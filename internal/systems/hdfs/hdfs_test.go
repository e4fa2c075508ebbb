package hdfs

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/loopback"
	"github.com/gait-dev/gait/internal/systems/tbhost"
	"github.com/gait-dev/gait/internal/testbed"
)

func driver(t testing.TB) *Driver {
	t.Helper()
	d := New()
	if err := d.Check(); err != nil {
		t.Skip(err)
	}
	return d
}

func do(t *testing.T, cl load.Client, kind int, key string, size int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.Do(ctx, loadOp(kind, key, size)); err != nil {
		t.Fatalf("%s %s: %v", Ops[kind], key, err)
	}
}

// start starts d on n testbed hosts, which it removes when t ends. Not on
// loopback: the NameNode knows a DataNode by the address its RPCs come
// from, which on loopback is 127.0.0.1 for every DataNode.
func start(t testing.TB, d *Driver, n int) (*Cluster, []systems.Host) {
	t.Helper()
	c, _, hosts := startOn(t, d, testbed.Options{Hosts: n})
	return c, hosts
}

// startOn is start on a testbed made with opts, which it also returns.
func startOn(t testing.TB, d *Driver, opts testbed.Options) (*Cluster, *testbed.Testbed, []systems.Host) {
	t.Helper()
	tb, hosts := upTestbed(t, opts)
	t0 := time.Now()
	c, err := d.Start(systems.WithProgress(context.Background(), func(line string) { t.Log(line) }), hosts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("NameNode and %d DataNodes ready in %v", opts.Hosts-1, time.Since(t0).Round(time.Millisecond))
	t.Cleanup(func() { c.Stop() })
	return c.(*Cluster), tb, hosts
}

// upTestbed brings up a testbed made with opts, removed when t ends, and
// returns its hosts; it skips t unless it runs as root.
func upTestbed(t testing.TB, opts testbed.Options) (*testbed.Testbed, []systems.Host) {
	t.Helper()
	if err := testbed.NeedRoot(); err != nil {
		t.Skipf("hdfs runs on testbed hosts: %v", err)
	}
	tb, err := testbed.Up(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tb.Close(); err != nil {
			t.Error(err)
		}
	})
	return tb, tbhost.Hosts(tb, "")
}

// loadOp is operation kind on key with size bytes of data.
func loadOp(kind int, key string, size int) load.Op {
	return load.Op{Kind: uint8(kind), Key: key, Value: make([]byte, size)}
}

// TestCluster starts a NameNode and three DataNodes with their data
// directories on emulating stores (a scenario's storage: emulated),
// writes, appends, creates and reads back through HDFS's Java client,
// reads the daemons' JMX metrics, and checks what the stores hold
// (checkStores).
func TestCluster(t *testing.T) {
	d := driver(t)
	c, tb, hosts := startOn(t, d, testbed.Options{Hosts: 4, Emulate: true})
	nn, dn := hosts[0].Name(), hosts[1].Name()
	ctx := context.Background()

	roles, err := c.Roles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hosts {
		if want := map[bool]string{true: RoleNameNode, false: RoleDataNode}[i == 0]; roles[h.Name()] != want {
			t.Fatalf("roles %v", roles)
		}
	}
	if _, err := c.Client(dn); err == nil {
		t.Fatal("a client of a DataNode's host was given")
	}
	checkArchive(t, c)
	checkJavaTmp(t, hosts)

	a, err := c.Client(nn)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := c.Client(nn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	const size = 300 << 10
	// Each op that moves data says which DataNodes' hosts it involved:
	// with replication 3 of 3, a write's pipeline is every DataNode, a
	// read comes from one of them.
	var dataNodes []string
	for _, h := range hosts[1:] {
		dataNodes = append(dataNodes, h.Name())
	}
	// A write's pipeline may lose a DataNode that stalls on a busy machine
	// (the client goes on with the other two, as HDFS's policy allows with
	// three DataNodes), and then reports the two; so at least least.
	involved := func(cl load.Client, least, most int) {
		t.Helper()
		got := cl.(load.Involver).Involved()
		if len(got) < least || len(got) > most || !slices.ContainsFunc(dataNodes, func(n string) bool { return slices.Contains(got, n) }) ||
			slices.ContainsFunc(got, func(n string) bool { return !slices.Contains(dataNodes, n) }) {
			t.Errorf("involved %v, want %d to %d of the DataNodes' hosts %v", got, least, most, dataNodes)
		}
		if len(got) < most {
			t.Logf("involved %v: a pipeline went on without a DataNode", got)
		}
	}
	do(t, a, opWrite, "k1", size)
	involved(a, 2, 3)
	do(t, b, opRead, "k1", 0) // another channel, another DFSClient, reads it
	involved(b, 1, 1)
	do(t, a, opAppend, "k1", size)
	involved(a, 2, 3)
	do(t, b, opRead, "k1", 0)
	do(t, a, opWrite, "small", 10) // shorter than a tardis block header
	do(t, b, opRead, "small", 0)
	// Two clients replacing one key at once both succeed (neither holds
	// the other's lease), and the key reads whole.
	errs := make(chan error, 2)
	for _, cl := range []load.Client{a, b} {
		go func() {
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			errs <- cl.Do(wctx, loadOp(opWrite, "shared", size))
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent write of one key: %v", err)
		}
	}
	do(t, a, opRead, "shared", 0)
	do(t, a, opCreate, "", 1000)
	do(t, a, opCreate, "", 1000)
	involved(a, 2, 3)
	do(t, b, opMkdir, "", 0)
	do(t, b, opStat, "k1", 0)
	if got := b.(load.Involver).Involved(); got != nil {
		t.Errorf("a stat involved %v, want no DataNode", got)
	}

	// a read of data gait did not write fails, as does one of a missing file
	ch := a.(*channel)
	corrupt := append([]byte{}, ch.content("/gait/keys/k1", 100)...)
	if err := ch.check("/gait/keys/k1", append(corrupt, 'x')); err == nil {
		t.Error("check accepted a corrupt file")
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := a.Do(rctx, load.Op{Kind: opRead, Key: "missing"}); err == nil || !strings.Contains(err.Error(), "FileNotFound") {
		t.Errorf("read of a missing file: %v", err)
	}

	// A JVM's first /jmx answer loads and compiles its code: on a crowded
	// machine it can miss the 3 s a scrape allows, the next ones not. And
	// Hadoop's /jmx serves each metrics source's values cached for up to
	// 10 s (metrics2's JMX cache), so scrape until every replica's bytes
	// and every file are counted, for up to 30 s.
	want := 3.0 * (2*size + 10 + 2*1000) // 3 replicas of 600 KiB, one of 10 bytes, two of 1000
	var m map[string]float64
	var written float64
	for try := 0; try < 30; try++ {
		if m, err = c.Metrics(ctx); err != nil {
			t.Logf("scrape %d: %v", try, err)
			continue
		}
		written = 0
		for _, h := range hosts[1:] {
			written += m["BytesWritten{host="+h.Name()+"}"]
		}
		if written >= want && m["FilesTotal{host="+nn+"}"] >= 4 {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"RpcQueueTimeAvgTime{host=" + nn + "}", "CallQueueLength{host=" + nn + "}", "FsLockQueueLength{host=" + nn + "}",
		"FilesTotal{host=" + nn + "}", "MemHeapUsedM{host=" + nn + "}", "MemHeapUsedM{host=" + dn + "}", "BytesWritten{host=" + dn + "}"} {
		if _, ok := m[k]; !ok {
			t.Errorf("metric %s missing; have %v", k, slices.Sorted(maps.Keys(m)))
		}
	}
	if written < want {
		t.Errorf("DataNodes wrote %v bytes, want at least %v", written, want)
	}
	if f := m["FilesTotal{host="+nn+"}"]; f < 4 {
		t.Errorf("FilesTotal %v, want at least 4", f)
	}

	// F5's op: a checkpoint by a Secondary NameNode on the last host,
	// which keeps its image in that host's data directory.
	t0 := time.Now()
	cctx, ccancel := context.WithTimeout(ctx, 2*time.Minute) // a JVM's start on a crowded machine
	defer ccancel()
	if err := b.Do(cctx, loadOp(opCheckpoint, "", 0)); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	t.Logf("checkpoint (%d mkdirs, then a Secondary NameNode's run) in %v", checkpointTxns, time.Since(t0).Round(time.Millisecond))
	if got := b.(load.Involver).Involved(); !slices.Equal(got, []string{hosts[len(hosts)-1].Name()}) {
		t.Errorf("a checkpoint involved %v, want the Secondary's host %s", got, hosts[len(hosts)-1].Name())
	}
	secondary := filepath.Join(dir(hosts[len(hosts)-1]), "tmp", "dfs", "namesecondary")
	images, _ := filepath.Glob(filepath.Join(secondary, "current", "fsimage_*"))
	if len(images) == 0 {
		t.Error("the Secondary NameNode left no fsimage in the last host's data directory")
	}
	// The image is not synthetic data: checkStores counts the DataNodes'.
	if err := os.RemoveAll(secondary); err != nil {
		t.Fatal(err)
	}
	checkStores(t, c, tb, a)
}

// TestRegenerate runs F8's op on a NameNode and four DataNodes with
// replication 3: the last DataNode dies, and the op ends once the
// NameNode has copied every block it held to the other three and it is
// back; the survivors' metrics say they copied them.
func TestRegenerate(t *testing.T) {
	d := driver(t)
	d.DeadAfter = 11 * time.Second
	c, hosts := start(t, d, 5)
	ctx := context.Background()
	cl, err := c.Client(hosts[0].Name())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, k := range []string{"k1", "k2", "k3", "k4", "k5", "k6"} {
		do(t, cl, opWrite, k, 1<<20)
	}
	// The NameNode lists a replica once its DataNode has reported it.
	victim := c.members[len(c.members)-1]
	var held int
	for try := 0; try < 50 && held == 0; try++ {
		if held, err = c.blocksOn(ctx, victim); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if held == 0 {
		t.Fatalf("%s's DataNode holds none of 6 blocks of 3 replicas over 4 DataNodes", victim.host.Name())
	}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := cl.Do(rctx, loadOp(opRegenerate, "", 0)); err != nil {
		t.Fatalf("regenerate: %v", err)
	}
	s, err := c.fsState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.NumLiveDataNodes != 4 || s.NumDeadDataNodes != 0 || s.LowRedundancyBlocks != 0 || s.PendingReconstructionBlocks != 0 {
		t.Errorf("after regenerate: %+v, want 4 live DataNodes and no block short", s)
	}
	// The DataNodes' metrics are cached for up to 10 s.
	var copied float64
	for try := 0; try < 30 && copied < float64(held); try++ {
		m, err := c.Metrics(ctx)
		if err != nil {
			t.Logf("scrape %d: %v", try, err)
		}
		copied = 0
		for _, h := range hosts[1:4] {
			copied += m["BlocksReplicated{host="+h.Name()+"}"]
		}
		time.Sleep(time.Second)
	}
	if copied < float64(held) {
		t.Errorf("the survivors copied %v blocks, want the %d %s held", copied, held, victim.host.Name())
	}
}

// TestStartFailure: a NameNode that cannot start makes Start fail with the
// tail of its log, and leaves nothing running. Its name directory is
// where nothing can be made, so formatting fails (within seconds, where a
// bad setting read later in the NameNode's start takes half a minute).
func TestStartFailure(t *testing.T) {
	d := driver(t)
	d.Conf = map[string]string{"dfs.namenode.name.dir": "/proc/gait-hdfs-name"}
	lb, err := loopback.Hosts(t.TempDir(), 2)
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Start(context.Background(), []systems.Host{lb[0], lb[1]})
	if err == nil {
		t.Fatal("started with a name directory in /proc")
	}
	if !strings.Contains(err.Error(), "format the namespace") || !strings.Contains(err.Error(), "/proc/gait-hdfs-name") {
		t.Fatalf("error does not quote the log: %v", err)
	}
	t.Log(err)
}

// checkArchive checks that every DataNode of c maps the DataNodes'
// class-data archive: made by this cluster's first DataNode when no
// earlier cluster made it.
func checkArchive(t *testing.T, c *Cluster) {
	t.Helper()
	archive, missing := c.d.archive()
	if archive == "" {
		t.Fatalf("no class-data archive at %s after a cluster started", missing)
	}
	for _, m := range c.members[1:] {
		maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", m.Current().Pid()))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(maps), archive) {
			t.Errorf("the DataNode on %s does not map %s", m.host.Name(), archive)
		}
	}
}

// checkJavaTmp checks that each daemon's HTTP server keeps its Jetty work
// directory in its host's directory, which the testbed removes, not in
// the machine's /tmp, where a killed JVM leaves it.
func checkJavaTmp(t *testing.T, hosts []systems.Host) {
	t.Helper()
	for _, h := range hosts {
		tmp := systems.JavaTmpDir(dir(h))
		entries, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(entries, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), "jetty-") }) {
			t.Errorf("%s: no Jetty work directory in %s (%d entries)", h.Name(), tmp, len(entries))
		}
	}
}

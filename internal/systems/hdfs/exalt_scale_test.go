package hdfs

import (
	"cmp"
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/procstat"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/testbed"
)

// TestExaltScale is the Exalt case study's first experiment: aggregate
// write throughput through HDFS's own client against the number of
// DataNodes, with the NameNode's RPC handler count at 10 and at 256 (and
// the fine-grained lock when GAIT_EXALT_SCALE_PEERS names it). The
// DataNodes' directories are emulating stores. One cluster grows through
// GAIT_EXALT_SCALE_DNS (default 3,10,30,100): its new DataNodes are started
// in batches and must all be live before the next step; at each count the
// NameNode alone is restarted once per peer (the DataNodes re-register),
// the peers' order rotated from count to count, and GAIT_EXALT_SCALE_CLIENTS
// clients create new 1 MiB files for GAIT_EXALT_SCALE_SECONDS. Each row says
// what limited it: the machine's idle CPU, the CPU each kind of process
// used, the NameNode's busy handlers and call queue, and the DataNodes'
// memory (PSS) and threads.
func TestExaltScale(t *testing.T) {
	f := exaltWants(t, "scale")
	counts := envInts(t, "GAIT_EXALT_SCALE_DNS", "3,10,30,100")
	peers := envPeers(t, "GAIT_EXALT_SCALE_PEERS", "10,256")
	clients := envInt(t, "GAIT_EXALT_SCALE_CLIENTS", 16)
	dur := time.Duration(envInt(t, "GAIT_EXALT_SCALE_SECONDS", 45)) * time.Second
	top := slices.Max(counts)
	// A DataNode takes about 100 MiB (PSS) here, the NameNode and the
	// client about 1.5 GiB; leave the machine's other users 6 GiB.
	if avail, need := memAvailable(t), int64(top)*110<<20+3<<29; avail-need < 6<<30 {
		t.Skipf("%d DataNodes need about %.1f GiB; %.1f GiB available would leave less than 6", top, float64(need)/(1<<30), float64(avail)/(1<<30))
	}
	d := driver(t)
	d.StartTimeout = 10 * time.Minute
	d.NameNodeJVM = []string{"-Xms512m", "-Xmx2g", "-XX:+UseParallelGC"}
	_, hosts := upTestbed(t, testbed.Options{Hosts: top + 1, Emulate: true, Dir: os.Getenv("GAIT_EXALT_TESTBED")})
	sc, err := d.Start(context.Background(), hosts[:counts[0]+1])
	if err != nil {
		t.Fatal(err)
	}
	c := sc.(*Cluster)
	t.Cleanup(func() { c.Stop() })
	for i, n := range counts {
		t0 := time.Now()
		growDataNodes(t, c, hosts[:n+1])
		t.Logf("%d DataNodes live (%v to add)", n, time.Since(t0).Round(time.Second))
		mem := dataNodeMemory(t, c)
		for j := range peers {
			p := peers[(i+j)%len(peers)]
			restartNameNode(t, c, p)
			r := writeFor(t, c, clients, dur)
			t.Logf("%d DataNodes, %v: %d files, %.2f MB/s, %d errors; idle CPU %.0f%%; CPU s: client %.1f, NameNode %.1f, DataNodes %.1f, gait %.1f; busy handlers max %.0f, call queue max %.0f",
				n, p, r.Files, r.MBps, r.Errors, 100*r.Idle, r.CPUClient, r.CPUNameNode, r.CPUDataNodes, r.CPUGait, r.BusyMax, r.QueueMax)
			emit(t, f, map[string]any{"datanodes": n, "handlers": p.Handlers, "fgl": p.FGL, "clients": clients, "seconds": dur.Seconds(),
				"files": r.Files, "errors": r.Errors, "mb_per_sec": r.MBps, "mean_ms": r.MeanMs,
				"idle_cpu": r.Idle, "load1": r.Load, "cpu_client_s": r.CPUClient, "cpu_namenode_s": r.CPUNameNode, "cpu_datanodes_s": r.CPUDataNodes, "cpu_gait_s": r.CPUGait,
				"busy_handlers_max": r.BusyMax, "call_queue_max": r.QueueMax, "rpc_queue_ms_mean": r.RPCQueueMs,
				"dn_pss_mean_mib": mem.PSS, "dn_rss_mean_mib": mem.RSS, "dn_threads_mean": mem.Threads, "live": r.Live})
		}
	}
}

// envInts reads a comma-separated list of positive whole numbers.
func envInts(t *testing.T, name, def string) []int {
	t.Helper()
	s := cmp.Or(os.Getenv(name), def)
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: %q is not a positive whole number", name, s, f)
		}
		out = append(out, n)
	}
	return out
}

// envPeers reads peers written HANDLERS or HANDLERS:fgl, comma-separated.
func envPeers(t *testing.T, name, def string) []exaltPeer {
	t.Helper()
	s := cmp.Or(os.Getenv(name), def)
	var out []exaltPeer
	for _, f := range strings.Split(s, ",") {
		h, lock, _ := strings.Cut(strings.TrimSpace(f), ":")
		n, err := strconv.Atoi(h)
		if err != nil || n < 1 || lock != "" && lock != "fgl" {
			t.Fatalf("%s=%q: %q is not HANDLERS or HANDLERS:fgl", name, s, f)
		}
		out = append(out, exaltPeer{Handlers: n, FGL: lock == "fgl"})
	}
	return out
}

// growDataNodes starts a DataNode on every host of hosts that c does not
// run one on yet, through the driver's start path (a wave at a time).
func growDataNodes(t *testing.T, c *Cluster, hosts []systems.Host) {
	t.Helper()
	var added []*member
	for _, h := range hosts[len(c.members):] {
		if err := os.RemoveAll(dir(h)); err != nil {
			t.Fatal(err)
		}
		if err := writeConf(h, c.d.conf(h, c.nn.host, len(hosts)-1)); err != nil {
			t.Fatal(err)
		}
		m := &member{host: h, role: RoleDataNode}
		c.members = append(c.members, m)
		c.byName[h.Name()] = m
		added = append(added, m)
	}
	f := c.fleet(added)
	for i, m := range added {
		f.Workers[i].Launch = func() error { return m.launch(c.d) }
	}
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// restartNameNode stops the client JVM (the next Client call starts
// another) and the NameNode, and starts the NameNode again configured as
// p; it returns once every DataNode has re-registered and safe mode is
// over.
func restartNameNode(t *testing.T, c *Cluster, p exaltPeer) {
	t.Helper()
	c.clientMu.Lock()
	if c.client != nil {
		c.client.Stop()
	}
	c.clientMu.Unlock()
	if err := c.nn.Current().Stop(); err != nil {
		t.Logf("stop the NameNode: %v", err)
	}
	c.d.Handlers, c.d.FineGrainedLock = p.Handlers, p.FGL
	if err := writeConf(c.nn.host, c.d.conf(c.nn.host, c.nn.host, len(c.members)-1)); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := c.Restart(context.Background(), c.nn.host.Name()); err != nil {
		t.Fatal(err)
	}
	t.Logf("NameNode restarted as %v, %d DataNodes live again in %v", p, len(c.members)-1, time.Since(t0).Round(time.Second))
}

// scaleResult is one measurement of TestExaltScale.
type scaleResult struct {
	Files, Errors                                 int64
	MBps, MeanMs                                  float64
	Idle, Load                                    float64 // the machine's idle CPU share and load average over the run
	CPUClient, CPUNameNode, CPUDataNodes, CPUGait float64 // CPU seconds used during the run
	BusyMax, QueueMax, RPCQueueMs, Live           float64
}

// writeFor has clients channels of a new client JVM create new 1 MiB
// files for dur, and samples the NameNode's handlers once a second.
func writeFor(t *testing.T, c *Cluster, clients int, dur time.Duration) scaleResult {
	t.Helper()
	chans := make([]*channel, clients)
	for i := range chans {
		cl, err := c.Client(c.nn.host.Name())
		if err != nil {
			t.Fatal(err)
		}
		chans[i] = cl.(*channel)
	}
	defer func() {
		for _, ch := range chans {
			ch.Close()
		}
	}()
	// A first create per channel outside the measurement: the client JVM
	// and each channel's FileSystem start.
	warm := make([]error, clients)
	var wg sync.WaitGroup
	for i, ch := range chans {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			warm[i] = ch.Do(ctx, loadOp(opCreate, "", 1<<20))
		})
	}
	wg.Wait()
	for _, err := range warm {
		if err != nil {
			t.Fatal(err)
		}
	}
	var r scaleResult
	// gait's own share is this process's: the emulating file systems and
	// the generation of the data written.
	procs := func() (client, nn, dns, gait float64) {
		gait = cpuSeconds(os.Getpid())
		client = cpuSeconds(c.client.Pid())
		nn = cpuSeconds(c.nn.Current().Pid())
		for _, m := range c.members[1:] {
			dns += cpuSeconds(m.Current().Pid())
		}
		return
	}
	c0, n0, d0, g0 := procs()
	idle0, total0 := machineCPU(t)
	var files, errs, nanos atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	for _, ch := range chans {
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				// The op may finish after the deadline; it counts then, as
				// the bytes were written by then.
				octx, ocancel := context.WithTimeout(context.Background(), time.Minute)
				err := ch.Do(octx, loadOp(opCreate, "", 1<<20))
				ocancel()
				if err != nil {
					errs.Add(1)
					continue
				}
				files.Add(1)
				nanos.Add(int64(time.Since(t0)))
			}
		})
	}
	start := time.Now()
	var queue []float64
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
		m, err := nameNodeMetrics1(c)
		if err != nil {
			continue // a missed sample: the NameNode was too busy to answer in time
		}
		r.BusyMax = max(r.BusyMax, m["NumInProcessHandler"])
		r.QueueMax = max(r.QueueMax, m["CallQueueLength"])
		r.Live = m["NumLiveDataNodes"]
		queue = append(queue, m["RpcQueueTimeAvgTime"])
	}
	r.Load = loadAverage(t)
	wg.Wait()
	elapsed := time.Since(start)
	idle1, total1 := machineCPU(t)
	c1, n1, d1, g1 := procs()
	r.Files, r.Errors = files.Load(), errs.Load()
	r.MBps = float64(r.Files) * (1 << 20) / 1e6 / elapsed.Seconds()
	if r.Files > 0 {
		r.MeanMs = float64(nanos.Load()) / float64(r.Files) / 1e6
	}
	r.Idle = (idle1 - idle0) / (total1 - total0)
	r.CPUClient, r.CPUNameNode, r.CPUDataNodes, r.CPUGait = c1-c0, n1-n0, d1-d0, g1-g0
	if len(queue) > 0 {
		var s float64
		for _, q := range queue {
			s += q
		}
		r.RPCQueueMs = s / float64(len(queue))
	}
	return r
}

// cpuSeconds is the CPU time pid has used, 0 if it is gone.
func cpuSeconds(pid int) float64 {
	r, err := procstat.Read(pid)
	if err != nil {
		return 0
	}
	return r.CPU.Seconds()
}

// machineCPU is the machine's idle and total CPU time so far, in ticks
// (the first line of /proc/stat).
func machineCPU(t *testing.T) (idle, total float64) {
	t.Helper()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	for i, f := range strings.Fields(line)[1:] {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("/proc/stat: %q: %v", line, err)
		}
		total += v
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
	}
	return idle, total
}

func loadAverage(t *testing.T) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	if err != nil {
		t.Fatalf("/proc/loadavg: %v", err)
	}
	return v
}

// dnMemory is the DataNodes' mean memory and threads.
type dnMemory struct{ PSS, RSS, Threads float64 }

func dataNodeMemory(t *testing.T, c *Cluster) dnMemory {
	t.Helper()
	var m dnMemory
	dns := c.members[1:]
	for _, mb := range dns {
		pid := mb.Current().Pid()
		r, err := procstat.Read(pid)
		if err != nil {
			t.Fatal(err)
		}
		m.RSS += float64(r.RSS) / (1 << 20)
		m.PSS += float64(smapsPss(t, pid)) / (1 << 20)
		m.Threads += float64(r.Threads)
	}
	n := float64(len(dns))
	return dnMemory{m.PSS / n, m.RSS / n, m.Threads / n}
}

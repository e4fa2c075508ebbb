package hdfs

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/procstat"
)

// TestManyDataNodes starts GAIT_HDFS_DATANODES DataNodes (skipped when
// unset: it is a measurement, not part of make test), has 8 clients write
// a 1 MiB file per DataNode with replication 3, and reports each DataNode's
// resident memory and threads, the NameNode's, and how long it all took.
func TestManyDataNodes(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("GAIT_HDFS_DATANODES"))
	if n < 1 {
		t.Skip("GAIT_HDFS_DATANODES unset: how many DataNodes to start")
	}
	d := driver(t)
	// Leave the machine's other users 6 GiB: a DataNode here takes about
	// 140 MiB resident, the NameNode and the client about 1 GiB.
	if avail, need := memAvailable(t), int64(n)*140<<20+1<<30; avail-need < 6<<30 {
		t.Skipf("%d DataNodes need about %.1f GiB; %.1f GiB available would leave less than 6", n, float64(need)/(1<<30), float64(avail)/(1<<30))
	}
	d.StartTimeout = 15 * time.Minute
	c, hosts := start(t, d, n+1)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	t0 := time.Now()
	for w := range errs {
		cl, err := c.Client(hosts[0].Name())
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		wg.Go(func() {
			for i := w; i < n && errs[w] == nil; i += len(errs) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				errs[w] = cl.Do(ctx, loadOp(opWrite, fmt.Sprintf("f%d", i), 1<<20))
				cancel()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d files of 1 MiB written in %v", n, time.Since(t0).Round(time.Millisecond))
	var rss, maxRSS, threads, pss int64
	for _, mb := range c.members[1:] {
		r, err := procstat.Read(mb.Current().Pid())
		if err != nil {
			t.Fatal(err)
		}
		rss += r.RSS
		pss += smapsPss(t, mb.Current().Pid())
		maxRSS = max(maxRSS, r.RSS)
		threads += r.Threads
	}
	nn, err := procstat.Read(c.nn.Current().Pid())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	live, _, err := c.nameNodeInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d DataNodes: RSS mean %.0f MiB, max %.0f MiB, total %.2f GiB; PSS mean %.0f MiB (shared pages split); threads mean %.0f; NameNode RSS %.0f MiB; live %d",
		n, float64(rss)/float64(n)/(1<<20), float64(maxRSS)/(1<<20), float64(rss)/(1<<30), float64(pss)/float64(n)/(1<<20), float64(threads)/float64(n),
		float64(nn.RSS)/(1<<20), len(live))
	if len(live) != n {
		t.Errorf("NameNode counts %d live DataNodes, want %d", len(live), n)
	}
}

// memAvailable is the kernel's estimate of memory available to new work.
func memAvailable(t *testing.T) int64 {
	return meminfoField(t, "/proc/meminfo", "MemAvailable:")
}

// smapsPss is pid's proportional set size: its resident pages, each shared
// one divided among the processes sharing it (the JVMs' common jars and
// libraries).
func smapsPss(t *testing.T, pid int) int64 {
	return meminfoField(t, fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:")
}

// meminfoField reads a "Name:   123 kB" line of file, in bytes.
func meminfoField(t *testing.T, file, name string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", file, line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("%s: no %s line", file, name)
	return 0
}

package hdfs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/testbed"
)

// TestDataNodeStartCPU measures what one DataNode JVM's start costs: the
// CPU seconds (user + system) it used from launch until the NameNode
// counts it registered, and 5 s later (its first block report and
// heartbeats), for each variant GAIT_HDFS_STARTCPU names, the variants
// alternating, GAIT_HDFS_STARTCPU_ROUNDS rounds (default 3). A variant
// is NAME=FLAGS, variants separated by ";": FLAGS are JVM flags added to
// the DataNode's (the class-data archive stays the driver's; the JVM
// says whether it maps it), "conf:KEY=VALUE" a configuration key,
// "-Xshare:off" runs without the archive. Every DataNode logs its class
// loading, so the report says how many classes came from the archive.
// A measurement, not part of make test:
//
//	sudo GAIT_HDFS_STARTCPU='now=;xint=-Xint' go test -count=1 -run TestDataNodeStartCPU -v ./internal/systems/hdfs/
func TestDataNodeStartCPU(t *testing.T) {
	spec := os.Getenv("GAIT_HDFS_STARTCPU")
	if spec == "" {
		t.Skip("GAIT_HDFS_STARTCPU unset: the variants to measure, NAME=FLAGS;...")
	}
	rounds, _ := strconv.Atoi(os.Getenv("GAIT_HDFS_STARTCPU_ROUNDS"))
	if rounds < 1 {
		rounds = 3
	}
	type variant struct {
		name  string
		flags []string
		conf  map[string]string
		cpu   []float64 // at registration
		after []float64 // 5 s later
		wall  []time.Duration
		share []string // classes from the archive / all
	}
	var vs []*variant
	for _, part := range strings.Split(spec, ";") {
		name, flags, _ := strings.Cut(part, "=")
		v := &variant{name: strings.TrimSpace(name), conf: map[string]string{}}
		for _, f := range strings.Fields(flags) {
			if kv, ok := strings.CutPrefix(f, "conf:"); ok {
				k, val, _ := strings.Cut(kv, "=")
				v.conf[k] = val
			} else {
				v.flags = append(v.flags, f)
			}
		}
		vs = append(vs, v)
	}
	d := driver(t)
	_, hosts := upTestbed(t, testbed.Options{Hosts: 2 + rounds*len(vs)})
	// A NameNode and one DataNode (which makes the class-data archive if
	// there is none); every measured DataNode starts on a host of its own.
	ctx := context.Background()
	sc, err := d.Start(systems.WithProgress(ctx, func(line string) { t.Log(line) }), hosts[:2])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Stop() })
	c := sc.(*Cluster)
	next := 2
	for r := range rounds {
		for _, v := range vs {
			h := hosts[next]
			next++
			cpu, after, wall, share := startOne(t, ctx, c, h, v.flags, v.conf)
			v.cpu, v.after, v.wall, v.share = append(v.cpu, cpu), append(v.after, after), append(v.wall, wall), append(v.share, share)
			t.Logf("round %d %-10s on %s: %.2f CPU-s at registration (%v), %.2f 5 s later; archive classes %s; load %s",
				r+1, v.name, h.Name(), cpu, wall.Round(10*time.Millisecond), after, share, loadavg())
		}
	}
	for _, v := range vs {
		t.Logf("%-10s median %.2f CPU-s at registration, %.2f 5 s later, %v wall (of %d; flags %q, conf %v)",
			v.name, median(v.cpu), median(v.after), medianDur(v.wall).Round(10*time.Millisecond), len(v.cpu), v.flags, v.conf)
	}
}

// startOne starts a DataNode on h with flags and conf added, waits until
// the NameNode counts it registered, and returns its CPU seconds then and
// 5 s later, the time to registration, and how many of the classes it
// loaded came from a class-data archive.
func startOne(t *testing.T, ctx context.Context, c *Cluster, h systems.Host, flags []string, conf map[string]string) (cpu, after float64, wall time.Duration, share string) {
	t.Helper()
	dv := *c.d
	dv.Conf = conf
	if slices.Contains(flags, "-Xshare:off") {
		dv.ClassArchive = false
	}
	if err := writeConf(h, dv.conf(h, c.nn.host, 1)); err != nil {
		t.Fatal(err)
	}
	classLog := filepath.Join(dir(h), "classes.log")
	m := &member{host: h, role: RoleDataNode}
	t0 := time.Now()
	if err := m.launch(&dv, append(slices.Clone(flags), "-Xlog:class+load=info:file="+classLog)...); err != nil {
		t.Fatal(err)
	}
	defer m.Current().Stop()
	for {
		live, _, err := c.nameNodeInfo(ctx)
		if err == nil && live[h.Address()] {
			break
		}
		if m.exited() || time.Since(t0) > 3*time.Minute {
			t.Fatalf("DataNode on %s not registered after %v%s", h.Name(), time.Since(t0), systems.LogTail(m.Current()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	wall = time.Since(t0)
	cpu = cpuSeconds(m.Current().Pid())
	time.Sleep(5 * time.Second)
	after = cpuSeconds(m.Current().Pid())
	b, _ := os.ReadFile(classLog)
	all := strings.Count(string(b), "source:")
	shared := strings.Count(string(b), "source: shared objects file")
	return cpu, after, wall, fmt.Sprintf("%d/%d", shared, all)
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

func medianDur(xs []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

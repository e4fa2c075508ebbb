package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
)

const good = `name: etcd-leader-nic
system: etcd
nodes: 3
workload: {op: put, keys: 1000, value_size: 1KiB, clients: 8, duration: 20s}
inject:
  - {fault: nic, target: leader, factors: [10, 100, 1000], at: 0s}
repeat: 1
`

func TestParseGood(t *testing.T) {
	s, err := Parse("leader-nic.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	w := s.Workload
	if s.Name != "etcd-leader-nic" || s.Nodes != 3 || s.Repeat != 1 || s.Bandwidth != 100_000_000 || s.Disk != nil || s.Data != "memory" {
		t.Errorf("top level: %+v", s)
	}
	if w.Mix.String() != "put:1" || w.Keys != 1000 || w.ValueSize != 1024 || w.Clients != 8 ||
		w.Duration != 20*time.Second || w.Timeout != load.DefaultTimeout || w.Connect != "follower" || !w.Preload {
		t.Errorf("workload: %+v", w)
	}
	if len(s.Inject) != 1 || !slices.Equal(s.Inject[0].Factors, []float64{10, 100, 1000}) || s.Inject[0].Target != "leader" {
		t.Errorf("inject: %+v", s.Inject)
	}
	var dirs []string
	for _, r := range s.Runs() {
		dirs = append(dirs, r.Dir())
	}
	if want := []string{"f1-r1", "f10-r1", "f100-r1", "f1000-r1"}; !slices.Equal(dirs, want) {
		t.Errorf("runs %v, want %v", dirs, want)
	}
}

func TestParseVariants(t *testing.T) {
	src := `name: mixed
system: etcd
nodes: 5
bandwidth: 1Gbit/s
disk: {bandwidth: 40MB/s, latency: 1ms}
workload:
  op: get:50,put:50
  rate: 50%
  poisson: true
  requests: 5000
  connect: all
inject:
  - {fault: disk, target: follower, factors: [2.5, 10], at: 2s, for: 5s}
  - {fault: crash, target: h4, at: 1s, for: 3s}
repeat: 2
warmup: 5s
`
	s, err := Parse("v.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	w := s.Workload
	if w.Rate.Share != 0.5 || !w.Poisson || w.Clients != 0 || w.Requests != 5000 || w.Duration != 0 || w.Connect != "all" {
		t.Errorf("workload: %+v", w)
	}
	if s.Bandwidth != 1e9 || s.Disk == nil || s.Disk.Bandwidth != 40e6 || s.Disk.Latency != time.Millisecond || s.Warmup != 5*time.Second {
		t.Errorf("bandwidth %d, disk %+v, warmup %v", s.Bandwidth, s.Disk, s.Warmup)
	}
	runs := s.Runs()
	var dirs []string
	for _, r := range runs {
		dirs = append(dirs, r.Dir())
	}
	if want := []string{"f1-r1", "f2.5-r1", "f10-r1", "f1-r2", "f2.5-r2", "f10-r2"}; !slices.Equal(dirs, want) {
		t.Errorf("runs %v, want %v", dirs, want)
	}
	st := runs[1].Step
	if len(st.Faults) != 2 || st.Faults[0].Factor != 2.5 || st.Faults[1].Kind != "crash" || st.Label() != "2.5x" {
		t.Errorf("step 1: %+v", st)
	}
	if len(runs[0].Step.Faults) != 0 || runs[0].Step.Label() != "baseline" {
		t.Errorf("baseline has faults: %+v", runs[0].Step)
	}
}

func TestVerdictKeys(t *testing.T) {
	why := strings.Repeat("a measured reason ", 20) // prose, longer than a word
	s, err := Parse("z.yaml", []byte(good+"paper: {row: Z3, marks: [OL, CL], differs: "+why+"}\nquick: true\nexpect: []\nmin_requests: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Paper == nil || s.Paper.Row != "Z3" || !slices.Equal(s.Paper.Marks, []string{"OL", "CL"}) || s.Paper.Differs != strings.TrimSpace(why) || !s.Quick ||
		s.Expect == nil || len(s.Expect) != 0 || s.MinRequests != 3 {
		t.Errorf("paper %+v, quick %v, expect %#v, min_requests %d", s.Paper, s.Quick, s.Expect, s.MinRequests)
	}
	s, err = Parse("n.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if s.Paper != nil || s.Quick || s.Expect != nil {
		t.Errorf("defaults: paper %+v, quick %v, expect %#v", s.Paper, s.Quick, s.Expect)
	}
	// A regression whose verdicts differ from its prediction says why,
	// as a paper row does.
	s, err = Parse("b.yaml", []byte(good+"expect: {marks: [NL, CL], differs: "+why+"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Expect, []string{"NL", "CL"}) || s.ExpectDiffers != strings.TrimSpace(why) {
		t.Errorf("expect %#v, differs %q", s.Expect, s.ExpectDiffers)
	}
}

func TestPartitionBesideSlowdown(t *testing.T) {
	src := "name: p\nsystem: etcd\nnodes: 3\nworkload: {op: put}\ninject:\n" +
		"  - {fault: nic, target: leader, factors: [10, 100]}\n" +
		"  - {fault: partition, target: follower, at: 2s, for: 3s}\n"
	s, err := Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	steps := s.Steps()
	if len(steps) != 3 {
		t.Fatalf("want baseline, 10x and 100x, got %+v", steps)
	}
	for _, st := range steps[1:] {
		p := st.Faults[1]
		if p.Kind != "partition" || p.Factor != 0 || p.At != 2*time.Second || p.For != 3*time.Second {
			t.Errorf("step %s: partition %+v", st.Label(), p)
		}
	}
}

func TestCrashOnly(t *testing.T) {
	src := "name: c\nsystem: etcd\nnodes: 3\nworkload: {op: put}\ninject:\n  - {fault: crash, target: leader, at: 5s, for: 5s}\n"
	s, err := Parse("c.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	steps := s.Steps()
	if len(steps) != 2 || steps[1].Label() != "crash" || steps[1].Factor != 0 || steps[1].key() != "crash" {
		t.Errorf("steps %+v", steps)
	}
	if s.Disk != nil {
		t.Errorf("no disk fault, yet disk %+v", s.Disk)
	}
}

func TestDiskFaultMountsLimpfs(t *testing.T) {
	src := "name: d\nsystem: etcd\nnodes: 3\nworkload: {op: put}\ninject: [{fault: disk, target: leader, factors: [10]}]\n"
	s, err := Parse("d.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if s.Disk == nil || s.Disk.Bandwidth != 80e6 {
		t.Errorf("disk %+v, want limpfs at 80 MB/s", s.Disk)
	}
}

func TestStorageEmulated(t *testing.T) {
	s, err := Parse("e.yaml", []byte(strings.Replace(good, "repeat: 1", "storage: emulated", 1)))
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{s: s, opt: Options{Out: t.TempDir()}}
	o := r.testbedOptions(RunID{})
	if s.Storage != StorageEmulated || !o.Emulate || o.Disk {
		t.Errorf("storage %q, testbed options %+v: want an emulating store and no slow disk", s.Storage, o)
	}
}

// TestMalformed checks that each mistake is named with its line and field.
func TestMalformed(t *testing.T) {
	base := strings.Split(good, "\n")
	// with replaces line n (from 1) of the good scenario.
	with := func(n int, line string) string {
		l := slices.Clone(base)
		l[n-1] = line
		return strings.Join(l, "\n")
	}
	inj := func(s string) string { return with(6, "  - "+s) }
	wl := func(s string) string { return with(4, "workload: "+s) }
	cases := []struct {
		name, src, want string
	}{
		{"negative factor", inj("{fault: nic, target: leader, factors: [10, -3], at: 0s}"),
			"f.yaml:6: inject[0].factors[1]: -3 is not a positive number"},
		{"factor one", inj("{fault: nic, target: leader, factors: [1, 10]}"),
			"f.yaml:6: inject[0].factors[0]: 1 is the baseline"},
		{"factor below one", inj("{fault: nic, target: leader, factors: [0.5]}"),
			"f.yaml:6: inject[0].factors[0]: 0.5 would speed the nic up"},
		{"factor twice", inj("{fault: nic, target: leader, factors: [10, 10]}"),
			"f.yaml:6: inject[0].factors[1]: 10 is listed twice"},
		{"factor text", inj("{fault: nic, target: leader, factors: [ten]}"),
			"f.yaml:6: inject[0].factors[0]: ten is not a positive number"},
		{"factor too big for the link", inj("{fault: nic, target: leader, factors: [100000]}"),
			"f.yaml:6: inject[0].factors[0]: 100000 would shape the 100Mbit/s link to 1000 bit/s"},
		{"factors not a list", inj("{fault: nic, target: leader, factors: 10}"),
			"f.yaml:6: inject[0].factors: want a list"},
		{"no factors", inj("{fault: nic, target: leader}"),
			"f.yaml:6: inject[0].factors: missing"},
		{"crash with factors", inj("{fault: crash, target: leader, factors: [10]}"),
			"f.yaml:6: inject[0].factors: a crash has no slowdown factor"},
		{"partition with factors", inj("{fault: partition, target: follower, factors: [10]}"),
			"f.yaml:6: inject[0].factors: a partition has no slowdown factor"},
		{"unknown fault", inj("{fault: memory, target: leader, factors: [10]}"),
			`f.yaml:6: inject[0].fault: unknown fault "memory" (known: cpu, crash, disk, nic, partition)`},
		{"unknown target", inj("{fault: nic, target: master, factors: [10]}"),
			`f.yaml:6: inject[0].target: "master" is neither a role`},
		{"host out of range", inj("{fault: nic, target: h3, factors: [10]}"),
			`f.yaml:6: inject[0].target: host "h3" does not exist: the 3 hosts are h0 to h2`},
		{"at after the end", inj("{fault: nic, target: leader, factors: [10], at: 30s}"),
			"f.yaml:6: inject[0].at: 30s is not before the end of the workload (duration 20s)"},
		{"bad for", inj("{fault: nic, target: leader, factors: [10], for: -1s}"),
			`f.yaml:6: inject[0].for: "-1s" is not a positive duration`},
		{"unknown inject field", inj("{fault: nic, target: leader, factors: [10], when: 3s}"),
			"f.yaml:6: inject[0].when: unknown field (known here: fault, target, factors, at, for)"},
		{"inject not a list", strings.Replace(good, "inject:\n  -", "inject:\n   ", 1),
			"f.yaml:6: inject: want a list of faults, got a mapping"},
		{"unequal factor lists", with(6, "  - {fault: nic, target: leader, factors: [10, 100]}\n  - {fault: disk, target: follower, factors: [10]}"),
			"f.yaml:7: inject[1].factors: 1 factors, but an earlier fault has 2"},
		{"unknown top field", with(7, "repeats: 2"),
			"f.yaml:7: repeats: unknown field (known here: name, description, system, nodes"},
		{"duplicate field", with(7, "nodes: 3"),
			"f.yaml:7: nodes: given twice"},
		{"repeat zero", with(7, "repeat: 0"),
			`f.yaml:7: repeat: "0" is not a whole number of at least 1`},
		{"bad warmup", with(7, "warmup: soon"),
			`f.yaml:7: warmup: "soon" is not a duration`},
		{"unknown system", with(2, "system: nosuchdb"),
			`f.yaml:2: system: unknown system "nosuchdb" (known: ` + strings.Join(systems.Names(), ", ") + ")"},
		{"no system", with(2, "description: x"),
			"f.yaml:1: system: missing (required)"},
		{"bad name", with(1, "name: a/b"),
			`f.yaml:1: name: "a/b": use letters, digits`},
		{"nodes text", with(3, "nodes: three"),
			`f.yaml:3: nodes: "three" is not a whole number of at least 1`},
		{"follower on one node", strings.NewReplacer("nodes: 3", "nodes: 1", "target: leader", "target: follower").Replace(good),
			`f.yaml:6: inject[0].target: "follower" needs at least 2 nodes, the scenario has 1`},
		{"bad data", with(7, "data: ssd"),
			`f.yaml:7: data: "ssd": want memory or disk`},
		{"bad storage", with(7, "storage: compressed"),
			`f.yaml:7: storage: "compressed": want plain or emulated`},
		{"bad bandwidth", with(7, "bandwidth: fast"),
			`f.yaml:7: bandwidth: "fast" is not a link rate`},
		{"unknown op", wl("{op: delete, clients: 8}"),
			`f.yaml:4: workload.op: mix "delete": unknown operation "delete" (this system offers put, get, range, lease)`},
		{"no op", wl("{clients: 8}"),
			"f.yaml:4: workload.op: missing (required)"},
		{"clients and rate", wl("{op: put, clients: 8, rate: 500/s}"),
			"f.yaml:4: workload.rate: give clients (closed loop) or rate (open loop), not both"},
		{"bad rate", wl("{op: put, rate: fast}"),
			`f.yaml:4: workload.rate: rate "fast": want requests per second`},
		{"poisson closed loop", wl("{op: put, clients: 8, poisson: true}"),
			"f.yaml:4: workload.poisson: only applies to an open loop (rate)"},
		{"bad value size", wl("{op: put, value_size: 1KB9}"),
			`f.yaml:4: workload.value_size: size "1KB9"`},
		{"bad duration", wl("{op: put, duration: 20}"),
			`f.yaml:4: workload.duration: "20" is not a positive duration`},
		{"bad connect", wl("{op: put, connect: h9}"),
			`f.yaml:4: workload.connect: host "h9" does not exist`},
		{"unknown workload field", wl("{op: put, threads: 8}"),
			"f.yaml:4: workload.threads: unknown field"},
		{"workload list", wl("[put]"),
			"f.yaml:4: workload: want a mapping of op, keys"},
		{"bad preload", wl("{op: put, preload: yes please}"),
			`f.yaml:4: workload.preload: "yes please" is not true or false`},
		{"empty factors", inj("{fault: nic, target: leader, factors: []}"),
			"f.yaml:6: inject[0].factors: the list is empty"},
		{"value size over the limit", wl("{op: put, value_size: 513MiB}"),
			"f.yaml:4: workload.value_size: 513MiB: want at most 512MiB"},
		{"max in flight closed loop", wl("{op: put, max_in_flight: 4}"),
			"f.yaml:4: workload.max_in_flight: only applies to an open loop (rate)"},
		{"calibrate with an absolute rate", wl("{op: put, rate: 500/s, calibrate: 2s}"),
			"f.yaml:4: workload.calibrate: only applies to a rate given as a share"},
		// redis has a primary and replicas, no leader or followers.
		{"role the system does not have", strings.NewReplacer("system: etcd", "system: redis", "op: put", "op: set").Replace(good),
			`f.yaml:6: inject[0].target: "leader" is neither a role of redis (primary, replica), any, nor a host name (h0 to h2)`},
		{"connect to a role the system does not have", strings.NewReplacer("system: etcd", "system: redis", "op: put", "op: set, connect: follower",
			"target: leader", "target: any").Replace(good),
			`f.yaml:4: workload.connect: "follower" is neither a role of redis (primary, replica), all, nor a host name (h0 to h2)`},
		{"unknown paper mark", with(7, "paper: {row: Z1, marks: [OL, slow]}"),
			`f.yaml:7: paper.marks[1]: unknown mark "slow" (known: OL, NL, CL, backlog)`},
		{"paper mark twice", with(7, "paper: {row: Z1, marks: [OL, OL]}"),
			"f.yaml:7: paper.marks[1]: OL is listed twice"},
		{"paper without marks", with(7, "paper: {row: Z1}"),
			"f.yaml:7: paper.marks: missing"},
		{"paper without row", with(7, "paper: {marks: []}"),
			"f.yaml:7: paper.row: missing (required)"},
		{"bad paper row", with(7, "paper: {row: table one, marks: []}"),
			`f.yaml:7: paper.row: "table one": want a row id`},
		{"unknown paper field", with(7, "paper: {row: Z1, marks: [], figure: 4}"),
			"f.yaml:7: paper.figure: unknown field (known here: row, marks, differs)"},
		{"min_requests zero", with(7, "min_requests: 0"),
			`f.yaml:7: min_requests: "0" is not a whole number of at least 1`},
		{"expect not a list", with(7, "expect: OL"),
			`f.yaml:7: expect: want a list of marks (any of OL, NL, CL, backlog, [] for none), got "OL"`},
		{"expect without marks", with(7, "expect: {differs: fixed in 3.4}"),
			"f.yaml:7: expect.marks: missing"},
		{"unknown expect field", with(7, "expect: {marks: [OL], why: fixed}"),
			"f.yaml:7: expect.why: unknown field (known here: marks, differs)"},
		{"unknown expected mark", with(7, "expect: [limplock]"),
			`f.yaml:7: expect[0]: unknown mark "limplock"`},
		{"bad quick", with(7, "quick: sometimes"),
			`f.yaml:7: quick: "sometimes" is not true or false`},
		{"replica of one node", strings.NewReplacer("system: etcd", "system: redis", "op: put", "op: set", "nodes: 3", "nodes: 1",
			"target: leader", "target: replica").Replace(good),
			`f.yaml:6: inject[0].target: "replica" needs at least 2 nodes, the scenario has 1`},
		{"config of a system without settings", strings.Replace(good, "nodes: 3", "nodes: 3\nconfig: {snapshot: 1000}", 1),
			`f.yaml:4: config.snapshot: etcd has no such setting (known: none)`},
		{"unknown redis setting", redisWith("config: {appendfsync: always, maxmemory: 1gb}"),
			`f.yaml:4: config.maxmemory: redis has no such setting (known: appendfsync, sentinel, down_after)`},
		{"bad appendfsync", redisWith("config:\n  appendfsync: sometimes"),
			`f.yaml:5: config.appendfsync: "sometimes": want always, everysec or no`},
		{"sentinel on two nodes", strings.Replace(redisWith("config: {sentinel: true}"), "nodes: 3", "nodes: 2", 1),
			`f.yaml:4: config.sentinel: true needs at least 3 nodes`},
		{"sentinel not a boolean", redisWith("config: {sentinel: yes}"),
			`f.yaml:4: config.sentinel: "yes": want true or false`},
		{"config not a mapping", redisWith("config: [appendfsync]"),
			`f.yaml:4: config: want a mapping of redis's settings (appendfsync, sentinel, down_after), got a list`},
		{"wait for more replicas than there are", strings.Replace(redisWith(""), "op: set", "op: set, wait: {replicas: 3, timeout: 100ms}", 1),
			`f.yaml:5: workload.wait.replicas: 3: a cluster of 3 nodes has at most 2 replicas`},
		{"wait timeout without replicas", strings.Replace(redisWith(""), "op: set", "op: set, wait: {timeout: 100ms}", 1),
			`f.yaml:5: workload.wait.replicas: missing`},
		{"wait with a negative timeout", strings.Replace(redisWith(""), "op: set", "op: set, wait: {replicas: 1, timeout: -1s}", 1),
			`f.yaml:5: workload.wait.timeout: "-1s" is not a duration`},
		{"wait on a system that cannot", wl("{op: put, wait: {replicas: 1}}"),
			`f.yaml:4: workload.wait: etcd's writes cannot wait for replicas`},
		{"not a mapping", "- a\n- b\n",
			"f.yaml:1: want a mapping of name, description"},
		{"empty", "",
			"f.yaml:1: empty scenario"},
		{"two documents", good + "---\nname: x\n",
			"f.yaml:8: a scenario file holds one document"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(c.src))
			if err == nil {
				t.Fatalf("no error for:\n%s", c.src)
			}
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("error\n  %v\nwant it to start with\n  %s", err, c.want)
			}
		})
	}
}

// redisWith is the good scenario on redis, its fault on a replica, with
// line added after nodes: (line 4 on).
func redisWith(line string) string {
	return strings.NewReplacer("system: etcd", "system: redis", "op: put", "op: set", "target: leader", "target: replica",
		"nodes: 3", "nodes: 3\n"+line).Replace(good)
}

func TestRedisConfigAndWait(t *testing.T) {
	src := strings.Replace(redisWith("config: {appendfsync: always, sentinel: true}"), "op: set",
		"op: set, wait: {replicas: 2, timeout: 100ms}", 1)
	s, err := Parse("f.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if s.Config["appendfsync"] != "always" || s.Config["sentinel"] != "true" || len(s.Config) != 2 {
		t.Errorf("config %v", s.Config)
	}
	if w := s.Workload.Wait; w.Replicas != 2 || w.Timeout != 100*time.Millisecond {
		t.Errorf("wait %+v", w)
	}
	if s.Workload.Connect != "primary" {
		t.Errorf("connect %q, want primary", s.Workload.Connect)
	}
	d, err := s.sys.Driver(s.Config)
	if err != nil || d.Name() != "redis" {
		t.Errorf("driver %v, %v", d, err)
	}
}

// A system without followers connects its clients to a role it has: redis
// on three nodes passed --dry-run before and then divided by zero, with no
// follower to connect to.
func TestDefaultConnectFromTheSystem(t *testing.T) {
	src := strings.NewReplacer("system: etcd", "system: redis", "op: put", "op: set", "target: leader", "target: any").Replace(good)
	s, err := Parse("f.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if s.Workload.Connect != "primary" {
		t.Errorf("connect %q, want primary", s.Workload.Connect)
	}
	one, err := Parse("f.yaml", []byte(strings.Replace(good, "nodes: 3", "nodes: 1", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if one.Workload.Connect != "leader" {
		t.Errorf("etcd on one node: connect %q, want leader", one.Workload.Connect)
	}
}

func TestSyntaxError(t *testing.T) {
	_, err := Parse("f.yaml", []byte("name: x\nsystem: etcd\n\tnodes: 3\n"))
	if err == nil || err.Error() != "f.yaml: not valid YAML: line 2: found a tab character that violates indentation" {
		t.Errorf("got %v", err)
	}
}

func TestFieldErrorType(t *testing.T) {
	_, err := Parse("f.yaml", []byte(strings.Replace(good, "nodes: 3", "nodes: 0", 1)))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Line != 3 || fe.Path != "nodes" {
		t.Errorf("got %#v", err)
	}
}

// TestBundled checks that the bundled scenarios are valid.
func TestBundled(t *testing.T) {
	// Every directory of bundled scenarios but limpbench (TestLimpbench's)
	// must hold some; a renamed directory would otherwise check nothing.
	var paths []string
	for _, dir := range []string{"etcd", "gait-redis", "redis", "hdfs", "hdfs-scale"} {
		found, err := filepath.Glob("../../scenarios/" + dir + "/*.yaml")
		if err != nil || len(found) == 0 {
			t.Fatalf("bundled %s scenarios: %v %v", dir, found, err)
		}
		paths = append(paths, found...)
	}
	for _, p := range paths {
		s, err := Load(p)
		if err != nil {
			t.Error(err)
			continue
		}
		// A scenario with faults runs a baseline and at least one factor.
		if !strings.HasPrefix(s.Name, filepath.Base(filepath.Dir(p))+"-") || len(s.Runs()) < 1+min(len(s.Inject), 1) {
			t.Errorf("%s: name %q, %d runs", p, s.Name, len(s.Runs()))
		}
	}
	if _, err := Load("no-such.yaml"); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestPick(t *testing.T) {
	roles := map[string]string{"h0": "follower", "h1": "leader", "h2": "follower", "h3": "follower"}
	cases := []struct {
		target  string
		clients []string
		want    string
		ok      bool
	}{
		{"leader", nil, "h1", true},
		{"follower", nil, "h3", true},
		{"follower", []string{"h3"}, "h2", true},
		{"follower", []string{"h0", "h2", "h3"}, "h3", true},
		{"any", []string{"h3"}, "h2", true},
		{"h0", nil, "h0", true},
		{"h7", nil, "h7", false},
	}
	for _, c := range cases {
		got, ok := pick(roles, c.target, c.clients)
		if got != c.want || ok != c.ok {
			t.Errorf("pick(%s, clients %v) = %s %v, want %s %v", c.target, c.clients, got, ok, c.want, c.ok)
		}
	}
	if _, ok := pick(map[string]string{"h0": "down"}, "leader", nil); ok {
		t.Error("found a leader among hosts that are down")
	}
}

func TestClientHosts(t *testing.T) {
	roles := map[string]string{"h0": "follower", "h1": "leader", "h2": "follower"}
	lr := func(connect string) *liveRun {
		return &liveRun{runner: &runner{s: &Scenario{Workload: Workload{Connect: connect}}}}
	}
	fault := func(target string) []Fault { return []Fault{{Kind: "nic", Target: target}} }
	cases := []struct {
		connect string
		faults  []Fault
		want    []string
	}{
		{"follower", fault("leader"), []string{"h0", "h2"}},
		{"follower", fault("follower"), []string{"h0"}}, // the fault takes h2
		{"follower", nil, []string{"h0", "h2"}},
		{"leader", fault("leader"), []string{"h1"}}, // nothing else has the role
		{"all", fault("leader"), []string{"h0", "h1", "h2"}},
		{"all", nil, []string{"h0", "h1", "h2"}},
		{"h1", fault("leader"), []string{"h1"}},
	}
	for _, c := range cases {
		if got := lr(c.connect).clientHosts(roles, c.faults); !slices.Equal(got, c.want) {
			t.Errorf("connect %s, faults %+v: clients on %v, want %v", c.connect, c.faults, got, c.want)
		}
	}
}

// TestLimpbench checks the experiment library: every scenario is valid and
// named after its file, the paper's ZooKeeper rows Z1-Z5 are each there
// once, a bug-regression scenario names its issue and predicts a verdict,
// and some scenarios are in the quick subset.
func TestLimpbench(t *testing.T) {
	paths, err := filepath.Glob("../../scenarios/limpbench/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("limpbench scenarios: %v %v", paths, err)
	}
	rows := map[string]int{}
	quick := 0
	for _, p := range paths {
		s, err := Load(p)
		if err != nil {
			t.Error(err)
			continue
		}
		if want := strings.TrimSuffix(filepath.Base(p), ".yaml"); s.Name != want || s.Description == "" {
			t.Errorf("%s: name %q (want %q), description %q", p, s.Name, want, s.Description)
		}
		if s.Paper != nil {
			rows[s.Paper.Row]++
		}
		if s.Quick {
			quick++
		}
		if strings.HasPrefix(s.Name, "bug-") && (s.Expect == nil || !strings.Contains(s.Description, "#")) {
			t.Errorf("%s: a regression scenario names its issue in the description and gives expect:", p)
		}
	}
	for _, r := range []string{"Z1", "Z2", "Z3", "Z4", "Z5"} {
		if rows[r] != 1 {
			t.Errorf("paper row %s: %d scenarios, want 1", r, rows[r])
		}
	}
	if quick == 0 {
		t.Error("no scenario is in the quick subset")
	}
}

func TestNeeds(t *testing.T) {
	var scenarios []*Scenario
	for _, p := range []string{"etcd-put-leader-nic", "bug-etcd-14501-follower-disk", "zk-z3-set-leader-nic"} {
		s, err := Load("../../scenarios/limpbench/" + p + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		scenarios = append(scenarios, s)
	}
	needs, err := Needs(scenarios)
	if err != nil {
		t.Fatal(err)
	}
	// etcd's server once for both etcd scenarios, then ZooKeeper's java
	// and jars.
	if len(needs) < 3 || needs[0] != "/usr/bin/etcd" || needs[1] != "/usr/bin/java" || slices.Contains(needs[2:], "/usr/bin/etcd") {
		t.Errorf("needs %q", needs)
	}
}

// A scenario may have more hosts than one machine's testbed holds; only
// a run across an inventory may start it.
func TestMoreNodesThanOneMachine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.yaml")
	os.WriteFile(path, []byte("name: big\nsystem: etcd\nnodes: 1200\nworkload: {op: put, duration: 1s}\n"), 0o644)
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), s, Options{Out: filepath.Join(t.TempDir(), "out")})
	if err == nil || !strings.Contains(err.Error(), "nodes: 1200 is more than one machine's testbed holds (1000 hosts); gait run --inventory") {
		t.Errorf("got %v", err)
	}
}

package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/gait-dev/gait/internal/atomicfile"
	"github.com/gait-dev/gait/internal/limp"
	"github.com/gait-dev/gait/internal/limpfs"
	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/procstat"
	"github.com/gait-dev/gait/internal/rundir"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/tbhost"
	"github.com/gait-dev/gait/internal/testbed"
	"github.com/gait-dev/gait/internal/units"
)

// Options say where a scenario's results go and how the runner talks.
type Options struct {
	// Out is the output directory; it must not exist or be empty. It gets
	// one run directory per run (f10-r1, ...), hosts/ with the servers'
	// logs, scenario.yaml and summary.json.
	Out string
	// StateDir is the testbed's state directory; empty means its default.
	StateDir string
	// Log receives progress: a line per phase and, during the workload, a
	// status line every second. Nil discards it.
	Log io.Writer
	// Status, if set, replaces the status line: it is called every second
	// while a workload runs.
	Status func(Status)
	// Resume keeps the runs an earlier, interrupted Run of the same
	// scenario finished in Out, and runs the rest.
	Resume bool
	// Place, when set, puts each run's hosts somewhere other than a
	// testbed on this machine: across the machines of an inventory
	// (gait run --inventory). It is given the testbed's options.
	Place func(ctx context.Context, o testbed.Options) (Place, error)
	// Cut, when above 0, ends a request of a step after the baseline once
	// it has run Cut times the slowest request of the same repetition's
	// baseline (gait bench --quick, where one MapReduce job could
	// otherwise hold the suite for minutes). A cut request is a timeout
	// whose latency is the bound: the step's latencies become lower
	// bounds and its throughput an upper bound. The run keeps the bound
	// (summary.json's cut_seconds) and the step's verdicts warn of it.
	Cut float64
}

// Place is where a run's hosts are.
type Place interface {
	// Members are the hosts as the driver takes them, h0 first; logs is
	// where their servers' logs go on this machine, if they can write
	// there directly.
	Members(logs string) []systems.Host
	// Limp is the host name (h0, ...) for the injectors, nil if none.
	Limp(name string) limp.Host
	// Local is this machine's testbed: the run's output is recorded
	// with it, so that an interrupted run, or gait clean after a crash,
	// removes what it half wrote.
	Local() *testbed.Testbed
	// FetchLogs copies the servers' logs into logs, when Members could
	// not write them there.
	FetchLogs(logs string) error
	Close() error
}

// here is a run's hosts on a testbed of this machine.
type here struct{ tb *testbed.Testbed }

func (p here) Members(logs string) []systems.Host { return tbhost.Hosts(p.tb, logs) }
func (p here) Local() *testbed.Testbed            { return p.tb }
func (p here) FetchLogs(string) error             { return nil }
func (p here) Close() error                       { return p.tb.Close() }

func (p here) Limp(name string) limp.Host {
	if h := p.tb.Host(name); h != nil {
		return h
	}
	return nil
}

// Status is where a scenario is, for a progress display.
type Status struct {
	Run, Runs   int // this run (from 1) of how many
	ID          RunID
	Elapsed     time.Duration // of this run's workload
	Planned     time.Duration // this run's workload length, 0 if unknown
	Requests    int64         // completed in this run
	Failed      int64         // of them, errors and timeouts
	ETA         time.Duration // for the whole scenario, -1 while unknown
	ScenarioRun time.Duration // since the scenario started
	// Done says the workload is over: what follows is writing the run and
	// stopping or resetting the cluster.
	Done bool
}

// RunResult is one finished run.
type RunResult struct {
	ID      RunID
	Dir     string // the run directory
	Summary rundir.Summary
	Ready   time.Duration // until the cluster was up
	Roles   map[string]string
	Clients []string // hosts the clients talked to
	Events  []Event
	// RoleChanges are the members' role changes during the workload.
	RoleChanges []RoleChange
	Wall        time.Duration // the whole run, setup and teardown included
	// Cut is the bound its requests were cut at (Options.Cut), 0 for none.
	Cut time.Duration
}

// Run executes every run of s, one after the other, each on a fresh testbed
// and cluster, and returns their results. It needs root. When ctx ends it
// stops at once, removes the hosts, and returns ctx's error; finished runs
// stay on disk, the interrupted one leaves nothing.
func Run(ctx context.Context, s *Scenario, opt Options) ([]RunResult, error) {
	if err := testbed.NeedRoot(); err != nil {
		return nil, err
	}
	if opt.Place == nil && s.Nodes > testbed.MaxHosts {
		return nil, fmt.Errorf("%s: nodes: %d is more than one machine's testbed holds (%d hosts); gait run --inventory spreads them over machines", s.File, s.Nodes, testbed.MaxHosts)
	}
	if err := prepareOut(opt.Out, s, opt.Resume); err != nil {
		return nil, err
	}
	r := &runner{s: s, opt: opt, log: opt.Log, started: time.Now(), runs: s.Runs(), slowestBase: map[int]time.Duration{}}
	if r.log == nil {
		r.log = io.Discard
	}
	var results []RunResult
	for i, id := range r.runs {
		r.current = i
		if opt.Resume {
			res, err := finishedRun(id, filepath.Join(opt.Out, id.Dir()))
			if err == nil {
				r.logf("[%d/%d] %s %s: finished before, kept", i+1, len(r.runs), s.Name, id)
				results = append(results, res)
				r.noteBaseline(res)
				continue
			}
			if !errors.Is(err, os.ErrNotExist) {
				return results, fmt.Errorf("resume: %w; remove it to run it again", err)
			}
			// What an interrupted attempt left, if gait clean did not
			// remove it: its servers' logs.
			os.RemoveAll(filepath.Join(opt.Out, "hosts", id.Dir()))
		}
		res, err := r.one(ctx, id)
		if err != nil {
			return results, fmt.Errorf("%s: %w", id, err)
		}
		results = append(results, res)
		r.done = append(r.done, res.Wall)
		r.noteBaseline(res)
	}
	return results, nil
}

// noteBaseline keeps a baseline run's slowest request, for Cut.
func (r *runner) noteBaseline(res RunResult) {
	if res.ID.Step.Index == 0 {
		r.slowestBase[res.ID.Rep] = seconds(res.Summary.Max)
	}
}

// cut is the bound for the requests of run id (Options.Cut), 0 for none:
// the baseline is never cut, nor a step whose baseline did not finish.
// The bound is never under load's default timeout, which the rows of
// short requests run with: their runs end within it anyway.
func (r *runner) cut(id RunID) time.Duration {
	slowest := r.slowestBase[id.Rep]
	if r.opt.Cut <= 0 || id.Step.Index == 0 || slowest <= 0 {
		return 0
	}
	c := max(time.Duration(r.opt.Cut*float64(slowest)).Round(time.Millisecond), load.DefaultTimeout)
	if t := r.s.Workload.Timeout; t > 0 && t <= c {
		return 0 // its own timeout comes first
	}
	return c
}

// prepareOut creates the output directory and keeps the scenario beside
// the runs. To resume, a directory that is not empty must hold the same
// scenario.
func prepareOut(out string, s *Scenario, resume bool) error {
	if out == "" {
		return errors.New("no output directory")
	}
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		if !resume {
			return fmt.Errorf("output directory %s: exists and is not empty (--resume runs what an interrupted run left to do)", out)
		}
		had, err := os.ReadFile(filepath.Join(out, "scenario.yaml"))
		if err != nil {
			return fmt.Errorf("resume in %s: %w (not the output directory of gait run?)", out, err)
		}
		if !bytes.Equal(had, s.Source) {
			return fmt.Errorf("resume in %s: its scenario.yaml differs from %s; resume with the scenario it ran", out, s.File)
		}
		return nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	return atomicfile.WriteBytes(filepath.Join(out, "scenario.yaml"), s.Source)
}

type runner struct {
	s       *Scenario
	opt     Options
	log     io.Writer
	started time.Time
	runs    []RunID
	current int
	done    []time.Duration // wall time of each finished run
	// maxSeen is the calibrated maximum throughput, for a rate given as
	// a share of it: measured once, on the first baseline, and shared by
	// every run.
	maxSeen float64
	// slowestBase is each repetition's slowest baseline request, for Cut.
	slowestBase map[int]time.Duration
}

func (r *runner) logf(format string, args ...any) { fmt.Fprintf(r.log, format+"\n", args...) }

// liveRun is the state of the run in progress.
type liveRun struct {
	*runner
	id      RunID
	place   Place
	tb      *testbed.Testbed // this machine's part of place
	hosts   []systems.Host
	cluster systems.Cluster
	clients []string // host names the clients talk to
}

// logStores says what each host's emulating store holds, once the cluster
// has stopped and closed its files.
func (lr *liveRun) logStores() {
	for _, h := range lr.tb.Hosts {
		d := h.Disk()
		st, err := limpfs.ReadStoreStats(d.Backing)
		if err != nil {
			lr.logf("  %s: emulated store: %v", h.Name, err)
			continue
		}
		lr.logf("  %s: emulated store: %d files, %d bytes logical, %d physical (ratio %s); %d bytes written through it",
			h.Name, st.Files, st.LogicalBytes, st.PhysicalBytes, units.Sig(st.Ratio), d.Stats().WriteBytes)
	}
}

func (r *runner) one(ctx context.Context, id RunID) (res RunResult, err error) {
	begin := time.Now()
	res.ID, res.Dir = id, filepath.Join(r.opt.Out, id.Dir())
	r.logf("[%d/%d] %s %s: starting %d hosts", r.current+1, len(r.runs), r.s.Name, id, r.s.Nodes)
	opts := r.testbedOptions(id)
	logs := filepath.Join(r.opt.Out, "hosts", id.Dir())
	place, err := r.place(ctx, opts)
	if err != nil {
		return res, err
	}
	tb := place.Local()
	lr := &liveRun{runner: r, id: id, place: place, tb: tb}
	defer func() {
		// After an interruption the hosts go first, killing the servers at
		// once; otherwise the cluster stops in its own orderly way.
		if ctx.Err() != nil {
			err = errors.Join(err, place.Close())
		}
		if lr.cluster != nil {
			lr.cluster.Stop() // its members are gone or going; only its clients are left to close
		}
		if r.s.Storage == StorageEmulated && ctx.Err() == nil {
			lr.logStores()
		}
		if ctx.Err() == nil {
			// A finished or failed run's logs stay.
			err = errors.Join(err, place.FetchLogs(logs), tb.Keep(logs))
		}
		err = errors.Join(err, place.Close())
		res.Wall = time.Since(begin)
		if err == nil {
			// Kept beside the run, for a resumed scenario's time.
			err = atomicfile.WriteBytes(filepath.Join(res.Dir, wallFile), fmt.Appendf(nil, "{\"wall_seconds\": %.3f}\n", res.Wall.Seconds()))
		}
	}()
	// An interrupted run leaves nothing, after Ctrl-C or, through the
	// testbed's state, after SIGKILL and gait clean: not its servers' logs,
	// not its half-written run directory.
	if err := errors.Join(tb.MkdirAll(logs), tb.Scratch(logs), tb.Scratch(res.Dir+rundir.PartialSuffix)); err != nil {
		return res, err
	}
	drv, err := r.s.sys.Driver(r.s.Config)
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	progress := systems.WithProgress(ctx, func(line string) { r.logf("  %s", line) })
	lr.hosts = place.Members(logs)
	if lr.cluster, err = drv.Start(progress, lr.hosts); err != nil {
		return res, err
	}
	res.Ready = time.Since(t0)
	if err := lr.warmUp(ctx); err != nil {
		return res, err
	}
	// Read after the warm-up, in which leadership may have moved: the
	// clients and the faults go by the roles the measurement starts with.
	if res.Roles, err = lr.cluster.Roles(ctx); err != nil {
		return res, err
	}
	lr.clients = lr.clientHosts(res.Roles, r.s.Inject)
	res.Clients = lr.clients
	if res.Cut = r.cut(id); res.Cut > 0 {
		r.logf("  requests cut at %v: %g times the baseline's slowest, %v", res.Cut, r.opt.Cut, r.slowestBase[id.Rep].Round(time.Millisecond))
	}
	if len(lr.clients) == 0 {
		return res, fmt.Errorf("no member to connect the clients to: connect is %s, the roles are %s", r.s.Workload.Connect, rolesText(res.Roles))
	}
	r.logf("  cluster ready in %v; %s; clients on %v", res.Ready.Round(time.Millisecond), rolesText(res.Roles), lr.clients)
	res.Summary, res.Events, res.RoleChanges, err = lr.measure(ctx, res)
	return res, err
}

// warmUp drives the workload for the scenario's warmup:, unmeasured and
// without faults, through the members the clients would use now.
func (lr *liveRun) warmUp(ctx context.Context) error {
	if lr.s.Warmup == 0 {
		return nil
	}
	roles, err := lr.cluster.Roles(ctx)
	if err != nil {
		return err
	}
	clients := lr.clientHosts(roles, lr.s.Inject)
	if len(clients) == 0 {
		return fmt.Errorf("warm-up: no member to connect the clients to: connect is %s, the roles are %s", lr.s.Workload.Connect, rolesText(roles))
	}
	return load.WarmUp(ctx, load.Measurement{Spec: lr.s.Workload.Spec, Dial: lr.dialerOn(clients), PreloadDial: lr.preloadDialer(roles),
		Ops: lr.s.sys.Ops, Write: lr.s.sys.Write, Log: func(format string, args ...any) { lr.logf("  "+format, args...) }}, lr.s.Warmup)
}

// place makes the run's hosts: a testbed here unless Options.Place says
// otherwise.
func (r *runner) place(ctx context.Context, o testbed.Options) (Place, error) {
	if r.opt.Place != nil {
		return r.opt.Place(ctx, o)
	}
	tb, err := testbed.Up(o)
	if err != nil {
		return nil, err
	}
	return here{tb}, nil
}

// testbedOptions puts the hosts' directories in a fresh directory on a
// tmpfs when the scenario keeps data in memory, else under the output
// directory.
func (r *runner) testbedOptions(id RunID) testbed.Options {
	o := testbed.Options{Hosts: r.s.Nodes, Bandwidth: r.s.Bandwidth, StateDir: r.opt.StateDir,
		Dir: filepath.Join(r.opt.Out, "hosts", id.Dir()), Log: r.log}
	if d := r.s.Disk; d != nil {
		o.Disk, o.DiskBandwidth, o.DiskLatency = true, d.Bandwidth, d.Latency
	}
	o.Emulate = r.s.Storage == StorageEmulated
	if r.s.Data == DataMemory {
		o.Dir = "" // the testbed's own, removed with it
		if st, err := os.Stat(memoryDir); err == nil && st.IsDir() {
			o.TempDir = memoryDir
		}
	}
	return o
}

// memoryDir is a tmpfs on most Linux systems.
const memoryDir = "/dev/shm"

func rolesText(roles map[string]string) string {
	var parts []string
	if len(roles) > maxRolesListed {
		// A hundred DataNodes: how many of each role, not every host.
		count := map[string]int{}
		for _, r := range roles {
			count[r]++
		}
		for _, r := range sortedKeys(count) {
			parts = append(parts, fmt.Sprintf("%d %s", count[r], r))
		}
		return fmt.Sprint(parts)
	}
	for _, h := range sortedKeys(roles) {
		parts = append(parts, h+" "+roles[h])
	}
	return fmt.Sprint(parts)
}

// maxRolesListed is the most members whose roles a progress line lists
// one by one.
const maxRolesListed = 12

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// clientHosts picks the members the clients talk to: every member for
// "all", a named host, or those with the role connect names except the
// hosts the scenario's faults would hit (unless that leaves none), so a
// fault on "follower" hits a follower the clients do not use, as in the
// Limplock paper's ZooKeeper experiments. The baseline places its clients
// the same way, so that it differs from the other runs by the fault alone.
func (lr *liveRun) clientHosts(roles map[string]string, faults []Fault) []string {
	c := lr.s.Workload.Connect
	if _, ok := hostIndex(c); ok {
		return []string{c}
	}
	hosts := sortedKeys(roles)
	slices.SortFunc(hosts, func(a, b string) int { return hostOrder(a) - hostOrder(b) })
	if c == connectAll {
		return hosts
	}
	var with []string
	for _, h := range hosts {
		if roles[h] == c {
			with = append(with, h)
		}
	}
	planned := map[string]bool{}
	for _, f := range faults {
		if h, ok := pick(roles, f.Target, nil); ok {
			planned[h] = true
		}
	}
	var free []string
	for _, h := range with {
		if !planned[h] {
			free = append(free, h)
		}
	}
	if len(free) == 0 {
		return with
	}
	return free
}

// pick resolves a fault target against roles: a host name is itself, a
// role the last host (by name) with it that no client uses, else the last
// with it; any is the last host no client uses.
func pick(roles map[string]string, target string, clients []string) (string, bool) {
	if _, ok := hostIndex(target); ok {
		_, known := roles[target]
		return target, known
	}
	var cands []string
	for h, role := range roles {
		if target == targetAny || role == target {
			cands = append(cands, h)
		}
	}
	if len(cands) == 0 {
		return "", false
	}
	sort.Slice(cands, func(i, j int) bool {
		ci, cj := slices.Contains(clients, cands[i]), slices.Contains(clients, cands[j])
		if ci != cj {
			return !ci
		}
		return hostOrder(cands[i]) > hostOrder(cands[j])
	})
	return cands[0], true
}

func hostOrder(name string) int {
	i, _ := hostIndex(name)
	return i
}

// resolve finds the host a target names now.
func (lr *liveRun) resolve(ctx context.Context, target string) (host, role string, err error) {
	if _, ok := hostIndex(target); ok {
		return target, "", nil
	}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	roles, rerr := lr.cluster.Roles(rctx)
	h, ok := pick(roles, target, lr.clients)
	if !ok {
		if rerr == nil {
			rerr = fmt.Errorf("no host is %s", target)
		}
		return "", "", fmt.Errorf("resolve %s: %w", target, rerr)
	}
	return h, roles[h], nil
}

// dialer spreads the clients over the client hosts, round robin.
func (lr *liveRun) dialer() load.Dialer { return lr.dialerOn(lr.clients) }

// dialerOn returns clients spread over the members on hosts.
func (lr *liveRun) dialerOn(hosts []string) load.Dialer {
	return func(worker int) (load.Client, uint8, error) {
		h := hosts[worker%len(hosts)]
		c, err := lr.cluster.Client(h)
		return c, uint8(hostOrder(h)), err
	}
}

// preloadDialer dials the members whose role orders the writes (a leader,
// a primary), which take writes wherever the workload's clients connect;
// nil when the system has no such role, so the clients' members preload.
func (lr *liveRun) preloadDialer(roles map[string]string) load.Dialer {
	var hosts []string
	for _, r := range lr.s.sys.Roles {
		if !r.Orders {
			continue
		}
		for h, role := range roles {
			if role == r.Name {
				hosts = append(hosts, h)
			}
		}
	}
	if len(hosts) == 0 {
		return nil
	}
	slices.Sort(hosts)
	return lr.dialerOn(hosts)
}

// measure preloads the keys, calibrates once for a rate given as a share
// of the maximum, drives the workload with the faults on schedule and
// writes the run directory.
func (lr *liveRun) measure(ctx context.Context, res RunResult) (rundir.Summary, []Event, []RoleChange, error) {
	sched := newSchedule(lr, lr.id.Step.Faults)
	var events []Event
	var changes []RoleChange
	around := func(ctx context.Context) (func() map[string]any, error) {
		if err := sched.start(ctx); err != nil {
			sched.stop()
			return nil, err
		}
		t0 := time.Now()
		sched.started(t0)
		watch := lr.watchRoles(ctx, t0, res.Roles)
		return func() map[string]any {
			events = sched.stop()
			rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			after, _ := lr.cluster.Roles(rctx)
			cancel()
			changes = watch.stop(after)
			kept := map[string]any{"events": events, "ready_seconds": res.Ready.Seconds(), "clients_on": lr.clients,
				"roles_after": after, "role_changes": changes}
			if res.Cut > 0 {
				kept["cut_seconds"] = res.Cut.Seconds()
			}
			return kept
		}, nil
	}
	spec := lr.s.Workload.Spec
	if res.Cut > 0 {
		spec.Timeout = res.Cut
	}
	out, err := load.Measure(ctx, load.Measurement{
		Spec: spec, Dial: lr.dialer(), PreloadDial: lr.preloadDialer(res.Roles), Ops: lr.s.sys.Ops, Write: lr.s.sys.Write,
		Dir: res.Dir, Run: lr.rundirConfig(res.Roles), Record: lr.workloadRecord(),
		MaxThroughput: lr.maxSeen, Around: around, Log: func(format string, args ...any) { lr.logf("  "+format, args...) },
		Probes:   []load.Probe{lr.metricsProbe(), newProcProbe(lr.tb).sample, sched.probe},
		Progress: lr.progress(),
	})
	lr.maxSeen = out.MaxThroughput
	if err != nil {
		return rundir.Summary{}, events, changes, err
	}
	sum := out.Summary
	what := "requests"
	if out.Requests != nil {
		what = "accesses" // the samples; the requests they make up follow
	}
	lr.logf("  %d %s, %s, mean %s, p99 %s, %d errors, %d timeouts", sum.Requests, what, units.Rate(sum.Throughput),
		units.Seconds(sum.Mean), units.Seconds(sum.P99), sum.Errors, sum.Timeouts)
	if q := out.Requests; q != nil {
		lr.logf("  %d requests of several accesses (the run's %s/), mean %s, p99 %s, %d failed", q.Requests, load.RequestsDir,
			units.Seconds(q.Mean), units.Seconds(q.P99), q.Errors+q.Timeouts)
	}
	if warn := sum.Generator.Warning(); warn != "" {
		lr.logf("  warning: %s", warn)
	}
	return sum, events, changes, nil
}

func (lr *liveRun) rundirConfig(roles map[string]string) rundir.Config {
	st := lr.id.Step
	kinds, targets := faultNames(lr.s.Inject)
	c := rundir.Config{Name: lr.s.Name, Scenario: lr.s.File, System: lr.s.System, Factor: st.Factor,
		Repetition: lr.id.Rep}
	if st.Index > 0 {
		c.Fault, c.Target = kinds, targets
	}
	slowdown := FormatFactor(st.Factor)
	if st.Factor == 0 {
		slowdown = st.Label()
	}
	c.Factors = map[string]string{"slowdown": slowdown}
	if kinds != "" {
		c.Factors["fault"], c.Factors["target"] = kinds, targets
	}
	for _, h := range lr.hosts {
		c.Hosts = append(c.Hosts, rundir.Host{Name: h.Name(), Address: h.Address(), Role: roles[h.Name()]})
	}
	return c
}

// workloadRecord is what run.json keeps of the scenario beside the workload.
func (lr *liveRun) workloadRecord() map[string]any {
	w := map[string]any{"connect": lr.s.Workload.Connect, "bandwidth_bps": lr.s.Bandwidth, "data": lr.s.Data}
	if len(lr.s.Config) > 0 {
		w["config"] = lr.s.Config
	}
	if lr.s.Warmup > 0 {
		w["warmup_seconds"] = lr.s.Warmup.Seconds()
	}
	if d := lr.s.Disk; d != nil {
		w["disk_bandwidth"], w["disk_latency"] = d.Bandwidth, d.Latency.Seconds()
	}
	return w
}

// metricsScrape bounds one white-box scrape, so a limping member cannot
// hold up the once-a-second probes; what answered in time is kept.
const metricsScrape = 900 * time.Millisecond

func (lr *liveRun) metricsProbe() load.Probe {
	return func(emit func(string, float64)) {
		ctx, cancel := context.WithTimeout(context.Background(), metricsScrape)
		defer cancel()
		m, _ := lr.cluster.Metrics(ctx) // a member that did not answer is missing from m
		for k, v := range m {
			emit(k, v)
		}
	}
}

// procProbe samples the servers' /proc counters, labelled by host. A
// restarted server has a new pid, so the sampler follows the live processes.
type procProbe struct {
	tb      *testbed.Testbed
	targets []procstat.Target
	sampler *procstat.Sampler
}

func newProcProbe(tb *testbed.Testbed) *procProbe { return &procProbe{tb: tb} }

func (p *procProbe) sample(emit func(string, float64)) {
	var now []procstat.Target
	for _, h := range p.tb.Hosts {
		for _, pr := range h.Procs() {
			if pr.Running() {
				now = append(now, procstat.Target{Label: h.Name, PID: pr.Pid()})
			}
		}
	}
	if p.sampler == nil || !slices.Equal(now, p.targets) { // the first reading, also when no server runs
		p.targets, p.sampler = now, procstat.NewSampler(now...)
		return // rates need two readings
	}
	p.sampler.Sample(emit)
}

// progress reports the run and the scenario's ETA once a second.
func (lr *liveRun) progress() func(load.Progress) {
	planned := lr.s.Workload.Duration
	return func(p load.Progress) {
		st := Status{Run: lr.current + 1, Runs: len(lr.runs), ID: lr.id, Elapsed: p.Elapsed, Planned: planned,
			Requests: p.Done, Failed: p.Failed, ScenarioRun: time.Since(lr.started), ETA: lr.eta(p)}
		st.Done = p.Final
		switch {
		case p.Final && lr.opt.Status == nil:
		case lr.opt.Status != nil:
			lr.opt.Status(st)
		default:
			lr.logf("  %s", st)
		}
	}
}

func (s Status) String() string {
	eta := "?"
	if s.ETA >= 0 {
		eta = s.ETA.Round(time.Second).String()
	}
	return fmt.Sprintf("[%d/%d] %s r%d: %s, %d requests, %d errors; scenario %v elapsed, about %s left",
		s.Run, s.Runs, s.ID.Step.Label(), s.ID.Rep, s.Phase(), s.Requests, s.Failed,
		s.ScenarioRun.Round(time.Second), eta)
}

// Phase says where the run's workload is: "12s of 20s", or its end.
func (s Status) Phase() string {
	if s.Done {
		return "workload done, writing the run and resetting the cluster"
	}
	elapsed, of := s.Elapsed, ""
	if s.Planned > 0 {
		// Past the planned length the schedule is over and the run waits
		// for the requests still in flight (a MapReduce job can take
		// minutes more): say so, not "4m2s of 5s".
		if over := elapsed - s.Planned; over >= time.Second {
			of = fmt.Sprintf(" of %v, +%v for the requests in flight", s.Planned, over.Round(time.Second))
			elapsed = s.Planned
		} else {
			of = " of " + s.Planned.String()
		}
	}
	return fmt.Sprintf("%v%s", elapsed.Round(time.Second), of)
}

// eta estimates what is left of the scenario: the rest of this run's
// workload plus, for this run's teardown and every run to come, the
// average wall time of the finished runs (before the first has finished,
// the workload length plus a guess at setup and teardown).
func (lr *liveRun) eta(p load.Progress) time.Duration {
	w := lr.s.Workload.Duration
	if w == 0 {
		return -1
	}
	perRun := w + 10*time.Second
	if len(lr.done) > 0 {
		var sum time.Duration
		for _, d := range lr.done {
			sum += d
		}
		perRun = sum / time.Duration(len(lr.done))
	}
	rest := max(w-p.Elapsed, 0) + (perRun-w)/2
	return rest + time.Duration(len(lr.runs)-lr.current-1)*perRun
}

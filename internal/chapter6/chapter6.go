// Package chapter6 runs the Zoolander thesis's chapter 6 (001, ch. 6) on
// real servers: gait-redis or gait-zookeeper (docs/replica.md) on testbed
// hosts that each have a fixed CPU share, one deployment per duplicates x
// replicas mix, Inner-Join Olio or Gridlab-D requests from gait's load
// engine, and the model's prediction beside each measurement from service
// times measured on the same deployment.
//
// A mix d x r is a deployment of d*r hosts whose agents send every read to
// d replicas, their own first, and answer with the first reply (gait
// replica agent --read any --fanout d); the requests' accesses spread over
// the agents, so each replica serves d/(d*r) of the reads, as a server of
// the model's d x r does. Writes go through raft to every replica whatever
// the mix.
package chapter6

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/model"
	"github.com/gait-dev/gait/internal/rundir"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/gaitredis"
	_ "github.com/gait-dev/gait/internal/systems/gaitzookeeper" // registers gait-zookeeper
	"github.com/gait-dev/gait/internal/systems/tbhost"
	"github.com/gait-dev/gait/internal/testbed"
)

// Systems are the systems a study can deploy: the servers gait's replica
// agents front, whose reads the agents can fan out to d replicas.
var Systems = []string{"gait-redis", "gait-zookeeper"}

// LookupSystem is the registered system of that name, if it is one of
// Systems.
func LookupSystem(name string) (systems.System, error) {
	if !slices.Contains(Systems, name) {
		return systems.System{}, fmt.Errorf("system %q: not one of %s (the servers gait's replica agents front)", name, strings.Join(Systems, ", "))
	}
	return systems.Lookup(name)
}

// Deployment is one mix running on a testbed of its own.
type Deployment struct {
	System systems.System
	Mix    model.Config
	CPUs   float64 // each host's CPU share
	// PinCPUs, when not 0, is how many CPUs the hosts were pinned to:
	// host i's processes run on CPU i mod PinCPUs (Pin).
	PinCPUs int
	tb      *testbed.Testbed
	c       systems.Cluster
	hosts   []string
}

// Deploy brings up a testbed of mix.Nodes() hosts, gives each host cpus
// CPUs, and starts sys (one of Systems) on them with reads fanned out to
// mix.Duplicates replicas (gait is the program the agents run).
func Deploy(ctx context.Context, gait string, sys systems.System, mix model.Config, cpus float64, log io.Writer) (*Deployment, error) {
	n := mix.Nodes()
	if n < 1 || n > gaitredis.MaxReplicas {
		return nil, fmt.Errorf("mix %s: %d nodes, want 1 to %d", MixName(mix), n, gaitredis.MaxReplicas)
	}
	tb, err := testbed.Up(testbed.Options{Hosts: n, Log: log})
	if err != nil {
		return nil, err
	}
	d := &Deployment{System: sys, Mix: mix, CPUs: cpus, tb: tb}
	for _, h := range tb.Hosts {
		if err := h.LimitCPU(cpus); err != nil {
			tb.Close()
			return nil, err
		}
		d.hosts = append(d.hosts, h.Name)
	}
	drv, ok := sys.New().(*gaitredis.Driver)
	if !ok {
		tb.Close()
		return nil, fmt.Errorf("system %s: its servers are not behind gait's replica agents", sys.Name)
	}
	drv.Gait, drv.Read, drv.Fanout, drv.Durability = gait, "any", mix.Duplicates, "replicated"
	drv.Voters = min(3, n)
	if d.c, err = drv.Start(ctx, tbhost.Hosts(tb, "")); err != nil {
		tb.Close()
		return nil, fmt.Errorf("start %s %s: %w", sys.Name, MixName(mix), err)
	}
	return d, nil
}

// Pin puts every thread of host i's processes (agent and server) on
// CPU i mod cpus. With cpus 2 on two cores, a mix of two hosts has no
// host waiting for the other's core, as the model's servers never do;
// with cpus 1 both hosts take turns on one core. The load generator and
// the rest of the machine still share every core. Threads started later
// inherit the CPU.
func (d *Deployment) Pin(cpus int) error {
	if n := runtime.NumCPU(); cpus < 1 || cpus > n {
		return fmt.Errorf("pin to %d CPUs: this machine has %d", cpus, n)
	}
	n := cpus
	for i, h := range d.tb.Hosts {
		var set unix.CPUSet
		set.Set(i % n)
		for _, p := range h.Procs() {
			if !p.Running() {
				continue
			}
			if err := pinThreads(p.Pid(), &set); err != nil {
				return fmt.Errorf("pin %s/%s to CPU %d: %w", h.Name, p.Spec.Name, i%n, err)
			}
		}
	}
	d.PinCPUs = cpus
	return nil
}

// pinThreads sets the CPU affinity of every thread of process pid; a
// thread that ended meanwhile is skipped.
func pinThreads(pid int, set *unix.CPUSet) error {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("thread %d: %w", tid, err)
		}
	}
	return nil
}

// Close stops the servers and removes the testbed.
func (d *Deployment) Close() error {
	err := d.c.Stop()
	if cerr := d.tb.Close(); err == nil {
		err = cerr
	}
	return err
}

// hostCPU is the CPU time every host's processes have used so far, from
// /proc/PID/stat (utime + stime, in clock ticks of 10 ms), which keeps the
// time of threads that have exited where their schedstat goes with them.
func (d *Deployment) hostCPU() time.Duration {
	var ticks int64
	for _, h := range d.tb.Hosts {
		for _, p := range h.Procs() {
			if p.Running() {
				ticks += procTicks(p.Pid())
			}
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// procTicks is a process's utime + stime, or 0 when it cannot be read.
func procTicks(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name may hold spaces: the fields start after its ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// down names the hosts' processes that are not running (why a dial
// failed), or "" when all run.
func (d *Deployment) down() string {
	var out []string
	for _, h := range d.tb.Hosts {
		for _, p := range h.Procs() {
			if !p.Running() {
				out = append(out, h.Name+"/"+p.Spec.Name)
			}
		}
	}
	return strings.Join(out, ", ")
}

// dial opens worker's client on host worker mod n: a request's accesses
// (one client each) spread over every agent.
func (d *Deployment) dial(worker int) (load.Client, uint8, error) {
	h := worker % len(d.hosts)
	c, err := d.c.Client(d.hosts[h])
	return c, uint8(h), err
}

// workload is what the study's requests on sys read and write: 1000 keys
// of 64 bytes, read where a phase names no operation.
func workload(sys systems.System) load.Workload {
	return load.Workload{Mix: load.Mix{read(sys, 1)}, Keys: 1000, ValueSize: 64}
}

// read is sys's read ("get", in every one of Systems) at weight w.
func read(sys systems.System, w int) load.MixEntry {
	return load.MixEntry{Kind: uint8(slices.Index(sys.Ops, "get")), Name: "get", Weight: w}
}

// Preload writes every key once, so reads find them.
func (d *Deployment) Preload(ctx context.Context) error {
	return load.Preload(ctx, workload(d.System), d.System.WriteKind(), d.dial, 8)
}

// Run is one measured run on a deployment.
type Run struct {
	Shape    load.Shape    // requests' phases and batches; zero for single accesses
	Mix      load.Mix      // the accesses' operations where a phase names none (nil: gets)
	Rate     float64       // requests (single: accesses) per second, Poisson
	Clients  int           // instead of a rate: clients issuing requests back to back
	Duration time.Duration // how long arrivals come at most
	Requests int           // how many arrive at most (0: no limit)
	Seed     uint64
}

// Point is a run's measurement.
type Point struct {
	// System is the deployment's, one of Systems; points written before
	// gait-zookeeper could be deployed have none and are of gait-redis.
	System  string        `json:"system,omitempty"`
	Mix     model.Config  `json:"mix"`
	CPUs    float64       `json:"cpus_per_host"`
	PinCPUs int           `json:"pin_cpus,omitempty"` // host i on CPU i mod PinCPUs (Deployment.Pin); 0: not pinned
	Study   string        `json:"study"`              // the study's request shape, which its service run shares
	Service bool          `json:"service,omitempty"`  // the study's service-time run (single accesses)
	Shape   string        `json:"shape"`
	Request model.Request `json:"request"` // the requests' phases and batch, as the model takes them
	Rate    float64       `json:"rate"`    // requests per second offered
	// Offered is the load the rate was set from (of one server taking
	// every access, over this deployment's service run), 0 for a rate.
	Offered  float64 `json:"offered_load,omitempty"`
	Achieved float64 `json:"achieved"` // requests per second completed
	// Requests and Accesses are the succeeded ones' latencies in seconds,
	// sorted; for single accesses both are the accesses.
	Requests []float64 `json:"requests_s"`
	Accesses []float64 `json:"accesses_s"`
	Failed   int       `json:"failed"`
	LateP99  float64   `json:"send_lateness_p99_s"`
	Load     string    `json:"load_average"`
	// HostCPU is the CPU time the hosts' processes (agents and
	// servers) used during the run, in seconds, all hosts together:
	// over the accesses served, the hosts' work per access, which the
	// access latency (mostly round trips that parallel accesses overlap)
	// is not.
	HostCPU float64 `json:"host_cpu_s,omitempty"`
	// IdleCPU is the hosts' CPU per second with no access (raft
	// heartbeats, health checks), measured before the run; Elapsed the
	// run's length in seconds.
	IdleCPU float64 `json:"idle_cpu_per_s,omitempty"`
	Elapsed float64 `json:"elapsed_s,omitempty"`
	// Delay is the delay added to a share of the accesses (Figure 2's
	// steps back to back), zero for none.
	Delay      float64 `json:"delay_s,omitempty"`
	DelayShare float64 `json:"delay_share,omitempty"`
}

// WorkPerAccess is the hosts' CPU time per access served beyond their
// idle use, all hosts together (so a read fanned out to d replicas counts
// d servers' work), or 0 when the run did not measure it.
func (p Point) WorkPerAccess() float64 {
	if p.HostCPU == 0 || len(p.Accesses) == 0 {
		return 0
	}
	return max(0, p.HostCPU-p.IdleCPU*p.Elapsed) / float64(len(p.Accesses))
}

// idleWindow is how long the hosts' idle CPU use is measured before a run.
const idleWindow = 3 * time.Second

// Measure runs r on the deployment and keeps every latency, after
// measuring the hosts' idle CPU use for idleWindow.
func (d *Deployment) Measure(ctx context.Context, r Run) (Point, error) {
	idle0 := d.hostCPU()
	select {
	case <-ctx.Done():
		return Point{}, ctx.Err()
	case <-time.After(idleWindow):
	}
	idle := (d.hostCPU() - idle0).Seconds() / idleWindow.Seconds()
	p, err := d.run(ctx, r)
	p.IdleCPU = idle
	return p, err
}

// run runs r on the deployment: its latencies and the hosts' CPU time
// (not less their idle use, which Measure adds).
func (d *Deployment) run(ctx context.Context, r Run) (Point, error) {
	var acc, req samples
	wl := workload(d.System)
	if r.Mix != nil {
		wl.Mix = r.Mix
	}
	cfg := load.Config{Workload: wl, Rate: r.Rate, Poisson: r.Clients == 0, Clients: r.Clients, Duration: r.Duration, Requests: r.Requests, Seed: r.Seed,
		Timeout: 10 * time.Second, Shape: r.Shape, Hosts: d.hosts}
	if r.Shape.FanOut() {
		cfg.RequestRecorder = &req
	}
	cpu0 := d.hostCPU()
	res, err := load.Run(ctx, cfg, d.dial, &acc)
	cpu := d.hostCPU() - cpu0
	if err != nil {
		if down := d.down(); down != "" {
			err = fmt.Errorf("%w (not running: %s)", err, down)
		}
		return Point{}, fmt.Errorf("%s at %.4g/s: %w", MixName(d.Mix), r.Rate, err)
	}
	if !r.Shape.FanOut() {
		req = acc
	}
	p := Point{System: d.System.Name, Mix: d.Mix, CPUs: d.CPUs, PinCPUs: d.PinCPUs, Shape: shapeName(r.Shape), Request: requestOf(r.Shape), Rate: r.Rate,
		Achieved: float64(len(req.ok)+req.failed) / res.Elapsed.Seconds(),
		Requests: req.sorted(), Accesses: acc.sorted(), Delay: r.Shape.Delay.Delay.Seconds(), DelayShare: r.Shape.Delay.Share, Failed: req.failed, Load: LoadAverage(), HostCPU: cpu.Seconds(), Elapsed: res.Elapsed.Seconds()}
	if res.Lag != nil {
		p.LateP99 = res.Lag.P99.Seconds()
	}
	return p, nil
}

// warmUp runs r and keeps nothing of it but how many accesses it served:
// no idle window before it, since no work per access is taken from it.
func (d *Deployment) warmUp(ctx context.Context, r Run) (int, error) {
	p, err := d.run(ctx, r)
	return len(p.Accesses), err
}

// requestOf is a shape as the model takes it.
func requestOf(s load.Shape) model.Request {
	if !s.FanOut() {
		return model.Request{}
	}
	q := model.Request{Batch: s.Batch}
	for _, ph := range s.Phases {
		q.Phases = append(q.Phases, ph.Count)
	}
	return q
}

func shapeName(s load.Shape) string {
	if !s.FanOut() {
		return "single"
	}
	return s.String()
}

// samples records the latencies of the succeeded samples and counts the
// others.
type samples struct {
	ok     []float64
	failed int
}

func (s *samples) Add(x rundir.Sample) {
	if x.Outcome != rundir.OK {
		s.failed++
		return
	}
	s.ok = append(s.ok, x.Latency.Seconds())
}

func (s *samples) AddMetric(int, string, float64) {}

func (s *samples) sorted() []float64 {
	slices.Sort(s.ok)
	return s.ok
}

// MixName is d x r as the thesis names them.
func MixName(c model.Config) string {
	return strconv.Itoa(c.Duplicates) + "x" + strconv.Itoa(c.Replicas)
}

// ParseMixes reads "1x4,2x2,4x1" (duplicates x replicas), each a
// deployment gait's replica agents can run.
func ParseMixes(s string) ([]model.Config, error) {
	out, err := model.ParseMixes(s)
	if err != nil {
		return nil, err
	}
	for _, c := range out {
		if c.Nodes() > gaitredis.MaxReplicas {
			return nil, fmt.Errorf("mix %s: %d nodes, more than gait replica's %d", MixName(c), c.Nodes(), gaitredis.MaxReplicas)
		}
	}
	return out, nil
}

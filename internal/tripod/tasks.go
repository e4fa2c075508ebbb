package tripod

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/limp"
	"github.com/gait-dev/gait/internal/testbed"
)

// Tasks is a run of R-way tasks on a testbed of this machine: `gait
// replica run`'s inputs.
type Tasks struct {
	Strength int     // copies of each task (TRIPOD's replica strength R)
	Hosts    int     // testbed hosts to place copies on (0: Strength)
	CPUs     float64 // each host's fixed CPU share (0: the machine's CPUs over the hosts)
	Disk     bool    // hosts' data directories on limpfs, so a disk can limp
	Limp     string  // HOST:cpu|disk:FACTOR, one host slowed through limp's injector
	Repeat   int     // tasks to run one after the other
	Seed     uint64  // the placement's random seed
	Argv     []string
	// Log receives the testbed's messages.
	Log io.Writer
}

// Limp is a parsed Tasks.Limp: which host, which injector, what factor.
type Limp struct {
	Host, Kind string
	Factor     float64
}

// Check fills Hosts and CPUs when zero and refuses bad input before
// anything starts, naming the flag.
func (t *Tasks) Check() (Limp, error) {
	if t.Hosts == 0 {
		t.Hosts = max(t.Strength, 1)
	}
	if t.CPUs == 0 {
		t.CPUs = float64(runtime.NumCPU()) / float64(t.Hosts)
	}
	switch {
	case t.Strength < 1:
		return Limp{}, fmt.Errorf("--strength %d: want at least 1 copy", t.Strength)
	case t.Hosts < 1 || t.Hosts > testbed.MaxHosts:
		return Limp{}, fmt.Errorf("--hosts %d: want 1 to %d", t.Hosts, testbed.MaxHosts)
	case t.Strength > t.Hosts:
		return Limp{}, fmt.Errorf("--strength %d is larger than --hosts %d: copies may not share a host", t.Strength, t.Hosts)
	case !(t.CPUs > 0) || t.CPUs > float64(runtime.NumCPU()):
		return Limp{}, fmt.Errorf("--cpus %g: want a share above 0 and at most this machine's %d CPUs", t.CPUs, runtime.NumCPU())
	case t.Repeat < 1:
		return Limp{}, fmt.Errorf("--repeat %d: want at least 1 run", t.Repeat)
	case len(t.Argv) == 0:
		return Limp{}, fmt.Errorf("no command to run")
	}
	if t.Limp == "" {
		return Limp{}, nil
	}
	return ParseLimp(t.Limp, t.Hosts, t.Disk)
}

// ParseLimp reads HOST:cpu:FACTOR or HOST:disk:FACTOR for a testbed of
// hosts h0..h(hosts-1); a disk limps only on limpfs (disk).
func ParseLimp(s string, hosts int, disk bool) (Limp, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return Limp{}, fmt.Errorf("--limp %q: want HOST:cpu:FACTOR or HOST:disk:FACTOR, like h0:cpu:10", s)
	}
	l := Limp{Host: parts[0], Kind: parts[1]}
	n, err := strconv.Atoi(strings.TrimPrefix(l.Host, "h"))
	if !strings.HasPrefix(l.Host, "h") || err != nil || n < 0 || n >= hosts {
		return l, fmt.Errorf("--limp %q: host %q is not one of h0..h%d", s, l.Host, hosts-1)
	}
	if l.Kind != "cpu" && l.Kind != "disk" {
		return l, fmt.Errorf("--limp %q: kind %q: want cpu or disk", s, l.Kind)
	}
	if l.Kind == "disk" && !disk {
		return l, fmt.Errorf("--limp %q: a disk limps only on limpfs; add --disk", s)
	}
	if l.Factor, err = strconv.ParseFloat(parts[2], 64); err != nil || !(l.Factor >= 1) || l.Factor > 1e6 {
		return l, fmt.Errorf("--limp %q: factor %q: want a slowdown from 1 to 1000000", s, parts[2])
	}
	return l, nil
}

// Ran is what Run tells after each task: its number (from 0), how it
// ran, and the name of the host whose copy won.
type Ran func(k int, res Result, winner string)

// RunTasks brings up the testbed (each host its fixed CPU share), limps
// the one host through limp's injector, runs the tasks one after the
// other and takes the testbed down. ran, if not nil, hears of each task.
func (t Tasks) RunTasks(ctx context.Context, ran Ran) (Summary, []Result, error) {
	l, err := t.Check()
	if err != nil {
		return Summary{}, nil, err
	}
	tb, err := testbed.Up(testbed.Options{Hosts: t.Hosts, Disk: t.Disk, Log: t.Log})
	if err != nil {
		return Summary{}, nil, err
	}
	defer tb.Close()
	if err := limpHosts(tb, t.CPUs, l); err != nil {
		return Summary{}, nil, err
	}
	slots := Slots(tb)
	rng := rand.New(rand.NewPCG(t.Seed, 0))
	var runs []Result
	for k := range t.Repeat {
		placed, err := Place(slots, t.Strength, rng)
		if err != nil {
			return Summary{}, nil, err
		}
		res, err := Run(ctx, placed, func(slot int) (Copy, error) {
			return StartOn(tb.Hosts[slot], fmt.Sprintf("task-%d-%d", k, slot), t.Argv)
		})
		if err != nil {
			return Summary{}, nil, err
		}
		runs = append(runs, res)
		if ran != nil {
			ran(k, res, tb.Hosts[res.Winner].Name)
		}
	}
	if err := tb.Close(); err != nil {
		return Summary{}, nil, err
	}
	return t.summarize(l, tb, runs), runs, nil
}

// limpHosts gives every host its fixed CPU share, then slows the limping
// one through limp's injector of its kind (cpu: 1/factor of one CPU, as
// in scenarios; disk: its limpfs factor times slower).
func limpHosts(tb *testbed.Testbed, cpus float64, l Limp) error {
	for _, h := range tb.Hosts {
		if err := h.LimitCPU(cpus); err != nil {
			return err
		}
	}
	if l.Kind == "" {
		return nil
	}
	inj, err := limp.New(l.Kind, limp.Options{CPUMode: "cgroup"})
	if err != nil {
		return err
	}
	for _, h := range tb.Hosts {
		if h.Name == l.Host {
			return inj.Apply(h, l.Factor)
		}
	}
	return fmt.Errorf("limp: no host %s in the testbed", l.Host)
}

// Summary is what a run of several tasks tells: completion times and cost.
type Summary struct {
	Strength int     `json:"strength"`
	Hosts    int     `json:"hosts"`
	CPUs     float64 `json:"cpus_per_host"`
	Limp     string  `json:"limp,omitempty"`
	Runs     int     `json:"runs"`
	Failed   int     `json:"failed"`
	P50      float64 `json:"completion_p50_s"`
	P99      float64 `json:"completion_p99_s"`
	Max      float64 `json:"completion_max_s"`
	// Cost is the copies' time over the task's: what R copies cost.
	Cost float64 `json:"cost_copy_time_per_task_time"`
	// OnLimping counts the runs the limping host won.
	OnLimping int `json:"won_by_limping_host"`
}

func (t Tasks) summarize(l Limp, tb *testbed.Testbed, runs []Result) Summary {
	s := Summary{Strength: t.Strength, Hosts: t.Hosts, CPUs: t.CPUs, Limp: t.Limp, Runs: len(runs)}
	var took []float64
	var held, total float64
	for _, r := range runs {
		took = append(took, r.Took.Seconds())
		held += r.Held.Seconds()
		total += r.Took.Seconds()
		if r.Exit != 0 {
			s.Failed++
		}
		if l.Host != "" && tb.Hosts[r.Winner].Name == l.Host {
			s.OnLimping++
		}
	}
	slices.Sort(took)
	at := func(q float64) float64 { return took[min(len(took)-1, int(q*float64(len(took))))] }
	s.P50, s.P99, s.Max = at(0.5), at(0.99), took[len(took)-1]
	s.Cost = held / total
	return s
}

// Write prints the summary in one line.
func (s Summary) Write(w io.Writer) error {
	limp := "no host limps"
	if s.Limp != "" {
		limp = "limping " + s.Limp
	}
	_, err := fmt.Fprintf(w, "strength %d on %d hosts of %.2f CPUs, %s: %d runs (%d failed), completion p50 %s p99 %s max %s, cost %.2f copies' time per task (won by the limping host: %d)\n",
		s.Strength, s.Hosts, s.CPUs, limp, s.Runs, s.Failed, secs(s.P50), secs(s.P99), secs(s.Max), s.Cost, s.OnLimping)
	return err
}

func secs(v float64) string { return time.Duration(v * 1e9).Round(100 * time.Microsecond).String() }

package cli

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/interrupt"
	"github.com/gait-dev/gait/internal/testbed"
	"github.com/gait-dev/gait/internal/tripod"
	"github.com/spf13/cobra"
)

// replicaRunFlags are gait replica run's flags.
type replicaRunFlags struct {
	strength, hosts, repeat int
	cpus                    float64
	disk                    bool
	limp                    string
	seed                    uint64
	format                  string
}

func newReplicaRunCmd() *cobra.Command {
	var f replicaRunFlags
	cmd := &cobra.Command{
		Use:   "run --strength R [--hosts N] [--limp HOST:cpu|disk:FACTOR] [--repeat K] -- COMMAND [ARG...]",
		Short: "Run a task as R copies on apart hosts; the first copy's output and exit status win (TRIPOD §3-§4)",
		Long: `Brings up a testbed of --hosts isolated hosts (network namespaces, each with
its own CPU cgroup of --cpus CPUs), runs COMMAND as --strength copies on hosts
picked at random so that no two share a host or a CPU cgroup, prints the
first copy to exit's standard output and exits with its status; the others
are stopped. The cost is the copies' time, about R times the task's (TRIPOD
§3.3).

This machine is one machine: the hosts' cgroups give each its share of the
CPUs but not CPUs of its own, so copies still share the machine's caches,
memory bandwidth and, past their quotas, its cores.

--limp slows one host (cpu: its quota divided by FACTOR; disk: its data
directory on limpfs, needs --disk, slowed FACTOR times). --repeat K runs the
task K times and prints completion time percentiles and the cost instead
of the task's output.`,
		Example: `  gait replica run --strength 2 -- sh -c 'echo hello from $(hostname -I)'
  # long: 20 tasks, some on a host limping 100x (a minute)
  gait replica run --strength 3 --hosts 3 --limp h0:cpu:100 --repeat 20 -- \
      sh -c 'i=0; while [ $i -lt 5000 ]; do i=$((i+1)); done'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplicaRun(cmd, f, args)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.strength, "strength", 1, "copies of the task (TRIPOD's replica strength R)")
	fl.IntVar(&f.hosts, "hosts", 0, "testbed hosts to place copies on (default: --strength)")
	fl.Float64Var(&f.cpus, "cpus", 0, "each host's CPU share (default: this machine's CPUs over the hosts)")
	fl.BoolVar(&f.disk, "disk", false, "put every host's data directory (the task's working directory) on limpfs, so a disk can limp")
	fl.StringVar(&f.limp, "limp", "", "slow one host: HOST:cpu:FACTOR or HOST:disk:FACTOR, like h0:cpu:10")
	fl.IntVar(&f.repeat, "repeat", 1, "run the task this many times and print completion times and cost")
	fl.Uint64Var(&f.seed, "seed", 1, "random seed of the placement")
	fl.StringVar(&f.format, "format", "text", "with --repeat: text or json")
	return cmd
}

// replicaLimp is a parsed --limp.
type replicaLimp struct {
	host, kind string
	factor     float64
}

func parseReplicaLimp(s string, hosts int, disk bool) (replicaLimp, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return replicaLimp{}, fmt.Errorf("--limp %q: want HOST:cpu:FACTOR or HOST:disk:FACTOR, like h0:cpu:10", s)
	}
	l := replicaLimp{host: parts[0], kind: parts[1]}
	n, err := strconv.Atoi(strings.TrimPrefix(l.host, "h"))
	if !strings.HasPrefix(l.host, "h") || err != nil || n < 0 || n >= hosts {
		return l, fmt.Errorf("--limp %q: host %q is not one of h0..h%d", s, l.host, hosts-1)
	}
	if l.kind != "cpu" && l.kind != "disk" {
		return l, fmt.Errorf("--limp %q: kind %q: want cpu or disk", s, l.kind)
	}
	if l.kind == "disk" && !disk {
		return l, fmt.Errorf("--limp %q: a disk limps only on limpfs; add --disk", s)
	}
	if l.factor, err = strconv.ParseFloat(parts[2], 64); err != nil || !(l.factor >= 1) || l.factor > 1e6 {
		return l, fmt.Errorf("--limp %q: factor %q: want a slowdown from 1 to 1000000", s, parts[2])
	}
	return l, nil
}

// checkReplicaRun refuses bad input before anything starts.
func checkReplicaRun(f *replicaRunFlags) (replicaLimp, error) {
	if f.hosts == 0 {
		f.hosts = max(f.strength, 1)
	}
	if f.cpus == 0 {
		f.cpus = float64(runtime.NumCPU()) / float64(f.hosts)
	}
	var l replicaLimp
	switch {
	case f.strength < 1:
		return l, fmt.Errorf("--strength %d: want at least 1 copy", f.strength)
	case f.hosts < 1 || f.hosts > testbed.MaxHosts:
		return l, fmt.Errorf("--hosts %d: want 1 to %d", f.hosts, testbed.MaxHosts)
	case f.strength > f.hosts:
		return l, fmt.Errorf("--strength %d is larger than --hosts %d: copies may not share a host", f.strength, f.hosts)
	case !(f.cpus > 0) || f.cpus > float64(runtime.NumCPU()):
		return l, fmt.Errorf("--cpus %g: want a share above 0 and at most this machine's %d CPUs", f.cpus, runtime.NumCPU())
	case f.repeat < 1:
		return l, fmt.Errorf("--repeat %d: want at least 1 run", f.repeat)
	case f.format != "text" && f.format != "json":
		return l, fmt.Errorf("--format %q: want text or json", f.format)
	}
	if f.limp == "" {
		return l, nil
	}
	return parseReplicaLimp(f.limp, f.hosts, f.disk)
}

func runReplicaRun(cmd *cobra.Command, f replicaRunFlags, argv []string) error {
	l, err := checkReplicaRun(&f)
	if err != nil {
		return err
	}
	sig := interrupt.Catch(cmd.Context(), cmd.ErrOrStderr(), interrupt.Messages{})
	defer sig.Stop()
	tb, err := testbed.Up(testbed.Options{Hosts: f.hosts, Disk: f.disk, Log: cmd.ErrOrStderr()})
	if err != nil {
		return err
	}
	defer tb.Close()
	for _, h := range tb.Hosts {
		cpus := f.cpus
		if l.kind == "cpu" && h.Name == l.host {
			cpus /= l.factor
		}
		if err := h.LimitCPU(cpus); err != nil {
			return err
		}
		if l.kind == "disk" && h.Name == l.host {
			if err := h.SetDiskFactor(l.factor); err != nil {
				return err
			}
		}
	}
	slots := tripod.Slots(tb)
	rng := rand.New(rand.NewPCG(f.seed, 0))
	var runs []tripod.Result
	status := newStatusLine(cmd.ErrOrStderr())
	for k := range f.repeat {
		placed, err := tripod.Place(slots, f.strength, rng)
		if err != nil {
			return err
		}
		res, err := tripod.Run(sig.Context(), placed, func(slot int) (tripod.Copy, error) {
			return tripod.StartOn(tb.Hosts[slot], fmt.Sprintf("task-%d-%d", k, slot), argv)
		})
		if err != nil {
			return err
		}
		runs = append(runs, res)
		if f.repeat > 1 {
			status.show(fmt.Sprintf("run %d of %d: %s on %s", k+1, f.repeat, res.Took.Round(time.Millisecond), tb.Hosts[res.Winner].Name))
		}
	}
	status.clear()
	if f.repeat == 1 {
		cmd.ErrOrStderr().Write(runs[0].Errors)
		if _, err := cmd.OutOrStdout().Write(runs[0].Output); err != nil {
			return err
		}
		if tb.Close() == nil && runs[0].Exit != 0 {
			return exitStatus(runs[0].Exit)
		}
		return nil
	}
	sum := summarizeRuns(f, l, tb, runs)
	if f.format == "json" {
		return jsonOf(sum)(cmd.OutOrStdout())
	}
	return sum.write(cmd.OutOrStdout())
}

// exitStatus is the task's exit status, passed on as gait's.
type exitStatus int

func (e exitStatus) Error() string {
	return fmt.Sprintf("the first copy exited with status %d", int(e))
}
func (e exitStatus) ExitCode() int { return int(e) }

// runSummary is --repeat's answer.
type runSummary struct {
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

func summarizeRuns(f replicaRunFlags, l replicaLimp, tb *testbed.Testbed, runs []tripod.Result) runSummary {
	s := runSummary{Strength: f.strength, Hosts: f.hosts, CPUs: f.cpus, Limp: f.limp, Runs: len(runs)}
	var took []float64
	var held, total float64
	for _, r := range runs {
		took = append(took, r.Took.Seconds())
		held += r.Held.Seconds()
		total += r.Took.Seconds()
		if r.Exit != 0 {
			s.Failed++
		}
		if l.host != "" && tb.Hosts[r.Winner].Name == l.host {
			s.OnLimping++
		}
	}
	slices.Sort(took)
	at := func(q float64) float64 { return took[min(len(took)-1, int(q*float64(len(took))))] }
	s.P50, s.P99, s.Max = at(0.5), at(0.99), took[len(took)-1]
	s.Cost = held / total
	return s
}

func (s runSummary) write(w io.Writer) error {
	limp := "no host limps"
	if s.Limp != "" {
		limp = "limping " + s.Limp
	}
	_, err := fmt.Fprintf(w, "strength %d on %d hosts of %.2f CPUs, %s: %d runs (%d failed), completion p50 %s p99 %s max %s, cost %.2f copies' time per task (won by the limping host: %d)\n",
		s.Strength, s.Hosts, s.CPUs, limp, s.Runs, s.Failed, secs(s.P50), secs(s.P99), secs(s.Max), s.Cost, s.OnLimping)
	return err
}

func secs(v float64) string { return time.Duration(v * 1e9).Round(100 * time.Microsecond).String() }

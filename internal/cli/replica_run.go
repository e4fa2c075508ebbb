package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/gait-dev/gait/internal/interrupt"
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

--limp slows one host through gait's injectors, as a scenario's limp does
(cpu: its processes get 1/FACTOR of one CPU; disk: its data directory on
limpfs, needs --disk, slowed FACTOR times). --repeat K runs the
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

func runReplicaRun(cmd *cobra.Command, f replicaRunFlags, argv []string) error {
	tasks := f.tasks(argv, cmd.ErrOrStderr())
	if _, err := tasks.Check(); err != nil {
		return err
	}
	if f.format != "text" && f.format != "json" {
		return fmt.Errorf("--format %q: want text or json", f.format)
	}
	sig := interrupt.Catch(cmd.Context(), cmd.ErrOrStderr(), interrupt.Messages{})
	defer sig.Stop()
	status := newStatusLine(cmd.ErrOrStderr())
	sum, runs, err := tasks.RunTasks(sig.Context(), func(k int, res tripod.Result, winner string) {
		if f.repeat > 1 {
			status.show(fmt.Sprintf("run %d of %d: %s on %s", k+1, f.repeat, res.Took.Round(time.Millisecond), winner))
		}
	})
	status.clear()
	if err != nil {
		return err
	}
	if f.repeat == 1 {
		cmd.ErrOrStderr().Write(runs[0].Errors)
		if _, err := cmd.OutOrStdout().Write(runs[0].Output); err != nil {
			return err
		}
		if runs[0].Exit != 0 {
			return exitStatus(runs[0].Exit)
		}
		return nil
	}
	if f.format == "json" {
		return jsonOf(sum)(cmd.OutOrStdout())
	}
	return sum.Write(cmd.OutOrStdout())
}

func (f replicaRunFlags) tasks(argv []string, log io.Writer) tripod.Tasks {
	return tripod.Tasks{Strength: f.strength, Hosts: f.hosts, CPUs: f.cpus, Disk: f.disk, Limp: f.limp,
		Repeat: f.repeat, Seed: f.seed, Argv: argv, Log: log}
}

// exitStatus is the task's exit status, passed on as gait's.
type exitStatus int

func (e exitStatus) Error() string {
	return fmt.Sprintf("the first copy exited with status %d", int(e))
}
func (e exitStatus) ExitCode() int { return int(e) }

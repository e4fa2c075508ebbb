package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/bench"
	"github.com/gait-dev/gait/internal/remote"
	"github.com/gait-dev/gait/internal/testbed"
	"github.com/gait-dev/gait/internal/units"
	"github.com/spf13/cobra"
)

type runFlags struct {
	out, format, html, stateDir, reportFrom string
	dryRun, resume                          bool
	machines                                machineFlags
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run SCENARIO.yaml [--out DIR] [--format text|json] [--html FILE]",
		Short: "Run a limpware experiment: a real cluster, a workload, faults at 1x/10x/100x/1000x",
		Long: `Run the experiment a scenario file describes, the way the Limplock paper does:
for the baseline (factor 1) and for each slowdown factor, start the system on
fresh isolated hosts, drive the workload, inject the faults on schedule (a
role like "leader" is resolved when the fault strikes), and record one run
directory per factor and repetition. White-box metrics of the system and the
servers' /proc counters are sampled once a second into each run's time series.

Then print a summary per factor (throughput, mean, p50, p99, max, slowdown =
mean latency over the baseline's) and write an HTML report with throughput and
p99 over time, the fault events and every white-box metric.

The scenario is checked completely before anything starts; a mistake is
reported with its file, line and field. Creating hosts needs root. Ctrl-C
stops the run and removes every host, process and mount it made, and
what the interrupted run wrote (a second Ctrl-C removes them at once);
'gait clean' removes what a killed run left. The runs that finished stay:
--resume runs the rest into the same directory, --report-from reports
what finished. The scenario format is in docs/run.md; bundled ones are
in scenarios/.

With --inventory the hosts are spread over the inventory's machines,
round robin, joined by a VXLAN overlay, and the clients run here; each
machine is checked first, the system's programs included
(docs/many-machines.md).`,
		Example: `  # long: a few minutes, root
  sudo gait run scenarios/etcd/leader-nic.yaml
  # long: a few minutes, root
  sudo gait run scenarios/etcd/follower-disk.yaml --out runs/fd --format json > fd.json

  gait run --dry-run scenarios/etcd/leader-crash.yaml     # check it and list the runs
  cp -r testdata/runs/etcd-leader-nic runs-ln                 # an earlier run's output directory
  gait run --report-from runs-ln                               # summary and report again

  # needs: the output directory of an interrupted run
  sudo gait run scenarios/etcd/leader-nic.yaml --out runs/ln --resume   # after Ctrl-C: the runs left

  # needs: your machines in machines.yaml (docs/many-machines.md)
  sudo gait run --inventory machines.yaml scenarios/etcd/leader-nic.yaml   # the hosts spread over them`,
		Args: func(cmd *cobra.Command, args []string) error {
			if f.reportFrom != "" && len(args) > 0 {
				return fmt.Errorf("--report-from reads an output directory; it takes no scenario (got %s)", args[0])
			}
			if f.resume && f.out == "" {
				return fmt.Errorf("--resume: give the output directory of the interrupted run with --out")
			}
			if f.reportFrom != "" {
				return nil
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.reportFrom != "" {
				return rereport(cmd, f)
			}
			return runScenario(cmd, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.out, "out", "", "output directory (default runs/<name>-<time>); must not exist or be empty")
	fl.StringVar(&f.format, "format", "text", "summary format on stdout: text or json")
	fl.StringVar(&f.html, "html", "", "HTML report to write (default <out>/report.html)")
	fl.StringVar(&f.stateDir, "state-dir", "", "testbed state directory (default "+testbed.DefaultStateDir+")")
	fl.BoolVar(&f.dryRun, "dry-run", false, "check the scenario and list its runs, without running anything")
	fl.StringVar(&f.reportFrom, "report-from", "", "write the summary and report from an output directory (of the runs that finished, if interrupted), without running")
	fl.BoolVar(&f.resume, "resume", false, "keep the runs an interrupted run of the same scenario finished in --out, and run the rest")
	f.machines.add(fl)
	return cmd
}

func runScenario(cmd *cobra.Command, path string, f runFlags) error {
	if f.format != "text" && f.format != "json" {
		return fmt.Errorf("--format %q: want text or json", f.format)
	}
	s, err := bench.Load(path)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	if f.dryRun {
		return printPlan(cmd.OutOrStdout(), s)
	}
	if err := testbed.NeedRoot(); err != nil {
		return fmt.Errorf("run %s: %w; try sudo", path, err)
	}
	if f.out == "" {
		f.out = filepath.Join("runs", s.Name+"-"+time.Now().Format("20060102-150405"))
	}
	if f.html == "" {
		f.html = filepath.Join(f.out, "report.html")
	}
	ctx, stop := testbed.SignalContext(cmd.Context())
	defer stop()
	opts := bench.Options{Out: f.out, StateDir: f.stateDir, Resume: f.resume}
	if f.machines.inventory != "" {
		// The output directory must be empty for the runs: preflight.json
		// goes into it after them.
		machines, err := f.machines.preflightFor(ctx, stderr, "", []*bench.Scenario{s})
		defer closeAll(machines)
		if err != nil {
			return err
		}
		opts.Place = spreadOver(machines, f.stateDir)
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil) // before closeAll, whose closing is no loss
		watchLoss(ctx, machines, cancel)
		fmt.Fprintf(stderr, "gait run %s: %d hosts across %d machines\n", s.Name, s.Nodes, min(s.Nodes, len(machines)))
	}
	fmt.Fprintf(stderr, "gait run %s: %s, results in %s\n", s.Name, units.Count(len(s.Runs()), "run"), f.out)
	status := newStatusLine(stderr)
	// The last status: what an interrupted run had done, which its
	// removal would lose.
	var last *bench.Status
	opts.Log, opts.Status = status, func(st bench.Status) {
		status.show(st.String())
		last = &st
	}
	results, err := bench.Run(ctx, s, opts)
	status.clear()
	if f.machines.inventory != "" && len(results) > 0 {
		err = errors.Join(err, f.machines.saveReports(f.out))
	}
	if err != nil {
		var lost *lostMachine
		if errors.As(context.Cause(ctx), &lost) {
			return fmt.Errorf("%w; the other machines' hosts and the run are removed%s, what %s's agent made goes with 'gait clean --inventory'; %d of %d runs finished, in %s: "+
				"'gait run %s --inventory ... --out %s --resume' runs the rest", lost, interruptedRun(last, results), lost.name, len(results), len(s.Runs()), f.out, path, f.out)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted; the hosts and the interrupted run are removed%s; %d of %d runs finished, in %s: "+
				"'gait run %s --out %s --resume' runs the rest, 'gait run --report-from %s' reports them",
				interruptedRun(last, results), len(results), len(s.Runs()), f.out, path, f.out, f.out)
		}
		return err
	}
	return finishRun(cmd, s, results, f)
}

// interruptedRun says what the interrupted run had done by its last
// status: nothing if its workload had not begun (the last status is
// none, or a finished run's).
func interruptedRun(st *bench.Status, finished []bench.RunResult) string {
	if st == nil || len(finished) > 0 && finished[len(finished)-1].ID.Dir() == st.ID.Dir() {
		return ""
	}
	return fmt.Sprintf(" (%s r%d had done %d requests, %d errors, in %v of its workload)",
		st.ID.Step.Label(), st.ID.Rep, st.Requests, st.Failed, st.Elapsed.Round(time.Second))
}

// lostMachine ends a run spanning machines: one stopped answering.
type lostMachine struct {
	name string
	err  error
}

func (e *lostMachine) Error() string { return fmt.Sprintf("machine %s lost: %v", e.name, e.err) }

// watchLoss cancels ctx when a machine is lost: its hosts are gone, and
// a run without them measures nothing worth keeping.
func watchLoss(ctx context.Context, machines []*remote.Machine, cancel context.CancelCauseFunc) {
	for _, m := range machines {
		go func() {
			select {
			case <-m.Lost():
				cancel(&lostMachine{name: m.Name, err: m.Err()})
			case <-ctx.Done():
			}
		}()
	}
}

// finishRun writes summary.json and the report and prints the summary.
func finishRun(cmd *cobra.Command, s *bench.Scenario, results []bench.RunResult, f runFlags) error {
	sum, err := bench.Summarize(s, f.out, results)
	if err != nil {
		return err
	}
	if err := sum.Save(); err != nil {
		return err
	}
	if err := bench.WriteReport(f.html, s, sum, results); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "report: %s\n", f.html)
	if f.format == "json" {
		return sum.WriteJSON(cmd.OutOrStdout())
	}
	return sum.WriteText(cmd.OutOrStdout())
}

func rereport(cmd *cobra.Command, f runFlags) error {
	if f.format != "text" && f.format != "json" {
		return fmt.Errorf("--format %q: want text or json", f.format)
	}
	s, results, err := bench.Reload(f.reportFrom)
	if err != nil {
		return err
	}
	if n := len(s.Runs()); len(results) < n {
		fmt.Fprintf(cmd.ErrOrStderr(), "gait: %s holds %d of the scenario's %d runs (the run was interrupted); the summary is of those\n",
			f.reportFrom, len(results), n)
	}
	f.out = f.reportFrom
	if f.html == "" {
		f.html = filepath.Join(f.out, "report.html")
	}
	return finishRun(cmd, s, results, f)
}

func printPlan(w io.Writer, s *bench.Scenario) error {
	fmt.Fprintf(w, "%s: %s on %d hosts, %s\n", s.File, s.System, s.Nodes, units.Count(len(s.Runs()), "run"))
	for _, r := range s.Runs() {
		var faults []string
		for _, f := range r.Step.Faults {
			what := f.Kind // a crash or partition has no factor
			if f.Factor > 0 {
				what += fmt.Sprintf(" %gx", f.Factor)
			}
			line := fmt.Sprintf("%s on %s at %v", what, f.Target, f.At)
			if f.For > 0 {
				line += fmt.Sprintf(" for %v", f.For)
			}
			faults = append(faults, line)
		}
		if len(faults) == 0 {
			faults = []string{"no fault"}
		}
		_, err := fmt.Fprintf(w, "  %-16s %s\n", r.Dir(), strings.Join(faults, "; "))
		if err != nil {
			return err
		}
	}
	return nil
}

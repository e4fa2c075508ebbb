package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/gait-dev/gait/internal/suite"
	"github.com/gait-dev/gait/internal/testbed"
	"github.com/gait-dev/gait/internal/units"
	"github.com/gait-dev/gait/internal/verdict"
	"github.com/spf13/cobra"
)

type benchFlags struct {
	machines machineFlags
	sel      suite.Selection
	out      string
	stateDir string
	verdict  verdict.Options
	end      ending
}

func newBenchCmd() *cobra.Command {
	f := benchFlags{verdict: verdict.Defaults(), end: ending{verb: "bench"}}
	cmd := &cobra.Command{
		Use:   "bench [SCENARIO.yaml|DIR ...] [--quick] [--only PATTERN] [--repeat N] [--warmup D] [--out DIR] [--format text|json] [--html FILE]",
		Short: "Run the limpware experiment library and judge operation, node and cluster limplock",
		Long: `Run a suite of limpware experiments (default: ` + suite.DefaultDir + `, the Limplock
paper's Table 1 on ZooKeeper, etcd, Redis and gait-redis), each as 'gait run'
would, and judge each slowdown step against its baseline: operation limplock
(OL), node limplock (NL), cluster limplock (CL) and a hidden backlog, each
with the sentence that explains it.

Every scenario is checked before anything starts. Each experiment's results
go to DIR/<name>/; a finished one keeps result.json, so running the same
command again after an interruption skips what finished. The suite report
holds the paper's Figure 1 (slowdown against factor), its Table 1 with
gait's marks beside the paper's, and a section per experiment.

--quick runs the scenarios marked quick: with each fault's largest factor,
at most 5 s of workload per run, once. The rules and
thresholds are in docs/bench.md. Needs root.

--inventory FILE runs each experiment whole on the next free machine of an
inventory instead (after a preflight of every machine), gathers every
experiment's directory into --out, and reports the suite from them; needs
SSH and passwordless sudo there, not root here (docs/many-machines.md).`,
		Example: `  # long: a few minutes, root
  sudo gait bench --quick
  # long: a few minutes, your machines over SSH
  gait bench --quick --inventory hosts.ini
  # long: many minutes, root
  sudo gait bench scenarios/limpbench --only 'zk-*' --format json > zk.json

  gait bench --dry-run            # check every scenario and list the experiments`,
		RunE: func(cmd *cobra.Command, args []string) error { return runBench(cmd, args, f) },
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.sel.Quick, "quick", false, "the representative subset (scenarios with quick: true), shortened")
	fl.StringVar(&f.sel.Only, "only", "", "only the experiments whose name matches this shell pattern, like 'zk-*'")
	fl.IntVar(&f.sel.Repeat, "repeat", 0, "repetitions of every run, in place of each scenario's repeat:")
	fl.DurationVar(&f.sel.Warmup, "warmup", 0, "unmeasured workload before each run's measurement, in place of each scenario's warmup: (JVM servers start cold)")
	fl.StringVar(&f.out, "out", filepath.Join("runs", "bench"), "suite output directory; finished experiments in it are kept and skipped")
	fl.StringVar(&f.stateDir, "state-dir", "", "testbed state directory (default "+testbed.DefaultStateDir+")")
	fl.Float64Var(&f.verdict.Slow, "slow", f.verdict.Slow, "a group of operations is slow over this many times its baseline mean latency")
	fl.Float64Var(&f.verdict.Collapse, "collapse", f.verdict.Collapse, "throughput under this share of the baseline's is cluster limplock")
	fl.Float64Var(&f.verdict.Alpha, "alpha", f.verdict.Alpha, "significance a backlog's rising slope needs")
	fl.Float64Var(&f.verdict.Growth, "growth", f.verdict.Growth, "a backlog rises by more than this many times its baseline peak")
	fl.Bool("dry-run", false, "check the scenarios and list the experiments, without running anything")
	f.end.flags(fl, "output on stdout: text or json (one row per experiment and factor)", "suite report to write (default <out>/report.html; - for stdout)")
	f.machines.add(fl)
	return cmd
}

func runBench(cmd *cobra.Command, args []string, f benchFlags) error {
	if err := f.end.check(); err != nil {
		return err
	}
	if err := f.verdict.Check(); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if len(args) == 0 {
		args = []string{suite.DefaultDir}
	}
	files, err := suite.Files(args)
	if err != nil {
		return err
	}
	scenarios, err := suite.Load(files, f.sel)
	if err != nil {
		return err
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if dry, _ := cmd.Flags().GetBool("dry-run"); dry {
		for _, s := range scenarios {
			fmt.Fprintf(stdout, "%-40s %-10s %-7s  %s\n", s.Name, s.System, units.Count(len(s.Runs()), "run"), s.File)
		}
		return nil
	}
	if f.end.html == "" {
		f.end.html = filepath.Join(f.out, "report.html")
	}
	if f.machines.inventory != "" {
		return runBenchRemote(cmd, scenarios, f)
	}
	if err := testbed.NeedRoot(); err != nil {
		return fmt.Errorf("bench: %w; try sudo", err)
	}
	ctx, stop := testbed.SignalContext(cmd.Context())
	defer stop()
	fmt.Fprintf(stderr, "gait bench: %d experiments, results in %s\n", len(scenarios), f.out)
	status := newStatusLine(stderr)
	results, err := suite.Run(ctx, scenarios, suite.Options{Out: f.out, StateDir: f.stateDir, Verdict: f.verdict, Log: status,
		Status: func(p suite.Progress) { status.show(p.String()) }, Quick: f.sel.Quick})
	status.clear()
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted; the hosts are removed, %d experiments finished in %s (run the same command again to resume)", len(results), f.out)
	}
	return benchEnding(stdout, stderr, f, results, err)
}

// benchEnding shows the experiments that finished, even when others
// failed; the failures then end the command with their errors.
func benchEnding(stdout, stderr io.Writer, f benchFlags, results []suite.Result, failed error) error {
	if len(results) == 0 {
		return failed
	}
	if f.end.html != "-" {
		fmt.Fprintf(stderr, "report: %s\n", f.end.html)
	}
	err := f.end.finish(stdout, result{
		text: func(w io.Writer) error { return suite.WriteText(w, results) },
		json: func(w io.Writer) error { return suite.WriteJSON(w, results) },
		html: func(w io.Writer) error {
			p, err := suite.Report(results, f.verdict)
			if err != nil {
				return err
			}
			_, err = p.WriteTo(w)
			return err
		},
	})
	return errors.Join(err, failed)
}

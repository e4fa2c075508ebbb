package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/gait-dev/gait/internal/analyze"
	"github.com/gait-dev/gait/internal/latency"
	"github.com/gait-dev/gait/internal/units"
	"github.com/spf13/cobra"
)

func newAnalyzeCmd() *cobra.Command {
	var bound string
	var opt latency.Options
	out := ending{verb: "analyze"}
	cmd := &cobra.Command{
		Use:   "analyze PATH... [--format text|json] [--html FILE]",
		Short: "Tell how predictable latency is: C1, C2, C3 and the magical 1%",
		Long: `Analyze latency measurements the way "Middleware, Fault-Tolerance and the
Magical 1%" does, and tell how predictable they are.

PATH is a run directory, a directory holding run directories (up to three
levels down: runs/RUN, runs/SCENARIO/RUN, runs/SUITE/EXPERIMENT/RUN; what is
skipped is said on standard error), a CSV file or an HdrHistogram interval
log; several PATHs are analysed together.

  CSV       a header row, then one row per request. The latency column is the
            one named latency_ns, latency_us, latency_ms or latency_s (the
            suffix is the unit), or the one --latency-column names. Every
            other column is a factor (clients, payload, ...): rows with equal
            factor values form one configuration. In gait export's CSV,
            start_s, host, outcome and involved describe each request and
            are not factors; op and the run's factors are.
  histogram an HdrHistogram interval log (HistogramLogWriter, jHiccup, wrk2
            forks); each Tag= is a configuration. The log does not record its
            unit: gait infers ns or µs and says so; --unit overrides.
  run dir   each run is a configuration; its factors are the run's own plus
            system, fault, target, factor (the slowdown factor) and repetition.

For each configuration: count, mean, std, min, p50, p90, p99, p99.9, max;
C1 (max > 10 x mean); C2 (samples beyond mean + 3σ: how many, what share,
the largest relative to the mean); the haircut (mean and max without the
top 1%); p99/mean; distribution-free 95% and 99% confidence intervals for
p99; with --bound, how many requests took at most the bound and their share
(the measured SLA). Across configurations: C3, a one-way ANOVA of every
factor on the latency of each request and on the per-configuration p99 and
max, with the verdicts in words, and the paper's headline check: does p99's
upper 99% bound stay within 25 x the mean everywhere?

Latencies in the JSON output are in seconds; docs/analyze.md documents
every field.`,
		Example: `  # the bundled redis trace: a table on the terminal and an HTML report
  gait analyze testdata/traces/redis-loopback.csv --html report.html

  # machine-readable, for scripts
  gait analyze testdata/traces/redis-loopback.csv --format json > analysis.json

  # every run of a scenario (here the bundled etcd-leader-nic run: a real
  # 4-second-per-step gait run on this kind of machine)
  gait analyze testdata/runs/etcd-leader-nic/

  # the measured SLA: the share of requests within 20 ms, per configuration
  gait analyze testdata/runs/etcd-leader-nic/f1-r1 testdata/runs/etcd-leader-nic/f10-r1 --bound 20ms

  # a CSV of your own whose latency column is "rtt" in milliseconds
  # needs: your own trace
  gait analyze trace.csv --latency-column rtt --unit ms

  # an HdrHistogram log recorded in microseconds
  # needs: your own log
  gait analyze wrk2.hlog --unit us`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			var aopt analyze.Options
			if bound != "" {
				b, err := units.ParseDuration(bound)
				if err != nil {
					return fmt.Errorf("--bound: %w", err)
				}
				if b <= 0 {
					return fmt.Errorf("--bound %q: want a positive duration such as 10ms", bound)
				}
				aopt.Bound = b
			}
			opt.Skipped = func(path, why string) {
				fmt.Fprintf(cmd.ErrOrStderr(), "gait analyze: skipped %s: %s\n", path, why)
			}
			configs, err := latency.LoadAll(args, opt)
			if err != nil {
				return err
			}
			res := analyze.Run(configs, aopt)
			title := "gait analyze " + strings.Join(args, " ")
			return out.finish(cmd.OutOrStdout(), result{
				text: res.WriteText,
				json: res.WriteJSON,
				html: func(w io.Writer) error { return res.WriteHTML(w, title) },
			})
		},
	}
	out.flags(cmd.Flags(), "output format on standard output: text or json",
		"also write a self-contained HTML report with figures to `FILE` (- for standard output, in place of the text)")
	cmd.Flags().StringVar(&bound, "bound", "", "also report the share of requests within this latency bound, the measured SLA (`DUR`, e.g. 10ms)")
	cmd.Flags().StringVar(&opt.LatencyColumn, "latency-column", "", "CSV column that holds the latency (`NAME`)")
	cmd.Flags().StringVar(&opt.Unit, "unit", "", "unit of the latency values: ns, us, ms or s (`UNIT`)")
	return cmd
}

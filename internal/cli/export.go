package cli

import (
	"github.com/gait-dev/gait/internal/rundir"
	"github.com/spf13/cobra"
)

func newExportCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "export RUN [--csv] [-o FILE]",
		Short: "Write a run directory's samples as CSV",
		Long: `Write every sample of a run directory as CSV, one row per request:
start_s (intended start, seconds since the run began), latency_ns, op, host,
outcome, followed by the run's configuration factors as constant columns, so
the output can be fed back to gait analyze or to any other tool.`,
		Example: `  gait export testdata/runs/etcd-leader-nic/f100-r1 --csv > samples.csv
  gait analyze samples.csv       # the CSV reads back as the same run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			run, err := rundir.Open(args[0])
			if err != nil {
				return err
			}
			return writeOutput(output, cmd.OutOrStdout(), run.WriteCSV)
		},
	}
	// CSV is the only format, so the default; --csv stays accepted.
	cmd.Flags().Bool("csv", true, "write CSV (the only format, and the default)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to FILE instead of standard output")
	return cmd
}

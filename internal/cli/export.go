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
		Example: `  # needs: a run directory, such as one of gait run's
  gait export runs/etcd-leader-nic/f100-r1 --csv > samples.csv`,
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

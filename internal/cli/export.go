package cli

import (
	"bufio"
	"fmt"
	"io"
	"strconv"

	"github.com/gait-dev/gait/internal/rundir"
	"github.com/spf13/cobra"
)

func newExportCmd() *cobra.Command {
	var csvOut bool
	var output string
	cmd := &cobra.Command{
		Use:   "export RUN --csv [-o FILE]",
		Short: "Write a run directory's samples as CSV",
		Long: `Write every sample of a run directory as CSV, one row per request:
start_s (intended start, seconds since the run began), latency_ns, op, host,
outcome, followed by the run's configuration factors as constant columns, so
the output can be fed back to gait analyze or to any other tool.`,
		Example: `  gait export runs/etcd-leader-nic/f100-r1 --csv > samples.csv`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !csvOut {
				return fmt.Errorf("export: choose an output format (--csv)")
			}
			run, err := rundir.Open(args[0])
			if err != nil {
				return err
			}
			return writeOutput(output, cmd.OutOrStdout(), func(w io.Writer) error {
				return exportCSV(w, run)
			})
		},
	}
	cmd.Flags().BoolVar(&csvOut, "csv", false, "write CSV")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to FILE instead of standard output")
	return cmd
}

func exportCSV(out io.Writer, run *rundir.Run) error {
	samples, err := run.Samples()
	if err != nil {
		return err
	}
	names, values := sortedFactors(run.Config.Factors)
	w := bufio.NewWriterSize(out, 1<<16)
	w.WriteString("start_s,latency_ns,op,host,outcome")
	for _, n := range names {
		w.WriteString("," + n)
	}
	w.WriteByte('\n')
	var buf []byte
	for _, s := range samples {
		buf = strconv.AppendFloat(buf[:0], s.Start.Seconds(), 'f', 9, 64)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(s.Latency), 10)
		buf = append(buf, ',')
		buf = append(buf, run.OpName(s.Op)...)
		buf = append(buf, ',')
		buf = append(buf, run.HostName(s.Host)...)
		buf = append(buf, ',')
		buf = append(buf, s.Outcome.String()...)
		for _, v := range values {
			buf = append(buf, ',')
			buf = append(buf, v...)
		}
		buf = append(buf, '\n')
		w.Write(buf)
	}
	return w.Flush()
}

package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/gait-dev/gait/internal/testbed"
	"github.com/spf13/cobra"
)

func newTestbedCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "testbed",
		Short: "Build isolated hosts on this machine by hand",
	}
	cmd.AddCommand(newTestbedUpCmd())
	return cmd
}

func newTestbedUpCmd() *cobra.Command {
	var hosts int
	var bandwidth, dir, stateDir string
	var disk bool
	cmd := &cobra.Command{
		Use:   "up [--hosts N] [--bandwidth RATE] [--disk]",
		Short: "Create hosts, print them, and remove them on Ctrl-C",
		Long: `Create N isolated hosts, each a network namespace with an address from
198.18.0.0/15 on a link shaped to RATE in both directions, and a data
directory (on limpfs, the slow-disk layer, with --disk). The hosts stay up
until SIGINT or SIGTERM, then everything is removed. Use them with
ip netns exec NAMESPACE COMMAND.`,
		Example: `  # long: runs until Ctrl-C, root
  sudo gait testbed up --hosts 3 --bandwidth 100Mbit/s
  # needs: the testbed above, under the name it printed
  sudo ip netns exec g1a2b3-h0 ping -c1 198.18.0.3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := testbed.NeedRoot(); err != nil {
				return err
			}
			bps, err := testbed.ParseBandwidth(bandwidth)
			if err != nil {
				return fmt.Errorf("--bandwidth: %w", err)
			}
			ctx, stop := testbed.SignalContext(cmd.Context())
			defer stop()
			tb, err := testbed.Up(testbed.Options{Hosts: hosts, Bandwidth: bps, Dir: dir, Disk: disk, StateDir: stateDir, Log: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			defer tb.Close()
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "run %s: %d hosts on %s, links at %s, this machine is %s\n", tb.ID, len(tb.Hosts), tb.Subnet, bandwidth, tb.Gateway)
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "HOST\tADDRESS\tNAMESPACE\tDATA")
			for _, h := range tb.Hosts {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", h.Name, h.Addr, h.Namespace, h.DataDir)
			}
			w.Flush()
			fmt.Fprintln(out, "press Ctrl-C to remove them")
			<-ctx.Done()
			fmt.Fprintf(out, "removing run %s\n", tb.ID)
			if err := tb.Close(); err != nil {
				return err
			}
			fmt.Fprintf(out, "removed run %s\n", tb.ID)
			return nil
		},
	}
	cmd.Flags().IntVar(&hosts, "hosts", 3, "number of hosts")
	cmd.Flags().StringVar(&bandwidth, "bandwidth", "100Mbit/s", "each host's link rate, both directions")
	cmd.Flags().BoolVar(&disk, "disk", false, "put each data directory on limpfs (80 MB/s), so disk slowdowns can be injected")
	cmd.Flags().StringVar(&dir, "dir", "", "where the hosts' directories go (default: a temporary directory, removed)")
	cmd.Flags().StringVar(&stateDir, "state-dir", testbed.DefaultStateDir, "where runs keep their state files")
	return cmd
}

package cli

import (
	"fmt"

	"github.com/gait-dev/gait/internal/emulate"
	"github.com/gait-dev/gait/internal/systems/gaitredis"
	"github.com/gait-dev/gait/internal/testbed"
	"github.com/spf13/cobra"
)

func newCleanCmd() *cobra.Command {
	var all bool
	var stateDir string
	var machines machineFlags
	cmd := &cobra.Command{
		Use:   "clean [--all] [--inventory FILE]",
		Short: "Remove the hosts that crashed gait runs left behind",
		Long: `Remove what gait runs left behind when they could not clean up after
themselves (killed with SIGKILL, machine trouble): their processes, FUSE
mounts, cgroups, links, bridges, network namespaces and scratch directories,
and the file systems of killed 'gait emulate mount' commands.
Every run records what it creates in a state file under /run/gait, or
under the --state-dir it was given, to which /run/gait keeps a reference;
clean reads those files and follows the references of runs whose owner
is gone. It also removes what a killed 'gait replica cluster
--loopback' left in $TMPDIR (its redis-servers and directory), which needs
no root. A run whose gait process still runs is left alone unless
--all is given.
With --inventory, clean every machine of the inventory instead: each
machine's agent removes what a killed control node or agent left under
its gait_root, then scans for anything left (one line per machine).`,
		Example: `  sudo gait clean
  # needs: a machine no one else runs gait on: it removes their runs too
  sudo gait clean --all   # also runs still in progress
  # needs: an inventory of your machines (docs/many-machines.md)
  gait clean --inventory hosts.ini`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if machines.inventory != "" {
				return cleanInventory(cmd.Context(), out, machines)
			}
			// Loopback replica deployments need no root; testbed runs do.
			local, err := gaitredis.CleanLocal("", all)
			for _, dir := range local {
				fmt.Fprintf(out, "removed %s\n", dir)
			}
			if err != nil {
				return err
			}
			if err := testbed.NeedRoot(); err != nil {
				return fmt.Errorf("testbed runs: %w", err)
			}
			cleaned, err := testbed.Clean(stateDir, all)
			for _, id := range cleaned {
				fmt.Fprintf(out, "removed run %s\n", id)
			}
			if err != nil {
				return err
			}
			mounts, err := emulate.Clean(stateDir)
			for _, dir := range mounts {
				fmt.Fprintf(out, "unmounted %s\n", dir)
			}
			if err != nil {
				return err
			}
			if len(cleaned)+len(local)+len(mounts) == 0 {
				fmt.Fprintln(out, "nothing to clean")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also remove runs whose gait process still runs")
	cmd.Flags().StringVar(&stateDir, "state-dir", testbed.DefaultStateDir, "where runs keep their state files")
	machines.add(cmd.Flags())
	return cmd
}

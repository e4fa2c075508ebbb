// Package cli is gait's command line: one file per verb, each parsing flags,
// calling the package that does the work and printing its result.
package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "gait",
		Short: "Make limping hardware visible and survivable in distributed systems",
		Long: `gait runs real distributed systems as small clusters on one machine, injects
limpware (a NIC, disk or CPU slowed 10x to 1000x, or a crash), and tells how
predictable the latency really is.

Every command that measures writes a run directory (docs/run-directory.md);
every command that analyses reads one.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newAgentCmd(),
		newAnalyzeCmd(),
		newBenchCmd(),
		newCleanCmd(),
		newEmulateCmd(),
		newExportCmd(),
		newLoadCmd(),
		newModelCmd(),
		newPreflightCmd(),
		newReplicaCmd(),
		newRunCmd(),
		newTestbedCmd(),
	)
	return root
}

// Main runs gait with args and returns the process exit code.
func Main(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "gait:", err)
		// gait replica run passes its task's exit status on.
		var status exitStatus
		if errors.As(err, &status) {
			return int(status)
		}
		return 1
	}
	return 0
}

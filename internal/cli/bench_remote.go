package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/atomicfile"
	"github.com/gait-dev/gait/internal/bench"
	"github.com/gait-dev/gait/internal/remote"
	"github.com/gait-dev/gait/internal/suite"
	"github.com/gait-dev/gait/internal/testbed"
	"github.com/spf13/cobra"
)

// machinesFile records where each experiment of a suite spread over an
// inventory ran, and which ran again after losing a machine.
const machinesFile = "machines.json"

// runBenchRemote runs each experiment whole on the next free machine of
// the inventory (gait bench there, through its agent), gathers every
// experiment's directory into --out, and reports the suite from them as a
// one-machine run would.
func runBenchRemote(cmd *cobra.Command, scenarios []*bench.Scenario, f benchFlags) error {
	// SIGINT ends the suite: each machine's agent then interrupts its
	// experiment and removes what it made.
	ctx, stop := testbed.SignalContext(cmd.Context())
	defer stop()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	machines, err := f.machines.preflightFor(ctx, stderr, f.out, scenarios)
	defer closeAll(machines)
	if err != nil {
		return err
	}
	var jobs []remote.Job
	for _, s := range scenarios {
		src, err := os.ReadFile(s.File)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		file := filepath.Base(s.File)
		args := []string{"bench", "{dir}/" + file, "--out", "{dir}/out", "--state-dir", "{state}", "--html", "{dir}/report.html"}
		if f.sel.Quick {
			args = append(args, "--quick")
		}
		if f.sel.Repeat > 0 {
			args = append(args, "--repeat", strconv.Itoa(f.sel.Repeat))
		}
		jobs = append(jobs, remote.Job{Name: s.Name, Files: map[string][]byte{file: src}, Args: args,
			Fetch: "out/" + s.Name, Into: f.out})
	}
	fmt.Fprintf(stderr, "gait bench: %d experiments on %d machines, results in %s\n", len(jobs), len(machines), f.out)
	begin := time.Now()
	outcomes := remote.Dispatch(ctx, machines, jobs, func(line string) {
		fmt.Fprintf(stderr, "%6.0fs %s\n", time.Since(begin).Seconds(), line)
	})
	wall := time.Since(begin)
	data, err := json.MarshalIndent(map[string]any{"wall_seconds": wall.Seconds(), "experiments": outcomes}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(filepath.Join(f.out, machinesFile), data); err != nil {
		return err
	}
	var done []*bench.Scenario
	var failed []string
	for i, o := range outcomes {
		if o.Rerun() && o.Machine != "" {
			fmt.Fprintf(stderr, "%s: ran again on %s after losing %s\n", o.Job, o.Machine, strings.Join(o.Lost, "; "))
		}
		switch {
		case o.Err != "":
			failed = append(failed, fmt.Sprintf("%s: %s", o.Job, o.Err))
		case o.Exit != 0:
			failed = append(failed, fmt.Sprintf("%s on %s: gait bench exited %d: %s", o.Job, o.Machine, o.Exit, lastLine(o.Output)))
		}
		if _, err := os.Stat(filepath.Join(f.out, scenarios[i].Name, "result.json")); err == nil {
			done = append(done, scenarios[i])
		}
	}
	fmt.Fprintf(stderr, "gait bench: %d of %d experiments finished in %.0fs on %d machines (%s)\n", len(done), len(jobs), wall.Seconds(), len(machines), filepath.Join(f.out, machinesFile))
	var runErr error
	if len(failed) > 0 {
		runErr = fmt.Errorf("%d experiments failed:\n%s", len(failed), strings.Join(failed, "\n"))
	}
	if len(done) == 0 {
		return runErr
	}
	// Every experiment here finished, so the suite reads each back from
	// its directory and judges it; it runs nothing.
	results, err := suite.Run(ctx, done, suite.Options{Out: f.out, Verdict: f.verdict})
	if err != nil {
		return fmt.Errorf("read the gathered experiments: %w", err)
	}
	return benchEnding(stdout, stderr, f, results, runErr)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

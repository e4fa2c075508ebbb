package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/agent"
	"github.com/gait-dev/gait/internal/atomicfile"
	"github.com/gait-dev/gait/internal/bench"
	"github.com/gait-dev/gait/internal/inventory"
	"github.com/gait-dev/gait/internal/remote"
	"github.com/gait-dev/gait/internal/testbed"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// machineFlags are how every command that uses an inventory reaches its
// machines.
type machineFlags struct {
	inventory    string
	knownHosts   []string
	sshConfig    string
	agentTimeout time.Duration
	reports      []remote.Report // the last preflight's
}

func (f *machineFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&f.inventory, "inventory", "", "the machines: gait's YAML list or an Ansible inventory (INI or YAML); see docs/many-machines.md")
	fl.StringSliceVar(&f.knownHosts, "known-hosts", nil, "known_hosts files to check host keys against (default ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts)")
	fl.StringVar(&f.sshConfig, "ssh-config", "", `ssh_config file to read (default ~/.ssh/config; "none" for none)`)
	fl.DurationVar(&f.agentTimeout, "agent-timeout", agent.DefaultTimeout, "an agent that hears no heartbeat for this long removes everything it made")
}

func (f *machineFlags) options() remote.Options {
	return remote.Options{KnownHosts: f.knownHosts, SSHConfig: f.sshConfig, AgentTimeout: f.agentTimeout}
}

func (f *machineFlags) machines() ([]inventory.Machine, error) {
	if f.inventory == "" {
		return nil, errors.New("--inventory: name the inventory file")
	}
	return inventory.Load(f.inventory)
}

// preflight runs the checks on every machine, prints one line per
// machine and problem, writes preflight.json into out (when not empty),
// and returns the machines that passed, connected. It fails when any
// machine did not pass.
func (f *machineFlags) preflight(ctx context.Context, w io.Writer, out string, a agent.CheckArgs) ([]*remote.Machine, error) {
	ms, err := f.machines()
	if err != nil {
		return nil, err
	}
	reports, ready := remote.Preflight(ctx, ms, f.options(), a)
	f.reports = reports
	failed := 0
	for _, r := range reports {
		if r.OK() {
			fmt.Fprintf(w, "%s: ready (%s, %s, clock %+.1f ms ±%.1f ms)\n", r.Machine, r.Addr, r.Arch,
				float64(r.ClockOffset)/1e6, float64(r.ClockError)/1e6)
			continue
		}
		failed++
		for _, p := range r.Problems {
			fmt.Fprintln(w, p)
		}
	}
	if out != "" {
		if err := f.saveReports(out); err != nil {
			return ready, err
		}
	}
	if failed > 0 {
		return ready, fmt.Errorf("preflight: %d of %d machines not ready", failed, len(ms))
	}
	return ready, nil
}

// saveReports writes the last preflight's reports, with the clock
// offsets, to out/preflight.json.
func (f *machineFlags) saveReports(out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(f.reports, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(filepath.Join(out, "preflight.json"), data)
}

// preflightFor is preflight checking, besides, the files the scenarios'
// servers need on every machine.
func (f *machineFlags) preflightFor(ctx context.Context, w io.Writer, out string, scenarios []*bench.Scenario) ([]*remote.Machine, error) {
	needs, err := bench.Needs(scenarios)
	if err != nil {
		return nil, err
	}
	return f.preflight(ctx, w, out, agent.CheckArgs{Binaries: needs})
}

// spreadOver places each run's hosts across the machines (remote.SpreadHosts).
func spreadOver(machines []*remote.Machine, stateDir string) func(context.Context, testbed.Options) (bench.Place, error) {
	return func(ctx context.Context, o testbed.Options) (bench.Place, error) {
		sp, err := remote.SpreadHosts(ctx, machines, o.Hosts, remote.SpreadOptions{Bandwidth: o.Bandwidth, Disk: o.Disk,
			DiskBandwidth: o.DiskBandwidth, DiskLatency: o.DiskLatency, Emulate: o.Emulate, StateDir: stateDir})
		if err != nil {
			return nil, err
		}
		return sp, nil
	}
}

func closeAll(ms []*remote.Machine) {
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() { m.Close() })
	}
	wg.Wait()
}

func newPreflightCmd() *cobra.Command {
	var f machineFlags
	var out string
	var binaries []string
	cmd := &cobra.Command{
		Use:   "preflight --inventory FILE",
		Short: "Check that every machine of an inventory is ready for gait",
		Long: `Check every machine of an inventory at once, before anything starts: SSH
reachable and its host key known (never trusted on first sight), passwordless
sudo, the architecture, gait's binary pushed under gait_root, then from its
agent the tc shapers (tbf, htb), FUSE, cgroup CPU control, free disk, the
programs named with --binary, and the clock's offset from this one, by
round trips. Prints one line per machine, and one per problem naming the
machine; exits non-zero when any machine is not ready.`,
		Example: `  # needs: an inventory of your machines (docs/many-machines.md)
  gait preflight --inventory hosts.ini --binary etcd
  # needs: an inventory of your machines
  gait preflight --inventory machines.yaml --out run/   # writes run/preflight.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ready, err := f.preflight(cmd.Context(), cmd.OutOrStdout(), out, agent.CheckArgs{Binaries: binaries})
			closeAll(ready)
			return err
		},
	}
	f.add(cmd.Flags())
	cmd.Flags().StringVar(&out, "out", "", "directory to write preflight.json (clock offsets and every check) into")
	cmd.Flags().StringSliceVar(&binaries, "binary", nil, "programs that must be installed on every machine")
	return cmd
}

// cleanInventory clears every machine of the inventory: its agent removes
// what earlier agents left, then reports what remains.
func cleanInventory(ctx context.Context, w io.Writer, f machineFlags) error {
	ms, err := f.machines()
	if err != nil {
		return err
	}
	lines := make([]string, len(ms))
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			c, err := remote.Connect(ctx, m, f.options())
			if err != nil {
				errs[i] = err
				return
			}
			defer c.Close()
			var r agent.ScanResult
			if err := c.Call(ctx, "clean", "", "", nil, &r); err != nil {
				errs[i] = err
				return
			}
			if len(r.Leftovers) == 0 {
				lines[i] = m.Name + ": clean"
				return
			}
			errs[i] = fmt.Errorf("%s: still there after cleaning: %s", m.Name, strings.Join(r.Leftovers, "; "))
		})
	}
	wg.Wait()
	for i := range ms {
		if lines[i] != "" {
			fmt.Fprintln(w, lines[i])
		}
		if errs[i] != nil {
			fmt.Fprintln(w, errs[i])
		}
	}
	return errors.Join(errs...)
}

func newAgentCmd() *cobra.Command {
	var stdio bool
	var root, cgroup string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:    "agent --stdio --root DIR",
		Short:  "Serve a control node's requests on this machine (run by gait over SSH)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !stdio {
				return errors.New("agent: --stdio is the one transport")
			}
			if !filepath.IsAbs(root) {
				return fmt.Errorf("--root %q: want an absolute path", root)
			}
			// A closed connection closes stdout and stderr too: a write
			// there must fail, not kill the agent (SIGPIPE) halfway
			// through its teardown.
			signal.Ignore(syscall.SIGPIPE)
			// sudo passes SIGHUP, SIGINT and SIGTERM on; each ends the
			// agent as a closed connection does.
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			err := agent.Serve(ctx, os.Stdin, os.Stdout, agent.Options{Root: root, Cgroup: cgroup, Timeout: timeout, Log: os.Stderr})
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&stdio, "stdio", false, "requests on stdin, responses on stdout")
	cmd.Flags().StringVar(&root, "root", inventory.DefaultRoot, "gait_root: where the agent keeps its state and scratch files")
	cmd.Flags().StringVar(&cgroup, "cgroup", testbed.DefaultCgroup, "gait_cgroup: the CPU cgroup, below the controller's root, under which the hosts' cgroups go")
	cmd.Flags().DurationVar(&timeout, "timeout", agent.DefaultTimeout, "remove everything and exit after this long without a heartbeat")
	return cmd
}

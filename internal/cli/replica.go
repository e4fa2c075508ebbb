package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gait-dev/gait/internal/replica"
	"github.com/gait-dev/gait/internal/systems/gaitredis"
	"github.com/gait-dev/gait/internal/testbed"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newReplicaCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "replica",
		Short: "Replicate unmodified redis-servers through raft, first reply wins",
		Long: `Run gait's replication agent beside unmodified redis-servers (docs/replica.md).
Agents order client commands with raft, every replica applies them to its own
redis-server in log order, and a client speaking RESP to any agent gets the first
reply any replica produced.`,
	}
	cmd.AddCommand(newReplicaAgentCmd(), newReplicaClusterCmd())
	return cmd
}

func newReplicaAgentCmd() *cobra.Command {
	var cfg replica.Config
	var read string
	cmd := &cobra.Command{
		Use:   "agent --id ID --raft ADDR --redis ADDR --listen ADDR (--bootstrap | --join ADDR) [flags]",
		Short: "Run one agent beside one redis-server until SIGINT or SIGTERM",
		Long: `Run one agent beside one redis-server until SIGINT or SIGTERM. The agent owns
that redis-server: it empties it at start and rebuilds it from the raft log.

Start a deployment with --bootstrap on one agent; every other agent names any
member's raft address with --join (and --nonvoter for a non-voting duplicate).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mode, err := replica.ParseReadMode(read)
			if err != nil {
				return err
			}
			cfg.Read = mode
			sig := notifyStop()
			defer signal.Stop(sig)
			a, err := replica.Start(cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "redis %s\n", a.ClientAddr())
			if m := a.MetricsAddr(); m != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "metrics http://%s/metrics\n", m)
			}
			<-sig
			return a.Close()
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.ID, "id", "", "raft server ID, unique in the deployment")
	f.StringVar(&cfg.RaftAddr, "raft", "", "HOST:PORT for raft and agent-to-agent messages")
	f.StringVar(&cfg.RedisAddr, "redis", "", "HOST:PORT of the local redis-server (its data is replaced)")
	f.StringVar(&cfg.Listen, "listen", "", "HOST:PORT for Redis clients")
	f.StringVar(&cfg.DataDir, "data", "", "directory for the raft log and snapshots (default: a temporary one)")
	f.BoolVar(&cfg.Bootstrap, "bootstrap", false, "start a new deployment with this agent as its only voter")
	f.StringVar(&cfg.Join, "join", "", "raft address of any member to join through")
	f.BoolVar(&cfg.NonVoter, "nonvoter", false, "join as a non-voting duplicate")
	f.StringVar(&cfg.Metrics, "metrics", "", "HOST:PORT to serve Prometheus metrics on /metrics")
	f.IntVar(&cfg.MaxRequest, "max-request", 32<<20, "largest client request in bytes")
	deploymentFlags(f, &cfg, &read)
	for _, name := range []string{"id", "raft", "redis", "listen"} {
		cmd.MarkFlagRequired(name)
	}
	return cmd
}

// deploymentFlags are the settings every agent of a deployment shares.
func deploymentFlags(f *pflag.FlagSet, cfg *replica.Config, read *string) {
	f.StringVar(read, "read", string(replica.Linearizable), "read mode: linearizable, session or any")
	f.IntVar(&cfg.Fanout, "fanout", 1, "replicas each read goes to; the first fitting answer wins")
	f.BoolVar(&cfg.WriteAll, "write-all", false, "answer a write only once every replica applied it")
}

func newReplicaClusterCmd() *cobra.Command {
	var voters, duplicates int
	var read, bandwidth, stateDir string
	var metrics, loopback bool
	var cfg replica.Config
	cmd := &cobra.Command{
		Use:   "cluster [--voters N] [--duplicates N] [--read MODE] [--fanout K] [--write-all] [--metrics] [--bandwidth RATE | --loopback]",
		Short: "Run a whole deployment on testbed hosts until SIGINT or SIGTERM",
		Long: `Start a whole deployment, one replica per testbed host (a network namespace
with an address from 198.18.0.0/15 on a link shaped to RATE, as gait testbed
up builds), each an unmodified redis-server and a gait replica agent. Print one
line "redis ADDRESS" per agent (then, with --metrics, one line "metrics URL" per
agent), run until SIGINT or SIGTERM, then stop and remove everything. Needs
root; gait clean removes what a killed run left.

With --loopback every redis-server and agent runs on 127.0.0.1 instead, in
this process, without root.`,
		Example: `  sudo gait replica cluster --voters 3 --duplicates 2 --metrics
  gait replica cluster --loopback --voters 3 --read session --fanout 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mode, err := replica.ParseReadMode(read)
			if err != nil {
				return err
			}
			cfg.Read = mode
			if loopback {
				return replicaLoopback(cmd, voters, duplicates, metrics, cfg)
			}
			bps, err := testbed.ParseBandwidth(bandwidth)
			if err != nil {
				return fmt.Errorf("--bandwidth: %w", err)
			}
			if err := testbed.NeedRoot(); err != nil {
				return fmt.Errorf("%w; run it as root, or pass --loopback to run every replica on 127.0.0.1 without root", err)
			}
			ctx, stop := testbed.SignalContext(cmd.Context())
			defer stop()
			d := gaitredis.New()
			d.Read, d.Fanout, d.WriteAll = string(cfg.Read), cfg.Fanout, cfg.WriteAll
			dep, err := d.StartOnTestbed(ctx, gaitredis.TestbedOptions{
				Voters: voters, Duplicates: duplicates, Bandwidth: bps, StateDir: stateDir, Progress: cmd.ErrOrStderr(),
			})
			if err != nil {
				return err
			}
			defer dep.Close()
			printCluster(cmd, dep.Addresses(), dep.MetricsURLs(), metrics)
			<-ctx.Done()
			if err := dep.Close(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "stopped; removed run %s\n", dep.Testbed.ID)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&voters, "voters", 3, "voting replicas, which order and persist commands")
	f.IntVar(&duplicates, "duplicates", 0, "non-voting duplicates, which apply the same log")
	f.BoolVar(&metrics, "metrics", false, "print every agent's Prometheus metrics URL (with --loopback: serve them on a loopback port)")
	deploymentFlags(f, &cfg, &read)
	f.StringVar(&bandwidth, "bandwidth", "100Mbit/s", "each testbed host's link rate, both directions")
	f.StringVar(&stateDir, "state-dir", testbed.DefaultStateDir, "where the testbed keeps its state file")
	f.BoolVar(&loopback, "loopback", false, "run every replica on 127.0.0.1 in this process, without root or testbed hosts")
	cmd.MarkFlagsMutuallyExclusive("loopback", "bandwidth")
	cmd.MarkFlagsMutuallyExclusive("loopback", "state-dir")
	return cmd
}

// replicaLoopback runs the deployment on loopback, in this process.
func replicaLoopback(cmd *cobra.Command, voters, duplicates int, metrics bool, cfg replica.Config) error {
	cfg.Log = cmd.ErrOrStderr()
	if metrics {
		cfg.Metrics = "127.0.0.1:0"
	}
	ctx, stop := testbed.SignalContext(cmd.Context())
	defer stop()
	l, err := replica.StartLocal(voters, duplicates, cfg)
	if err != nil {
		return err
	}
	var addrs, urls []string
	for _, a := range l.Agents {
		addrs = append(addrs, a.ClientAddr())
		if m := a.MetricsAddr(); m != "" {
			urls = append(urls, "http://"+m+"/metrics")
		}
	}
	printCluster(cmd, addrs, urls, metrics)
	<-ctx.Done()
	return l.Close()
}

// printCluster prints one "redis ADDRESS" line per agent, then, with
// metrics, one "metrics URL" line per agent.
func printCluster(cmd *cobra.Command, addrs, metricsURLs []string, metrics bool) {
	out := cmd.OutOrStdout()
	for _, a := range addrs {
		fmt.Fprintf(out, "redis %s\n", a)
	}
	if metrics {
		for _, u := range metricsURLs {
			fmt.Fprintf(out, "metrics %s\n", u)
		}
	}
}

// notifyStop catches SIGINT and SIGTERM from before anything starts, so a
// signal during start-up still leads to a clean stop.
func notifyStop() chan os.Signal {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	return sig
}

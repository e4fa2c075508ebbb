package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gait-dev/gait/internal/replica"
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
	var read string
	var metrics bool
	var cfg replica.Config
	cmd := &cobra.Command{
		Use:   "cluster [--voters N] [--duplicates N] [--read MODE] [--fanout K] [--write-all] [--metrics]",
		Short: "Run a whole deployment on loopback until SIGINT or SIGTERM",
		Long: `Start one redis-server and one agent per replica on 127.0.0.1, print one line
"redis ADDRESS" per agent (then, with --metrics, one line "metrics URL" per
agent), run until SIGINT or SIGTERM, then stop and remove everything.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mode, err := replica.ParseReadMode(read)
			if err != nil {
				return err
			}
			cfg.Read, cfg.Log = mode, cmd.ErrOrStderr()
			if metrics {
				cfg.Metrics = "127.0.0.1:0"
			}
			sig := notifyStop()
			defer signal.Stop(sig)
			l, err := replica.StartLocal(voters, duplicates, cfg)
			if err != nil {
				return err
			}
			for _, a := range l.Agents {
				fmt.Fprintf(cmd.OutOrStdout(), "redis %s\n", a.ClientAddr())
			}
			for _, a := range l.Agents {
				if m := a.MetricsAddr(); m != "" {
					fmt.Fprintf(cmd.OutOrStdout(), "metrics http://%s/metrics\n", m)
				}
			}
			<-sig
			return l.Close()
		},
	}
	f := cmd.Flags()
	f.IntVar(&voters, "voters", 3, "voting replicas, which order and persist commands")
	f.IntVar(&duplicates, "duplicates", 0, "non-voting duplicates, which apply the same log")
	f.BoolVar(&metrics, "metrics", false, "serve Prometheus metrics from every agent on a loopback port")
	deploymentFlags(f, &cfg, &read)
	return cmd
}

// notifyStop catches SIGINT and SIGTERM from before anything starts, so a
// signal during start-up still leads to a clean stop.
func notifyStop() chan os.Signal {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	return sig
}

package cli

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"time"

	"github.com/gait-dev/gait/internal/interrupt"
	"github.com/gait-dev/gait/internal/replica"
	replicaredis "github.com/gait-dev/gait/internal/replica/redis"
	"github.com/gait-dev/gait/internal/replica/zookeeper"
	"github.com/gait-dev/gait/internal/systems/gaitredis"
	"github.com/gait-dev/gait/internal/systems/gaitzookeeper"
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
	cmd.AddCommand(newReplicaAgentCmd(), newReplicaClusterCmd(), newReplicaRunCmd())
	return cmd
}

func newReplicaAgentCmd() *cobra.Command {
	var cfg replica.Config
	var read, server, redisAddr, zkAddr string
	var scriptStats bool
	var procs int
	cmd := &cobra.Command{
		Use:   "agent --id ID --raft ADDR (--redis ADDR | --server zookeeper --zookeeper ADDR) --listen ADDR (--bootstrap | --join ADDR) [flags]",
		Short: "Run one agent beside one redis-server until SIGINT or SIGTERM",
		Long: `Run one agent beside one redis-server until SIGINT or SIGTERM. The agent owns
that redis-server: it empties it at start and rebuilds it from the raft log.

Start a deployment with --bootstrap on one agent; every other agent names any
member's raft address with --join (and --nonvoter for a non-voting duplicate).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mode, err := parseReadFlag(read)
			if err != nil {
				return err
			}
			cfg.Read = mode
			if err := agentServer(&cfg, server, redisAddr, zkAddr, scriptStats); err != nil {
				return err
			}
			if err := cfg.Check(); err != nil {
				return err
			}
			if procs < 0 {
				return fmt.Errorf("--procs %d: want 0 (every CPU) or more", procs)
			}
			if procs > 0 {
				runtime.GOMAXPROCS(procs)
			}
			// Caught from before anything starts, so a signal during
			// start-up still leads to a clean stop.
			sig := interrupt.Catch(cmd.Context(), cmd.ErrOrStderr(), interrupt.Messages{})
			defer sig.Stop()
			a, err := replica.Start(cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", server, a.ClientAddr())
			if m := a.MetricsAddr(); m != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "metrics http://%s/metrics\n", m)
			}
			<-sig.Context().Done()
			return a.Close()
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.ID, "id", "", "raft server ID, unique in the deployment")
	f.StringVar(&cfg.RaftAddr, "raft", "", "HOST:PORT for raft and agent-to-agent messages")
	f.StringVar(&redisAddr, "redis", "", "HOST:PORT of the local redis-server (its data is replaced)")
	f.StringVar(&cfg.Listen, "listen", "", "HOST:PORT for Redis clients")
	f.StringVar(&cfg.DataDir, "data", "", "directory for the raft log and snapshots (default: a temporary one)")
	f.BoolVar(&cfg.Bootstrap, "bootstrap", false, "start a new deployment with this agent as its only voter")
	f.StringVar(&cfg.Join, "join", "", "raft address of any member to join through")
	f.BoolVar(&cfg.NonVoter, "nonvoter", false, "join as a non-voting duplicate")
	f.StringVar(&cfg.Metrics, "metrics", "", "HOST:PORT to serve Prometheus metrics on /metrics")
	f.IntVar(&cfg.MaxRequest, "max-request", replica.DefaultMaxRequest, fmt.Sprintf("largest client request in bytes, %d to %d", replica.MinRequest, replica.MaxRequest))
	f.IntVar(&cfg.RequestMemory, "request-memory", 0, fmt.Sprintf("bytes the requests of all clients together may hold while they arrive; one over it is refused (default %d MiB, or --max-request if larger)", replica.DefaultRequestMemory>>20))
	f.IntVar(&procs, "procs", 0, "threads that run the agent's Go code at once (GOMAXPROCS); 0: one per CPU. Agents sharing a machine do better with their share of its CPUs")
	f.DurationVar(&cfg.RequestTimeout, "request-timeout", 10*time.Second, "longest pause within a request before the agent answers an error and closes the connection")
	f.StringVar(&server, "server", "redis", "the server the agent fronts: redis (--redis), or zookeeper (--zookeeper)")
	f.StringVar(&zkAddr, "zookeeper", "", "with --server zookeeper: HOST:PORT of the local ZooKeeper server (its data is replaced)")
	deploymentFlags(f, &cfg, &read, &scriptStats)
	for _, name := range []string{"id", "raft", "listen"} {
		cmd.MarkFlagRequired(name)
	}
	return cmd
}

// agentServer sets the agent's server and adapter from --server, --redis,
// --zookeeper and --script-commandstats.
func agentServer(cfg *replica.Config, server, redisAddr, zkAddr string, scriptStats bool) error {
	switch server {
	case "redis":
		if redisAddr == "" || zkAddr != "" {
			return errors.New("--server redis takes --redis HOST:PORT (and no --zookeeper)")
		}
		if err := serverAddr("--redis", redisAddr); err != nil {
			return err
		}
		cfg.Adapter, cfg.ServerAddr = replicaredis.New(replicaredis.Options{ScriptCommandStats: scriptStats}), redisAddr
	case "zookeeper":
		if zkAddr == "" || redisAddr != "" {
			return errors.New("--server zookeeper takes --zookeeper HOST:PORT (and no --redis)")
		}
		if err := serverAddr("--zookeeper", zkAddr); err != nil {
			return err
		}
		cfg.Adapter, cfg.ServerAddr = &zookeeper.Adapter{}, zkAddr
	default:
		return fmt.Errorf("--server %q: want redis or zookeeper", server)
	}
	return nil
}

// serverAddr checks the local server's HOST:PORT.
func serverAddr(flag, addr string) error {
	if host, port, err := net.SplitHostPort(addr); err != nil || host == "" {
		return fmt.Errorf("%s %q: want HOST:PORT", flag, addr)
	} else if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%s %q: want a port from 1 to 65535", flag, addr)
	}
	return nil
}

// parseReadFlag reads --read.
func parseReadFlag(read string) (replica.ReadMode, error) {
	mode, err := replica.ParseReadMode(read)
	if err != nil {
		return "", fmt.Errorf("--read %q: want %s, %s or %s", read, replica.Linearizable, replica.Session, replica.Any)
	}
	return mode, nil
}

// deploymentFlags are the settings every agent of a deployment shares.
func deploymentFlags(f *pflag.FlagSet, cfg *replica.Config, read *string, scriptStats *bool) {
	f.StringVar(read, "read", string(replica.Linearizable), "read mode: linearizable, session or any")
	f.IntVar(&cfg.Fanout, "fanout", 1, "replicas each read goes to, 1 or more; the first fitting answer wins")
	f.BoolVar(&cfg.WriteAll, "write-all", false, "answer a write only once every replica applied it")
	f.StringVar((*string)(&cfg.Durability), "durability", string(replica.DurableDisk),
		"when a write is acknowledged: disk (a majority fsynced it) or replicated (a majority holds it in memory; fsynced every 10ms)")
	f.BoolVar(scriptStats, "script-commandstats", false,
		"count in INFO commandstats the commands clients' scripts call, as redis does (costs EVAL about a third of its throughput)")
}

func newReplicaClusterCmd() *cobra.Command {
	var f clusterFlags
	cmd := &cobra.Command{
		Use:   "cluster [--voters N] [--duplicates N] [--read MODE] [--fanout K] [--write-all] [--metrics] [--bandwidth RATE | --loopback]",
		Short: "Run a whole deployment on testbed hosts until SIGINT or SIGTERM",
		Long: `Start a whole deployment, one replica per testbed host (a network namespace
with an address from 198.18.0.0/15 on a link shaped to RATE, as gait testbed
up builds), each an unmodified redis-server and a gait replica agent. Print one
line "redis ADDRESS" per agent (then, with --metrics, one line "metrics URL" per
agent), run until SIGINT or SIGTERM, then stop and remove everything. A second
SIGINT or SIGTERM kills the agents and redis-servers at once, still removes
everything, and exits with status 130. Needs root; gait clean removes what a
killed run left.

With --server zookeeper every replica is an unmodified ZooKeeper server and
its agent instead, and the lines read "zookeeper ADDRESS".

With --loopback every redis-server and agent runs on 127.0.0.1 instead, in
this process, without root; its files go to one directory in $TMPDIR.`,
		Example: `  # long: runs until Ctrl-C, root
  sudo gait replica cluster --voters 3 --duplicates 2 --metrics
  # long: runs until Ctrl-C
  gait replica cluster --loopback --voters 3 --read session --fanout 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			if f.loopback {
				return replicaLoopback(cmd, f)
			}
			return replicaTestbed(cmd, f)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&f.voters, "voters", 3, fmt.Sprintf("voting replicas, which order and persist commands (1 to %d)", gaitredis.MaxReplicas))
	fs.IntVar(&f.duplicates, "duplicates", 0, "non-voting duplicates, which apply the same log (0 or more; voters and duplicates together at most "+strconv.Itoa(gaitredis.MaxReplicas)+")")
	fs.BoolVar(&f.metrics, "metrics", false, "print every agent's Prometheus metrics URL (with --loopback: serve them on a loopback port)")
	deploymentFlags(fs, &f.cfg, &f.read, &f.scriptStats)
	fs.Lookup("fanout").Usage = "replicas each read goes to, 1 to voters+duplicates; the first fitting answer wins"
	fs.StringVar(&f.bandwidth, "bandwidth", "100Mbit/s", "each testbed host's link rate, both directions")
	fs.StringVar(&f.stateDir, "state-dir", testbed.DefaultStateDir, "where the testbed keeps its state file")
	fs.BoolVar(&f.loopback, "loopback", false, "run every replica on 127.0.0.1 in this process, without root or testbed hosts")
	fs.StringVar(&f.server, "server", "redis", "the server behind every agent: redis, or zookeeper (docs/systems/gait-zookeeper.md)")
	fs.IntVar(&f.groupSize, "group-size", 1, "with --server zookeeper: ZooKeeper servers per replica, 1 (standalone) or 3 (an ensemble)")
	return cmd
}

// clusterFlags are gait replica cluster's flags.
type clusterFlags struct {
	voters, duplicates        int
	read, bandwidth, stateDir string
	metrics, loopback         bool
	scriptStats               bool // --script-commandstats
	server                    string
	groupSize                 int
	cfg                       replica.Config
	bps                       uint64 // --bandwidth, parsed
}

// check validates every flag before anything is created, and fills in
// the parsed read mode and bandwidth. Its error names the flag, its value
// and what the flag takes.
func (f *clusterFlags) check(cmd *cobra.Command) error {
	mode, err := parseReadFlag(f.read)
	if err != nil {
		return err
	}
	f.cfg.Read = mode
	if _, err := replica.ParseDurability(string(f.cfg.Durability)); err != nil {
		return fmt.Errorf("--durability %q: want %s or %s", f.cfg.Durability, replica.DurableDisk, replica.DurableReplicated)
	}
	if err := gaitredis.CheckShape(f.voters, f.duplicates, f.cfg.Fanout); err != nil {
		var r *gaitredis.RangeError
		if errors.As(err, &r) {
			return fmt.Errorf("--%s %d: want %s", r.Setting, r.Value, r.Want)
		}
		return err
	}
	changed := cmd.Flags().Changed
	if err := f.checkServer(changed); err != nil {
		return err
	}
	if f.loopback {
		for _, name := range []string{"bandwidth", "state-dir"} {
			if changed(name) {
				return fmt.Errorf("--%s is for testbed hosts; --loopback runs without them (drop one of the two)", name)
			}
		}
		return nil
	}
	if f.bps, err = testbed.ParseBandwidth(f.bandwidth); err != nil {
		return fmt.Errorf("--bandwidth: %w", err)
	}
	return replica.CheckDir("--state-dir", f.stateDir)
}

// checkServer checks --server and --group-size.
func (f *clusterFlags) checkServer(changed func(string) bool) error {
	switch f.server {
	case "redis":
		if changed("group-size") {
			return fmt.Errorf("--group-size is for --server zookeeper (each replica's ZooKeeper servers)")
		}
		return nil
	case "zookeeper":
	default:
		return fmt.Errorf("--server %q: want redis or zookeeper", f.server)
	}
	if err := gaitzookeeper.CheckGroupSize(f.groupSize); err != nil {
		return fmt.Errorf("--group-size %d: want 1 (a standalone server per replica) or 3 (an ensemble per replica)", f.groupSize)
	}
	return nil
}

// replicaTestbed runs the deployment on testbed hosts, one per replica.
func replicaTestbed(cmd *cobra.Command, f clusterFlags) error {
	if err := testbed.NeedRoot(); err != nil {
		return fmt.Errorf("%w; run it as root, or pass --loopback to run every replica on 127.0.0.1 without root", err)
	}
	stderr := cmd.ErrOrStderr()
	in := clusterSignals(cmd)
	defer in.Stop()
	d := gaitredis.New()
	if f.server == "zookeeper" {
		d = gaitzookeeper.NewGroup(f.groupSize)
	}
	d.Read, d.Fanout, d.WriteAll, d.Durability = string(f.cfg.Read), f.cfg.Fanout, f.cfg.WriteAll, string(f.cfg.Durability)
	d.ScriptCommandStats = f.scriptStats
	dep, err := d.StartOnTestbed(in.Context(), gaitredis.TestbedOptions{
		Voters: f.voters, Duplicates: f.duplicates, Bandwidth: f.bps, StateDir: f.stateDir,
		Progress: stderr, Kill: in.Hurry(),
	})
	if err != nil {
		return in.End(stderr, err)
	}
	defer dep.Close()
	printCluster(cmd, f.server, dep.Addresses(), dep.MetricsURLs(), f.metrics)
	<-in.Context().Done()
	if err := dep.Close(); err != nil {
		return in.End(stderr, err)
	}
	fmt.Fprintf(stderr, "%s; removed run %s\n", how(in), dep.Testbed.ID)
	return in.End(stderr, nil)
}

// replicaLoopback runs the deployment on loopback, in this process.
func replicaLoopback(cmd *cobra.Command, f clusterFlags) error {
	stderr := cmd.ErrOrStderr()
	cfg := f.cfg
	cfg.Log = stderr
	if f.metrics {
		cfg.Metrics = "127.0.0.1:0"
	}
	in := clusterSignals(cmd)
	defer in.Stop()
	opts := gaitredis.LocalOptions{Voters: f.voters, Duplicates: f.duplicates, Base: cfg, Kill: in.Hurry(), Progress: stderr,
		Redis: replicaredis.Options{ScriptCommandStats: f.scriptStats}}
	if f.server == "zookeeper" {
		opts.Server, _ = gaitzookeeper.LocalServer(f.groupSize) // checked
	}
	l, err := gaitredis.StartLocalWith(in.Context(), opts)
	if err != nil {
		return in.End(stderr, err)
	}
	defer l.Close()
	var addrs, urls []string
	for _, a := range l.Agents {
		addrs = append(addrs, a.ClientAddr())
		if m := a.MetricsAddr(); m != "" {
			urls = append(urls, "http://"+m+"/metrics")
		}
	}
	printCluster(cmd, f.server, addrs, urls, f.metrics)
	<-in.Context().Done()
	if err := l.Close(); err != nil {
		return in.End(stderr, err)
	}
	fmt.Fprintf(stderr, "%s; removed %s\n", how(in), l.Dir)
	return in.End(stderr, nil)
}

// clusterSignals: a second signal kills the agents and redis-servers at
// once rather than wait for them, and still removes everything, before
// gait exits (unlike testbed.SignalContext, which exits once the hosts are
// gone: a loopback deployment has no testbed to remove).
func clusterSignals(cmd *cobra.Command) *interrupt.Signals {
	return interrupt.Catch(cmd.Context(), cmd.ErrOrStderr(), interrupt.Messages{
		First:  "stopping; a second SIGINT or SIGTERM kills every agent and redis-server at once",
		Second: "second signal: killing every agent and redis-server at once, then removing the rest",
		Later:  "still removing the deployment; kill -9 would leave it to gait clean",
	})
}

// how says how the deployment ended: stopped, or killed after a second signal.
func how(s *interrupt.Signals) string {
	if s.Hurried() {
		return "killed"
	}
	return "stopped"
}

// printCluster prints one "SERVER ADDRESS" line per agent ("redis" or
// "zookeeper"), then, with metrics, one "metrics URL" line per agent.
func printCluster(cmd *cobra.Command, server string, addrs, metricsURLs []string, metrics bool) {
	out := cmd.OutOrStdout()
	for _, a := range addrs {
		fmt.Fprintf(out, "%s %s\n", server, a)
	}
	if metrics {
		for _, u := range metricsURLs {
			fmt.Fprintf(out, "metrics %s\n", u)
		}
	}
}

package replica

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are one agent's Prometheus metrics, in a registry of its own so
// several agents can share a process (tests, gait replica cluster).
type metrics struct {
	reg           *prometheus.Registry
	commit        prometheus.Histogram
	read          prometheus.Histogram
	appendSecs    prometheus.Histogram
	appendBatch   prometheus.Histogram
	applySecs     prometheus.Histogram
	applyBatch    prometheus.Histogram
	leaderChanges prometheus.Counter
	quarantines   prometheus.Counter
	limpMarks     prometheus.Counter
	transfers     prometheus.Counter
	reproposals   prometheus.Counter
	// Linearizable read indexes the leader gave under its lease, and
	// rounds of messages it ran for them instead.
	leaseReads, indexRounds prometheus.Counter
	stages                  *prometheus.HistogramVec
	// replies holds, per replica, the time from proposing a write here
	// to that replica's reply: each duplicate's own latency, where commit
	// holds only the first of them.
	replies *prometheus.HistogramVec
	// stageObs holds each stage's histogram, looked up once: a write
	// observes several, a pipelined request one per command.
	stageObs map[string]prometheus.Observer
}

// writeStages are the stages of write_stage_seconds.
var writeStages = []string{"request_read", "propose", "raft_commit", "commit", "apply_queue", "server", "reply", "remote_reply"}

func newMetrics(a *Agent) *metrics {
	secs := prometheus.ExponentialBuckets(50e-6, 2, 18) // 50 µs .. 6.5 s
	sizes := prometheus.ExponentialBuckets(1, 2, 11)    // 1 .. 1024 entries
	hist := func(name, help string, buckets []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "gait_replica", Name: name, Help: help, Buckets: buckets})
	}
	count := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "gait_replica", Name: name, Help: help})
	}
	m := &metrics{
		reg:           prometheus.NewRegistry(),
		commit:        hist("commit_seconds", "From proposing a write to its first replica's reply (commit plus apply).", replyBuckets),
		read:          hist("read_seconds", "From a read's arrival to its first fitting answer.", secs),
		appendSecs:    hist("log_append_seconds", "One append to the raft log, fsync included.", secs),
		appendBatch:   hist("log_append_entries", "Entries per raft log append: the group commit.", sizes),
		applySecs:     hist("apply_seconds", "One batch of committed entries run on the local server.", secs),
		applyBatch:    hist("apply_entries", "Entries per batch run on the local server.", sizes),
		leaderChanges: count("leader_changes_total", "Times this agent gained or lost raft leadership."),
		quarantines:   count("quarantines_total", "Replicas this agent quarantined for a divergent reply."),
		limpMarks:     count("limping_marks_total", "Times this agent marked a replica as limping."),
		transfers:     count("leadership_transfers_total", "Times this agent, leading and limping, handed leadership on."),
		reproposals:   count("reproposals_total", "Writes proposed again after their leader failed them or lost leadership."),
		leaseReads:    count("lease_read_indexes_total", "Linearizable read indexes this leader gave under its lease, with no round of messages."),
		indexRounds:   count("read_index_rounds_total", "Rounds of messages this leader ran to confirm its leadership for reads (no lease)."),
		stages: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "gait_replica", Name: "write_stage_seconds",
			Help: "Where a write's time goes, stage by stage (docs/replica.md): request_read, commit (proposal to committed here: " +
				"leader append, replication round trip and follower append, commit), apply_queue, server (the local server ran it), reply; remote_reply " +
				"when another replica answered first. When the leader proposed the write and answered it, commit is also split " +
				"into propose (until raft's leader loop took it into the log) and raft_commit (leader append, replication, " +
				"follower append, commit).", Buckets: secs}, []string{"stage"}),
	}
	m.replies = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "gait_replica", Name: "reply_seconds",
		Help: "From proposing a write here to each replica's reply, by replica: what each duplicate alone takes, where " +
			"commit_seconds holds only the first reply.", Buckets: replyBuckets}, []string{"replica"})
	m.stageObs = map[string]prometheus.Observer{}
	for _, name := range writeStages {
		m.stageObs[name] = m.stages.WithLabelValues(name)
	}
	m.reg.MustRegister(m.commit, m.read, m.appendSecs, m.appendBatch, m.applySecs, m.applyBatch,
		m.leaderChanges, m.quarantines, m.limpMarks, m.transfers, m.reproposals, m.leaseReads, m.indexRounds, m.stages, m.replies, &stateCollector{a: a})
	return m
}

// replyBuckets are fine enough (15 % apart, 100 µs to 1.8 s) to read a
// duplicate's distribution at a latency bound between its edges, as the
// Zoolander study does (docs/results/gait-zookeeper-zoolander.md).
var replyBuckets = prometheus.ExponentialBuckets(100e-6, 1.15, 71)

func (m *metrics) observeAppend(d time.Duration, entries int) {
	m.appendSecs.Observe(d.Seconds())
	m.appendBatch.Observe(float64(entries))
}

// stage records one write stage's time.
func (m *metrics) stage(name string, d time.Duration) {
	m.stageObs[name].Observe(d.Seconds())
}

func (m *metrics) observeApply(d time.Duration, entries int) {
	m.applySecs.Observe(d.Seconds())
	m.applyBatch.Observe(float64(entries))
}

// stateCollector reports the agent's current view on every scrape.
type stateCollector struct{ a *Agent }

var (
	descLag         = desc("apply_lag_seconds", "How long ago the most advanced replica passed this replica's applied index.", "replica")
	descApplied     = desc("applied_index", "Last log index the replica reported as applied to its server.", "replica")
	descLimping     = desc("limping", "1 while the replica is marked as limping.", "replica")
	descQuarantined = desc("quarantined", "1 once the replica is quarantined for divergence.", "replica")
	descInflight    = desc("peer_reads_inflight", "Reads outstanding at the replica.", "replica")
	descReplyDelay  = desc("reply_delay_seconds", "Smoothed time from proposing a write here to the replica's reply.", "replica")
	descNetwork     = desc("network_seconds", "The replica's round trip to its nearest peer, smoothed: slow on every link means its own link limps.", "replica")
	descProbe       = desc("probe_seconds", "The replica's probe round trip to its nearest peer (the least of the last five): a slow link shows in the time its bytes take.", "replica")
	descDiskP75     = desc("log_append_p75_seconds", "The 75th percentile of the replica's raft log appends over the last 0.5 to 1 s, as it reports: a log disk slower than its peers' shows in it.", "replica")
	descThrottled   = desc("cpu_throttled_share", "The share of the last 0.3 s the replica's cgroup was held back by its CPU quota, per CPU, as it reports: 0 without a quota.", "replica")
	descPeerQueue   = desc("peer_queue_length", "Messages queued for the agent at this raft address.", "peer")
	descApplyQueue  = desc("apply_queue_length", "Committed entries waiting for the local server.")
	descWrites      = desc("pending_writes", "Writes proposed here and not yet replied to by every replica.")
	descRequests    = desc("pending_requests", "Requests to other agents awaiting an answer.")
	descLeader      = desc("leader", "1 while this agent is the raft leader.")
	descAside       = desc("standing_aside", "1 while this replica, limping and not leading, keeps out of elections (it still votes).")
	descFollows     = desc("follows", "1, labelled with the raft ID of the leader this agent knows; absent while it knows none.", "leader")
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("gait_replica_"+name, help, labels, nil)
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLag, descApplied, descLimping, descQuarantined, descInflight,
		descReplyDelay, descNetwork, descProbe, descDiskP75, descThrottled, descPeerQueue, descApplyQueue, descWrites, descRequests, descLeader, descAside, descFollows} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	a := c.a
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, r := range a.Replicas() {
		gauge(descLag, r.Lag.Seconds(), r.ID)
		gauge(descApplied, float64(r.Applied), r.ID)
		gauge(descLimping, bool01(r.Limping), r.ID)
		gauge(descQuarantined, bool01(r.Quarantined), r.ID)
		gauge(descInflight, float64(r.Inflight), r.ID)
		gauge(descReplyDelay, r.ReplySecs, r.ID)
		gauge(descNetwork, r.NetSecs, r.ID)
		gauge(descProbe, r.ProbeSecs, r.ID)
		gauge(descDiskP75, r.AppendP75Secs, r.ID)
		gauge(descThrottled, r.Throttled, r.ID)
	}
	a.mu.Lock()
	for addr, p := range a.peers {
		gauge(descPeerQueue, float64(len(p.out)), addr)
	}
	writes, requests := len(a.writes), len(a.pending)
	a.mu.Unlock()
	gauge(descWrites, float64(writes))
	gauge(descRequests, float64(requests))
	if a.fsm != nil {
		gauge(descApplyQueue, float64(a.fsm.queueLen()))
	}
	gauge(descLeader, bool01(a.IsLeader()))
	gauge(descAside, bool01(a.health.aside.Load()))
	if a.raft != nil {
		if _, id := a.raft.LeaderWithID(); id != "" {
			gauge(descFollows, 1, string(id))
		}
	}
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// serveMetrics serves /metrics on cfg.Metrics, when set, and Go's profiles
// and execution trace under /debug/pprof/: the agent's CPU per request and
// its requests' waits are measured on running deployments (docs/replica.md,
// the fast path), where a test's profile would leave out the testbed's
// network and processes.
func (a *Agent) serveMetrics() error {
	if a.cfg.Metrics == "" {
		return nil
	}
	ln, err := net.Listen("tcp", a.cfg.Metrics)
	if err != nil {
		return fmt.Errorf("listen for metrics: %w", err)
	}
	a.metricsLn = ln
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(a.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	a.metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	a.wg.Add(1)
	go func() { defer a.wg.Done(); a.metricsSrv.Serve(ln) }()
	return nil
}

package gaitredis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/systems/prom"
	dto "github.com/prometheus/client_model/go"
)

const (
	mLeader  = "gait_replica_leader"
	mFollows = "gait_replica_follows"
)

// Gauges are an agent's own current values (a per-peer gauge: the largest
// over its peers).
var Gauges = []string{
	mLeader,
	"gait_replica_apply_queue_length",
	"gait_replica_pending_writes",
	"gait_replica_pending_requests",
	"gait_replica_peer_queue_length",
}

// ReplicaGauges are what agents report about every replica (labelled by
// its raft ID, which is its host name). Each is keyed by the replica's
// host and reported as the largest value any agent reports: the most
// advanced applied index, the longest apply lag, any mark of limping or
// quarantine.
var ReplicaGauges = []string{
	"gait_replica_apply_lag_seconds",
	"gait_replica_applied_index",
	"gait_replica_limping",
	"gait_replica_quarantined",
	"gait_replica_peer_reads_inflight",
	"gait_replica_network_seconds",
	"gait_replica_probe_seconds",
	"gait_replica_log_append_p75_seconds",
	"gait_replica_cpu_throttled_share",
}

// Counters are reported as the agent's running total since it started.
var Counters = []string{
	"gait_replica_leader_changes_total",
	"gait_replica_quarantines_total",
	"gait_replica_limping_marks_total",
	"gait_replica_leadership_transfers_total",
	"gait_replica_reproposals_total",
}

// Histograms are latencies in seconds, reported as the mean of the
// observations since the previous scrape (the first: since the agent
// started); left out when there was none, rather than repeating a value.
var Histograms = []string{
	"gait_replica_commit_seconds",
	"gait_replica_read_seconds",
	"gait_replica_log_append_seconds",
	"gait_replica_apply_seconds",
}

// Metrics scrapes every agent's /metrics at once, each within ctx, and
// returns Gauges, ReplicaGauges, Counters and Histograms keyed
// "name{host=h}". An agent that cannot be scraped adds nothing and its
// failure to the error; the map holds what the others gave.
func (c *Cluster) Metrics(ctx context.Context) (map[string]float64, error) {
	fams, errs := c.scrapeAll(ctx, 0)
	out := map[string]float64{}
	for i, m := range c.members {
		if errs[i] == nil {
			c.values(out, m.host.Name(), fams[i])
		}
	}
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("%s metrics: %w", c.d.Name(), err)
	}
	return out, nil
}

// scrapeAll reads every agent's metrics at once, each bounded by timeout
// when it is not 0.
func (c *Cluster) scrapeAll(ctx context.Context, timeout time.Duration) ([]map[string]*dto.MetricFamily, []error) {
	fams := make([]map[string]*dto.MetricFamily, len(c.members))
	errs := make([]error, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Go(func() {
			ctx := ctx
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			fams[i], errs[i] = c.scrape(ctx, m)
		})
	}
	wg.Wait()
	return fams, errs
}

func (c *Cluster) scrape(ctx context.Context, m *member) (map[string]*dto.MetricFamily, error) {
	fams, err := prom.Scrape(ctx, c.http, c.MetricsURL(m.host.Name()))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.host.Name(), err)
	}
	return fams, nil
}

// values adds one agent's metrics to out, updating the histogram snapshots.
func (c *Cluster) values(out map[string]float64, host string, fams map[string]*dto.MetricFamily) {
	key := func(name, h string) string { return name + "{host=" + h + "}" }
	for _, name := range slices.Concat(Gauges, Counters) {
		if f, ok := fams[name]; ok && len(f.GetMetric()) > 0 {
			out[key(name, host)] = largest(f.GetMetric())
		}
	}
	for _, name := range ReplicaGauges {
		for _, m := range fams[name].GetMetric() {
			k := key(name, label(m, "replica"))
			if v, seen := out[k]; !seen || value(m) > v {
				out[k] = value(m)
			}
		}
	}
	for _, name := range Histograms {
		f, ok := fams[name]
		if !ok || len(f.GetMetric()) == 0 {
			continue
		}
		if mean, ok := c.means.Mean(host+"/"+name, f.GetMetric()[0].GetHistogram()); ok {
			out[key(name, host)] = mean
		}
	}
}

// gauge returns the value of an unlabelled gauge, or -1 when missing.
func gauge(fams map[string]*dto.MetricFamily, name string) float64 {
	f, ok := fams[name]
	if !ok || len(f.GetMetric()) == 0 {
		return -1
	}
	return value(f.GetMetric()[0])
}

func largest(ms []*dto.Metric) float64 {
	best := value(ms[0])
	for _, m := range ms[1:] {
		best = max(best, value(m))
	}
	return best
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// label1 is a label of a family's first metric, "" when missing.
func label1(fams map[string]*dto.MetricFamily, family, name string) string {
	f, ok := fams[family]
	if !ok || len(f.GetMetric()) == 0 {
		return ""
	}
	return label(f.GetMetric()[0], name)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

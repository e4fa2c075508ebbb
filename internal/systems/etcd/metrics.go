package etcd

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/prom"
	dto "github.com/prometheus/client_model/go"
)

// Gauges are reported as the member's current value.
var Gauges = []string{
	"etcd_server_proposals_pending",
	"etcd_server_has_leader",
	"etcd_server_is_leader",
}

// Counters are reported as the member's running total since it started.
var Counters = []string{
	"etcd_server_leader_changes_seen_total",
	"etcd_server_slow_apply_total",
	"etcd_server_proposals_failed_total",
	// Leases the leader revoked, expired or not renewed in time: the
	// server-side count of etcd-io/etcd#15247.
	"etcd_debugging_lease_revoked_total",
}

// Histograms are latency histograms in seconds, reported as the mean of the
// observations made since the previous scrape (the first scrape: since the
// member started). A mean reacts to every slow observation, where a p99 read
// from etcd's doubling buckets could only move in factors of two. When no
// observation was made since the previous scrape, the key is left out rather
// than repeating an old value. A histogram with one series per peer (the
// round-trip time, labelled To) is reported as the largest mean over peers,
// which is the slowest link the member sees.
var Histograms = []string{
	"etcd_disk_wal_fsync_duration_seconds",
	"etcd_disk_backend_commit_duration_seconds",
	"etcd_network_peer_round_trip_time_seconds",
}

// Metrics scrapes every member's /metrics and returns the values of Gauges,
// Counters and Histograms keyed "name{host=h}". Members are scraped at once,
// each within ctx. A member that cannot be scraped adds nothing to the map and
// its failure to the error; the map holds what the others gave.
func (c *Cluster) Metrics(ctx context.Context) (map[string]float64, error) {
	out, err := systems.ScrapeAll(len(c.members), func(i int, vals map[string]float64) error {
		m := c.members[i]
		fams, err := c.scrape(ctx, m)
		if err != nil {
			return err
		}
		maps.Copy(vals, c.values(m.host.Name(), fams))
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("etcd metrics: %w", err)
	}
	return out, nil
}

func (c *Cluster) scrape(ctx context.Context, m *member) (map[string]*dto.MetricFamily, error) {
	fams, err := prom.Scrape(ctx, c.http, c.d.url(m.host, c.d.MetricsPort)+"/metrics")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.host.Name(), err)
	}
	return fams, nil
}

// values turns one member's metric families into keyed values, updating the
// histogram snapshots.
func (c *Cluster) values(host string, fams map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	key := func(name string) string { return name + "{host=" + host + "}" }
	for _, name := range slices.Concat(Gauges, Counters) {
		if f, ok := fams[name]; ok {
			out[key(name)] = total(f)
		}
	}
	for _, name := range Histograms {
		f, ok := fams[name]
		if !ok {
			continue
		}
		found, worst := false, 0.0
		for _, m := range f.GetMetric() {
			mean, ok := c.means.Mean(host+"/"+name+labels(m), m.GetHistogram())
			if !ok {
				continue
			}
			if !found || mean > worst {
				found, worst = true, mean
			}
		}
		if found {
			out[key(name)] = worst
		}
	}
	return out
}

// total adds up the values of a gauge or counter family's series.
func total(f *dto.MetricFamily) float64 {
	var sum float64
	for _, m := range f.GetMetric() {
		switch {
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum
}

// labels renders a series' labels, telling apart the series of one family.
func labels(m *dto.Metric) string {
	var b strings.Builder
	for _, l := range m.GetLabel() {
		fmt.Fprintf(&b, "{%s=%s}", l.GetName(), l.GetValue())
	}
	return b.String()
}

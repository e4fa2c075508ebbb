package redis

import (
	"context"
	"fmt"
	"strconv"

	"github.com/gait-dev/gait/internal/systems"
)

// InfoFields are the fields of INFO that Metrics reports as they are, as
// gauges or running totals: redis_<field>{host=h}.
var InfoFields = []string{"connected_clients", "used_memory", "instantaneous_ops_per_sec",
	"total_commands_processed", "keyspace_hits", "keyspace_misses",
	// Replication: the primary's stream position, the part of it kept
	// for partial resyncs, and how often a replica needed a full copy.
	"master_repl_offset", "repl_backlog_histlen", "sync_full", "sync_partial_ok", "connected_slaves",
	// The append-only file: fsyncs that lagged behind (appendfsync everysec).
	"aof_delayed_fsync"}

// Metrics reads every server's INFO and, on the primary, its replicas'
// links, keyed by host:
//   - redis_<field>{host=h} for InfoFields;
//   - redis_primary{host=h}: 1 on a primary, 0 on a replica;
//   - redis_repl_lag_bytes{host=r}: how far replica r's acknowledged
//     offset is behind the primary's (bytes of the replication stream);
//   - redis_replica_omem_bytes{host=r}: the output buffer of the
//     primary's link to r (CLIENT LIST's omem), what it has not yet sent;
//   - redis_sentinel_failovers{host=s}: +switch-master events Sentinel s
//     has published since the cluster started, with Sentinel.
func (c *Cluster) Metrics(ctx context.Context) (map[string]float64, error) {
	hostOf := map[string]string{}
	for _, m := range c.members {
		hostOf[m.host.Address()] = m.host.Name()
	}
	name := func(ip string) string {
		if h, ok := hostOf[ip]; ok {
			return h
		}
		return ip
	}
	out, err := systems.ScrapeAll(len(c.members), func(i int, vals map[string]float64) error {
		m := c.members[i]
		h := m.host.Name()
		si, err := readInfo(ctx, c.addr(m), true)
		if err != nil {
			return fmt.Errorf("%s: %w", h, err)
		}
		for _, f := range InfoFields {
			if v, err := strconv.ParseFloat(si.fields[f], 64); err == nil {
				vals["redis_"+f+"{host="+h+"}"] = v
			}
		}
		vals["redis_primary{host="+h+"}"] = 0
		if si.rep.Role != "primary" {
			return nil
		}
		vals["redis_primary{host="+h+"}"] = 1
		for _, l := range si.rep.Replicas {
			vals["redis_repl_lag_bytes{host="+name(l.IP)+"}"] = float64(si.rep.Offset - l.Offset)
		}
		for ip, b := range si.buffers {
			vals["redis_replica_omem_bytes{host="+name(ip)+"}"] = b
		}
		return nil
	})
	for h, n := range c.failovers {
		out["redis_sentinel_failovers{host="+h+"}"] = float64(n.Load())
	}
	if err != nil {
		return out, fmt.Errorf("redis metrics: %w", err)
	}
	return out, nil
}

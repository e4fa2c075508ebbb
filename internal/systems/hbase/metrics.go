package hbase

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gait-dev/gait/internal/systems"
)

// bean is one JMX bean of a daemon and the attributes gait reports of it,
// each under the name it is reported as.
type bean struct {
	query string
	attrs map[string]string // JMX attribute -> metric name
}

// regionServerBeans are what a region server says of its write-ahead log
// (how long its syncs to the DataNodes take, the slow ones, the rolls
// they asked for: HBase's own remedy for a slow pipeline is a new WAL
// after a sync slower than hbase.regionserver.wal.roll.on.sync.ms),
// its flush and compaction queues and its block cache, and of its RPC
// server (the calls queued and the handlers busy: the paper's B4 has
// every handler held by writes waiting on a limping DataNode).
var regionServerBeans = []bean{
	{"Hadoop:service=HBase,name=RegionServer,sub=WAL", map[string]string{
		"SyncTime_mean":            "hbase_wal_sync_ms_mean",
		"SyncTime_99th_percentile": "hbase_wal_sync_ms_p99",
		"SyncTime_max":             "hbase_wal_sync_ms_max",
		"slowAppendCount":          "hbase_wal_slow_appends_total",
		"slowSyncRollRequest":      "hbase_wal_slow_sync_rolls_total",
		"lowReplicaRollRequest":    "hbase_wal_low_replica_rolls_total",
		"rollRequest":              "hbase_wal_rolls_total",
		"writtenBytes":             "hbase_wal_written_bytes_total",
		"AppendTime_mean":          "hbase_wal_append_ms_mean",
	}},
	{"Hadoop:service=HBase,name=RegionServer,sub=Server", map[string]string{
		"flushQueueLength":      "hbase_flush_queue_length",
		"compactionQueueLength": "hbase_compaction_queue_length",
		"blockCacheHitCount":    "hbase_block_cache_hits_total",
		"blockCacheMissCount":   "hbase_block_cache_misses_total",
		"memStoreSize":          "hbase_memstore_bytes",
		"updatesBlockedTime":    "hbase_updates_blocked_ms_total",
		"regionCount":           "hbase_regions",
	}},
	{"Hadoop:service=HBase,name=RegionServer,sub=IPC", map[string]string{
		"queueSize":               "hbase_ipc_queue_bytes",
		"numCallsInGeneralQueue":  "hbase_ipc_general_queue_calls",
		"numCallsInPriorityQueue": "hbase_ipc_priority_queue_calls",
		"numActiveHandler":        "hbase_ipc_active_handlers",
		"numOpenConnections":      "hbase_ipc_open_connections",
	}},
}

// masterBeans are the master's count of live and dead region servers.
var masterBeans = []bean{
	{"Hadoop:service=HBase,name=Master,sub=Server", map[string]string{
		"numRegionServers":     "hbase_live_region_servers",
		"numDeadRegionServers": "hbase_dead_region_servers",
	}},
}

// Metrics asks the master's and every region server's /jmx at once, each
// within jmxTimeout, for the attributes of masterBeans and
// regionServerBeans, keyed "name{host=h}", and adds HDFS's metrics (the
// DataNodes' pipelines); it reads the WAL pipelines again too, so a put's
// involvement follows a WAL roll. A daemon that does not answer adds
// nothing but its failure to the error.
func (c *Cluster) Metrics(ctx context.Context) (map[string]float64, error) {
	ms := append([]*member{c.master}, c.servers...)
	out, err := systems.ScrapeAll(len(ms)+1, func(i int, vals map[string]float64) error {
		if i == len(ms) {
			fs, err := c.fs.Metrics(ctx)
			for k, v := range fs {
				vals[k] = v
			}
			return err
		}
		m := ms[i]
		if m.exited() {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, jmxTimeout)
		defer cancel()
		want := regionServerBeans
		if m.role == RoleMaster {
			want = masterBeans
		}
		for _, b := range want {
			beans, err := jmx(ctx, m.infoAddr(), b.query)
			if err != nil {
				return fmt.Errorf("%s: %w", m.host.Name(), err)
			}
			pick(beans, b.attrs, m.host.Name(), vals)
		}
		return nil
	})
	perr := c.refreshPipelines(ctx)
	if err != nil || perr != nil {
		return out, fmt.Errorf("hbase metrics: %w", errors.Join(err, perr))
	}
	return out, nil
}

// pick adds to vals the numeric attributes of beans that attrs names.
func pick(beans []json.RawMessage, attrs map[string]string, host string, vals map[string]float64) {
	for _, raw := range beans {
		var b map[string]any
		if json.Unmarshal(raw, &b) != nil {
			continue
		}
		for k, v := range b {
			if f, ok := v.(float64); ok && attrs[k] != "" {
				vals[attrs[k]+"{host="+host+"}"] = f
			}
		}
	}
}

package zookeeper

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/gait-dev/gait/internal/systems"
)

// Gauges are mntr values reported as the server's current value.
var Gauges = []string{
	"zk_outstanding_requests", // requests queued in the server, not yet answered
	"zk_znode_count",
	"zk_approximate_data_size",
	"zk_num_alive_connections",
	"zk_avg_latency", // ms, since the server started
	"zk_max_latency", // ms, since the server started
	// the leader's view of its followers
	"zk_learners",
	"zk_synced_followers",
	"zk_pending_syncs",
}

// Counters are mntr values reported as running totals since the server started.
var Counters = []string{
	"zk_cnt_election_time", // leader elections this server completed
	"zk_looking_count",     // times it went looking for a leader
	"zk_sum_jvm_pause_time_ms",
	"zk_cnt_jvm_pause_time_ms",
}

// Summaries are mntr summaries (zk_cnt_X, zk_sum_X), reported as X's mean
// over the observations made since the previous scrape (the first scrape:
// since the server started), keyed "zk_X". A summary with no observation
// since the previous scrape is left out rather than repeating an old value.
// ZooKeeper 3.8 keeps summary sets per follower, keyed by its server ID
// (zk_cnt_<sid>_learner_handler_qp_size: how many packets sat in the
// leader's queue to that follower when one was sent); those are reported
// per follower as zk_learner_handler_qp_size{host=leader,follower=f}.
var Summaries = []string{
	"readlatency",               // ms from receipt to answer of a read
	"updatelatency",             // ms from receipt to answer of a write
	"fsynctime",                 // ms per transaction-log fsync
	"quorum_ack_latency",        // leader: ms from proposal to a quorum's acks
	"proposal_latency",          // leader: ms from proposal to commit
	"sync_processor_queue_size", // transactions waiting to be logged
	"learner_handler_qp_size",   // leader, per follower: its send queue
	"jvm_pause_time_ms",
}

// Metrics sends mntr to every server at once, each within ctx, and returns
// Gauges, Counters, Summaries and the JVM's heap and GC figures from its GC
// log, keyed "name{host=h}". A server that does not answer adds nothing but
// its GC log's figures to the map and its failure to the error.
func (c *Cluster) Metrics(ctx context.Context) (map[string]float64, error) {
	out, err := systems.ScrapeAll(len(c.members), func(i int, vals map[string]float64) error {
		m := c.members[i]
		err := c.scrape(ctx, m, vals)
		if err != nil {
			err = fmt.Errorf("%s: %w", m.host.Name(), err)
		}
		m.gc.read(gcPath(m.host), m.host.Name(), vals)
		return err
	})
	if err != nil {
		return out, fmt.Errorf("zookeeper metrics: %w", err)
	}
	return out, nil
}

func (c *Cluster) scrape(ctx context.Context, m *member, vals map[string]float64) error {
	s, err := flw(ctx, c.d.clientAddr(m.host), "mntr")
	if err != nil {
		return err
	}
	nums, _ := parseMntr(s)
	h := m.host.Name()
	key := func(name string) string { return name + "{host=" + h + "}" }
	for _, n := range append(Gauges[:len(Gauges):len(Gauges)], Counters...) {
		if v, ok := nums[n]; ok {
			vals[key(n)] = v
		}
	}
	for _, n := range Summaries {
		if v, ok := c.means.mean(h+"/"+n, nums["zk_cnt_"+n], nums["zk_sum_"+n]); ok {
			vals[key("zk_"+n)] = v
		}
	}
	// per-follower summary sets: zk_cnt_<sid>_<name>
	for name, cnt := range nums {
		rest, ok := strings.CutPrefix(name, "zk_cnt_")
		if !ok {
			continue
		}
		sid, n, ok := strings.Cut(rest, "_")
		id, err := strconv.Atoi(sid)
		if !ok || err != nil || id < 1 || id > len(c.members) {
			continue
		}
		f := c.members[id-1].host.Name()
		if v, ok := c.means.mean(h+"/"+f+"/"+n, cnt, nums["zk_sum_"+rest]); ok {
			vals["zk_"+n+"{host="+h+",follower="+f+"}"] = v
		}
	}
	return nil
}

// intervalMeans turns running counts and sums into means between calls.
type intervalMeans struct {
	mu   sync.Mutex
	last map[string][2]float64
}

// mean returns (sum-sum0)/(cnt-cnt0) since the previous call for key, false
// when nothing was observed in between. A count that went down (the server
// restarted) starts over.
func (im *intervalMeans) mean(key string, cnt, sum float64) (float64, bool) {
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.last == nil {
		im.last = map[string][2]float64{}
	}
	prev := im.last[key]
	im.last[key] = [2]float64{cnt, sum}
	if cnt < prev[0] {
		prev = [2]float64{}
	}
	if cnt <= prev[0] {
		return 0, false
	}
	return (sum - prev[1]) / (cnt - prev[0]), true
}

// gcLog follows a server's GC log (-Xlog:gc), which ZooKeeper's mntr does
// not cover: heap in use after the last collection, the heap's size, and
// collections and their pause time in total.
type gcLog struct {
	mu        sync.Mutex
	off       int64
	fresh     bool // the JVM was restarted: its log starts over
	count     float64
	pause     float64 // seconds
	after, of float64 // bytes, at the last collection
}

func (g *gcLog) restarted() {
	g.mu.Lock()
	g.fresh = true
	g.mu.Unlock()
}

// gcLine matches "GC(3) Pause Young (Allocation Failure) 20M->5M(61M) 3.456ms".
var gcLine = regexp.MustCompile(`GC\(\d+\) Pause .* (\d+)([KMG])->(\d+)([KMG])\((\d+)([KMG])\) ([0-9.]+)ms`)

var unit = map[string]float64{"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}

// read adds the lines written since the last call and puts the figures in vals.
func (g *gcLog) read(path, host string, vals map[string]float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && (g.fresh || st.Size() < g.off) {
		g.off, g.fresh = 0, false
	}
	if _, err := f.Seek(g.off, io.SeekStart); err != nil {
		return
	}
	r := bufio.NewReader(io.LimitReader(f, 16<<20))
	for {
		line, err := r.ReadString('\n')
		if err != nil { // a partial last line is read again next time
			break
		}
		g.off += int64(len(line))
		sm := gcLine.FindStringSubmatch(line)
		if sm == nil {
			continue
		}
		after, _ := strconv.ParseFloat(sm[3], 64)
		of, _ := strconv.ParseFloat(sm[5], 64)
		ms, _ := strconv.ParseFloat(sm[7], 64)
		g.count++
		g.pause += ms / 1000
		g.after, g.of = after*unit[sm[4]], of*unit[sm[6]]
	}
	if g.count == 0 {
		return
	}
	key := func(n string) string { return n + "{host=" + host + "}" }
	vals[key("jvm_gc_collections_total")] = g.count
	vals[key("jvm_gc_pause_seconds_total")] = g.pause
	vals[key("jvm_heap_after_gc_bytes")] = g.after
	vals[key("jvm_heap_committed_bytes")] = g.of
}

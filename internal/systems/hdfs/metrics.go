package hdfs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"

	"github.com/gait-dev/gait/internal/systems"
)

// jmx asks the daemon at addr (host:port of its HTTP server) for the beans
// matching query, each as its JSON object.
func jmx(ctx context.Context, addr, query string) ([]json.RawMessage, error) {
	u := "http://" + addr + "/jmx?qry=" + url.QueryEscape(query)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	var doc struct{ Beans []json.RawMessage }
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	return doc.Beans, nil
}

// A metric is a numeric attribute of a JMX bean, reported under its own
// name: the bean's name says which daemon (and, for RPC, which port) it
// describes, and the host label which member. Each daemon is asked for the
// beans it needs only: all of a DataNode's take it seconds to serialise
// when a hundred share two cores.
type metric struct {
	query string         // a JMX object name pattern
	attrs *regexp.Regexp // matches the attribute names reported
}

// nameNodeMetrics are the NameNode's: how long RPCs queue and run and how
// many wait or are being handled (the Exalt case study's handler and lock
// bottlenecks), the namesystem lock (its queue and, with detailed metrics
// on, the time it is held), the namespace's size, and the JVM's heap and
// GC.
var nameNodeMetrics = []metric{
	{"Hadoop:service=NameNode,name=RpcActivityForPort8020",
		regexp.MustCompile(`^(RpcQueueTimeAvgTime|RpcProcessingTimeAvgTime|RpcLockWaitTimeAvgTime|CallQueueLength|NumInProcessHandler|NumOpenConnections|RpcQueueTimeNumOps)$`)},
	{"Hadoop:service=NameNode,name=FSNamesystem*",
		regexp.MustCompile(`^(FsLockQueueLength|FilesTotal|BlocksTotal|CapacityUsed|LowRedundancyBlocks|PendingReconstructionBlocks|MissingBlocks|NumLiveDataNodes|NumDeadDataNodes|FSN(Read|Write)LockOverall\w*)$`)},
	{"Hadoop:service=NameNode,name=JvmMetrics", jvmAttrs},
}

// dataNodeMetrics are a DataNode's: bytes and blocks moved, the time its
// write pipeline spends per stage, its active transfer threads, and the
// JVM's heap.
var dataNodeMetrics = []metric{
	{"Hadoop:service=DataNode,name=DataNodeActivity-*",
		regexp.MustCompile(`^(BytesWritten|BytesRead|BlocksWritten|BlocksReplicated|WriteBlockOpAvgTime|ReadBlockOpAvgTime|FlushNanosAvgTime|FsyncNanosAvgTime|PacketAckRoundTripTimeNanosAvgTime|SendDataPacketBlockedOnNetworkNanosAvgTime|DataNodeActiveXceiversCount)$`)},
	{"Hadoop:service=DataNode,name=JvmMetrics", jvmAttrs},
}

var jvmAttrs = regexp.MustCompile(`^(MemHeapUsedM|MemHeapCommittedM|GcTimeMillis|ThreadsRunnable|ThreadsBlocked|ThreadsWaiting)$`)

// scrapes bounds the daemons asked at once: a hundred JVMs serialising
// their beans together on two cores each took more than jmxTimeout.
const scrapes = 8

// Metrics asks every daemon's /jmx, scrapes at a time, each within
// jmxTimeout, and returns the attributes nameNodeMetrics and
// dataNodeMetrics name, keyed "Attr{host=h}", and the client's
// ClientPipelineDrops{host=h} of each DataNode (dropCounts). A daemon
// that does not answer adds nothing but its failure to the error.
func (c *Cluster) Metrics(ctx context.Context) (map[string]float64, error) {
	slots := make(chan struct{}, scrapes)
	out, err := systems.ScrapeAll(len(c.members), func(i int, vals map[string]float64) error {
		m := c.members[i]
		if m.exited() {
			return nil
		}
		slots <- struct{}{}
		defer func() { <-slots }()
		ctx, cancel := context.WithTimeout(ctx, jmxTimeout)
		defer cancel()
		want := dataNodeMetrics
		if m.role == RoleNameNode {
			want = nameNodeMetrics
		}
		for _, w := range want {
			beans, err := jmx(ctx, httpAddr(m), w.query)
			if err != nil {
				return fmt.Errorf("%s: %w", m.host.Name(), err)
			}
			pick(beans, w.attrs, m.host.Name(), vals)
		}
		return nil
	})
	var dns []string
	for _, m := range c.members[1:] {
		dns = append(dns, m.host.Name())
	}
	c.drops.report(dns, out)
	if err != nil {
		return out, fmt.Errorf("hdfs metrics: %w", err)
	}
	return out, nil
}

// pick adds to vals the numeric attributes of beans that attrs matches.
func pick(beans []json.RawMessage, attrs *regexp.Regexp, host string, vals map[string]float64) {
	for _, raw := range beans {
		var b map[string]any
		if json.Unmarshal(raw, &b) != nil {
			continue
		}
		for k, v := range b {
			if f, ok := v.(float64); ok && attrs.MatchString(k) {
				vals[k+"{host="+host+"}"] = f
			}
		}
	}
}

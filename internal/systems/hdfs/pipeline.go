package hdfs

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// involvement reads what the client JVM says an op involved (the ADDRS of
// its answer): groups of DataNode addresses joined by commas, the groups
// by semicolons. A group "BLOCKID:ADDRS" is a pipeline one of the op's
// blocks went through, in the order the client saw them; "x:ADDRS" are
// DataNodes the client excluded when it set a pipeline up; a group
// without a prefix is where blocks were found or read from. It returns
// every address named, sorted, and those dropped: a DataNode in an
// earlier pipeline of a block but not in that block's last (a pipeline
// recovery took it out once it stopped acking, after the op had waited
// on it for the socket timeout) or excluded at setup. A dropped DataNode
// was involved as much as the rest: the op waited on it, though neither
// its last pipeline nor the NameNode's locations name it.
func involvement(addrs string) (involved, dropped []string, err error) {
	if addrs == "" {
		return nil, nil, nil
	}
	var blocks []string           // in the order first seen
	last := map[string][]string{} // a block's last pipeline
	seen := map[string][]string{} // every DataNode in a block's pipelines
	for _, g := range strings.Split(addrs, ";") {
		label, list, prefixed := strings.Cut(g, ":")
		if !prefixed {
			label, list = "", g
		}
		ips := strings.Split(list, ",")
		if slices.Contains(ips, "") || (prefixed && label == "") {
			return nil, nil, fmt.Errorf("bad DataNode list %q in %q", g, addrs)
		}
		involved = append(involved, ips...)
		switch label {
		case "":
		case "x":
			dropped = append(dropped, ips...)
		default:
			if _, ok := last[label]; !ok {
				blocks = append(blocks, label)
			}
			last[label] = ips
			seen[label] = append(seen[label], ips...)
		}
	}
	for _, b := range blocks {
		for _, ip := range seen[b] {
			if !slices.Contains(last[b], ip) {
				dropped = append(dropped, ip)
			}
		}
	}
	slices.Sort(involved)
	slices.Sort(dropped)
	return slices.Compact(involved), slices.Compact(dropped), nil
}

// dropCounts counts, per DataNode host, the ops whose pipeline dropped
// it, reported with the cluster's metrics as ClientPipelineDrops: the
// DataNode's own metrics do not say that a client gave up on it.
type dropCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (d *dropCounts) add(hosts []string) {
	if len(hosts) == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n == nil {
		d.n = map[string]int{}
	}
	for _, h := range hosts {
		d.n[h]++
	}
}

// report adds the counts so far to vals, a zero for each host in hosts
// that none dropped, so that a run's series start at zero.
func (d *dropCounts) report(hosts []string, vals map[string]float64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, h := range hosts {
		vals["ClientPipelineDrops{host="+h+"}"] = float64(d.n[h])
	}
}

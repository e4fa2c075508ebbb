package mapreduce

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
)

// Cluster is a running MapReduce cluster started by Driver.Start.
type Cluster struct {
	d       *Driver
	fs      systems.Cluster // the HDFS cluster under it
	members []*member
	byName  map[string]*member
	byAddr  map[string]string // a host's address -> its name
	rm      *member

	jobsMu sync.Mutex
	jobs   jobTotals // counters of the jobs done so far
	seq    sync.Mutex
	next   int // the next job's number: its output directory
}

var _ systems.Cluster = (*Cluster)(nil)

// restTimeout bounds one answer of the ResourceManager's REST API, so a
// daemon that is down or limping cannot hold up Roles or Metrics.
const restTimeout = 3 * time.Second

// rest GETs (body nil) or POSTs path of the ResourceManager's REST API and
// decodes its JSON answer into out.
func (c *Cluster) rest(ctx context.Context, path string, body any, out any) error {
	method := http.MethodGet
	if body != nil {
		method = http.MethodPost
	}
	return c.call(ctx, method, path, body, out)
}

// put PUTs body at path.
func (c *Cluster) put(ctx context.Context, path string, body any) error {
	return c.call(ctx, http.MethodPut, path, body, nil)
}

func (c *Cluster) call(ctx context.Context, method, path string, body any, out any) error {
	ctx, cancel := context.WithTimeout(ctx, restTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	url := "http://" + hostPort(c.rm.host.Address(), rmWebPort) + path
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", errNoRM, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s: %s", path, resp.Status, firstLine(string(b)))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// node is a NodeManager as the ResourceManager sees it.
type node struct {
	NodeHostName string   `json:"nodeHostName"`
	State        string   `json:"state"`
	NodeLabels   []string `json:"nodeLabels"`
}

// nodes are the NodeManagers the ResourceManager knows, by host name.
func (c *Cluster) nodes(ctx context.Context) (map[string]node, error) {
	var out struct {
		Nodes struct {
			Node []node `json:"node"`
		} `json:"nodes"`
	}
	if err := c.rest(ctx, "/ws/v1/cluster/nodes?states=NEW,RUNNING,UNHEALTHY,DECOMMISSIONED,LOST,REBOOTED,SHUTDOWN", nil, &out); err != nil {
		return nil, err
	}
	byHost := map[string]node{}
	for _, n := range out.Nodes.Node {
		if h, ok := c.byAddr[n.NodeHostName]; ok {
			byHost[h] = n
		}
	}
	return byHost, nil
}

// app is a YARN application as the ResourceManager lists it.
type app struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	AMHost    string `json:"amHostHttpAddress"`
	TrackURL  string `json:"trackingUrl"`
	Allocated int    `json:"runningContainers"`
}

// running lists the applications running now.
func (c *Cluster) running(ctx context.Context) ([]app, error) {
	var out struct {
		Apps *struct {
			App []app `json:"app"`
		} `json:"apps"`
	}
	if err := c.rest(ctx, "/ws/v1/cluster/apps?states=RUNNING", nil, &out); err != nil {
		return nil, err
	}
	if out.Apps == nil {
		return nil, nil
	}
	return out.Apps.App, nil
}

// Roles names each host by its part: the ResourceManager's, and each
// NodeManager's as laid out (mapper, reducer, the masters' host, or
// nodemanager), but appmaster for a host running a job's application
// master now (as the ResourceManager's REST API says), "lost" for a
// NodeManager the ResourceManager declared lost, "down" for a daemon that
// has exited.
func (c *Cluster) Roles(ctx context.Context) (map[string]string, error) {
	roles := map[string]string{}
	for _, m := range c.members {
		roles[m.host.Name()] = m.role
		if m.exited() {
			roles[m.host.Name()] = "down"
		}
	}
	ns, err := c.nodes(ctx)
	if err != nil {
		return roles, fmt.Errorf("mapreduce roles: %w", err)
	}
	for h, n := range ns {
		if n.State == "LOST" && roles[h] != "down" {
			roles[h] = "lost"
		}
	}
	apps, err := c.running(ctx)
	if err != nil {
		return roles, fmt.Errorf("mapreduce roles: %w", err)
	}
	for _, a := range apps {
		addr, _, _ := net.SplitHostPort(a.AMHost)
		if h, ok := c.byAddr[addr]; ok && roles[h] == RoleNodeManager {
			roles[h] = RoleAppMaster
		}
	}
	return roles, nil
}

// Client returns a job client; jobs are submitted to the
// ResourceManager, so host must be its.
func (c *Cluster) Client(host string) (load.Client, error) {
	m, err := c.member(host)
	if err != nil {
		return nil, err
	}
	if m != c.rm {
		return nil, fmt.Errorf("mapreduce: host %q runs a NodeManager; jobs are submitted to the ResourceManager (%s)", host, c.rm.host.Name())
	}
	return &jobClient{c: c}, nil
}

func (c *Cluster) member(host string) (*member, error) {
	m, ok := c.byName[host]
	if !ok {
		return nil, fmt.Errorf("mapreduce: no daemon on host %q", host)
	}
	return m, nil
}

// Restart starts the YARN daemon on host again, and the HDFS daemon
// beside it, and waits until the ResourceManager counts it running
// again (the ResourceManager: once every NodeManager has re-registered).
func (c *Cluster) Restart(ctx context.Context, host string) error {
	m, err := c.member(host)
	if err != nil {
		return err
	}
	if err := c.fs.Restart(ctx, host); err != nil {
		return err
	}
	var f *systems.Fleet
	if m == c.rm {
		f = c.fleet(c.members[1:], false)
		f.Masters[0].Launch = func() error { return m.launch(c.d) }
	} else {
		f = c.fleet([]*member{m}, false)
		f.Workers[0].Launch = func() error { return m.launch(c.d) }
	}
	if err := f.Start(ctx); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return nil
}

// fleet is the start of the ResourceManager and of the NodeManagers nms,
// each launched by it if launch is set (Restart says which are). For
// placement split the ResourceManager is told the node labels before any
// NodeManager registers with one, and a NodeManager counts once it is in
// its partition.
func (c *Cluster) fleet(nms []*member, launch bool) *systems.Fleet {
	rm := c.rm
	f := &systems.Fleet{
		System: "mapreduce", Noun: "NodeManagers",
		Masters: []systems.Member{{Host: rm.host.Name(), Proc: rm.Current}},
		Base:    c.d.StartTimeout, PerWorker: c.d.StartPerNode,
	}
	if launch {
		f.Masters[0].Launch = func() error { return rm.launch(c.d) }
	}
	for _, m := range nms {
		w := systems.Member{Host: m.host.Name(), Proc: m.Current}
		if launch {
			w.Launch = func() error { return m.launch(c.d) }
		}
		f.Workers = append(f.Workers, w)
	}
	blame := func(err error) error {
		return &systems.NotReady{Host: rm.host.Name(), Proc: rm.Current(), Err: err}
	}
	labelled := false
	f.MastersReady = func(ctx context.Context) error {
		if _, err := c.nodes(ctx); err != nil {
			return blame(err)
		}
		if c.d.Placement == Split && !labelled {
			if err := c.addLabels(ctx); err != nil {
				return blame(err)
			}
			labelled = true
		}
		return nil
	}
	f.Registered = func(ctx context.Context) (map[string]bool, error) {
		ns, err := c.nodes(ctx)
		if err != nil {
			return nil, blame(err)
		}
		ok := map[string]bool{}
		for _, m := range nms {
			n, known := ns[m.host.Name()]
			ok[m.host.Name()] = known && n.State == "RUNNING" && (c.d.Placement != Split || slices.Equal(n.NodeLabels, labels(m.role)))
		}
		return ok, nil
	}
	return f
}

// labels is what the ResourceManager lists as the node labels of a
// NodeManager with role.
func labels(role string) []string {
	if l := label(role); l != "" {
		return []string{l}
	}
	return nil
}

// addLabels makes the split placement's partitions known to the
// ResourceManager (exclusive: a map or reduce container goes only to a
// host of its label, a master only to one without); YARN's admin ACL is
// everyone's by default.
func (c *Cluster) addLabels(ctx context.Context) error {
	var have struct {
		NodeLabelInfo json.RawMessage `json:"nodeLabelInfo"`
	}
	if err := c.rest(ctx, "/ws/v1/cluster/get-node-labels", nil, &have); err != nil {
		return err
	}
	if bytes.Contains(have.NodeLabelInfo, []byte(`"`+labelMap+`"`)) {
		return nil
	}
	type info struct {
		Name      string `json:"name"`
		Exclusive bool   `json:"exclusivity"`
	}
	body := map[string][]info{"nodeLabelInfo": {{labelMap, true}, {labelReduce, true}}}
	if err := c.rest(ctx, "/ws/v1/cluster/add-node-labels", body, nil); err != nil {
		return fmt.Errorf("add node labels: %w", err)
	}
	return nil
}

// Stop ends every YARN daemon at once, then HDFS.
func (c *Cluster) Stop() error {
	procs := make([]systems.Process, len(c.members))
	for i, m := range c.members {
		procs[i] = m.Current()
	}
	errs := []error{systems.StopAll(procs)}
	if c.fs != nil {
		errs = append(errs, c.fs.Stop())
	}
	return errors.Join(errs...)
}

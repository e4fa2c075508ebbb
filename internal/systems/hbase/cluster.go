package hbase

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/hdfs"
	"github.com/gait-dev/gait/internal/systems/javapipe"
)

// Cluster is a running HBase cluster started by Driver.Start, with its
// HDFS and ZooKeeper.
type Cluster struct {
	d         *Driver
	master    *member
	servers   []*member // the region servers
	dataNodes []systems.Host
	byName    map[string]*member
	byAddr    map[string]string // host address -> host name
	zk        systems.Process
	fs        *hdfs.Cluster
	client    *javapipe.Client

	mu sync.Mutex
	// pipelines are the DataNodes (host names) of each region server's
	// current WAL, by the region server's host name, as last read from
	// the NameNode; roles has the DataNodes' roles that follow from them.
	pipelines map[string][]string
	roles     map[string]string
}

var _ systems.Cluster = (*Cluster)(nil)

// jmxTimeout bounds one daemon's answer, so a daemon that is down or
// limping cannot hold up Roles or Metrics.
const jmxTimeout = 3 * time.Second

// fleet is the start of the master and the region servers; launch says
// whether it launches them (Start) or only waits for them (a restart).
func (c *Cluster) fleet(launch bool) *systems.Fleet {
	start := func(m *member) func() error {
		if !launch {
			return nil
		}
		return func() error { return m.launch(c.d) }
	}
	f := &systems.Fleet{System: "hbase", Noun: "region servers",
		Masters: []systems.Member{{Host: c.master.host.Name(), Launch: start(c.master), Proc: c.master.Current}},
		Base:    c.d.StartTimeout, PerWorker: c.d.StartPerServer}
	for _, m := range c.servers {
		f.Workers = append(f.Workers, systems.Member{Host: m.host.Name(), Launch: start(m), Proc: m.Current})
	}
	blame := func(err error) error {
		return &systems.NotReady{Host: c.master.host.Name(), Proc: c.master.Current(), Err: err}
	}
	f.MastersReady = func(ctx context.Context) error {
		if _, err := c.masterInfo(ctx); err != nil {
			return blame(err)
		}
		return nil
	}
	f.Registered = func(ctx context.Context) (map[string]bool, error) {
		info, err := c.masterInfo(ctx)
		if err != nil {
			return nil, blame(err)
		}
		live := map[string]bool{}
		for _, addr := range info.live {
			if h, ok := c.byAddr[addr]; ok {
				live[h] = true
			}
		}
		return live, nil
	}
	f.Settled = func(ctx context.Context) error {
		info, err := c.masterInfo(ctx)
		switch {
		case err != nil:
			return blame(err)
		case !info.active:
			return blame(errors.New("the master is not active yet"))
		}
		return nil
	}
	return f
}

// masterState is what the master says of itself and the region servers.
type masterState struct {
	active bool
	live   []string // the live region servers' addresses
}

// masterInfo reads the master's Server bean: whether it is the active
// master, and its live region servers ("host,port,startcode;...").
func (c *Cluster) masterInfo(ctx context.Context) (masterState, error) {
	ctx, cancel := context.WithTimeout(ctx, jmxTimeout)
	defer cancel()
	beans, err := jmx(ctx, c.master.infoAddr(), "Hadoop:service=HBase,name=Master,sub=Server")
	if err != nil {
		return masterState{}, err
	}
	if len(beans) != 1 {
		return masterState{}, errors.New("the master has no Server bean yet")
	}
	var b struct {
		Active string `json:"tag.isActiveMaster"`
		Live   string `json:"tag.liveRegionServers"`
	}
	if err := json.Unmarshal(beans[0], &b); err != nil {
		return masterState{}, fmt.Errorf("master Server bean: %w", err)
	}
	s := masterState{active: b.Active == "true"}
	for sn := range strings.SplitSeq(b.Live, ";") {
		if addr, _, ok := strings.Cut(sn, ","); ok {
			s.live = append(s.live, addr)
		}
	}
	return s, nil
}

// jmx asks the daemon at addr (host:port of its HTTP server) for the beans
// matching query, each as its JSON object.
func jmx(ctx context.Context, addr, query string) ([]json.RawMessage, error) {
	var doc struct{ Beans []json.RawMessage }
	err := getJSON(ctx, "http://"+addr+"/jmx?qry="+url.QueryEscape(query), &doc)
	return doc.Beans, err
}

// getJSON decodes the JSON document at u into v, waiting jmxTimeout at
// most.
func getJSON(ctx context.Context, u string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, jmxTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// Roles names the master's host "master", each region server's
// "regionserver", each DataNode's "datanode", but those in the current
// WAL pipeline of the first region server, "hlog-datanode"; a daemon
// whose process has exited is "down" (a DataNode the NameNode says it no
// longer counts live, "dead"). The pipelines are those Metrics last read
// (once a second while a workload runs): asking the NameNode here, on a
// loaded machine, would hold up every role check by its slowest answer.
// A NameNode that does not answer leaves the DataNodes' roles as they
// were, so Roles never fails.
func (c *Cluster) Roles(ctx context.Context) (map[string]string, error) {
	roles := map[string]string{}
	for _, m := range append([]*member{c.master}, c.servers...) {
		roles[m.host.Name()] = m.role
		if m.exited() {
			roles[m.host.Name()] = "down"
		}
	}
	fsRoles, ferr := c.fs.Roles(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	for h, r := range c.roles {
		roles[h] = r
		if fr := fsRoles[h]; fr == "down" || fr == "dead" && ferr == nil {
			roles[h] = fr
		}
	}
	return roles, nil
}

// waitPipeline reads the WAL pipelines until the first region server's
// is known: the hlog-datanode role a scenario may aim at.
func (c *Cluster) waitPipeline(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.d.StartTimeout)
	defer cancel()
	first := c.servers[0].host.Name()
	for {
		err := c.refreshPipelines(ctx)
		if len(c.pipeline(first)) > 0 {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("no WAL of %s yet", first)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("hbase: the WAL pipeline of %s not known after %v: %w", first, c.d.StartTimeout, err)
		case <-time.After(time.Second):
		}
	}
}

// refreshPipelines reads each region server's current WAL's block
// locations from the NameNode (WebHDFS): the DataNodes its writes wait
// for. A region server whose WAL cannot be read keeps its last pipeline.
func (c *Cluster) refreshPipelines(ctx context.Context) error {
	nn := "http://" + hostPort(c.master.host.Address(), nameNodeHTTPPort) + "/webhdfs/v1"
	var dirs struct {
		FileStatuses struct{ FileStatus []struct{ PathSuffix string } }
	}
	if err := getJSON(ctx, nn+"/hbase/WALs?op=LISTSTATUS", &dirs); err != nil {
		return fmt.Errorf("list the WALs: %w", err)
	}
	found := map[string][]string{}
	var errs []error
	for _, d := range dirs.FileStatuses.FileStatus {
		addr, _, _ := strings.Cut(d.PathSuffix, ",")
		host, ok := c.byAddr[addr]
		if !ok {
			continue
		}
		pipe, err := c.walPipeline(ctx, nn+"/hbase/WALs/"+url.PathEscape(d.PathSuffix))
		if err != nil {
			errs = append(errs, fmt.Errorf("WAL of %s: %w", host, err))
			continue
		}
		found[host] = pipe
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pipelines == nil {
		c.pipelines = map[string][]string{}
	}
	for h, p := range found {
		c.pipelines[h] = p
	}
	hlog := c.pipelines[c.servers[0].host.Name()]
	for _, h := range c.dataNodes {
		c.roles[h.Name()] = RoleDataNode
		if slices.Contains(hlog, h.Name()) {
			c.roles[h.Name()] = RoleHLogDataNode
		}
	}
	return errors.Join(errs...)
}

// walPipeline finds the newest WAL in a region server's WAL directory
// (its name ends in its creation time; the meta region's WAL aside) and
// names the DataNodes of its last block.
func (c *Cluster) walPipeline(ctx context.Context, walDir string) ([]string, error) {
	var files struct {
		FileStatuses struct{ FileStatus []struct{ PathSuffix string } }
	}
	if err := getJSON(ctx, walDir+"?op=LISTSTATUS", &files); err != nil {
		return nil, err
	}
	newest, newestAt := "", int64(-1)
	for _, f := range files.FileStatuses.FileStatus {
		name := f.PathSuffix
		if strings.HasSuffix(name, ".meta") {
			continue
		}
		at, err := strconv.ParseInt(name[strings.LastIndexByte(name, '.')+1:], 10, 64)
		if err == nil && at > newestAt {
			newest, newestAt = name, at
		}
	}
	if newest == "" {
		return nil, errors.New("no WAL yet")
	}
	var loc struct {
		LocatedBlocks struct {
			LastLocatedBlock *struct{ Locations []struct{ IPAddr string } }
			LocatedBlocks    []struct{ Locations []struct{ IPAddr string } }
		}
	}
	if err := getJSON(ctx, walDir+"/"+url.PathEscape(newest)+"?op=GET_BLOCK_LOCATIONS", &loc); err != nil {
		return nil, err
	}
	lb := loc.LocatedBlocks.LastLocatedBlock
	if lb == nil && len(loc.LocatedBlocks.LocatedBlocks) > 0 {
		lb = &loc.LocatedBlocks.LocatedBlocks[len(loc.LocatedBlocks.LocatedBlocks)-1]
	}
	if lb == nil {
		return nil, fmt.Errorf("%s has no block", newest)
	}
	var out []string
	for _, l := range lb.Locations {
		if h, ok := c.byAddr[l.IPAddr]; ok {
			out = append(out, h)
		}
	}
	return out, nil
}

// pipeline is the DataNodes of the WAL of the region server on host.
func (c *Cluster) pipeline(host string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pipelines[host]
}

// Client returns a channel of gait's HBase client; host must be the
// master's, the member clients talk to first (through its ZooKeeper they
// find the region servers that hold their rows).
func (c *Cluster) Client(host string) (load.Client, error) {
	m, err := c.member(host)
	if err != nil {
		return nil, err
	}
	if m.role != RoleMaster {
		return nil, fmt.Errorf("hbase: host %q runs a region server; clients talk to the master (%s)", host, c.master.host.Name())
	}
	if err := c.client.Failed(); err != nil {
		return nil, err
	}
	return &channel{c: c, id: c.client.Channel()}, nil
}

func (c *Cluster) member(host string) (*member, error) {
	m, ok := c.byName[host]
	if !ok {
		return nil, fmt.Errorf("hbase: no master or region server on host %q", host)
	}
	return m, nil
}

// Restart starts the master or region server on host again and waits
// until the master counts every region server live.
func (c *Cluster) Restart(ctx context.Context, host string) error {
	m, err := c.member(host)
	if err != nil {
		return err
	}
	f := c.fleet(false)
	for i, w := range append(f.Masters, f.Workers...) {
		if w.Host != host {
			continue
		}
		launch := func() error { return m.launch(c.d) }
		if i == 0 {
			f.Masters[0].Launch = launch
		} else {
			f.Workers[i-1].Launch = launch
		}
	}
	if err := f.Start(ctx); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return nil
}

// Stop ends the client, the HBase daemons, then HDFS and ZooKeeper.
func (c *Cluster) Stop() error {
	var errs []error
	if c.client != nil {
		errs = append(errs, c.client.Stop())
	}
	procs := []systems.Process{c.master.Current()}
	for _, m := range c.servers {
		procs = append(procs, m.Current())
	}
	errs = append(errs, systems.StopAll(procs))
	if c.fs != nil {
		errs = append(errs, c.fs.Stop())
	}
	if c.zk != nil {
		errs = append(errs, c.zk.Stop())
	}
	return errors.Join(errs...)
}

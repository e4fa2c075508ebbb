package hbase

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/limp"
	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems/javapipe"
	"github.com/gait-dev/gait/internal/systems/systemstest"
)

// TestLayout: the master first, then the region servers, then DataNodes;
// too few hosts for a DataNode is refused before anything starts.
func TestLayout(t *testing.T) {
	rs, dns, err := Layout(8, 3)
	if err != nil || !slices.Equal(rs, []int{1, 2, 3}) || !slices.Equal(dns, []int{4, 5, 6, 7}) {
		t.Errorf("Layout(8, 3) = %v, %v, %v", rs, dns, err)
	}
	if _, _, err := Layout(4, 3); err == nil || !strings.Contains(err.Error(), "want at least 5") {
		t.Errorf("Layout(4, 3) = %v, want a refusal naming 5 hosts", err)
	}
	if _, _, err := Layout(4, 0); err == nil {
		t.Error("Layout(4, 0) accepted no region server")
	}
}

// TestSplitKeys: gait's keys key:0 to key:999 fall evenly (within one key)
// into the regions the split keys make.
func TestSplitKeys(t *testing.T) {
	for _, regions := range []int{1, 2, 3, 4} {
		splits := SplitKeys(regions)
		if len(splits) != regions-1 {
			t.Fatalf("%d regions: %d split keys", regions, len(splits))
		}
		count := make([]int, regions)
		for k := range 1000 {
			key := load.Key(k)
			r := 0
			for r < len(splits) && key >= splits[r] {
				r++
			}
			count[r]++
		}
		lo, hi := slices.Min(count), slices.Max(count)
		if hi-lo > 1000/regions/5 {
			t.Errorf("%d regions: keys per region %v", regions, count)
		}
	}
}

// TestServers: the region servers an answer names: its ok line's list,
// else everywhere its op said it went before it failed or was cut.
func TestServers(t *testing.T) {
	for _, c := range []struct {
		a    javapipe.Answer
		want []string
	}{
		{javapipe.Answer{Rest: "198.18.0.2,198.18.0.3", Seen: []string{"at 198.18.0.2"}}, []string{"198.18.0.2", "198.18.0.3"}},
		{javapipe.Answer{Err: errors.New("timeout"), Seen: []string{"at 198.18.0.4"}}, []string{"198.18.0.4"}},
		{javapipe.Answer{Seen: []string{"at 198.18.0.4"}}, []string{"198.18.0.4"}},
		// A scan cut in the second region it went to names both servers.
		{javapipe.Answer{Seen: []string{"at 198.18.0.3", "at 198.18.0.4"}}, []string{"198.18.0.3", "198.18.0.4"}},
		{javapipe.Answer{}, nil},
	} {
		if got := servers(c.a); !slices.Equal(got, c.want) {
			t.Errorf("servers(%+v) = %v, want %v", c.a, got, c.want)
		}
	}
}

// TestHBaseCluster starts HBase on HDFS and ZooKeeper on 8 testbed hosts (a
// master, 3 region servers, 4 DataNodes), puts, gets and scans through
// HBase's own client, checks what each request says it involved and the
// white-box metrics, then limps a region server's NIC: requests to its
// region slow down, those to another do not.
func TestHBaseCluster(t *testing.T) {
	if os.Getenv("GAIT_HBASE_TEST") == "" {
		t.Skip("skipped: set GAIT_HBASE_TEST=1 (HDFS, ZooKeeper and HBase take 1-3 min to start on 2 cores)")
	}
	d := New()
	if err := d.Check(); err != nil {
		t.Skip(err)
	}
	cl, tb := systemstest.OnTestbed(t, d, 8)
	c := cl.(*Cluster)
	ctx := context.Background()
	roles, err := c.Roles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("roles %v", roles)
	if roles["h0"] != RoleMaster || roles["h1"] != RoleRegionServer || roles["h3"] != RoleRegionServer {
		t.Errorf("roles %v", roles)
	}
	hlog := 0
	for _, h := range []string{"h4", "h5", "h6", "h7"} {
		if roles[h] == RoleHLogDataNode {
			hlog++
		}
	}
	if hlog != 3 {
		t.Errorf("%d hlog-datanodes, want the 3 of the first region server's WAL pipeline: %v", hlog, roles)
	}
	lc, err := c.Client("h0")
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	ch := lc.(*channel)
	value := make([]byte, 1024)
	do := func(kind uint8, k int) time.Duration {
		t.Helper()
		t0 := time.Now()
		if err := ch.Do(ctx, load.Op{Kind: kind, Key: load.Key(k), Value: value}); err != nil {
			t.Fatalf("%s %s: %v", Ops[kind], load.Key(k), err)
		}
		return time.Since(t0)
	}
	for k := range 100 {
		do(opPut, k)
	}
	// key:1 is in the first region (h1), key:5 in the second (h2), key:9
	// in the third (h3).
	for k, want := range map[int]string{1: "h1", 5: "h2", 9: "h3"} {
		do(opPut, k)
		if got := ch.Involved(); len(got) != 4 || got[0] != want {
			t.Errorf("put %s involved %v, want %s and its WAL's 3 DataNodes", load.Key(k), got, want)
		}
		do(opGet, k)
		if got := ch.Involved(); !slices.Equal(got, []string{want}) {
			t.Errorf("get %s involved %v, want [%s]", load.Key(k), got, want)
		}
	}
	do(opScan, 10)
	if got := ch.Involved(); len(got) == 0 || got[0] != "h1" {
		t.Errorf("scan from key:10 involved %v, want h1 first", got)
	}
	m, err := c.Metrics(ctx)
	if err != nil {
		t.Error(err)
	}
	for _, k := range []string{"hbase_wal_sync_ms_mean{host=h1}", "hbase_ipc_general_queue_calls{host=h2}", "hbase_flush_queue_length{host=h3}", "hbase_live_region_servers{host=h0}"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no %s in the metrics (%d keys)", k, len(m))
		}
	}
	if m["hbase_live_region_servers{host=h0}"] != 3 {
		t.Errorf("the master counts %v live region servers", m["hbase_live_region_servers{host=h0}"])
	}

	// h3 limping at 1000x (100 kbit/s): an 8-KB get from its region
	// waits for its slow link (about 0.7 s), one from h1's does not.
	value = make([]byte, 8<<10)
	do(opPut, 9)
	do(opPut, 1)
	if err := (limp.NIC{}).Apply(tb.Host("h3"), 1000); err != nil {
		t.Fatal(err)
	}
	var slow, fast []time.Duration
	for range 10 {
		slow = append(slow, do(opGet, 9))
		fast = append(fast, do(opGet, 1))
	}
	slices.Sort(slow)
	slices.Sort(fast)
	t.Logf("with h3 at 1000x: get from h3 median %v, from h1 %v", slow[5], fast[5])
	if slow[5] < 5*fast[5] {
		t.Errorf("a get from the limping region server (median %v) is not 5x one from a healthy one (%v)", slow[5], fast[5])
	}
}

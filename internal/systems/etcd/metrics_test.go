package etcd

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gait-dev/gait/internal/systems/loopback"
)

func families(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// page renders a /metrics page with a WAL fsync histogram of the given sum
// and count and two peer round-trip series.
func page(fsyncSum string, fsyncCount int, rttA, rttB string, nA, nB int) string {
	return `# TYPE etcd_server_proposals_pending gauge
etcd_server_proposals_pending 3
# TYPE etcd_server_leader_changes_seen_total counter
etcd_server_leader_changes_seen_total 2
# TYPE etcd_disk_wal_fsync_duration_seconds histogram
etcd_disk_wal_fsync_duration_seconds_bucket{le="0.001"} 0
etcd_disk_wal_fsync_duration_seconds_bucket{le="+Inf"} ` + strconv.Itoa(fsyncCount) + `
etcd_disk_wal_fsync_duration_seconds_sum ` + fsyncSum + `
etcd_disk_wal_fsync_duration_seconds_count ` + strconv.Itoa(fsyncCount) + `
# TYPE etcd_network_peer_round_trip_time_seconds histogram
etcd_network_peer_round_trip_time_seconds_bucket{To="a",le="+Inf"} ` + strconv.Itoa(nA) + `
etcd_network_peer_round_trip_time_seconds_sum{To="a"} ` + rttA + `
etcd_network_peer_round_trip_time_seconds_count{To="a"} ` + strconv.Itoa(nA) + `
etcd_network_peer_round_trip_time_seconds_bucket{To="b",le="+Inf"} ` + strconv.Itoa(nB) + `
etcd_network_peer_round_trip_time_seconds_sum{To="b"} ` + rttB + `
etcd_network_peer_round_trip_time_seconds_count{To="b"} ` + strconv.Itoa(nB) + `
`
}

func TestValuesGaugesCountersAndFirstMean(t *testing.T) {
	c := &Cluster{}
	got := c.values("h1", families(t, page("0.4", 100, "0.002", "0.006", 2, 3)))
	want := map[string]float64{
		"etcd_server_proposals_pending{host=h1}":         3,
		"etcd_server_leader_changes_seen_total{host=h1}": 2,
		"etcd_disk_wal_fsync_duration_seconds{host=h1}":  0.004, // 0.4 s over 100 fsyncs since start
		// peer a: 1 ms mean, peer b: 2 ms mean; the slower one is reported
		"etcd_network_peer_round_trip_time_seconds{host=h1}": 0.002,
	}
	assertValues(t, got, want)
	if _, ok := got["etcd_disk_backend_commit_duration_seconds{host=h1}"]; ok {
		t.Error("a family missing from the page got a value")
	}
}

func TestValuesIntervalMeanAndGaps(t *testing.T) {
	c := &Cluster{}
	c.values("h1", families(t, page("0.4", 100, "0.002", "0.006", 2, 3)))
	// 10 more fsyncs taking 1.0 s in all: a slow disk shows at once.
	got := c.values("h1", families(t, page("1.4", 110, "0.002", "0.006", 2, 3)))
	assertValues(t, got, map[string]float64{"etcd_disk_wal_fsync_duration_seconds{host=h1}": 0.1})
	if v, ok := got["etcd_network_peer_round_trip_time_seconds{host=h1}"]; ok {
		t.Errorf("round-trip time without new probes reported as %g; want it left out", v)
	}
	// Only peer a was probed, at 50 ms.
	got = c.values("h1", families(t, page("1.4", 110, "0.052", "0.006", 3, 3)))
	assertValues(t, got, map[string]float64{"etcd_network_peer_round_trip_time_seconds{host=h1}": 0.05})
	// A restarted member counts from zero again.
	got = c.values("h1", families(t, page("0.03", 3, "0.052", "0.006", 3, 3)))
	assertValues(t, got, map[string]float64{"etcd_disk_wal_fsync_duration_seconds{host=h1}": 0.01})
}

func TestValuesKeepHostsApart(t *testing.T) {
	c := &Cluster{}
	c.values("h1", families(t, page("0.4", 100, "0.002", "0.006", 2, 3)))
	got := c.values("h2", families(t, page("0.5", 100, "0.002", "0.006", 2, 3)))
	assertValues(t, got, map[string]float64{"etcd_disk_wal_fsync_duration_seconds{host=h2}": 0.005})
}

func assertValues(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s missing (have %v)", k, got)
			continue
		}
		if d := g - w; d > 1e-12 || d < -1e-12 {
			t.Errorf("%s = %g, want %g", k, g, w)
		}
	}
}

func TestMostNamed(t *testing.T) {
	for _, tc := range []struct {
		ids  []uint64
		want uint64
	}{
		{[]uint64{7, 7, 9}, 7},
		{[]uint64{0, 9, 0}, 9},
		{[]uint64{0, 0}, 0},
		{nil, 0},
	} {
		if got := mostNamed(tc.ids); got != tc.want {
			t.Errorf("mostNamed(%v) = %d, want %d", tc.ids, got, tc.want)
		}
	}
}

func TestExisting(t *testing.T) {
	argv := New().argv(loopback.New("x", "127.0.0.1", t.TempDir()), "x=http://127.0.0.1:2380", "tok", "new")
	got := existing(argv)
	if !slices.Contains(got, "--initial-cluster-state=existing") || slices.Contains(got, "--initial-cluster-state=new") {
		t.Errorf("restart command line %v", got)
	}
	if !slices.Contains(argv, "--initial-cluster-state=new") {
		t.Error("existing changed the first start's command line")
	}
}

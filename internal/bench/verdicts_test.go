package bench

import (
	"testing"

	"github.com/gait-dev/gait/internal/rundir"
)

// Queue metrics are the member's by their host label; a host in another
// label is named as that member is in its run, so runs line up.
func TestQueueSeries(t *testing.T) {
	labels := map[string]string{"h0": "leader", "h2": "follower, fault"}
	rows := []rundir.Second{
		{T: 0, Metrics: map[string]float64{"zk_learner_handler_qp_size{host=h0,follower=h2}": 1, "zk_outstanding_requests{host=h0}": 3,
			"etcd_network_peer_sent_failures_total{host=h0}": 9, "proc_cpu{proc=h0}": 0.5}},
		{T: 1, Metrics: map[string]float64{"zk_learner_handler_qp_size{host=h0,follower=h2}": 4, "zk_outstanding_requests{host=h9}": 1}},
	}
	got := queueSeries(rows, labels)
	if len(got) != 2 {
		t.Fatalf("series %+v, want the qp size and the outstanding requests", got)
	}
	qp := got[0]
	if qp.Metric != "zk_learner_handler_qp_size{follower=follower, fault}" || qp.Node != "leader" || len(qp.V) != 2 || qp.V[1] != 4 {
		t.Errorf("qp size %+v", qp)
	}
	if o := got[1]; o.Metric != "zk_outstanding_requests" || len(o.V) != 1 {
		t.Errorf("outstanding %+v (a host not in the run is left out)", o)
	}
}

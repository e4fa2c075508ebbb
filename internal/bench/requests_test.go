package bench

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/rundir"
)

// TestWorkloadOfRequests: a scenario's workload takes the thesis's presets
// and a request's phases, batch and delay, and names a bad one.
func TestWorkloadOfRequests(t *testing.T) {
	const head = "name: olio\nsystem: redis\nnodes: 1\nrepeat: 1\ninject: []\n"
	s, err := Parse("olio.yaml", []byte(head+"workload: {op: get, preset: gridlabd, rate: 40/s, duration: 5s, delay: '2%:10ms'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	sh := s.Workload.Spec.Shape
	if len(sh.Phases) != 2 || sh.Phases[0].Count != 4 || sh.Phases[1].Op != "set" || sh.Batch != 8 || sh.Delay.Share != 0.02 || !s.Workload.Spec.Poisson {
		t.Errorf("gridlabd preset with a delay read as %+v (poisson %v)", sh, s.Workload.Spec.Poisson)
	}
	s, err = Parse("olio.yaml", []byte(head+"workload: {op: get, phases: '30,20', clients: 2, requests: 100}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Workload.Spec.Shape.Accesses(); got != 50 {
		t.Errorf("phases 30,20: %d accesses per request", got)
	}
	for _, c := range []struct{ workload, want string }{
		{"{op: get, phases: '30,0', clients: 1}", "workload.phases"},
		{"{op: get, preset: nosuch, clients: 1}", "workload.preset"},
		{"{op: get, phases: 4, batch: 8, clients: 1}", "workload.batch"},
		{"{op: get, phases: 4, batch: 20, rate: 10/s, requests: 10}", "workload.batch"},
		{"{op: get, delay: '120%:1ms', clients: 1}", "workload.delay"},
	} {
		_, err := Parse("bad.yaml", []byte(head+"workload: "+c.workload+"\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("workload %s: want an error on %s, got %v", c.workload, c.want, err)
		}
	}
}

// TestRequestsOnEtcd: a scenario of Olio's requests runs on a real etcd
// cluster; each run keeps its requests beside its accesses, and the log
// counts both.
func TestRequestsOnEtcd(t *testing.T) {
	needRoot(t)
	s := parseScenario(t, "name: t-olio\nsystem: etcd\nnodes: 3\n"+
		"workload: {op: get, preset: olio, rate: 5/s, requests: 10, duration: 10s, keys: 100, value_size: 64B}\n")
	_, results, log := runLogged(t, s)
	if !strings.Contains(log, "500 accesses") || !strings.Contains(log, "10 requests of several accesses") {
		t.Errorf("the log does not count 500 accesses in 10 requests")
	}
	run, err := rundir.Open(filepath.Join(results[0].Dir, load.RequestsDir))
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := run.Samples()
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 10 {
		t.Fatalf("%d requests recorded; want 10", len(reqs))
	}
	for _, r := range reqs {
		if r.Outcome != rundir.OK {
			t.Errorf("a request at %v failed (%v)", r.Start, r.Outcome)
		}
	}
}

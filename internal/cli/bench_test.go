package cli

import (
	"strings"
	"testing"
)

// gait bench checks every scenario and flag before anything starts, and
// names each mistake.
func TestBenchBadInput(t *testing.T) {
	dir := t.TempDir()
	good := write(t, dir, "good.yaml", "name: g\nsystem: etcd\nnodes: 3\nworkload: {op: put}\n")
	bad := write(t, dir, "bad.yaml", "name: b\nsystem: etcd\nnodes: 3\nworkload: {op: put}\ninject:\n  - {fault: nic, target: primary, factors: [10]}\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", good, bad}, bad + `:6: inject[0].target: "primary" is neither a role of etcd`},
		{[]string{"bench", dir + "/none.yaml"}, "scenario " + dir + "/none.yaml: stat"},
		{[]string{"bench", "--format", "csv", good}, `bench: --format "csv": want text or json`},
		{[]string{"bench", "--slow", "0.5", good}, "bench: slow threshold 0.5: want a factor above 1"},
		{[]string{"bench", "--only", "zk-*", good}, `no experiment selected from 1 scenario (--only "zk-*", --quick false)`},
	} {
		_, _, err := runGait(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %s", c.args, err, c.want)
		}
	}
	out, _, err := runGait("bench", "--dry-run", good)
	if err != nil || !strings.Contains(out, "g ") || !strings.Contains(out, "1 run ") {
		t.Errorf("dry run: %q, %v", out, err)
	}
}

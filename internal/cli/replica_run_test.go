package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gait-dev/gait/internal/testbed"
)

func TestReplicaRunRefusesBadInput(t *testing.T) {
	for _, c := range []struct {
		f    replicaRunFlags
		want string
	}{
		{replicaRunFlags{strength: 4, hosts: 3, repeat: 1, format: "text"}, "--strength 4 is larger than --hosts 3"},
		{replicaRunFlags{strength: 0, repeat: 1, format: "text"}, "--strength 0"},
		{replicaRunFlags{strength: 1, repeat: 0, format: "text"}, "--repeat 0"},
		{replicaRunFlags{strength: 1, repeat: 1, format: "text", cpus: -1}, "--cpus -1"},
		{replicaRunFlags{strength: 1, repeat: 1, format: "text", limp: "h5:cpu:10"}, "not one of h0..h0"},
		{replicaRunFlags{strength: 1, repeat: 1, format: "text", limp: "h0:net:10"}, "want cpu or disk"},
		{replicaRunFlags{strength: 1, repeat: 1, format: "text", limp: "h0:disk:10"}, "add --disk"},
		{replicaRunFlags{strength: 1, repeat: 1, format: "text", limp: "h0:cpu:0.5"}, "factor"},
	} {
		f := c.f
		if _, err := checkReplicaRun(&f); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: want an error saying %q, got %v", c.f, c.want, err)
		}
	}
}

// TestReplicaRunFirstCopyWins runs a task as 2 copies on a testbed: the
// output is one copy's and gait's error carries its exit status.
func TestReplicaRunFirstCopyWins(t *testing.T) {
	if err := testbed.NeedRoot(); err != nil {
		t.Skip(err)
	}
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"replica", "run", "--strength", "2", "--", "sh", "-c", "echo copy on $(hostname -I); exit 3"})
	err := root.Execute()
	var status exitStatus
	if !errors.As(err, &status) || status != 3 {
		t.Errorf("want the copy's exit status 3, got %v", err)
	}
	if got := strings.TrimSpace(out.String()); !strings.HasPrefix(got, "copy on 198.18.") || strings.Count(got, "copy on") != 1 {
		t.Errorf("output %q: want one copy's line, from a testbed address", got)
	}
}

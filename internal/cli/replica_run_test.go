package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gait-dev/gait/internal/testbed"
)

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

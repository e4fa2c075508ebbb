package replica

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gait-dev/gait"

// protocols are packages of one server's protocol: only its adapter may
// import them.
var protocols = []string{
	module + "/internal/resp", module + "/internal/rediscmd", module + "/third_party/zkwire",
	"github.com/redis/go-redis/v9", "github.com/go-zookeeper/zk",
}

// goList runs go list in this package's directory.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list packages with")
	}
	out, err := exec.Command(goBin, append([]string{"list"}, args...)...).Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %s", strings.Join(args, " "), msg)
	}
	return strings.Fields(string(out))
}

// TestLayout holds the shape of gait replica: the core (this package)
// imports no adapter and no server's protocol, and no adapter imports
// another adapter.
func TestLayout(t *testing.T) {
	deps := goList(t, "-deps", "-f", "{{.ImportPath}}", ".")
	var adapters []string
	for _, p := range goList(t, "-f", "{{.ImportPath}}", "./...") {
		if p != module+"/internal/replica" && p != module+"/internal/replica/limp" {
			adapters = append(adapters, p)
		}
	}
	if len(adapters) < 2 {
		t.Fatalf("adapters under internal/replica: %v, want redis and zookeeper", adapters)
	}
	for _, p := range slices.Concat(protocols, adapters) {
		if slices.Contains(deps, p) {
			t.Errorf("the core imports %s", p)
		}
	}
	for _, a := range adapters {
		for _, d := range goList(t, "-deps", "-f", "{{.ImportPath}}", a) {
			if d != a && slices.Contains(adapters, d) {
				t.Errorf("adapter %s imports adapter %s", a, d)
			}
		}
	}
}

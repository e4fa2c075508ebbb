package zookeeper

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// kazooPython is a python that imports kazoo: $GAIT_KAZOO_PYTHON, the
// venv scripts/install-deps.sh makes, or python3 if it has kazoo; "" if none.
func kazooPython() string {
	home, _ := os.UserHomeDir()
	for _, p := range []string{os.Getenv("GAIT_KAZOO_PYTHON"), filepath.Join(home, ".cache/gait/kazoo/bin/python"), "python3"} {
		if p != "" && exec.Command(p, "-c", "import kazoo").Run() == nil {
			return p
		}
	}
	return ""
}

// runKazooRecipes runs testdata/kazoo_recipes.py against agents and
// returns its output; the test fails if any check did.
func runKazooRecipes(t *testing.T, agents []string) string {
	t.Helper()
	py := kazooPython()
	if py == "" {
		t.Skip("no python with kazoo (pip install kazoo, or set GAIT_KAZOO_PYTHON)")
	}
	out, err := exec.Command(py, append([]string{"testdata/kazoo_recipes.py"}, agents...)...).CombinedOutput()
	t.Logf("kazoo recipes:\n%s", out)
	if err != nil {
		t.Fatalf("kazoo recipes: %v", err)
	}
	return string(out)
}

const zkCli = "/usr/share/zookeeper/bin/zkCli.sh"

// runZkCli runs Debian's zkCli.sh against addr with commands on its
// standard input, one per line, and returns what it printed.
func runZkCli(t *testing.T, addr string, commands ...string) string {
	t.Helper()
	cmd := exec.Command(zkCli, "-server", addr)
	cmd.Stdin = strings.NewReader(strings.Join(commands, "\n") + "\nquit\n")
	cmd.Env = append(os.Environ(), "ZOO_LOG_DIR="+t.TempDir(), "CLIENT_JVMFLAGS=-Xmx64m -XX:+UseSerialGC")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("zkCli.sh -server %s: %v\n%s", addr, err, out)
	}
	return string(out)
}

// zkCliChecks runs zkCli.sh against the first agent to write and the
// second to read, and checks each command's output.
func zkCliChecks(t *testing.T, agents []string) {
	t.Helper()
	out := runZkCli(t, agents[0],
		"create /cli hello", "create -s /cli/seq- a", "create -s /cli/seq- b", "set /cli world",
		"create -c /cli/container", "create -t 60000 /cli/ttl t", "setAcl /cli/seq-0000000000 world:anyone:r",
		"create -e /cli/gone x")
	second := runZkCli(t, agents[len(agents)-1], "get -s /cli", "ls /cli", "getAcl /cli/seq-0000000000", "set /cli/seq-0000000000 x",
		"delete /cli/seq-0000000001", "ls /cli", "sync /cli", "stat /cli/container", "stat /cli/ttl")
	want := []struct{ out, text string }{
		{out, "Created /cli\n"}, {out, "Created /cli/seq-0000000000"}, {out, "Created /cli/seq-0000000001"},
		{out, "Created /cli/container"}, {out, "Created /cli/ttl"}, {out, "Created /cli/gone"},
		{second, "world\ncZxid = 0x"}, {second, "dataVersion = 1\n"},
		{second, "[container, seq-0000000000, seq-0000000001, ttl]"}, // the ephemeral node went with its session
		{second, "'world,'anyone\n: r\n"}, {second, "Insufficient permission : /cli/seq-0000000000"},
		{second, "[container, seq-0000000000, ttl]"}, {second, "Sync is OK"},
		{second, "ephemeralOwner = 0x8000000000000000"}, {second, "ephemeralOwner = 0xff0000000000ea60"},
	}
	passed := 0
	for _, w := range want {
		text := strings.ReplaceAll(w.text, "\\n", "\n")
		if strings.Contains(w.out, text) {
			passed++
		} else {
			t.Errorf("zkCli.sh printed no %q", text)
		}
	}
	t.Logf("zkCli.sh: %d of %d checks passed", passed, len(want))
	if t.Failed() {
		t.Logf("first agent:\n%s\nsecond agent:\n%s", out, second)
	}
}

package cli

import (
	"io"
	"strings"
	"testing"
)

// --server and --group-size are checked before anything starts.
func TestReplicaServerFlags(t *testing.T) {
	agent := []string{"agent", "--bootstrap", "--id", "a", "--raft", "127.0.0.1:7000", "--listen", "127.0.0.1:0"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"cluster", "--loopback", "--server", "etcd"}, `--server "etcd": want redis or zookeeper`},
		{[]string{"cluster", "--loopback", "--server", "zookeeper", "--group-size", "2"}, "--group-size 2: want 1 (a standalone server per replica) or 3"},
		{[]string{"cluster", "--loopback", "--group-size", "3"}, "--group-size is for --server zookeeper"},
		{append(agent, "--server", "zookeeper"), "--server zookeeper takes --zookeeper HOST:PORT"},
		{append(agent, "--server", "zookeeper", "--zookeeper", "127.0.0.1:2181", "--redis", "127.0.0.1:6379"), "--server zookeeper takes --zookeeper HOST:PORT (and no --redis)"},
		{agent, "--server redis takes --redis HOST:PORT"},
		{append(agent, "--server", "zookeeper", "--zookeeper", "localhost"), `--zookeeper "localhost": want HOST:PORT`},
		{append(agent, "--server", "zookeeper", "--zookeeper", "127.0.0.1:0"), `--zookeeper "127.0.0.1:0": want a port from 1 to 65535`},
		{append(agent, "--server", "mongo", "--redis", "127.0.0.1:6379"), `--server "mongo": want redis or zookeeper`},
	} {
		cmd := newReplicaCmd()
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		cmd.SetArgs(c.args)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q", c.args, err, c.want)
		}
	}
}

package hdfs

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/loopback"
)

func TestSettings(t *testing.T) {
	check := func(name, v string, nodes int) error {
		st, ok := systems.System{Settings: Settings}.Setting(name)
		if !ok {
			t.Fatalf("no setting %s", name)
		}
		return st.Check(v, nodes)
	}
	for _, ok := range [][2]string{{"namenode_handlers", "10"}, {"namenode_handlers", "256"}, {"fine_grained_locking", "true"},
		{"fine_grained_locking", "false"}, {"block_size", "1MiB"}, {"block_size", "128MiB"}, {"replication", "1"}, {"replication", "3"}, {"datanode_capacity", "256MiB"}} {
		if err := check(ok[0], ok[1], 4); err != nil {
			t.Errorf("%s: %s: %v", ok[0], ok[1], err)
		}
	}
	for _, bad := range [][2]string{{"namenode_handlers", "0"}, {"namenode_handlers", "ten"}, {"namenode_handlers", "5000"},
		{"fine_grained_locking", "yes"}, {"block_size", "512KiB"}, {"block_size", "1048577B"}, {"block_size", "big"},
		{"replication", "0"}, {"replication", "4"}, {"replication", "two"}, {"datanode_capacity", "8MiB"}, {"datanode_capacity", "lots"}} {
		if err := check(bad[0], bad[1], 4); err == nil {
			t.Errorf("%s: %s: no error", bad[0], bad[1])
		}
	}

	d := New()
	if err := d.Configure(map[string]string{"namenode_handlers": "256", "fine_grained_locking": "true", "block_size": "4MiB", "replication": "2", "datanode_capacity": "256MiB"}); err != nil {
		t.Fatal(err)
	}
	lb, err := loopback.Hosts(t.TempDir(), 4)
	if err != nil {
		t.Fatal(err)
	}
	c := d.conf(lb[1], lb[0], 3)
	for k, want := range map[string]string{"dfs.namenode.handler.count": "256", "dfs.blocksize": "4194304", "dfs.replication": "2",
		"dfs.namenode.lock.model.provider.class": "org.apache.hadoop.hdfs.server.namenode.fgl.FineGrainedFSNamesystemLock"} {
		if c[k] != want {
			t.Errorf("%s = %q, want %q", k, c[k], want)
		}
	}
	// The capacity is the data directory's file system less the reserve.
	var st syscall.Statfs_t
	if err := syscall.Statfs(lb[1].DataDir(), &st); err != nil {
		t.Fatal(err)
	}
	if want := strconv.FormatInt(int64(st.Blocks)*st.Bsize-256<<20, 10); c["dfs.datanode.du.reserved"] != want {
		t.Errorf("dfs.datanode.du.reserved = %q, want %s (the file system's size less 256 MiB)", c["dfs.datanode.du.reserved"], want)
	}
	def := New().conf(lb[1], lb[0], 3)
	if _, ok := def["dfs.blocksize"]; ok {
		t.Error("the default configuration sets dfs.blocksize")
	}
	if def["dfs.datanode.du.reserved"] != "0" {
		t.Errorf("the default configuration reserves %s bytes", def["dfs.datanode.du.reserved"])
	}
}

// TestFormatKeptNamespace: once a namespace is kept for this Hadoop and
// JDK, a new cluster's is a copy of it (no NameNode -format), and keeping
// another does not replace it.
func TestFormatKeptNamespace(t *testing.T) {
	d := New()
	d.Home = t.TempDir()
	digest, err := d.digest("NameNode -format")
	if err != nil {
		t.Skip(err) // no JDK here
	}
	made := filepath.Join(t.TempDir(), "made")
	if err := os.MkdirAll(filepath.Join(made, "current"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(made, "current", "VERSION"), []byte("namespaceID=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(d.Home, "namespace", digest)
	keep(made, kept)
	other := filepath.Join(t.TempDir(), "other")
	os.MkdirAll(filepath.Join(other, "current"), 0o755)
	os.WriteFile(filepath.Join(other, "current", "VERSION"), []byte("namespaceID=2\n"), 0o644)
	keep(other, kept)
	nameDir := filepath.Join(t.TempDir(), "name")
	nn := &member{host: loopback.New("h0", "127.0.0.1", t.TempDir()), role: RoleNameNode} // not started: the kept one must do
	if err := d.format(context.Background(), nn, nameDir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(nameDir, "current", "VERSION")); err != nil || string(b) != "namespaceID=1\n" {
		t.Fatalf("new namespace's VERSION: %q, %v; want the first one kept", b, err)
	}
}

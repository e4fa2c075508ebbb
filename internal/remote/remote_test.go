package remote

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gait-dev/gait/internal/inventory"
)

// TestResolve: ~/.ssh/config's HostName, User, Port, IdentityFile and
// UserKnownHostsFile apply to an inventory address; the inventory's own
// values win.
func TestResolve(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "config")
	os.WriteFile(conf, []byte(`Host db*
  HostName 10.0.0.7
  User ops
  Port 2200
  IdentityFile /keys/db_ed25519
  UserKnownHostsFile /keys/known_hosts
`), 0o644)
	o := Options{SSHConfig: conf}
	got, err := o.resolve(inventory.Machine{Name: "db1", Addr: "db1"})
	if err != nil {
		t.Fatal(err)
	}
	want := target{addr: "10.0.0.7:2200", user: "ops", keys: []string{"/keys/db_ed25519"},
		knownHosts: []string{"/keys/known_hosts", "/etc/ssh/ssh_known_hosts"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("from ssh_config:\n got %+v\nwant %+v", got, want)
	}
	got, err = o.resolve(inventory.Machine{Name: "db2", Addr: "db2", User: "me", Port: 22, Key: "/mine"})
	if err != nil {
		t.Fatal(err)
	}
	if got.addr != "10.0.0.7:22" || got.user != "me" || !reflect.DeepEqual(got.keys, []string{"/mine"}) || !got.explicit {
		t.Errorf("the inventory's values must win: %+v", got)
	}
	if _, err := (Options{SSHConfig: filepath.Join(dir, "none")}).resolve(inventory.Machine{Addr: "x"}); err == nil {
		t.Error("a named ssh_config that is missing must be an error")
	}
}

// TestUntar: a run directory comes back whole; a tar entry that would
// land outside the directory is refused.
func TestUntar(t *testing.T) {
	archive := func(entries map[string]string) *bytes.Buffer {
		var b bytes.Buffer
		w := tar.NewWriter(&b)
		for name, body := range entries {
			w.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
			w.Write([]byte(body))
		}
		w.Close()
		return &b
	}
	dir := t.TempDir()
	if err := untar(archive(map[string]string{"exp/result.json": "{}", "exp/r1/summary.json": "[]"}), dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "exp", "r1", "summary.json")); err != nil || string(b) != "[]" {
		t.Errorf("got %q, %v", b, err)
	}
	for _, bad := range []string{"../escape", "/etc/x", "exp/../../escape"} {
		err := untar(archive(map[string]string{bad: "x"}), dir)
		if err == nil || !strings.Contains(err.Error(), "leaves the directory") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

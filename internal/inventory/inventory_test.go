package inventory

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestAnsibleFormats reads one inventory written in Ansible's INI and YAML
// forms; both must give the same machines, with Ansible's precedence:
// the host's own variables, then the nearest group's, then all's.
func TestAnsibleFormats(t *testing.T) {
	want := []Machine{
		{Name: "bastion.example.com", Addr: "203.0.113.9", Root: "/var/lib/gait-prod"},
		{Name: "db01.example.com", Addr: "db01.example.com", User: "ops", Root: "/var/lib/gait-prod"},
		{Name: "db02.example.com", Addr: "db02.example.com", User: "ops", Root: "/var/lib/gait-prod"},
		{Name: "db03.example.com", Addr: "db03.example.com", User: "ops", Root: "/var/lib/gait-prod"},
		{Name: "web1", Addr: "10.0.0.21", User: "deploy", Port: 2222, Key: "~/.ssh/web_ed25519", Root: "/var/lib/gait-prod"},
		{Name: "web2", Addr: "10.0.0.22", User: "www", Key: "~/.ssh/web_ed25519", Root: "/srv/gait"},
	}
	for _, f := range []string{"testdata/ansible.ini", "testdata/ansible.yaml"} {
		got, err := Load(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i := range got {
			got[i].Line = 0
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", f, got, want)
		}
	}
}

func TestGaitList(t *testing.T) {
	got, err := Load("testdata/gait.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []Machine{
		{Name: "m1", Addr: "198.19.255.1", User: "gait", Port: 22, Key: "/root/.ssh/id_ed25519", Root: "/var/lib/gait/m1", Cgroup: "machines/m1", Line: 2},
		{Name: "198.19.255.2", Addr: "198.19.255.2", Root: DefaultRoot, Line: 9},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %+v\nwant %+v", got, want)
	}
}

// TestBad: each malformed inventory gives one error naming the file, the
// line where it can, and what is wrong.
func TestBad(t *testing.T) {
	cases := []struct{ name, data, want string }{
		{"empty", "", "names no machine"},
		{"port", "[a]\nm1 ansible_port=http\n", "x:2: machine \"m1\": ansible_port \"http\" is not a port number"},
		{"root", "[a]\nm1 gait_root=relative/dir\n", "x:2: machine \"m1\": gait_root \"relative/dir\" must be a clean absolute path"},
		{"cgroup up", "[a]\nm1 gait_cgroup=gait/../..\n", "x:2: machine \"m1\": gait_cgroup \"gait/../..\" must be a clean relative path"},
		{"cgroup absolute", "[a]\nm1 gait_cgroup=/sys/fs/cgroup/cpu\n", "gait_cgroup \"/sys/fs/cgroup/cpu\" must be"},
		{"root shell", "[a]\nm1 gait_root='/x;rm -rf /'\n", "gait_root \"/x;rm -rf /\""},
		{"user", "- address: h\n  user: \"a b\"\n", "x:1: machine \"h\": user \"a b\" is not a user name"},
		{"address", "- address: \"-oProxyCommand=x\"\n", "address \"-oProxyCommand=x\" is not a host name"},
		{"section", "[a\nm1\n", "x:1: section \"[a\" has no closing ]"},
		{"vars", "[a:vars]\nnovalue\n", "x:2: in [a:vars], want key=value"},
		{"host var", "[a]\nm1 ansible_user\n", "x:2: host \"m1\": want key=value, not \"ansible_user\""},
		{"range", "[a]\nm[1:x]\n", "want one numeric range"},
		{"huge range", "[a]\nm[1:99999999]\n", "more than 10000 machines"},
		{"cycle", "[a:children]\nb\n[b:children]\na\n[b]\nm\n", "its own descendant"},
		{"field", "- address: h\n  adress: x\n", "x:2: unknown field \"adress\""},
		{"dup", "- name: a\n  address: h\n- name: a\n  address: i\n", "x:3: machine \"a\" named twice (first on line 1)"},
		{"yaml", "all: [\n", "x: not YAML or an INI inventory"},
		{"quote", "[a]\nm1 ansible_user=\"x\n", "x:2: unclosed \" quote"},
	}
	for _, c := range cases {
		_, err := Parse("x", []byte(c.data))
		var ie *Error
		if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an *Error containing %q", c.name, err, c.want)
		}
	}
}

func TestLoadMissing(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "none.ini"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v", err)
	}
}

// FuzzInventory: any input gives machines that pass the checks, or an
// error; never a panic.
func FuzzInventory(f *testing.F) {
	for _, p := range []string{"testdata/ansible.ini", "testdata/ansible.yaml", "testdata/gait.yaml"} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("[a:children]\nb\n[b:children]\nc\n[c]\nm[01:10] ansible_port=22\n"))
	f.Add([]byte("[a]\nm1 gait_root=/srv/gait gait_cgroup=machines/m1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := Parse("fuzz", data)
		if err != nil {
			var ie *Error
			if !errors.As(err, &ie) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		for _, m := range ms {
			if m.Name == "" || m.Addr == "" || !strings.HasPrefix(m.Root, "/") || m.Port < 0 || m.Port > 65535 {
				t.Fatalf("machine passed the checks: %+v", m)
			}
			// Root and Cgroup go into the agent's command line: no
			// shell word may break out of them, no cgroup climb out.
			if strings.ContainsAny(m.Root+m.Cgroup, " \t\n;&|$`'\"\\<>()*?") ||
				m.Cgroup != "" && (strings.HasPrefix(m.Cgroup, "/") || path.Clean(m.Cgroup) != m.Cgroup || m.Cgroup == ".." || strings.HasPrefix(m.Cgroup, "../")) {
				t.Fatalf("machine passed the checks: root %q, cgroup %q", m.Root, m.Cgroup)
			}
		}
	})
}

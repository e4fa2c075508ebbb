// Package inventory reads the machines gait may use: gait's own YAML list,
// or an Ansible inventory (INI or YAML) as it is, with the variables
// ansible_host, ansible_user, ansible_port and ansible_ssh_private_key_file,
// plus gait's own gait_root and gait_cgroup. It only parses and checks; reaching the
// machines is package remote's.
package inventory

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// DefaultRoot is where the agent keeps its binary, state and mounts on a
// machine whose inventory gives no gait_root.
const DefaultRoot = "/var/lib/gait"

// DefaultPort is SSH's.
const DefaultPort = 22

// MaxMachines bounds an inventory, so a range such as host[1:99999999]
// cannot make gait allocate without end.
const MaxMachines = 10000

// Machine is one machine of an inventory.
type Machine struct {
	Name string // as the inventory names it; errors and run directories use it
	Addr string // where SSH connects: ansible_host, else the name
	User string // empty: ~/.ssh/config's, else the local user's
	Port int    // 0: ~/.ssh/config's, else 22
	Key  string // a private key file; empty: ~/.ssh/config's and the ssh-agent's
	Root string // gait_root: the agent's directory on the machine
	// Cgroup is gait_cgroup: the CPU cgroup (relative to the controller's
	// root) below which the agent makes its hosts' cgroups; empty: "gait".
	Cgroup string
	// Line is where the machine is named in its file (1-based), for
	// errors found later, such as in preflight.
	Line int
}

func (m Machine) String() string { return m.Name }

// Error is a problem with an inventory, naming the file and line.
type Error struct {
	File string
	Line int // 0 when the problem has no one line
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("inventory %s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("inventory %s: %s", e.File, e.Msg)
}

// Load reads an inventory file.
func Load(file string) ([]Machine, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("inventory: %w", err)
	}
	return Parse(file, data)
}

// Parse reads an inventory from data; file names it in errors. The format
// is told from the content: INI when the first line that says anything
// is a [section] or a bare host line, YAML otherwise.
func Parse(file string, data []byte) ([]Machine, error) {
	var ms []Machine
	var err error
	if isINI(data) {
		ms, err = parseINI(file, data)
	} else {
		ms, err = parseYAML(file, data)
	}
	if err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, &Error{File: file, Msg: "names no machine"}
	}
	for i := range ms {
		if err := ms[i].check(file); err != nil {
			return nil, err
		}
	}
	return ms, nil
}

// isINI tells an INI inventory from YAML by its first meaningful line: a
// [section], or a host line with key=value variables and no colon-space.
func isINI(data []byte) bool {
	for _, line := range bytes.Split(data, []byte("\n")) {
		s := strings.TrimSpace(string(line))
		if s == "" || s[0] == '#' || s[0] == ';' || s == "---" {
			continue
		}
		if s[0] == '[' {
			return true
		}
		return !strings.Contains(s, ":") || (strings.Contains(s, "=") && !strings.Contains(s, ": "))
	}
	return false
}

var (
	// userName is what useradd accepts, more or less.
	userName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,31}$`)
	// address is a host name, IPv4 or IPv6 address: no spaces, no shell.
	address = regexp.MustCompile(`^[A-Za-z0-9_.:%-]{1,253}$`)
	// rootPath is a plain absolute path, safe inside a shell command
	// without quoting surprises.
	rootPath = regexp.MustCompile(`^/[A-Za-z0-9_./+-]{0,255}$`)
	// cgroupPath is gait_cgroup's: a path below the controller's root.
	cgroupPath = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_./+-]{0,255}$`)
)

func (m *Machine) check(file string) error {
	bad := func(msg string, a ...any) error {
		return &Error{File: file, Line: m.Line, Msg: fmt.Sprintf("machine %s: ", quote(m.Name)) + fmt.Sprintf(msg, a...)}
	}
	if m.Name == "" {
		return &Error{File: file, Line: m.Line, Msg: "a machine has no name"}
	}
	if m.Addr == "" {
		m.Addr = m.Name
	}
	switch {
	case !address.MatchString(m.Addr) || strings.HasPrefix(m.Addr, "-"):
		return bad("address %s is not a host name or IP address", quote(m.Addr))
	case m.User != "" && !userName.MatchString(m.User):
		return bad("user %s is not a user name", quote(m.User))
	case m.Port < 0 || m.Port > 65535:
		return bad("port %d is not between 1 and 65535", m.Port)
	}
	if m.Root == "" {
		m.Root = DefaultRoot
	}
	if !rootPath.MatchString(m.Root) || path.Clean(m.Root) != m.Root || m.Root == "/" {
		return bad("gait_root %s must be a clean absolute path other than / of letters, digits and _./+-", quote(m.Root))
	}
	if m.Cgroup != "" && (!cgroupPath.MatchString(m.Cgroup) || path.Clean(m.Cgroup) != m.Cgroup || strings.Contains("/"+m.Cgroup+"/", "/../")) {
		return bad("gait_cgroup %s must be a clean relative path (below the cpu controller's root) of letters, digits and _./+-", quote(m.Cgroup))
	}
	return nil
}

// quote shows untrusted input in an error: quoted, and cut when long.
func quote(s string) string {
	if len(s) > 60 {
		return strconv.Quote(s[:60]) + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return strconv.Quote(s)
}

// vars are a machine's variables as an inventory gives them, by name.
type vars map[string]string

// machine makes a Machine of a host's merged variables; unknown
// variables are Ansible's business and ignored, but a malformed port is
// an error.
func machine(file string, line int, name string, v vars) (Machine, error) {
	m := Machine{Name: name, Line: line, Addr: v["ansible_host"], User: v["ansible_user"],
		Key: v["ansible_ssh_private_key_file"], Root: v["gait_root"], Cgroup: v["gait_cgroup"]}
	if p, ok := v["ansible_port"]; ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return m, &Error{File: file, Line: line, Msg: fmt.Sprintf("machine %s: ansible_port %s is not a port number", quote(name), quote(p))}
		}
		m.Port = n
	}
	return m, nil
}

// expand turns an Ansible host pattern with one numeric range,
// web[01:03].example.com, into its names: web01, web02, web03.
func expand(file string, line int, pattern string) ([]string, error) {
	open := strings.IndexByte(pattern, '[')
	if open < 0 {
		return []string{pattern}, nil
	}
	end := strings.IndexByte(pattern[open:], ']')
	if end < 0 {
		return nil, &Error{File: file, Line: line, Msg: fmt.Sprintf("host %s: [ without ]", quote(pattern))}
	}
	end += open
	lo, hi, ok := strings.Cut(pattern[open+1:end], ":")
	a, errA := strconv.Atoi(lo)
	b, errB := strconv.Atoi(hi)
	if !ok || errA != nil || errB != nil || a < 0 || b < a || strings.Contains(pattern[end+1:], "[") {
		return nil, &Error{File: file, Line: line, Msg: fmt.Sprintf("host %s: want one numeric range such as [01:20]", quote(pattern))}
	}
	if b-a+1 > MaxMachines {
		return nil, &Error{File: file, Line: line, Msg: fmt.Sprintf("host %s: more than %d machines", quote(pattern), MaxMachines)}
	}
	width := 0
	if len(lo) > 1 && lo[0] == '0' {
		width = len(lo)
	}
	var out []string
	for i := a; i <= b; i++ {
		out = append(out, fmt.Sprintf("%s%0*d%s", pattern[:open], width, i, pattern[end+1:]))
	}
	return out, nil
}

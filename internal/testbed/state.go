package testbed

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/gait-dev/gait/internal/procstat"
	"github.com/vishvananda/netlink"
)

// DefaultStateDir holds one JSON state file per live or crashed run.
const DefaultStateDir = "/run/gait"

// testbedRange is reserved for benchmarking (RFC 2544); every run takes
// one /24 of it, so 512 runs can coexist.
var testbedRange = netip.MustParsePrefix("198.18.0.0/15")

// state records everything a run created, written before each thing is
// created, so that Clean can undo a run that died at any point.
type state struct {
	ID         string `json:"id"`
	Owner      int    `json:"owner_pid"`
	OwnerStart uint64 `json:"owner_start"`
	Subnet     string `json:"subnet"`
	// Reserved are subnets the run's overlay routes to (its testbeds on
	// other machines): no other run here may take them.
	Reserved []string `json:"reserved,omitempty"`
	// Netns names the network namespace the bridge and the machine's
	// ends of the links are in, when gait ran inside a named one (a
	// remote agent in a machine of the many-machines test); empty for
	// the namespace of whoever cleans.
	Netns      string      `json:"netns,omitempty"`
	Bridge     string      `json:"bridge,omitempty"`
	Namespaces []string    `json:"namespaces"`
	Links      []string    `json:"links"`
	Qdiscs     []string    `json:"qdiscs"`
	Mounts     []string    `json:"mounts"`
	Cgroups    []string    `json:"cgroups"`
	Procs      []procEntry `json:"procs"`
	Dirs       []string    `json:"dirs"`
	// Made are directories the run made (parents first), removed after
	// Dirs when they are empty.
	Made []string `json:"made,omitempty"`

	dir string // the state directory the file is in
}

// procEntry names a process by pid and start time, so that a pid reused
// by an unrelated process after a crash is never killed.
type procEntry struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
}

func statePath(dir, id string) string { return filepath.Join(dir, id+".json") }

// refPath names the reference that DefaultStateDir keeps to a run whose
// state file is elsewhere (tests keep theirs in temporary directories).
// Every run on a machine shares one address range and one namespace of
// link names, so a new run must see them all, whatever their state
// directory; and `gait clean` must find a run whose owner was killed
// before it could remove its own.
func refPath(id string) string { return filepath.Join(DefaultStateDir, id+".ref") }

// save writes the state file atomically: a crash leaves the old or the
// new version, never half of one.
func (s *state) save(dir string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state of run %s: %w", s.ID, err)
	}
	path := statePath(dir, s.ID)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func loadState(path string) (*state, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read state %s: %w", path, err)
	}
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("read state %s: %w", path, err)
	}
	if s.ID == "" {
		return nil, fmt.Errorf("read state %s: no run id", path)
	}
	s.dir = filepath.Dir(path)
	return &s, nil
}

// refer records in DefaultStateDir where the state of a run kept
// elsewhere is.
func refer(id, dir string) error {
	if dir == DefaultStateDir {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("reference run %s: %w", id, err)
	}
	if err := os.WriteFile(refPath(id), []byte(abs+"\n"), 0o644); err != nil {
		return fmt.Errorf("reference run %s: %w", id, err)
	}
	return nil
}

// referencedStates lists the runs DefaultStateDir refers to elsewhere. A
// reference whose state file is gone (its run ended, or its directory
// was removed) is dropped.
func referencedStates() ([]*state, error) {
	paths, err := filepath.Glob(filepath.Join(DefaultStateDir, "*.ref"))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", DefaultStateDir, err)
	}
	var out []*state
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read reference %s: %w", p, err)
		}
		id := strings.TrimSuffix(filepath.Base(p), ".ref")
		s, err := loadState(statePath(strings.TrimSpace(string(data)), id))
		if errors.Is(err, os.ErrNotExist) {
			os.Remove(p)
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// machineStates lists every run on this machine that gait knows of: those
// of DefaultStateDir, those it refers to, and those of dir.
func machineStates(dir string) ([]*state, error) {
	defaults, err := listStates(DefaultStateDir)
	if err != nil {
		return nil, err
	}
	referenced, err := referencedStates()
	if err != nil {
		return nil, err
	}
	own, err := listStates(dir)
	if err != nil {
		return nil, err
	}
	var all []*state
	seen := map[string]bool{}
	for _, s := range slices.Concat(defaults, referenced, own) {
		if !seen[s.ID] {
			seen[s.ID] = true
			all = append(all, s)
		}
	}
	return all, nil
}

func listStates(dir string) ([]*state, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var out []*state
	for _, p := range paths {
		s, err := loadState(p)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// lockMachine serialises run creation and cleaning on this machine, so
// two runs starting at once cannot pick the same id or subnet, whatever
// their state directories.
func lockMachine() (unlock func(), err error) {
	if err := os.MkdirAll(DefaultStateDir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", DefaultStateDir, err)
	}
	path := filepath.Join(DefaultStateDir, "lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// newRunID returns a short id unused by any known run or namespace.
func newRunID(states []*state) (string, error) {
	used := map[string]bool{}
	for _, s := range states {
		used[s.ID] = true
	}
	for range 100 {
		b := make([]byte, 3)
		if _, err := rand.Read(b); err != nil {
			return "", fmt.Errorf("run id: %w", err)
		}
		id := hex.EncodeToString(b)[:5]
		if used[id] {
			continue
		}
		if m, _ := filepath.Glob(filepath.Join(netnsDir, "g"+id+"-*")); len(m) > 0 {
			continue
		}
		return id, nil
	}
	return "", errors.New("run id: no free id after 100 tries")
}

// subnetBits is the prefix length of the subnet a run of hosts takes:
// a /24 unless its hosts, the bridge, the network and the broadcast
// address need more (a /23 from 254 hosts, a /22 from 510).
func subnetBits(hosts int) int {
	bits := 24
	for hosts+3 > 1<<(32-bits) {
		bits--
	}
	return bits
}

// freeSubnet picks the first aligned subnet of prefix length bits in
// 198.18.0.0/15 none of whose /24s is in avoid or used here
// (usedSubnets).
func freeSubnet(states []*state, avoid []netip.Prefix, bits int) (netip.Prefix, error) {
	used, err := usedSubnets(states)
	if err != nil {
		return netip.Prefix{}, err
	}
	for _, p := range avoid {
		markSubnets(used, p)
	}
	return pickSubnet(used, bits)
}

// pickSubnet is the first aligned subnet of prefix length bits in
// 198.18.0.0/15 none of whose /24s is used.
func pickSubnet(used map[netip.Prefix]bool, bits int) (netip.Prefix, error) {
	step := 1 << (24 - bits) // /24s in one subnet
next:
	for i := 0; i < 512; i += step {
		for j := i; j < i+step; j++ {
			if used[slash24(j)] {
				continue next
			}
		}
		return netip.PrefixFrom(slash24(i).Addr(), bits), nil
	}
	return netip.Prefix{}, fmt.Errorf("no free /%d left in 198.18.0.0/15: run `gait clean`", bits)
}

// slash24 is the i-th /24 of 198.18.0.0/15.
func slash24(i int) netip.Prefix {
	base := testbedRange.Addr().As4()
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{base[0], base[1] + byte(i/256), byte(i % 256), 0}), 24)
}

// markSubnets marks every /24 that p covers (or the one p is in) as used.
func markSubnets(used map[netip.Prefix]bool, p netip.Prefix) {
	p = p.Masked()
	if p.Bits() >= 24 {
		used[netip.PrefixFrom(p.Addr(), 24).Masked()] = true
		return
	}
	a := p.Addr()
	for range 1 << (24 - p.Bits()) {
		used[netip.PrefixFrom(a, 24)] = true
		b := a.As4()
		if b[2] == 255 {
			b[1]++
		}
		b[2]++
		a = netip.AddrFrom4(b)
	}
}

// usedSubnets are the /24s of 198.18.0.0/15 that a state file (live or
// crashed, whose bridge may still hold it; or reserved by a run's
// overlay) or an address on this machine uses. A run's subnet larger
// than a /24 marks each of its /24s.
func usedSubnets(states []*state) (map[netip.Prefix]bool, error) {
	used := map[netip.Prefix]bool{}
	for _, s := range states {
		for _, sn := range append([]string{s.Subnet}, s.Reserved...) {
			if p, err := netip.ParsePrefix(sn); err == nil {
				markSubnets(used, p)
			}
		}
	}
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP.To4())
		if !ok || !testbedRange.Contains(ip) {
			continue
		}
		ones, _ := a.Mask.Size()
		markSubnets(used, netip.PrefixFrom(ip, ones))
	}
	return used, nil
}

// UsedSubnets lists the subnets runs on this machine use (those whose
// state is in stateDir or DefaultStateDir) or its addresses are on: what
// the same run's testbeds on other machines must avoid, as this
// machine routes to them.
func UsedSubnets(stateDir string) ([]netip.Prefix, error) {
	if stateDir == "" {
		stateDir = DefaultStateDir
	}
	states, err := machineStates(stateDir)
	if err != nil {
		return nil, err
	}
	used, err := usedSubnets(states)
	if err != nil {
		return nil, err
	}
	return slices.SortedFunc(maps.Keys(used), netip.Prefix.Compare), nil
}

// currentNetns names the named network namespace (under /run/netns)
// this process is in, or "" when it is in none of them (the machine's own).
func currentNetns() string {
	var self syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/net", &self); err != nil {
		return ""
	}
	names, _ := filepath.Glob(filepath.Join(netnsDir, "*"))
	for _, n := range names {
		var st syscall.Stat_t
		if syscall.Stat(n, &st) == nil && st.Ino == self.Ino && st.Dev == self.Dev {
			return filepath.Base(n)
		}
	}
	return ""
}

// alive reports whether the recorded process still runs.
func (p procEntry) alive() bool {
	return procstat.Identity{PID: p.Pid, Start: p.Start}.Alive()
}

// live reports whether the run's owner still runs.
func (s *state) live() bool {
	return procEntry{Pid: s.Owner, Start: s.OwnerStart}.alive()
}

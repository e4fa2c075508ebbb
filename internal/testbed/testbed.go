// Package testbed builds isolated hosts on this machine: a network
// namespace each, joined by shaped veth links to a bridge, with an
// address from 198.18.0.0/15, a data directory (optionally on limpfs) and
// supervised processes. Everything created is recorded in a state file so
// that Close, a signal, or Clean after a crash removes it.
package testbed

import (
	"cmp"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/limpfs"
	"github.com/gait-dev/gait/internal/procstat"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// DefaultBandwidth is the baseline link of the Limplock paper, 100 Mbit/s.
const DefaultBandwidth = 100_000_000

// MaxHosts bounds a run's hosts: a Linux bridge takes at most 1024
// ports. The run's subnet grows with its hosts, from a /24 (up to 253)
// to a /22 (up to 1021): see subnetBits.
const MaxHosts = 1000

// ErrNotRoot is returned by everything that creates hosts without root.
var ErrNotRoot = errors.New("this command needs root (network namespaces, tc, FUSE)")

// NeedRoot returns ErrNotRoot unless gait runs as root.
func NeedRoot() error {
	if os.Geteuid() != 0 {
		return ErrNotRoot
	}
	return nil
}

// Options describe a testbed.
type Options struct {
	Hosts     int    // number of hosts, 1..MaxHosts
	Bandwidth uint64 // each host's link in bit/s, both directions; 0 means DefaultBandwidth
	// Dir holds one directory per host (data, log). Empty means a new
	// temporary directory that Close removes, in TempDir (empty: the
	// system's).
	Dir     string
	TempDir string
	// KeepData keeps the hosts' data directories after Close; logs are
	// always kept when Dir is given.
	KeepData bool
	// Disk mounts limpfs over every data directory, so a disk slowdown
	// can be injected; DiskBandwidth and DiskLatency describe its disk.
	Disk          bool
	DiskBandwidth float64
	DiskLatency   time.Duration
	// Emulate makes every data directory an emulating limpfs (a store in
	// the host's directory): the disk of Disk when that is set, else one
	// with no bandwidth limit.
	Emulate  bool
	StateDir string // where the state file goes; empty means DefaultStateDir
	// BridgeOnly allows a testbed of no hosts: a bridge with this
	// machine's address on the run's subnet, through which a control
	// node joins an overlay of testbeds on other machines.
	BridgeOnly bool
	// Avoid are subnets the run must not take: its testbeds' on other
	// machines, when it spans them.
	Avoid []netip.Prefix
	// Cgroup is the CPU cgroup, relative to the controller's root, below
	// which the hosts' cgroups go; empty means DefaultCgroup. A machine
	// whose gait must stay within a cgroup of its own names one there.
	Cgroup string
	// Log hears what Close waits for, when that takes over a second;
	// nil means nowhere.
	Log io.Writer
}

// Testbed is one run's set of hosts.
type Testbed struct {
	ID        string
	Subnet    netip.Prefix
	Gateway   netip.Addr // the bridge's address, how this machine reaches the hosts
	Bandwidth uint64
	Dir       string
	Hosts     []*Host

	cgroupParent string // Options.Cgroup
	log          io.Writer
	mu           sync.Mutex // guards st
	st           *state
	closeOnce    sync.Once
	closeErr     error
}

// Host is one isolated host.
type Host struct {
	Name      string     // h0, h1, ...
	Index     int        // position in Testbed.Hosts
	Addr      netip.Addr // the host's address on the testbed
	Namespace string     // network namespace, at /run/netns/<Namespace>
	Link      string     // this machine's end of the host's veth pair
	Dir       string     // <Testbed.Dir>/<Name>
	DataDir   string     // <Dir>/data, on limpfs when Options.Disk

	tb        *Testbed
	ns        netns.NsHandle
	cgroup    string
	disk      *limpfs.FS
	mu        sync.Mutex
	procs     []*Proc
	bandwidth uint64
}

// Up creates a testbed. On error everything created so far is removed.
func Up(opts Options) (tb *Testbed, err error) {
	if err := NeedRoot(); err != nil {
		return nil, err
	}
	if opts.Hosts < 1 || opts.Hosts > MaxHosts {
		if opts.Hosts != 0 || !opts.BridgeOnly {
			return nil, fmt.Errorf("hosts: %d is not between 1 and %d", opts.Hosts, MaxHosts)
		}
	}
	if opts.Bandwidth == 0 {
		opts.Bandwidth = DefaultBandwidth
	}
	if opts.Bandwidth < MinBandwidth || opts.Bandwidth > MaxBandwidth {
		return nil, fmt.Errorf("bandwidth: %d bit/s is not between %d and %d", opts.Bandwidth, uint64(MinBandwidth), uint64(MaxBandwidth))
	}
	if opts.Cgroup == "" {
		opts.Cgroup = DefaultCgroup
	}
	if !filepath.IsLocal(opts.Cgroup) || filepath.Clean(opts.Cgroup) != opts.Cgroup {
		return nil, fmt.Errorf("cgroup %q: want a clean path below the cpu controller's root", opts.Cgroup)
	}
	if opts.StateDir == "" {
		opts.StateDir = DefaultStateDir
	}
	if opts.StateDir, err = filepath.Abs(opts.StateDir); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	tb, err = register(opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, tb.Close())
			tb = nil
		}
	}()
	if err := tb.makeDir(opts); err != nil {
		return tb, err
	}
	br, err := tb.makeBridge()
	if err != nil {
		return tb, err
	}
	for i := range opts.Hosts {
		h, err := tb.makeHost(i, br, opts)
		if h != nil {
			tb.Hosts = append(tb.Hosts, h)
		}
		if err != nil {
			return tb, err
		}
	}
	return tb, nil
}

// register picks the run's id and subnet and writes its first state
// file, under the state directory's lock.
func register(opts Options) (*Testbed, error) {
	unlock, err := lockMachine()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := os.MkdirAll(opts.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", opts.StateDir, err)
	}
	states, err := machineStates(opts.StateDir)
	if err != nil {
		return nil, err
	}
	id, err := newRunID(states)
	if err != nil {
		return nil, err
	}
	subnet, err := freeSubnet(states, opts.Avoid, subnetBits(opts.Hosts))
	if err != nil {
		return nil, err
	}
	st := &state{ID: id, Owner: os.Getpid(), OwnerStart: procstat.Identify(os.Getpid()).Start, Subnet: subnet.String(),
		Netns: currentNetns(), dir: opts.StateDir}
	if err := refer(id, opts.StateDir); err != nil {
		return nil, err
	}
	if err := st.save(opts.StateDir); err != nil {
		return nil, err
	}
	tb := &Testbed{
		ID:           id,
		Subnet:       subnet,
		Gateway:      subnet.Addr().Next(),
		Bandwidth:    opts.Bandwidth,
		cgroupParent: opts.Cgroup,
		log:          opts.Log,
		st:           st,
	}
	track(tb)
	return tb, nil
}

// record changes the state and saves it before the caller creates what
// it names, so a crash right after still leaves a trace to clean.
func (tb *Testbed) record(change func(*state)) error {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	change(tb.st)
	return tb.st.save(tb.st.dir)
}

func (tb *Testbed) makeDir(opts Options) error {
	if opts.Dir == "" {
		// Recorded before it exists, by a name only this run uses.
		d := filepath.Join(cmp.Or(opts.TempDir, os.TempDir()), "gait-"+tb.ID+"-"+rand.Text()[:10])
		if err := tb.record(func(s *state) { s.Dirs = append(s.Dirs, d) }); err != nil {
			return err
		}
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("create run directory: %w", err)
		}
		tb.Dir = d
		return nil
	}
	d, err := filepath.Abs(opts.Dir)
	if err != nil {
		return fmt.Errorf("run directory %s: %w", opts.Dir, err)
	}
	if err := tb.MkdirAll(d); err != nil {
		return fmt.Errorf("create run directory: %w", err)
	}
	tb.Dir = d
	return nil
}

// MkdirAll makes dir and its missing parents, recording each it makes, so
// that Close and Clean remove those left empty (a host's directory once its
// data is gone, a --dir that did not exist).
func (tb *Testbed) MkdirAll(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		missing = append(missing, d)
	}
	slices.Reverse(missing)
	if err := tb.record(func(s *state) { s.Made = append(s.Made, missing...) }); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o755)
}

// Scratch records path (a file or directory that need not exist yet) as
// the run's, to be removed with it by Close, or by Clean after a crash,
// unless Keep is called first: a run directory still being written, the
// logs of a run that may be interrupted.
func (tb *Testbed) Scratch(path string) error {
	return tb.record(func(s *state) { s.Dirs = append(s.Dirs, path) })
}

// Keep undoes Scratch: path stays after the run.
func (tb *Testbed) Keep(path string) error {
	return tb.record(func(s *state) { s.Dirs = slices.DeleteFunc(s.Dirs, func(d string) bool { return d == path }) })
}

func (tb *Testbed) makeBridge() (netlink.Link, error) {
	name := "g" + tb.ID + "-br"
	if err := tb.record(func(s *state) { s.Bridge = name }); err != nil {
		return nil, err
	}
	return newBridge(name, netip.PrefixFrom(tb.Gateway, tb.Subnet.Bits()))
}

func (tb *Testbed) makeHost(i int, br netlink.Link, opts Options) (*Host, error) {
	name := fmt.Sprintf("h%d", i)
	addr := tb.Gateway
	for range i + 1 {
		addr = addr.Next()
	}
	h := &Host{
		Name:      name,
		Index:     i,
		Addr:      addr,
		Namespace: "g" + tb.ID + "-" + name,
		Link:      "g" + tb.ID + "-" + name,
		Dir:       filepath.Join(tb.Dir, name),
		tb:        tb,
	}
	h.DataDir = filepath.Join(h.Dir, "data")
	if err := tb.record(func(s *state) {
		s.Namespaces = append(s.Namespaces, h.Namespace)
		s.Links = append(s.Links, h.Link)
	}); err != nil {
		return nil, err
	}
	ns, err := newNamespace(h.Namespace)
	if err != nil {
		return nil, err
	}
	h.ns = ns
	if err := wireHost(br, h.Link, ns, netip.PrefixFrom(addr, tb.Subnet.Bits())); err != nil {
		return h, err
	}
	if err := h.SetBandwidth(opts.Bandwidth); err != nil {
		return h, err
	}
	if err := h.makeDirs(opts); err != nil {
		return h, err
	}
	return h, h.makeCgroup()
}

func (h *Host) makeDirs(opts Options) error {
	if err := h.tb.MkdirAll(h.DataDir); err != nil {
		return fmt.Errorf("create data directory of %s: %w", h.Name, err)
	}
	backing := filepath.Join(h.Dir, "disk")
	if !opts.KeepData && opts.Dir != "" {
		if err := h.tb.record(func(s *state) { s.Dirs = append(s.Dirs, h.DataDir, backing) }); err != nil {
			return err
		}
	}
	if !opts.Disk && !opts.Emulate {
		return nil
	}
	if err := os.MkdirAll(backing, 0o755); err != nil {
		return fmt.Errorf("create disk of %s: %w", h.Name, err)
	}
	if err := h.tb.record(func(s *state) { s.Mounts = append(s.Mounts, h.DataDir) }); err != nil {
		return err
	}
	dopts := limpfs.Options{Bandwidth: opts.DiskBandwidth, Latency: opts.DiskLatency}
	mount := limpfs.Mount
	if opts.Emulate {
		mount = limpfs.MountStore
		if !opts.Disk {
			dopts.Bandwidth = math.Inf(1)
		}
	}
	disk, err := mount(backing, h.DataDir, dopts)
	if err != nil {
		return fmt.Errorf("disk of %s: %w", h.Name, err)
	}
	h.disk = disk
	return nil
}

// makeCgroup gives the host a CPU cgroup when the machine has the
// controller; without one the host simply has none.
func (h *Host) makeCgroup() error {
	ctl := findCPUController()
	if ctl == nil {
		return nil
	}
	path := filepath.Join(ctl.root, h.tb.cgroupParent, h.Namespace)
	if err := h.tb.record(func(s *state) { s.Cgroups = append(s.Cgroups, path) }); err != nil {
		return err
	}
	dir, err := ctl.newCgroup(h.tb.cgroupParent, h.Namespace)
	if err != nil {
		return fmt.Errorf("cgroup of %s: %w", h.Name, err)
	}
	h.cgroup = dir
	return nil
}

// Host returns the host called name, or nil.
func (tb *Testbed) Host(name string) *Host {
	for _, h := range tb.Hosts {
		if h.Name == name {
			return h
		}
	}
	return nil
}

// Close stops every process and removes everything the testbed created.
// It is safe to call more than once.
func (tb *Testbed) Close() error {
	tb.closeOnce.Do(func() {
		defer untrack(tb)
		var errs []error
		for _, h := range tb.Hosts {
			if err := tb.waiting(func() string { return "the processes of " + h.Name + ": " + describePids(h.running()) }, h.KillAll); err != nil {
				errs = append(errs, err)
			}
			if h.disk != nil {
				if err := tb.waiting(func() string { return "the disk of " + h.Name + " to unmount (" + h.DataDir + ")" }, h.disk.Unmount); err != nil {
					errs = append(errs, err)
				}
			}
			h.ns.Close()
		}
		tb.mu.Lock()
		defer tb.mu.Unlock()
		if err := teardown(tb.st); err != nil {
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			tb.closeErr = fmt.Errorf("close testbed %s: %w", tb.ID, errors.Join(errs...))
		}
	})
	return tb.closeErr
}

// waiting runs step and, once it has taken a second, says every two
// seconds what it still waits for.
func (tb *Testbed) waiting(what func() string, step func() error) error {
	if tb.log == nil {
		return step()
	}
	done, said := make(chan struct{}), make(chan struct{})
	defer func() { close(done); <-said }() // nothing said after the step
	go func() {
		defer close(said)
		start := time.Now()
		wait := time.NewTimer(time.Second)
		defer wait.Stop()
		for {
			select {
			case <-done:
				return
			case <-wait.C:
				fmt.Fprintf(tb.log, "removing run %s: waiting %s for %s\n", tb.ID, time.Since(start).Round(time.Second), what())
				wait.Reset(2 * time.Second)
			}
		}
	}()
	return step()
}

// hurry ends the testbed's FUSE connections at once, so that a Close
// under way that waits on one of them goes on.
func (tb *Testbed) hurry() {
	for _, h := range tb.Hosts {
		if h.disk != nil {
			limpfs.Unmount(h.DataDir)
		}
	}
}

// bitUnits are the link-rate units, largest first.
var bitUnits = []struct {
	name string
	mult uint64
}{{"Gbit", 1e9}, {"Mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}}

// FormatBandwidth writes a link rate exactly, in the largest unit that
// divides it: 100Mbit/s, 1500kbit/s. ParseBandwidth reads it back.
func FormatBandwidth(bps uint64) string {
	for _, u := range bitUnits {
		if bps >= u.mult && bps%u.mult == 0 {
			return strconv.FormatUint(bps/u.mult, 10) + u.name + "/s"
		}
	}
	return strconv.FormatUint(bps, 10) + "bit/s"
}

// ParseBandwidth reads a link rate the one way gait reads it everywhere (a
// scenario's bandwidth:, the --bandwidth flags): a number with a unit Gbit,
// Mbit, kbit or bit, in any case, "/s" optional (100Mbit/s, 100mbit,
// 1.5Gbit/s), or a plain number of bit/s. The rate must be one a link can be
// shaped to, MinBandwidth to MaxBandwidth.
func ParseBandwidth(s string) (uint64, error) {
	num := strings.ToLower(strings.TrimSpace(s))
	num = strings.TrimSuffix(num, "/s")
	mult := 1.0
	for _, u := range bitUnits {
		if n, ok := strings.CutSuffix(num, strings.ToLower(u.name)); ok {
			num, mult = strings.TrimSpace(n), float64(u.mult)
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a link rate such as 100Mbit/s, 10Mbit/s or 500kbit/s", s)
	}
	bps := v * mult
	if bps < MinBandwidth || bps > MaxBandwidth {
		return 0, fmt.Errorf("%q is not a link rate between %s and %s", s, FormatBandwidth(MinBandwidth), FormatBandwidth(MaxBandwidth))
	}
	return uint64(bps), nil
}

// Package limp injects limpware into hosts: a NIC, disk or CPU slowed by
// a factor, a crash, or a network partition. Every injector has the same
// two verbs, and Run applies a list of them on a schedule.
//
// An injector acts on a Host, the few kernel-level primitives a host
// offers: a testbed host on this machine (*testbed.Host) has them, and so
// does a host on another machine, reached through its agent.
//
// Each kind of fault lives in a file of its own (nic.go, disk.go, cpu.go,
// crash.go, partition.go) and registers itself there, once, with Register:
// its name, what it does, whether it takes a slowdown factor, and how to
// make it. Kinds, Lookup and New answer from that registry, so a new kind
// is one new file.
package limp

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gait-dev/gait/internal/testbed"
)

// A testbed host is a Host.
var _ Host = (*testbed.Host)(nil)

// Host is what an injector acts on. *testbed.Host implements it on this
// machine; a remote host implements it by asking the agent on its
// machine to do the same there.
type Host interface {
	// HostName names the host in errors and events: h0, h1, ...
	HostName() string
	// Baseline is the rate of the host's link in bit/s, what a NIC
	// factor divides.
	Baseline() uint64
	// SetBandwidth shapes the host's link to bps bit/s, both directions.
	SetBandwidth(bps uint64) error
	// SetLinkUp takes the host's link up or down; down cuts it off from
	// every other host, its shaping kept for when it comes back.
	SetLinkUp(up bool) error
	// SetDiskFactor slows the host's data directory's disk by factor (1
	// is the baseline); testbed.ErrNoDisk when it is not on limpfs.
	SetDiskFactor(factor float64) error
	// HasCPUCgroup says whether LimitCPU can limit the host's processes.
	HasCPUCgroup() bool
	// LimitCPU lets the host's processes use cpus CPUs together; 0
	// lifts the limit.
	LimitCPU(cpus float64) error
	// SignalAll sends sig to every running process of the host.
	SignalAll(sig syscall.Signal) error
	// CPUTime is the CPU time the host's running processes have used.
	CPUTime() time.Duration
	// KillAll kills every process of the host with SIGKILL and waits
	// until they are gone.
	KillAll() error
	// RestartStopped starts again every process of the host that is not
	// running.
	RestartStopped() error
}

// Clocked is a Host on another machine, whose actions begin on that
// machine's clock. BeganAt says when the first action asked of it at or
// after sent (this machine's time) began there, put on this machine's
// clock by the machines' measured offset; false when it does not know.
// A schedule's events then tell when a fault began where it acts, not
// when it was asked for.
type Clocked interface {
	BeganAt(sent time.Time) (time.Time, bool)
}

// Injector slows one kind of resource of a host.
type Injector interface {
	// Kind names the fault, as it is registered: nic, disk, cpu, crash
	// or partition.
	Kind() string
	// Apply slows the host's resource by factor (>= 1), replacing
	// whatever factor this injector applied before. A kind that takes no
	// factor (see Kind.Factor) ignores it.
	Apply(h Host, factor float64) error
	// Clear brings the resource back to its baseline.
	Clear(h Host) error
}

// Options tune the injectors New makes; each kind reads the fields that
// concern it.
type Options struct {
	// RestartAfter restarts a crashed host's processes after this
	// delay; 0 leaves them down until Clear.
	RestartAfter time.Duration
	// CPUMode is "cgroup", "signal" or "" (cgroup where the host has
	// one, else SIGSTOP/SIGCONT duty cycling).
	CPUMode string
}

// Kind is a kind of fault as it registers itself.
type Kind struct {
	// Name is how scenarios and New name the kind; the injectors New
	// makes return it from Injector.Kind.
	Name string
	// Description says in one line what the fault does to a host.
	Description string
	// Factor is true when the fault slows a resource by a factor; false
	// when it strikes fully or not at all (crash, partition), so a
	// scenario gives it no factors and Apply ignores the one it gets.
	Factor bool
	// New makes an injector of the kind, or says why opts do not suit it.
	New func(opts Options) (Injector, error)
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Kind{}
)

// Register adds a kind of fault; each injector's file calls it from init.
// It panics on a kind without a name or constructor, or a name registered
// twice, as those are programming errors.
func Register(k Kind) {
	if k.Name == "" || k.New == nil {
		panic(fmt.Sprintf("limp: Register(%q): a kind needs a name and a constructor", k.Name))
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[k.Name]; dup {
		panic(fmt.Sprintf("limp: Register(%q): registered twice", k.Name))
	}
	registry[k.Name] = k
}

// Kinds returns the names of the registered kinds in alphabetical order:
// cpu, crash, disk, nic, partition.
func Kinds() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for name := range registry {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the registered kind of that name.
func Lookup(name string) (Kind, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	k, ok := registry[name]
	return k, ok
}

// TakesFactor says whether the kind slows by a factor (nic, disk, cpu);
// false for one that strikes fully or not at all (crash, partition) and
// for an unknown kind.
func TakesFactor(name string) bool {
	k, ok := Lookup(name)
	return ok && k.Factor
}

// New returns an injector of a kind, or an error that lists the known
// kinds.
func New(kind string, opts Options) (Injector, error) {
	k, ok := Lookup(kind)
	if !ok {
		return nil, fmt.Errorf("fault %q: want one of %s", kind, strings.Join(Kinds(), ", "))
	}
	return k.New(opts)
}

func checkFactor(kind string, h Host, factor float64) error {
	if !(factor >= 1) || math.IsInf(factor, 0) {
		return fmt.Errorf("%s on %s: factor %g must be a number >= 1", kind, h.HostName(), factor)
	}
	return nil
}

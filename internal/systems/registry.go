package systems

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/gait-dev/gait/internal/load"
)

// Role is a part a member of a system's cluster can play.
type Role struct {
	Name string // as Cluster.Roles names it: leader, follower, primary, ...
	// MinNodes is the smallest cluster in which some member has this role
	// (a follower needs a leader beside it).
	MinNodes int
	// Client says whether a workload's clients may talk to a member with
	// this role.
	Client bool
	// Orders says the member with this role orders the system's Ordered
	// operations (a consensus leader), so a limping one is involved in
	// each of them wherever it was sent: the Limplock paper's operation
	// limplock.
	Orders bool
}

// ConsensusRoles are the roles of a system replicated by consensus: the
// clients of the Limplock paper's experiments talk to followers, one alone
// is its own leader.
var ConsensusRoles = []Role{
	{Name: "follower", MinNodes: 2, Client: true},
	{Name: "leader", MinNodes: 1, Client: true, Orders: true},
}

// System is what gait knows of a system before it starts one: what a
// scenario, a workload or gait load may ask of it. Each driver package
// registers its system once, in an init function; import
// internal/systems/all for every one.
type System struct {
	Name string   // as a scenario's system: names it
	Ops  []string // operation names, in load.Op kind order
	// Write is the operation that writes a key, used to preload the keys
	// before reads.
	Write string
	// Ordered are the operations that pass through the member with a role
	// that Orders, wherever they are sent: every write, and the reads the
	// system makes linearizable through its leader. Nil means Write alone.
	Ordered []string
	// Roles are the roles its members can have, in the order a workload
	// prefers to connect to them: the first client role the cluster has is
	// the default.
	Roles []Role
	// New returns a driver with its defaults.
	New func() Driver
	// Dial, if set, returns clients of a server already running at addr
	// (gait load); nil when gait can only drive clusters it started.
	Dial func(addr string) load.Dialer
	// Settings are what a scenario's config: block may give the system;
	// New's driver must then be Configurable.
	Settings []Setting
	// Waits says its clients are load.Waiters: a workload may have each
	// write wait for replicas (wait:).
	Waits bool
}

// Setting is one key of a scenario's config: block.
type Setting struct {
	Name string
	// Values says what it takes, for errors and the docs: "always, everysec or no".
	Values string
	// Check says what is wrong with value for a cluster of nodes members,
	// or returns nil: a scenario is refused before anything starts.
	Check func(value string, nodes int) error
}

// Configurable is a driver that takes a scenario's config: settings.
type Configurable interface {
	Driver
	// Configure applies settings Check has accepted.
	Configure(settings map[string]string) error
}

// Setting returns the setting called name.
func (s System) Setting(name string) (Setting, bool) {
	i := slices.IndexFunc(s.Settings, func(st Setting) bool { return st.Name == name })
	if i < 0 {
		return Setting{}, false
	}
	return s.Settings[i], true
}

// SettingNames lists the settings a config: block may give, or "none".
func (s System) SettingNames() string {
	if len(s.Settings) == 0 {
		return "none"
	}
	var names []string
	for _, st := range s.Settings {
		names = append(names, st.Name)
	}
	return strings.Join(names, ", ")
}

// Driver returns a driver of s with settings (from a config: block that
// Setting's checks accepted; nil for the defaults).
func (s System) Driver(settings map[string]string) (Driver, error) {
	d := s.New()
	if len(settings) == 0 {
		return d, nil
	}
	c, ok := d.(Configurable)
	if !ok {
		return nil, fmt.Errorf("%s takes no settings", s.Name)
	}
	if err := c.Configure(settings); err != nil {
		return nil, fmt.Errorf("%s settings: %w", s.Name, err)
	}
	return d, nil
}

// PassesOrderer says whether op passes through the member whose role
// Orders (see Ordered).
func (s System) PassesOrderer(op string) bool {
	if s.Ordered == nil {
		return op == s.Write
	}
	return slices.Contains(s.Ordered, op)
}

// WriteKind is the load.Op kind of the operation that writes a key.
func (s System) WriteKind() uint8 { return uint8(slices.Index(s.Ops, s.Write)) }

// Role returns the role called name.
func (s System) Role(name string) (Role, bool) {
	i := slices.IndexFunc(s.Roles, func(r Role) bool { return r.Name == name })
	if i < 0 {
		return Role{}, false
	}
	return s.Roles[i], true
}

// RoleNames lists the roles, those clients may talk to only if clients is set.
func (s System) RoleNames(clients bool) []string {
	var names []string
	for _, r := range s.Roles {
		if !clients || r.Client {
			names = append(names, r.Name)
		}
	}
	return names
}

// DefaultConnect is the role a workload's clients talk to in a cluster of
// nodes members when the scenario does not say.
func (s System) DefaultConnect(nodes int) string {
	for _, r := range s.Roles {
		if r.Client && nodes >= r.MinNodes {
			return r.Name
		}
	}
	return ""
}

var (
	mu       sync.Mutex
	registry = map[string]System{}
)

// Register makes a system known by its name. It panics on a second
// registration of a name or an inconsistent System: both are programming
// errors, found when gait starts.
func Register(s System) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[s.Name]; dup {
		panic("systems: " + s.Name + " registered twice")
	}
	if s.New == nil || !slices.Contains(s.Ops, s.Write) || len(s.Roles) == 0 {
		panic("systems: " + s.Name + ": needs New, a Write among its Ops, and roles")
	}
	if _, ok := s.New().(Configurable); len(s.Settings) > 0 && !ok {
		panic("systems: " + s.Name + " has settings but its driver is not Configurable")
	}
	registry[s.Name] = s
}

// Lookup returns the system called name, or an error listing those known.
func Lookup(name string) (System, error) {
	mu.Lock()
	s, ok := registry[name]
	mu.Unlock()
	if !ok {
		return System{}, fmt.Errorf("unknown system %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return s, nil
}

// Names lists the known systems, sorted.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	return slices.Sorted(maps.Keys(registry))
}

package zookeeper

import "github.com/gait-dev/gait/internal/systems"

func init() {
	systems.Register(systems.System{
		Name:  "zookeeper",
		Ops:   Ops,
		Write: "set",
		// A get is answered by the server the client talks to.
		Ordered: []string{"create", "set", "delete"},
		Roles:   systems.ConsensusRoles,
		New:     func() systems.Driver { return New() },
	})
}

package zookeeper

import "github.com/gait-dev/gait/internal/systems"

func init() {
	systems.Register(systems.System{
		Name:  "zookeeper",
		Ops:   Ops,
		Write: "set",
		Roles: systems.ConsensusRoles,
		New:   func() systems.Driver { return New() },
	})
}

package etcd

import "github.com/gait-dev/gait/internal/systems"

func init() {
	systems.Register(systems.System{
		Name:  "etcd",
		Ops:   Ops,
		Write: "put",
		Roles: systems.ConsensusRoles,
		New:   func() systems.Driver { return New() },
	})
}

package etcd

import "github.com/gait-dev/gait/internal/systems"

func init() {
	systems.Register(systems.System{
		Name:  "etcd",
		Ops:   Ops,
		Write: "put",
		// A get or range is linearizable (etcd's default): the member
		// asks the leader for its commit index first. A lease is a
		// proposal, like a put.
		Ordered: Ops,
		Roles:   systems.ConsensusRoles,
		New:     func() systems.Driver { return New() },
	})
}

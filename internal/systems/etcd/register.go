package etcd

import "github.com/gait-dev/gait/internal/systems"

func init() {
	systems.Register(systems.System{
		Name:  "etcd",
		Ops:   Ops,
		Write: "put",
		Roles: []systems.Role{
			{Name: "follower", MinNodes: 2, Client: true},
			{Name: "leader", MinNodes: 1, Client: true},
		},
		New: func() systems.Driver { return New() },
	})
}

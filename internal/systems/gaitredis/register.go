package gaitredis

import "github.com/gait-dev/gait/internal/systems"

func init() {
	systems.Register(systems.System{
		Name:  "gait-redis",
		Ops:   Ops,
		Write: "set",
		Roles: []systems.Role{
			{Name: "follower", MinNodes: 2, Client: true},
			{Name: "leader", MinNodes: 1, Client: true},
			// Past three hosts the driver's default makes the rest
			// non-voting duplicates.
			{Name: "duplicate", MinNodes: 4, Client: true},
		},
		New: func() systems.Driver { return New() },
	})
}

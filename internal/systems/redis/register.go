package redis

import "github.com/gait-dev/gait/internal/systems"

func init() {
	systems.Register(systems.System{
		Name:  "redis",
		Ops:   Ops,
		Write: "set",
		// Independent servers, each the only copy of its data: what
		// Redis's own INFO calls a master.
		Roles: []systems.Role{{Name: "primary", MinNodes: 1, Client: true}},
		New:   func() systems.Driver { return NewDriver() },
		Dial:  Dialer,
	})
}

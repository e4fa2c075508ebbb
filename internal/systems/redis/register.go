package redis

import (
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/gait-dev/gait/internal/systems"
)

func init() {
	// go-redis prints every failed dial to stderr by itself; gait reports
	// the error it returns, once.
	goredis.SetLogger(&logging.VoidLogger{})
	systems.Register(systems.System{
		Name:  "redis",
		Ops:   Ops,
		Write: "set",
		// Writes are the primary's; a read is answered where it is sent.
		Ordered: []string{"set", "del"},
		// Clients talk to the primary unless a scenario says otherwise: a
		// replica refuses writes (READONLY).
		Roles: []systems.Role{
			{Name: "primary", MinNodes: 1, Client: true, Orders: true},
			{Name: "replica", MinNodes: 2, Client: true},
		},
		New:      func() systems.Driver { return NewDriver() },
		Dial:     Dialer,
		Settings: Settings,
		Waits:    true,
	})
}

package gaitzookeeper

import (
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/gaitredis"
	zksys "github.com/gait-dev/gait/internal/systems/zookeeper"
)

func init() {
	systems.Register(systems.System{
		Name:  "gait-zookeeper",
		Ops:   zksys.Ops,
		Write: "set",
		// The agents' reads are linearizable (the default read mode):
		// ordered by the leader like the writes.
		Ordered: zksys.Ops,
		Roles:   gaitredis.Roles,
		New:     func() systems.Driver { return New() },
		Dial:    zksys.Dialer,
	})
}

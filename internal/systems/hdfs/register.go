package hdfs

import "github.com/gait-dev/gait/internal/systems"

func init() {
	systems.Register(systems.System{
		Name:  "hdfs",
		Ops:   Ops,
		Write: "write",
		Roles: []systems.Role{
			{Name: RoleNameNode, MinNodes: 2, Client: true},
			{Name: RoleDataNode, MinNodes: 2},
		},
		New: func() systems.Driver { return New() },
	})
}

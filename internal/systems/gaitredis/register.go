package gaitredis

import (
	"slices"

	"github.com/gait-dev/gait/internal/systems"
)

func init() {
	systems.Register(systems.System{
		Name:  "gait-redis",
		Ops:   Ops,
		Write: "set",
		// The driver's reads are linearizable: ordered by the leader
		// like the writes.
		Ordered: Ops,
		Roles:   Roles,
		New:     func() systems.Driver { return New() },
	})
}

// Roles are a deployment's: raft's leader and followers and, past three
// hosts (the driver's default makes the rest non-voting), duplicates.
var Roles = append(slices.Clone(systems.ConsensusRoles), systems.Role{Name: "duplicate", MinNodes: 4, Client: true})

package cassandra

import (
	"fmt"
	"strconv"

	"github.com/gait-dev/gait/internal/systems"
)

func init() {
	systems.Register(systems.System{
		Name:  "cassandra",
		Ops:   Ops,
		Write: "put",
		// No member orders operations: a coordinator forwards each to the
		// key's replicas itself.
		Ordered: []string{},
		Roles: []systems.Role{
			{Name: RoleCoordinator, MinNodes: 1, Client: true},
			{Name: RoleReplica, MinNodes: 2},
		},
		New:      func() systems.Driver { return New() },
		Settings: Settings,
	})
}

func checkConsistency(v string, _ int) error {
	_, err := consistency(v)
	return err
}

// Settings a scenario's config: block may give cassandra.
var Settings = []systems.Setting{
	{Name: "read", Values: "one, quorum or all: the consistency level of gets (default quorum)", Check: checkConsistency},
	{Name: "write", Values: "one, quorum or all: the consistency level of puts (default quorum)", Check: checkConsistency},
	{Name: "replication", Values: "the keyspace's replication factor, 1 to the number of nodes (default 3)", Check: func(v string, nodes int) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > nodes {
			return fmt.Errorf("%q: want a replication factor from 1 to the %d nodes", v, nodes)
		}
		return nil
	}},
	{Name: "commitlog_sync", Values: "periodic (a write returns before its commit log is synced, the default) or batch (it waits for the sync)", Check: func(v string, _ int) error {
		if v != "periodic" && v != "batch" {
			return fmt.Errorf("%q: want periodic or batch", v)
		}
		return nil
	}},
}

// Configure applies settings Settings's checks accepted.
func (d *Driver) Configure(settings map[string]string) error {
	for k, v := range settings {
		switch k {
		case "read":
			d.Read = v
		case "write":
			d.Write = v
		case "replication":
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("replication %q: %w", v, err)
			}
			d.Replication = n
		case "commitlog_sync":
			d.CommitlogSync = v
		default:
			return fmt.Errorf("unknown setting %q", k)
		}
	}
	return nil
}

package hbase

import (
	"fmt"
	"strconv"

	"github.com/gait-dev/gait/internal/systems"
)

func init() {
	systems.Register(systems.System{
		Name:  "hbase",
		Ops:   Ops,
		Write: "put",
		// No member orders operations: each row has one region server.
		Ordered: []string{},
		Roles: []systems.Role{
			{Name: RoleMaster, MinNodes: 3, Client: true},
			{Name: RoleRegionServer, MinNodes: 3},
			{Name: RoleHLogDataNode, MinNodes: 3},
			{Name: RoleDataNode, MinNodes: 3},
		},
		New:      func() systems.Driver { return New() },
		Settings: Settings,
	})
}

// Settings a scenario's config: block may give hbase.
var Settings = []systems.Setting{
	{Name: "regionservers", Values: "how many hosts after the first run a region server, 1 or more, leaving at least one DataNode (default 3)", Check: func(v string, nodes int) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%q: want a number of region servers", v)
		}
		_, _, err = Layout(nodes, n)
		return err
	}},
	{Name: "handlers", Values: "hbase.regionserver.handler.count, a region server's RPC handler threads (default 30)", Check: func(v string, _ int) error {
		if n, err := strconv.Atoi(v); err != nil || n < 1 {
			return fmt.Errorf("%q: want a positive number of handlers", v)
		}
		return nil
	}},
}

// Configure applies settings Settings's checks accepted.
func (d *Driver) Configure(settings map[string]string) error {
	for k, v := range settings {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%s %q: %w", k, v, err)
		}
		switch k {
		case "regionservers":
			d.RegionServers = n
		case "handlers":
			d.Handlers = n
		default:
			return fmt.Errorf("unknown setting %q", k)
		}
	}
	return nil
}

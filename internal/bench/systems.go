package bench

import (
	"slices"

	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/systems/etcd"
	"github.com/gait-dev/gait/internal/systems/gaitredis"
	"github.com/gait-dev/gait/internal/systems/redis"
)

// system is what a scenario's system: key selects.
type system struct {
	ops    []string // operation names, in load.Op kind order
	write  string   // the operation that writes a key, for preloading
	driver func() systems.Driver
}

var knownSystems = map[string]system{
	"etcd":       {ops: etcd.Ops, write: "put", driver: func() systems.Driver { return etcd.New() }},
	"gait-redis": {ops: gaitredis.Ops, write: "set", driver: func() systems.Driver { return gaitredis.New() }},
	"redis":      {ops: redis.Ops, write: "set", driver: func() systems.Driver { return redis.NewDriver() }},
}

func systemNames() []string {
	var names []string
	for n := range knownSystems {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

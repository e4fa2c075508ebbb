package mapreduce

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
)

func init() {
	systems.Register(systems.System{
		Name:  "mapreduce",
		Ops:   Ops,
		Write: "job",
		// A job passes through no member that orders it: the
		// ResourceManager only schedules, and what a job met is what
		// its client reports (the hosts of its containers).
		Ordered: []string{},
		Roles: []systems.Role{
			{Name: RoleResourceManager, MinNodes: 2, Client: true},
			{Name: RoleNodeManager, MinNodes: 2},
			{Name: RoleAppMaster, MinNodes: 2},
			{Name: RoleMapper, MinNodes: 4},
			{Name: RoleReducer, MinNodes: 4},
		},
		New:      func() systems.Driver { return New() },
		Settings: Settings,
	})
}

// Bounds of the settings.
const (
	minInput, maxInput = 1 << 20, 1 << 30
	minSplit           = 64 << 10
	maxReduces         = 64
	maxContainers      = 8
	minLostAfter       = 3 * time.Second
)

func oneOf(v string, values []string) error {
	if !slices.Contains(values, v) {
		return fmt.Errorf("%q: want %s", v, strings.Join(values, " or "))
	}
	return nil
}

func sizeIn(v string, lo, hi int64) error {
	n, err := load.ParseSize(v)
	switch {
	case err != nil:
		return err
	case n < lo || n > hi:
		return fmt.Errorf("%q: want a size from %s to %s", v, load.FormatSize(lo), load.FormatSize(hi))
	}
	return nil
}

func countIn(v string, lo, hi int) error {
	if n, err := strconv.Atoi(v); err != nil || n < lo || n > hi {
		return fmt.Errorf("%q: want a whole number from %d to %d", v, lo, hi)
	}
	return nil
}

// Settings a scenario's config: block may give mapreduce.
var Settings = []systems.Setting{
	{Name: "placement", Values: "split (the default: the second host runs the application masters, the rest are mapper and reducer hosts, by YARN node labels; at least 4 nodes) or shared (any container on any NodeManager)", Check: func(v string, nodes int) error {
		if err := oneOf(v, []string{Split, Shared}); err != nil {
			return err
		}
		if n := minNodes(v); nodes < n {
			return fmt.Errorf("placement %s needs at least %d nodes, the scenario has %d", v, n, nodes)
		}
		return nil
	}},
	{Name: "job", Values: "wordcount (Hadoop's example, the default) or loadgen (Hadoop's GenericMRLoadGenerator: every map output record shuffled, a tenth of the reduce input written)", Check: func(v string, _ int) error {
		return oneOf(v, Jobs)
	}},
	{Name: "input", Values: "the bytes of text the jobs read, like 16MiB (the default), 1MiB to 1GiB", Check: func(v string, _ int) error {
		return sizeIn(v, minInput, maxInput)
	}},
	{Name: "split", Values: "the input split, one map each, like 2MiB (the default), at least 64KiB", Check: func(v string, _ int) error {
		return sizeIn(v, minSplit, maxInput)
	}},
	{Name: "reduces", Values: "the reduce tasks of a job, 1 to 64 (default 2)", Check: func(v string, _ int) error {
		return countIn(v, 1, maxReduces)
	}},
	{Name: "containers", Values: "the task containers each NodeManager runs at once, 1 to 8 (default 2, as the paper's two map and two reduce slots)", Check: func(v string, _ int) error {
		return countIn(v, 1, maxContainers)
	}},
	{Name: "lost_after", Values: "how long the ResourceManager hears nothing from a NodeManager before it declares it lost, like 30s (the driver's default; YARN's is 10m), at least 3s", Check: func(v string, _ int) error {
		if d, err := time.ParseDuration(v); err != nil || d < minLostAfter {
			return fmt.Errorf("%q: want a duration of at least %v", v, minLostAfter)
		}
		return nil
	}},
}

// Configure applies settings Settings's checks accepted.
func (d *Driver) Configure(settings map[string]string) error {
	for k, v := range settings {
		var err error
		switch k {
		case "placement":
			d.Placement = v
		case "job":
			d.Job = v
		case "input":
			d.Input, err = load.ParseSize(v)
		case "split":
			d.SplitSize, err = load.ParseSize(v)
		case "reduces":
			d.Reduces, err = strconv.Atoi(v)
		case "containers":
			d.Containers, err = strconv.Atoi(v)
		case "lost_after":
			d.LostAfter, err = time.ParseDuration(v)
		default:
			err = fmt.Errorf("unknown setting %q", k)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}

package hdfs

import (
	"fmt"
	"strconv"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
)

// The bounds the settings are checked against.
const (
	maxHandlers = 4096
	// minBlockSize is the NameNode's dfs.namenode.fs-limits.min-block-size
	// (1 MiB): it refuses to create a file with smaller blocks.
	minBlockSize = 1 << 20
	// checksumChunk is dfs.bytes-per-checksum: a block size must be a
	// multiple of it.
	checksumChunk = 512
	// minCapacity is the least datanode_capacity: a few 1 MiB blocks.
	minCapacity = 16 << 20
	// heartbeats is how long ten of the DataNodes' heartbeats take
	// (dfs.heartbeat.interval, 1 s): the part of the NameNode's dead
	// interval that dead_after cannot shorten.
	heartbeats = 10 * time.Second
)

// Settings a scenario's config: block may give hdfs: the knobs of the
// Exalt case study.
var Settings = []systems.Setting{
	{Name: "namenode_handlers", Values: "the NameNode's RPC handler threads (dfs.namenode.handler.count), 1 to 4096; Hadoop's default is 10", Check: func(v string, _ int) error {
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > maxHandlers {
			return fmt.Errorf("%q: want a whole number of handler threads from 1 to %d", v, maxHandlers)
		}
		return nil
	}},
	{Name: "fine_grained_locking", Values: "true or false: the NameNode's fine-grained namesystem lock (HDFS-17366) instead of the global one", Check: func(v string, _ int) error {
		if v != "true" && v != "false" {
			return fmt.Errorf("%q: want true or false", v)
		}
		return nil
	}},
	{Name: "block_size", Values: "dfs.blocksize, like 128MiB: at least 1MiB, a multiple of 512 bytes", Check: func(v string, _ int) error {
		n, err := load.ParseSize(v)
		switch {
		case err != nil:
			return err
		case n < minBlockSize:
			return fmt.Errorf("%q: below the NameNode's smallest block size, 1MiB", v)
		case n%checksumChunk != 0:
			return fmt.Errorf("%q: not a multiple of the %d-byte checksum chunk", v, checksumChunk)
		}
		return nil
	}},
	{Name: "datanode_capacity", Values: "the capacity each DataNode reports, like 256MiB (dfs.datanode.du.reserved set to the rest of its file system): at least 16MiB; the balance op needs one small enough that a few blocks are an imbalance", Check: func(v string, _ int) error {
		n, err := load.ParseSize(v)
		switch {
		case err != nil:
			return err
		case n < minCapacity:
			return fmt.Errorf("%q: below 16MiB", v)
		}
		return nil
	}},
	{Name: "dead_after", Values: "how long the NameNode hears nothing from a DataNode before it declares it dead and re-replicates its blocks, like 12s: 2 x dfs.namenode.heartbeat.recheck-interval + 10 heartbeats of 1 s, so more than 10s; the driver's default is 30s, Hadoop's 10m30s", Check: func(v string, _ int) error {
		if d, err := time.ParseDuration(v); err != nil || d <= heartbeats {
			return fmt.Errorf("%q: want a duration over %v (ten heartbeats)", v, heartbeats)
		}
		return nil
	}},
	{Name: "replication", Values: "dfs.replication: copies of each block, 1 to the number of DataNodes", Check: func(v string, nodes int) error {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil || n < 1:
			return fmt.Errorf("%q: want a whole number of copies, at least 1", v)
		case n > nodes-1:
			// The first host runs the NameNode.
			return fmt.Errorf("%d copies need %d DataNodes; the scenario's %d nodes have %d", n, n, nodes, nodes-1)
		}
		return nil
	}},
}

// Configure applies settings that Settings' checks accepted.
func (d *Driver) Configure(settings map[string]string) error {
	for k, v := range settings {
		var err error
		switch k {
		case "namenode_handlers":
			d.Handlers, err = strconv.Atoi(v)
		case "fine_grained_locking":
			d.FineGrainedLock, err = strconv.ParseBool(v)
		case "block_size":
			d.BlockSize, err = load.ParseSize(v)
		case "datanode_capacity":
			d.DataNodeCapacity, err = load.ParseSize(v)
		case "replication":
			d.Replication, err = strconv.Atoi(v)
		case "dead_after":
			d.DeadAfter, err = time.ParseDuration(v)
		default:
			err = fmt.Errorf("unknown setting %q", k)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}

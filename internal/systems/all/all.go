// Package all registers every system driver gait has; import it for its
// side effect wherever a system is chosen by name.
package all

import (
	_ "github.com/gait-dev/gait/internal/systems/cassandra"
	_ "github.com/gait-dev/gait/internal/systems/etcd"
	_ "github.com/gait-dev/gait/internal/systems/gaitredis"
	_ "github.com/gait-dev/gait/internal/systems/gaitzookeeper"
	_ "github.com/gait-dev/gait/internal/systems/hbase"
	_ "github.com/gait-dev/gait/internal/systems/hdfs"
	_ "github.com/gait-dev/gait/internal/systems/mapreduce"
	_ "github.com/gait-dev/gait/internal/systems/redis"
	_ "github.com/gait-dev/gait/internal/systems/zookeeper"
)

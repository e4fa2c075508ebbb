package mapreduce

import (
	"context"
	"errors"
)

// clusterMetrics are the ResourceManager's counts gait keeps, by their
// names in /ws/v1/cluster/metrics.
var clusterMetrics = []string{"appsRunning", "appsPending", "containersAllocated", "containersPending",
	"activeNodes", "lostNodes", "unhealthyNodes", "allocatedMB"}

// jobMetrics are a running job's attempts as its master tells them
// (/ws/v1/mapreduce/jobs, through the ResourceManager's proxy), summed
// over the jobs running.
var jobMetrics = []string{"mapsRunning", "reducesRunning", "runningMapAttempts", "runningReduceAttempts",
	"killedMapAttempts", "killedReduceAttempts", "failedMapAttempts", "failedReduceAttempts"}

// Metrics are keyed "name{host=h}", all on the ResourceManager's host:
// yarn_* are the ResourceManager's counts (lost and unhealthy nodes,
// containers), mapreduce_running_* the running jobs' attempts now (an
// attempt running beside another of its task is a speculative one:
// mapreduce_speculative_running), and mapreduce_jobs_* the totals of the
// jobs done so far from their counters: extra attempts launched
// (speculative or retried), attempts killed, shuffle bytes and shuffle
// errors.
func (c *Cluster) Metrics(ctx context.Context) (map[string]float64, error) {
	at := "{host=" + c.rm.host.Name() + "}"
	vals := map[string]float64{}
	var cm struct {
		ClusterMetrics map[string]any `json:"clusterMetrics"`
	}
	errs := []error{c.rest(ctx, "/ws/v1/cluster/metrics", nil, &cm)}
	for _, k := range clusterMetrics {
		if v, ok := cm.ClusterMetrics[k].(float64); ok {
			vals["yarn_"+k+at] = v
		}
	}
	apps, err := c.running(ctx)
	errs = append(errs, err)
	running := map[string]float64{}
	for _, a := range apps {
		var js struct {
			Jobs struct {
				Job []map[string]any `json:"job"`
			} `json:"jobs"`
		}
		if c.rest(ctx, "/proxy/"+a.ID+"/ws/v1/mapreduce/jobs", nil, &js) != nil {
			continue // a master starting or ending has no jobs to tell
		}
		for _, j := range js.Jobs.Job {
			for _, k := range jobMetrics {
				if v, ok := j[k].(float64); ok {
					running[k] += v
				}
			}
		}
	}
	if err == nil {
		for _, k := range jobMetrics {
			vals["mapreduce_running_"+k+at] = running[k]
		}
		vals["mapreduce_speculative_running"+at] = running["runningMapAttempts"] - running["mapsRunning"] +
			running["runningReduceAttempts"] - running["reducesRunning"]
	}
	c.jobsMu.Lock()
	t := c.jobs
	c.jobsMu.Unlock()
	for k, v := range map[string]int64{"done": t.Jobs, "failed": t.Failed,
		"extra_map_attempts": t.ExtraMaps, "extra_reduce_attempts": t.ExtraReduces,
		"killed_map_attempts": t.KilledMaps, "killed_reduce_attempts": t.KilledReduces,
		"shuffle_bytes": t.ShuffleBytes, "shuffle_errors": t.ShuffleErrors} {
		vals["mapreduce_jobs_"+k+at] = float64(v)
	}
	return vals, errors.Join(errs...)
}

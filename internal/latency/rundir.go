package latency

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gait-dev/gait/internal/rundir"
)

// loadDir reads a run directory, or a directory whose subdirectories are run
// directories (a scenario's output), each run one configuration.
// A run directory still being written (its name ends in .partial) is refused
// by name and skipped inside a scenario's output.
func loadDir(path string) ([]Configuration, error) {
	if rundir.IsRunDir(path) || strings.HasSuffix(filepath.Clean(path), rundir.PartialSuffix) {
		c, err := loadRun(path)
		if err != nil {
			return nil, err
		}
		return []Configuration{c}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var out []Configuration
	for _, e := range entries {
		sub := filepath.Join(path, e.Name())
		if !e.IsDir() || !rundir.IsRunDir(sub) {
			continue
		}
		c, err := loadRun(sub)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: a directory, but neither a run directory (no run.json) nor one holding run directories", path)
	}
	return out, nil
}

// loadRun reads one run directory as a configuration. Its factors are the
// run's own (clients, value size, ...) plus what the run varied: the system,
// the fault, its target and slowdown (for every step of a scenario, the
// baseline's 1 included), and the repetition.
func loadRun(dir string) (Configuration, error) {
	run, err := rundir.Open(dir)
	if err != nil {
		return Configuration{}, err
	}
	if run.Len() == 0 {
		return Configuration{}, fmt.Errorf("%s: the run has no samples", dir)
	}
	lat, err := run.Latencies()
	if err != nil {
		return Configuration{}, err
	}
	cfg := run.Config
	factors := make(map[string]string, len(cfg.Factors)+5)
	for k, v := range cfg.Factors {
		factors[k] = v
	}
	set := func(k, v string) {
		if _, taken := factors[k]; !taken && v != "" {
			factors[k] = v
		}
	}
	set("system", cfg.System)
	if cfg.Fault != "" {
		set("fault", cfg.Fault)
		set("target", cfg.Target)
	}
	// A scenario's baseline injects nothing, but its factor is as real as
	// its steps' (1): without it the baseline's level would be blank.
	if cfg.Fault != "" || cfg.Scenario != "" {
		set("factor", strconv.FormatFloat(cfg.Factor, 'g', -1, 64))
	}
	if cfg.Repetition != 0 {
		set("repetition", strconv.Itoa(cfg.Repetition))
	}
	warning, err := generatorWarning(run)
	if err != nil {
		return Configuration{}, err
	}
	return Configuration{Name: nameOf(factors, nil, dir), Factors: factors, Latencies: lat, Source: dir,
		Warning: warning}, nil
}

// generatorWarning reads whether the run's open-loop generator fell behind
// its schedule, so that its tail is not taken for the server's. A run
// without summary.json (written by another tool) has nothing to say.
func generatorWarning(run *rundir.Run) (string, error) {
	sum, err := run.Summary()
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return sum.Generator.Warning(), nil
}

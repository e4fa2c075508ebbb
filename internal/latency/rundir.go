package latency

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gait-dev/gait/internal/rundir"
)

// runSearchDepth is how many levels below a directory given to Load run
// directories are looked for: runs/RUN, runs/SCENARIO/RUN (gait run's
// output) and runs/SUITE/EXPERIMENT/RUN (gait bench's).
const runSearchDepth = 3

// loadDir reads a run directory, or every run directory under path, down
// to runSearchDepth levels (a scenario's output, a suite's), each run one
// configuration. A run directory still being written (its name ends in
// .partial) is refused by name; under path it is skipped, and so is a
// directory that holds no run directory: skip is told which, and why.
func loadDir(path string, skip func(path, why string)) ([]Configuration, error) {
	if rundir.IsRunDir(path) || strings.HasSuffix(filepath.Clean(path), rundir.PartialSuffix) {
		c, err := loadRun(path)
		if err != nil {
			return nil, err
		}
		return []Configuration{c}, nil
	}
	dirs, skipped, err := findRuns(path, runSearchDepth)
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("%s: a directory, but neither a run directory (no run.json) nor one holding run directories", path)
	}
	for _, s := range skipped {
		skip(s.path, s.why)
	}
	out := make([]Configuration, 0, len(dirs))
	for _, d := range dirs {
		c, err := loadRun(d)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// skippedDir is a directory passed over while looking for runs, and why.
type skippedDir struct{ path, why string }

const noRun = "holds no run directory (no run.json)"

// logsDir is where gait run keeps its servers' logs beside the runs
// (hosts/RUN/HOST/): never a run directory.
const logsDir = "hosts"

func hasSubdirectory(dir string) bool {
	entries, _ := os.ReadDir(dir)
	return slices.ContainsFunc(entries, os.DirEntry.IsDir)
}

// findRuns returns the run directories under dir, depth levels down at
// most, in name order, and the directories it passed over. A directory
// without any run in it is passed over as a whole.
func findRuns(dir string, depth int) (runs []string, skipped []skippedDir, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", dir, err)
	}
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		switch {
		case !e.IsDir():
			continue // a scenario's summary.json, report.html...
		case e.Name() == logsDir:
			continue // a scenario's servers' logs
		case strings.HasSuffix(e.Name(), rundir.PartialSuffix):
			skipped = append(skipped, skippedDir{sub, "an unfinished run directory (its writer stopped before the end)"})
		case rundir.IsRunDir(sub):
			runs = append(runs, sub)
		case depth <= 1 && !hasSubdirectory(sub):
			skipped = append(skipped, skippedDir{sub, noRun})
		case depth <= 1:
			skipped = append(skipped, skippedDir{sub,
				fmt.Sprintf("not a run directory, and gait analyze looks %d levels down at most", runSearchDepth)})
		default:
			inner, innerSkipped, err := findRuns(sub, depth-1)
			if err != nil {
				return nil, nil, err
			}
			if len(inner) == 0 {
				// Say "no run here" once for the whole directory, unless
				// there may be runs in it: unfinished, or deeper down.
				innerSkipped = slices.DeleteFunc(innerSkipped, func(s skippedDir) bool { return s.why == noRun })
				if len(innerSkipped) == 0 {
					innerSkipped = []skippedDir{{sub, noRun}}
				}
			}
			runs, skipped = append(runs, inner...), append(skipped, innerSkipped...)
		}
	}
	return runs, skipped, nil
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

// Package suite runs a library of limpware experiments (`gait bench`): it
// checks every scenario before anything starts, runs each with bench's
// runner into a directory of its own, judges the limplock verdicts of each
// step, keeps a finished experiment's result so an interrupted suite
// resumes where it stopped, and writes the suite's report (the Limplock
// paper's Figure 1 and Table 1, and a section per experiment).
package suite

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/gait-dev/gait/internal/bench"
	"github.com/gait-dev/gait/internal/units"
	"gopkg.in/yaml.v3"
)

// DefaultDir is the experiment library `gait bench` runs without arguments.
const DefaultDir = "scenarios/limpbench"

// Selection says which experiments of the scenarios given run, and how.
type Selection struct {
	// Only keeps the experiments whose name matches this shell pattern
	// (path.Match), like zk-* ; empty keeps all.
	Only string
	// Quick keeps the scenarios marked quick: and shortens them (see
	// Quicken).
	Quick bool
	// Repeat, when above 0, replaces every scenario's repeat:.
	Repeat int
	// Warmup, when above 0, replaces every scenario's warmup:.
	Warmup time.Duration
}

// Quick runs keep at most this much workload and the largest slowdown
// factor, beside the baseline: the factor Table 1's marks come from. A
// run of a JVM row is mostly its cluster's start (an HBase row's 30-45 s
// of 40-60), so a second factor would cost another start per experiment.
const quickDuration = 5 * time.Second

// Files expands the arguments: a file is itself, a directory its *.yaml
// files in name order.
func Files(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", a, err)
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		m, err := filepath.Glob(filepath.Join(a, "*.yaml"))
		if err != nil {
			return nil, fmt.Errorf("scenario directory %s: %w", a, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("scenario directory %s: no *.yaml file in it", a)
		}
		sort.Strings(m)
		out = append(out, m...)
	}
	return out, nil
}

// Load reads and checks every file, reporting every mistake at once
// (nothing runs unless all are good), then keeps what sel selects. Two
// experiments of one name would share an output directory, so that is a
// mistake too.
func Load(files []string, sel Selection) ([]*bench.Scenario, error) {
	if sel.Only != "" {
		if _, err := path.Match(sel.Only, ""); err != nil {
			return nil, fmt.Errorf("--only %q: %w", sel.Only, err)
		}
	}
	if sel.Repeat < 0 {
		return nil, fmt.Errorf("--repeat %d: want a number of repetitions of at least 1", sel.Repeat)
	}
	if sel.Warmup < 0 {
		return nil, fmt.Errorf("--warmup %v: want a duration of at least 0", sel.Warmup)
	}
	var all []*bench.Scenario
	var errs []error
	byName := map[string]string{}
	for _, f := range files {
		s, err := bench.Load(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if first, dup := byName[s.Name]; dup {
			errs = append(errs, fmt.Errorf("%s: name %s is taken by %s already (each experiment's results go to a directory of its name)", f, s.Name, first))
			continue
		}
		byName[s.Name] = f
		all = append(all, s)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var out []*bench.Scenario
	for _, s := range all {
		if ok, _ := path.Match(sel.Only, s.Name); sel.Only != "" && !ok {
			continue
		}
		if sel.Quick && !s.Quick {
			continue
		}
		s, err := adjust(s, sel)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no experiment selected from %s (--only %q, --quick %v)", units.Count(len(all), "scenario"), sel.Only, sel.Quick)
	}
	return out, nil
}

// adjust rewrites a scenario's text for --quick, --repeat and --warmup and
// reads it again, so the scenario.yaml kept with its results is what ran.
func adjust(s *bench.Scenario, sel Selection) (*bench.Scenario, error) {
	if !sel.Quick && sel.Repeat == 0 && sel.Warmup == 0 {
		return s, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(s.Source, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", s.File, err)
	}
	top := doc.Content[0]
	if sel.Quick {
		Quicken(top)
	}
	if sel.Repeat > 0 {
		set(top, "repeat", strconv.Itoa(sel.Repeat))
	}
	if sel.Warmup > 0 {
		set(top, "warmup", sel.Warmup.String())
	}
	src, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.File, err)
	}
	return bench.Parse(s.File, src)
}

// Quicken shortens a scenario's mapping for --quick: each fault keeps its
// largest factor, the workload lasts at most 5 s, and every run is done
// once.
func Quicken(top *yaml.Node) {
	if w := get(top, "workload"); w != nil {
		d := quickDuration
		if v := get(w, "duration"); v != nil {
			if old, err := time.ParseDuration(v.Value); err == nil {
				d = min(d, old)
			}
		}
		set(w, "duration", d.String())
	}
	if inj := get(top, "inject"); inj != nil && inj.Kind == yaml.SequenceNode {
		for _, f := range inj.Content {
			fs := get(f, "factors")
			if fs == nil || fs.Kind != yaml.SequenceNode || len(fs.Content) <= 1 {
				continue
			}
			// Validated: numbers above 1, each once.
			fs.Content = []*yaml.Node{slices.MaxFunc(fs.Content, func(a, b *yaml.Node) int {
				x, _ := strconv.ParseFloat(a.Value, 64)
				y, _ := strconv.ParseFloat(b.Value, 64)
				return cmp.Compare(x, y)
			})}
		}
	}
	set(top, "repeat", "1")
}

func get(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func set(m *yaml.Node, key, value string) {
	if v := get(m, key); v != nil {
		v.Kind, v.Tag, v.Value, v.Style, v.Content = yaml.ScalarNode, "", value, 0, nil
		return
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &yaml.Node{Kind: yaml.ScalarNode, Value: value})
}

// Package bench runs limpware experiments: a scenario file names a system,
// a cluster size, a workload and the faults to inject at slowdown factors;
// the runner starts a fresh cluster on testbed hosts for the baseline and for
// each factor, drives the workload, injects the faults on schedule, records
// a run directory per run, and sums the runs up in a table and an HTML report
// (the method of the Limplock paper, §4.1).
package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/clip"
	"github.com/gait-dev/gait/internal/limp"
	_ "github.com/gait-dev/gait/internal/systems/all" // the systems a scenario may name
	"github.com/gait-dev/gait/internal/verdict"

	"github.com/gait-dev/gait/internal/limpfs"
	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
	"github.com/gait-dev/gait/internal/testbed"
	"gopkg.in/yaml.v3"
)

// Scenario is a validated scenario file.
type Scenario struct {
	File        string // path it was read from
	Source      []byte // its text, kept for the report
	Name        string
	Description string
	System      string
	Nodes       int
	Bandwidth   uint64 // each host's link at factor 1, bit/s
	// Disk is set when the hosts' data directories are on limpfs: always
	// when a disk fault is injected, so the baseline runs on the same layer.
	Disk *Disk
	// Data is where the hosts' data directories live: "memory" (a tmpfs,
	// so the machine's own disk, shared and noisy, cannot stall a run; a
	// disk fault then acts on limpfs's emulated disk alone) or "disk"
	// (under the output directory).
	Data string
	// Storage is "plain" or "emulated": the data directories on an
	// emulating limpfs, which stores gait's synthetic data as
	// descriptions (docs/emulate.md).
	Storage  string
	Workload Workload
	Inject   []Fault
	Repeat   int
	// Warmup is how long the workload runs, unmeasured and without any
	// fault, after the cluster is up and before each run's measurement:
	// a JVM system (ZooKeeper, HDFS) starts cold in every run and
	// compiles its hot paths during the first seconds, so a short step
	// measures its warming up as much as the fault.
	Warmup time.Duration
	// Paper is the Limplock paper's Table 1 row this experiment reproduces,
	// if any, so a suite report can set gait's verdicts beside the paper's.
	Paper *PaperRow
	// Quick puts the scenario in `gait bench --quick`'s representative
	// subset.
	Quick bool
	// Expect is the verdicts gait predicts (a regression scenario of a
	// reported limplock bug); nil when the scenario predicts nothing, empty
	// when it predicts that no limplock happens.
	Expect []string
	// ExpectDiffers says why gait's verdicts differ from Expect, from what
	// gait measured (the bug fixed or absent in the version here), as
	// PaperRow.Differs does for the paper's marks: `expect: {marks: [OL],
	// differs: ...}`.
	ExpectDiffers string
	// Study is the case-study figure the experiment is on, if any.
	Study *Study
	// MinRequests, when set, is the fewest baseline operations a group
	// needs for a verdict, in place of gait bench's: an experiment whose
	// operation takes tens of seconds (a MapReduce job; the paper timed
	// one job per run) cannot have twenty in a run of minutes.
	MinRequests int `json:",omitempty"`
	// Config holds the system's settings from the scenario's config:
	// block, each checked by the system's registration.
	Config map[string]string

	sys systems.System
}

// PaperRow is a row of the Limplock paper's Table 1.
type PaperRow struct {
	Row   string   // the table's id, like Z1
	Marks []string // the paper's marks, of Marks; empty: none
	// Differs says why gait's verdicts differ from the paper's marks, from
	// what gait measured (another version's behaviour, a mitigation that
	// exists now, a metric the version no longer exposes); reports show it
	// where the two differ.
	Differs string `json:",omitempty"`
}

// Marks are the verdicts a scenario's paper: marks and expect: name:
// operation, node and cluster limplock (the paper's OL, NL, CL) and a
// hidden backlog.
var Marks = verdict.MarkNames

// Disk is the emulated disk of every host at factor 1.
type Disk struct {
	Bandwidth float64       // bytes/s
	Latency   time.Duration // added to every operation
}

// Workload is what the clients do during each run: the workload spec
// load defines, and the members the clients talk to.
type Workload struct {
	load.Spec
	Connect string // a role, all, or a host name
}

// Fault is one injection of a scenario.
type Fault struct {
	Kind    string    // nic, disk, cpu, crash, partition
	Target  string    // leader, follower, any, or a host name (h0, h1, ...)
	Factors []float64 // slowdowns; none for crash and partition
	At      time.Duration
	// For is how long the fault lasts (a crashed host is restarted, a
	// partitioned one rejoined, after it); 0 means until the end of the run.
	For time.Duration
}

// What a fault target or connect may name besides a role of the system or
// a host name.
const (
	targetAny  = "any"
	connectAll = "all"
)

// Where the hosts' data directories live.
const (
	DataMemory = "memory"
	DataDisk   = "disk"
)

// What the hosts' data directories store.
const (
	StoragePlain    = "plain"
	StorageEmulated = "emulated"
)

// A scenario runs at most (maxFactors+1) x maxRepeat fresh clusters, each
// with its full workload: already more than anyone waits for.
const (
	maxRepeat  = 100
	maxFactors = 100
)

// Load reads and validates a scenario file.
func Load(path string) (*Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	return Parse(path, b)
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Parse validates a scenario given as text; file names it in errors. Every
// mistake is reported as a *FieldError with the line and field.
func Parse(file string, src []byte) (*Scenario, error) {
	d := doc{file: file}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FieldError{File: file, Line: 1, Msg: "empty scenario"}
		}
		// yaml.v3's syntax errors carry a line that can be one early, so
		// it is quoted, not turned into file:line.
		return nil, fmt.Errorf("%s: not valid YAML: %s", file, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, d.errorf(&extra, "", "a scenario file holds one document, found a second")
	}
	if len(root.Content) == 0 {
		return nil, &FieldError{File: file, Line: 1, Msg: "empty scenario"}
	}
	top, err := d.mapping(root.Content[0], "",
		"name", "description", "system", "nodes", "bandwidth", "disk", "data", "storage", "config", "workload", "inject", "repeat",
		"warmup", "paper", "quick", "expect", "study", "min_requests")
	if err != nil {
		return nil, err
	}
	s := &Scenario{File: file, Source: src}
	if err := s.parseTop(top); err != nil {
		return nil, err
	}
	if err := s.parseConfig(top); err != nil {
		return nil, err
	}
	if err := s.parseWorkload(top); err != nil {
		return nil, err
	}
	if err := s.parseInject(top); err != nil {
		return nil, err
	}
	if err := s.parseDisk(top); err != nil {
		return nil, err
	}
	if err := s.parseVerdicts(top); err != nil {
		return nil, err
	}
	if err := s.parseStudy(top); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Scenario) parseTop(top object) error {
	var n *yaml.Node
	var err error
	if s.Name, n, err = top.required("name"); err != nil {
		return err
	}
	if !nameRE.MatchString(s.Name) {
		return top.errorf(n, "name", "%q: use letters, digits, '.', '_' and '-' (it names directories)", s.Name)
	}
	if s.Description, _, err = top.str("description", ""); err != nil {
		return err
	}
	if s.System, n, err = top.required("system"); err != nil {
		return err
	}
	if s.sys, err = systems.Lookup(s.System); err != nil {
		return top.errorf(n, "system", "%v", err)
	}
	if !top.has("nodes") {
		return top.errorf(top.node, "nodes", "missing (required)")
	}
	if s.Nodes, err = top.integer("nodes", 0, 1); err != nil {
		return err
	}
	if s.Nodes > MaxNodes {
		return top.errorf(top.values["nodes"], "nodes", "%d is more than %d hosts", s.Nodes, MaxNodes)
	}
	if s.Bandwidth, err = parsed(top, "bandwidth", uint64(testbed.DefaultBandwidth), testbed.ParseBandwidth); err != nil {
		return err
	}
	if s.Data, n, err = top.str("data", DataMemory); err != nil {
		return err
	}
	if s.Data != DataMemory && s.Data != DataDisk {
		return top.errorf(n, "data", "%q: want memory or disk", s.Data)
	}
	if s.Storage, n, err = top.str("storage", StoragePlain); err != nil {
		return err
	}
	if s.Storage != StoragePlain && s.Storage != StorageEmulated {
		return top.errorf(n, "storage", "%q: want plain or emulated", s.Storage)
	}
	if s.Repeat, err = top.integer("repeat", 1, 1); err != nil {
		return err
	}
	if s.Repeat > maxRepeat {
		return top.errorf(top.values["repeat"], "repeat", "%d: at most %d repetitions", s.Repeat, maxRepeat)
	}
	s.Warmup, err = parsed(top, "warmup", 0, nonNegativeDuration)
	return err
}

func (s *Scenario) parseWorkload(top object) error {
	w, err := s.workload(top)
	s.Workload = w
	return err
}

func (s *Scenario) workload(top object) (Workload, error) {
	wn, ok := top.values["workload"]
	if !ok {
		return Workload{}, top.errorf(top.node, "workload", "missing (required)")
	}
	o, err := top.mapping(wn, "workload", "op", "keys", "key_dist", "value_size", "clients", "rate", "poisson",
		"max_in_flight", "duration", "requests", "timeout", "connect", "preload", "calibrate", "calibrate_clients", "seed", "wait",
		"preset", "phases", "batch", "delay")
	if err != nil {
		return Workload{}, err
	}
	w := Workload{Spec: load.NewSpec()}
	if err := s.readSpec(o, &w.Spec); err != nil {
		return w, err
	}
	if w.Spec, err = w.Spec.Resolve(); err != nil {
		var se *load.SpecError
		if errors.As(err, &se) {
			return w, o.errorf(fieldNode(o, se.Field), "workload."+se.Field, "%s", se.Msg)
		}
		return w, err
	}
	if err := s.checkWait(o, w.Spec.Wait); err != nil {
		return w, err
	}
	var n *yaml.Node
	if w.Connect, n, err = o.str("connect", s.sys.DefaultConnect(s.Nodes)); err != nil {
		return w, err
	}
	if err := s.checkTarget(w.Connect, connectAll, true); err != nil {
		return w, o.errorf(n, "workload.connect", "%v", err)
	}
	return w, nil
}

// readSpec reads the workload's fields as given; load.Spec.Resolve checks
// how they go together and fills in the rest.
func (s *Scenario) readSpec(o object, w *load.Spec) error {
	mix, n, err := o.required("op")
	if err != nil {
		return err
	}
	if w.Mix, err = load.ParseMix(mix, s.sys.Ops); err != nil {
		return o.errorf(n, "workload.op", "%v", err)
	}
	size, err := parsed(o, "value_size", int64(w.ValueSize), load.ParseSize)
	w.ValueSize = int(size)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		key string
		to  *int
	}{{"keys", &w.Keys}, {"clients", &w.Clients}, {"max_in_flight", &w.MaxInFlight}, {"calibrate_clients", &w.CalibrateClients},
		{"requests", &w.Requests}} {
		if *f.to, err = o.integer(f.key, 0, 1); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		key string
		to  *time.Duration
	}{{"duration", &w.Duration}, {"timeout", &w.Timeout}, {"calibrate", &w.Calibrate}} {
		if *f.to, err = parsed(o, f.key, 0, positiveDuration); err != nil {
			return err
		}
	}
	if w.KeyDist, err = parsed(o, "key_dist", load.KeyDist{}, load.ParseKeyDist); err != nil {
		return err
	}
	if w.Rate, err = parsed(o, "rate", load.Rate{}, load.ParseRate); err != nil {
		return err
	}
	if w.Poisson, err = o.boolean("poisson", false); err != nil {
		return err
	}
	if w.Preload, err = o.boolean("preload", true); err != nil {
		return err
	}
	seed, err := o.integer("seed", load.DefaultSeed, 0)
	w.Seed = uint64(seed)
	if err != nil {
		return err
	}
	if err := s.readShape(o, w); err != nil {
		return err
	}
	return readWait(o, &w.Wait)
}

// readShape reads what one arrival is (load.Shape): a preset of the
// Zoolander thesis's, then phases, batch and delay as given.
func (s *Scenario) readShape(o object, w *load.Spec) error {
	preset, err := parsed(o, "preset", load.Preset{}, load.FindPreset)
	if err != nil {
		return err
	}
	if preset.Name != "" {
		if w.Shape, err = preset.Shape(s.sys.Ops, s.sys.Write); err != nil {
			return o.errorf(fieldNode(o, "preset"), "workload.preset", "%v", err)
		}
		w.Poisson = w.Poisson || (preset.Poisson && w.OpenLoop())
	}
	if o.has("phases") {
		if w.Shape.Phases, err = parsed(o, "phases", nil, func(v string) ([]load.Phase, error) { return load.ParsePhases(v, s.sys.Ops) }); err != nil {
			return err
		}
	}
	if o.has("batch") {
		if w.Shape.Batch, err = o.integer("batch", 0, 1); err != nil {
			return err
		}
	}
	w.Shape.Delay, err = parsed(o, "delay", w.Shape.Delay, load.ParseDelay)
	return err
}

// readWait reads wait: {replicas: N, timeout: D}.
func readWait(o object, w *load.Wait) error {
	n, ok := o.values["wait"]
	if !ok {
		return nil
	}
	wo, err := o.mapping(n, "workload.wait", "replicas", "timeout")
	if err != nil {
		return err
	}
	if !wo.has("replicas") {
		return wo.errorf(n, "workload.wait.replicas", "missing: how many replicas each write waits for")
	}
	if w.Replicas, err = wo.integer("replicas", 0, 1); err != nil {
		return err
	}
	w.Timeout, err = parsed(wo, "timeout", 0, nonNegativeDuration)
	return err
}

// checkWait refuses a wait the system cannot do, or one its cluster
// could never satisfy.
func (s *Scenario) checkWait(o object, w load.Wait) error {
	if w.Replicas == 0 {
		return nil
	}
	n := o.values["wait"]
	switch {
	case !s.sys.Waits:
		return o.errorf(n, "workload.wait", "%s's writes cannot wait for replicas", s.System)
	case w.Replicas > s.Nodes-1:
		return o.errorf(n, "workload.wait.replicas", "%d: a cluster of %d nodes has at most %d replicas", w.Replicas, s.Nodes, s.Nodes-1)
	}
	return nil
}

// fieldNode finds the node of a workload field load names, like
// wait.replicas, or the nearest enclosing one given.
func fieldNode(o object, field string) *yaml.Node {
	n := o.node
	for part := range strings.SplitSeq(field, ".") {
		next, ok := mappingValue(n, part)
		if !ok {
			break
		}
		n = next
	}
	return n
}

func mappingValue(n *yaml.Node, key string) (*yaml.Node, bool) {
	if n.Kind != yaml.MappingNode {
		return nil, false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1], true
		}
	}
	return nil, false
}

// parseConfig reads the config: block, a mapping of the system's settings
// to values, each checked by the setting the system registered.
func (s *Scenario) parseConfig(top object) error {
	n, ok := top.values["config"]
	if !ok {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return top.errorf(n, "config", "want a mapping of %s's settings (%s), got %s", s.System, s.sys.SettingNames(), describe(n))
	}
	var names []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		names = append(names, n.Content[i].Value)
	}
	o, err := top.mapping(n, "config", names...)
	if err != nil {
		return err
	}
	s.Config = map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		path := "config." + fieldName(k.Value)
		st, ok := s.sys.Setting(k.Value)
		if !ok {
			return o.errorf(k, path, "%s has no such setting (known: %s)", s.System, s.sys.SettingNames())
		}
		v, vn, _, err := o.scalar(k.Value)
		if err != nil {
			return err
		}
		if err := st.Check(v, s.Nodes); err != nil {
			return o.errorf(vn, path, "%v", err)
		}
		s.Config[k.Value] = v
	}
	return nil
}

func (s *Scenario) parseInject(top object) error {
	n, ok := top.values["inject"]
	if !ok {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return top.errorf(n, "inject", "want a list of faults, got %s", describe(n))
	}
	for i, fn := range n.Content {
		f, err := s.parseFault(top.doc, fn, fmt.Sprintf("inject[%d]", i))
		if err != nil {
			return err
		}
		s.Inject = append(s.Inject, f)
	}
	return s.checkSteps(top, n)
}

func (s *Scenario) parseFault(d doc, n *yaml.Node, path string) (Fault, error) {
	o, err := d.mapping(n, path, "fault", "target", "factors", "at", "for")
	if err != nil {
		return Fault{}, err
	}
	var f Fault
	kind, kn, err := o.required("fault")
	if err != nil {
		return f, err
	}
	if _, ok := limp.Lookup(kind); !ok {
		return f, o.errorf(kn, path+".fault", "unknown fault %q (known: %s)", kind, strings.Join(limp.Kinds(), ", "))
	}
	f.Kind = kind
	target, tn, err := o.required("target")
	if err != nil {
		return f, err
	}
	if err := s.checkTarget(target, targetAny, false); err != nil {
		return f, o.errorf(tn, path+".target", "%v", err)
	}
	f.Target = target
	if f.At, err = parsed(o, "at", 0, nonNegativeDuration); err != nil {
		return f, err
	}
	if f.For, err = parsed(o, "for", 0, positiveDuration); err != nil {
		return f, err
	}
	if d := s.Workload.Duration; d > 0 && f.At >= d {
		return f, o.errorf(o.values["at"], path+".at", "%v is not before the end of the workload (duration %v)", f.At, d)
	}
	return f, s.parseFactors(o, path, &f)
}

func (s *Scenario) parseFactors(o object, path string, f *Fault) error {
	fn, ok := o.values["factors"]
	if !limp.TakesFactor(f.Kind) {
		if ok {
			return o.errorf(fn, path+".factors", "a %s has no slowdown factor (use for: to end it after a while)", f.Kind)
		}
		return nil
	}
	if !ok {
		return o.errorf(o.node, path+".factors", "missing: the slowdowns to inject, like [10, 100, 1000]")
	}
	if fn.Kind != yaml.SequenceNode {
		return o.errorf(fn, path+".factors", "want a list of slowdown factors like [10, 100, 1000], got %s", describe(fn))
	}
	if len(fn.Content) == 0 {
		return o.errorf(fn, path+".factors", "the list is empty: give the slowdowns to inject, like [10, 100, 1000]")
	}
	if len(fn.Content) > maxFactors {
		return o.errorf(fn, path+".factors", "%d factors: at most %d", len(fn.Content), maxFactors)
	}
	for i, vn := range fn.Content {
		vp := fmt.Sprintf("%s.factors[%d]", path, i)
		if vn.Kind != yaml.ScalarNode {
			return o.errorf(vn, vp, "want a number, got %s", describe(vn))
		}
		v, err := strconv.ParseFloat(vn.Value, 64)
		switch {
		case err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0:
			return o.errorf(vn, vp, "%s is not a positive number", vn.Value)
		case v == 1:
			return o.errorf(vn, vp, "1 is the baseline, which always runs first; list only slowdowns")
		case v < 1:
			return o.errorf(vn, vp, "%s would speed the %s up; a slowdown factor is above 1", vn.Value, f.Kind)
		case slices.Contains(f.Factors, v):
			return o.errorf(vn, vp, "%s is listed twice", vn.Value)
		}
		if err := s.checkFactor(f.Kind, v); err != nil {
			return o.errorf(vn, vp, "%v", err)
		}
		f.Factors = append(f.Factors, v)
	}
	return nil
}

// checkFactor rejects slowdowns the injectors cannot produce.
func (s *Scenario) checkFactor(kind string, v float64) error {
	if kind == "nic" && float64(s.Bandwidth)/v < testbed.MinBandwidth {
		return fmt.Errorf("%g would shape the %s link to %.0f bit/s, below the testbed's minimum of %d bit/s",
			v, testbed.FormatBandwidth(s.Bandwidth), float64(s.Bandwidth)/v, testbed.MinBandwidth)
	}
	return nil
}

// checkSteps makes sure the faults agree on how many slowdowns they step
// through: run k applies the k-th factor of every fault.
func (s *Scenario) checkSteps(top object, n *yaml.Node) error {
	steps := -1
	for i, f := range s.Inject {
		if !limp.TakesFactor(f.Kind) {
			continue
		}
		if steps >= 0 && len(f.Factors) != steps {
			return top.errorf(n.Content[i], fmt.Sprintf("inject[%d].factors", i),
				"%d factors, but an earlier fault has %d: run k applies the k-th factor of every fault", len(f.Factors), steps)
		}
		steps = len(f.Factors)
	}
	return nil
}

// checkTarget accepts a host name h0..h<nodes-1>, extra, or a role of the
// system that a cluster of the scenario's size has (that clients may talk
// to, if clients is set).
func (s *Scenario) checkTarget(t, extra string, clients bool) error {
	if t == extra {
		return nil
	}
	if r, ok := s.sys.Role(t); ok {
		switch {
		case clients && !r.Client:
			return fmt.Errorf("clients cannot talk to a %s of %s", t, s.System)
		case s.Nodes < r.MinNodes:
			return fmt.Errorf("%q needs at least %d nodes, the scenario has %d", t, r.MinNodes, s.Nodes)
		}
		return nil
	}
	if i, ok := hostIndex(t); ok {
		if i >= s.Nodes {
			return fmt.Errorf("host %q does not exist: the %d hosts are h0 to h%d", t, s.Nodes, s.Nodes-1)
		}
		return nil
	}
	return fmt.Errorf("%q is neither a role of %s (%s), %s, nor a host name (h0 to h%d)", t, s.System,
		strings.Join(s.sys.RoleNames(clients), ", "), extra, s.Nodes-1)
}

// hostIndex reads a testbed host name, h0, h1, ...
func hostIndex(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, "h")
	if !ok || digits == "" || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	i, err := strconv.Atoi(digits)
	return i, err == nil && i >= 0
}

func (s *Scenario) parseDisk(top object) error {
	needed := slices.ContainsFunc(s.Inject, func(f Fault) bool { return f.Kind == "disk" })
	n, ok := top.values["disk"]
	if !ok {
		if needed {
			s.Disk = &Disk{Bandwidth: limpfs.DefaultBandwidth}
		}
		return nil
	}
	o, err := top.mapping(n, "disk", "bandwidth", "latency")
	if err != nil {
		return err
	}
	d := &Disk{}
	if d.Bandwidth, err = parsed(o, "bandwidth", float64(limpfs.DefaultBandwidth), limpfs.ParseBandwidth); err != nil {
		return err
	}
	if d.Latency, err = parsed(o, "latency", 0, nonNegativeDuration); err != nil {
		return err
	}
	s.Disk = d
	return nil
}

func positiveDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration like 500ms, 20s or 2m", s)
	}
	return d, nil
}

func nonNegativeDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration like 0s, 500ms or 20s", s)
	}
	return d, nil
}

// parseVerdicts reads what the scenario says of limplock: the paper's row
// and marks, whether it is quick, and the verdicts it expects.
func (s *Scenario) parseVerdicts(top object) error {
	var err error
	if s.Quick, err = top.boolean("quick", false); err != nil {
		return err
	}
	if s.MinRequests, err = top.integer("min_requests", 0, 1); err != nil {
		return err
	}
	if n, ok := top.values["paper"]; ok {
		o, err := top.mapping(n, "paper", "row", "marks", "differs")
		if err != nil {
			return err
		}
		p := &PaperRow{}
		var rn *yaml.Node
		if p.Row, rn, err = o.required("row"); err != nil {
			return err
		}
		if !rowRE.MatchString(p.Row) {
			return o.errorf(rn, "paper.row", "%s: want a row id of the paper's Table 1, like Z1 or H3", clip.Quote(p.Row))
		}
		if p.Marks, err = marks(o, "marks", true); err != nil {
			return err
		}
		if p.Differs, _, err = o.str("differs", ""); err != nil {
			return err
		}
		s.Paper = p
	}
	if n, ok := top.values["expect"]; ok {
		if n.Kind != yaml.MappingNode {
			s.Expect, err = marks(top, "expect", false)
			return err
		}
		o, err := top.mapping(n, "expect", "marks", "differs")
		if err != nil {
			return err
		}
		if s.Expect, err = marks(o, "marks", true); err != nil {
			return err
		}
		if s.ExpectDiffers, _, err = o.str("differs", ""); err != nil {
			return err
		}
	}
	return nil
}

var rowRE = regexp.MustCompile(`^[A-Za-z]{1,4}[0-9]{1,3}$`)

// marks reads a list of verdict marks, each once; required says whether the
// key must be given.
func marks(o object, key string, required bool) ([]string, error) {
	path := join(o.path, key)
	n, ok := o.values[key]
	if !ok {
		if required {
			return nil, o.errorf(o.node, path, "missing: the marks, any of %s, or [] for none", strings.Join(Marks, ", "))
		}
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, o.errorf(n, path, "want a list of marks (any of %s, [] for none), got %s", strings.Join(Marks, ", "), describe(n))
	}
	got := []string{}
	for i, vn := range n.Content {
		vp := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case vn.Kind != yaml.ScalarNode:
			return nil, o.errorf(vn, vp, "want a mark, got %s", describe(vn))
		case !slices.Contains(Marks, vn.Value):
			return nil, o.errorf(vn, vp, "unknown mark %s (known: %s)", clip.Quote(vn.Value), strings.Join(Marks, ", "))
		case slices.Contains(got, vn.Value):
			return nil, o.errorf(vn, vp, "%s is listed twice", vn.Value)
		}
		got = append(got, vn.Value)
	}
	return got, nil
}

// MaxNodes bounds a scenario's hosts: one machine's testbed holds
// testbed.MaxHosts, an inventory's machines (gait run --inventory) that
// many each.
const MaxNodes = 10_000

// Needs are the files the scenario's servers need on every machine its
// hosts are on (systems.Needer), for preflight; none when its driver
// does not say.
func (s *Scenario) Needs() ([]string, error) {
	d, err := s.sys.Driver(s.Config)
	if err != nil {
		return nil, err
	}
	if n, ok := d.(systems.Needer); ok {
		return n.Needs(), nil
	}
	return nil, nil
}

// Needs are what every scenario needs, each once, in order.
func Needs(scenarios []*Scenario) ([]string, error) {
	var out []string
	for _, s := range scenarios {
		ns, err := s.Needs()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.File, err)
		}
		for _, n := range ns {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out, nil
}

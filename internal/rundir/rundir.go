// Package rundir owns gait's one on-disk format, the run directory: the
// resolved configuration of one run, its raw samples (one per request), a
// per-second time series and a summary. Whatever writes measurements writes a
// run directory; whatever reads them reads one. docs/run-directory.md is the
// format's specification; FormatVersion changes whenever it does.
package rundir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// FormatVersion is the version of the layout written by this package.
const FormatVersion = 1

// File names inside a run directory.
const (
	configFile     = "run.json"
	summaryFile    = "summary.json"
	timeseriesFile = "timeseries.csv"
	samplesDir     = "samples"
)

// PartialSuffix ends the name of a run directory still being written (or
// left behind by a writer that was killed): Close renames it away.
const PartialSuffix = ".partial"

// maxJSONFile bounds run.json and summary.json: a few kilobytes are usual,
// and a reader should not load a damaged gigabyte.
const maxJSONFile = 16 << 20

// Config is the resolved configuration of one run, stored as run.json.
type Config struct {
	FormatVersion int     `json:"format_version"`
	Name          string  `json:"name"`               // scenario or trace name
	Scenario      string  `json:"scenario,omitempty"` // path of the scenario file, if any
	System        string  `json:"system"`             // etcd, zookeeper, redis, ...
	Fault         string  `json:"fault,omitempty"`    // nic, disk, cpu, crash, partition, or empty for none
	Target        string  `json:"target,omitempty"`   // host or role the fault was applied to
	Factor        float64 `json:"factor"`             // slowdown factor; 1 is the baseline
	Repetition    int     `json:"repetition"`
	Hosts         []Host  `json:"hosts"`
	// Ops names the operations; a sample's Op indexes this list.
	Ops []string `json:"ops"`
	// Factors are the configuration factors an analysis groups by
	// (clients, value size, ...), as strings so any factor fits.
	Factors map[string]string `json:"factors,omitempty"`
	// Workload is the workload as resolved, free-form for the reader.
	Workload map[string]any `json:"workload,omitempty"`
	Started  time.Time      `json:"started"`
}

// Host is one host of the run; a sample's Host indexes Config.Hosts.
type Host struct {
	Name    string `json:"name"`
	Address string `json:"address,omitempty"`
	Role    string `json:"role,omitempty"`
}

// Outcome says how a request ended.
type Outcome uint8

// Outcomes, stored as one byte per sample.
const (
	OK Outcome = iota
	Error
	Timeout
)

var outcomeNames = [...]string{OK: "ok", Error: "error", Timeout: "timeout"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// Sample is one request. Start is the intended start time relative to
// Config.Started, so latency includes any wait a stall imposed on a request
// (no coordinated omission).
type Sample struct {
	Start   time.Duration
	Latency time.Duration
	Op      uint8
	Host    uint8
	Outcome Outcome
	// Involved are the hosts the request involved beyond Host, as its
	// client reported them (an HDFS write's pipeline); empty when it did
	// not say.
	Involved HostSet
}

// Second is one row of the per-second time series.
type Second struct {
	T          int     // seconds since Config.Started
	Throughput float64 // completed requests per second
	// Latency percentiles of the requests completed in this second, in seconds.
	P50, P90, P99, Max float64
	// Metrics are named white-box metrics (etcd_wal_fsync_p99, cpu_seconds{host=h0}, ...).
	Metrics map[string]float64
}

// Summary is summary.json: the headline figures of a run.
type Summary struct {
	FormatVersion int     `json:"format_version"`
	Requests      int     `json:"requests"`
	Errors        int     `json:"errors"`
	Timeouts      int     `json:"timeouts"`
	Duration      float64 `json:"duration"`   // seconds
	Throughput    float64 `json:"throughput"` // ops/s
	Mean          float64 `json:"mean"`       // seconds
	P50           float64 `json:"p50"`
	P99           float64 `json:"p99"`
	Max           float64 `json:"max"`
	// Generator is how well an open loop kept its schedule; nil for a
	// closed loop and for runs not driven by gait's load engine.
	Generator *Generator `json:"generator,omitempty"`
	// Extra holds figures a particular producer adds (slowdown, verdicts...).
	Extra map[string]any `json:"extra,omitempty"`
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// readJSON reads the JSON object file name of the run directory dir into v.
// Its errors name the file relative to dir, which the caller names.
func readJSON(dir, name string, v any) error {
	st, err := os.Stat(filepath.Join(dir, name))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("no %s: %w", name, os.ErrNotExist)
	case err != nil:
		return err
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s: %s, not a file", name, fileKind(st.Mode()))
	case st.Size() > maxJSONFile:
		return fmt.Errorf("%s: %d bytes, more than the %d MiB it may hold", name, st.Size(), maxJSONFile>>20)
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0:
		return fmt.Errorf("%s: empty", name)
	case b[0] != '{':
		return fmt.Errorf("%s: not a JSON object", name)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: not valid JSON: %w", name, err)
	}
	return nil
}

// IsRunDir reports whether path looks like a run directory: it has a
// run.json (a damaged one too, so that Open says what is wrong with it) and
// is not a PartialSuffix directory.
func IsRunDir(path string) bool {
	if strings.HasSuffix(filepath.Clean(path), PartialSuffix) {
		return false
	}
	_, err := os.Stat(filepath.Join(path, configFile))
	return err == nil
}

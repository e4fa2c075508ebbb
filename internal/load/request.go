package load

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Shape is what one arrival of a workload asks, beyond one access (the
// Zoolander thesis's §2.2 and chapter 6): a request of Phases, each of
// several parallel accesses with a barrier between phases (Inner-Join
// Olio: 30 reads, then 20), requests arriving Batch at a time at Poisson,
// fixed or traced instants (Gridlab-D), and a Delay added to a share of
// accesses (the thesis's Figure 2). A request's latency runs from its
// intended start to the end of its last phase. The zero Shape is one
// access per arrival, as before requests existed.
type Shape struct {
	Phases []Phase
	Batch  int
	// Trace, when set, replays arrival instants (offsets from the start)
	// instead of the rate's schedule; each instant brings Batch requests.
	Trace []time.Duration
	Delay Delay
}

// Phase is Count parallel accesses: each an operation drawn from the mix,
// or all of Op when it is named (Kind is its index among the system's
// operations).
type Phase struct {
	Count int
	Op    string
	Kind  uint8
}

// Delay is a fixed Delay added, before it is sent, to a Share (0..1] of
// accesses picked at random; the access's latency includes it.
type Delay struct {
	Share float64
	Delay time.Duration
}

// Limits on a shape: each concurrent request holds a connection per
// access of its widest phase.
const (
	MaxPhases     = 64
	MaxPhaseWidth = 1024
	MaxBatch      = 100000
)

// FanOut reports whether an arrival is more than one access.
func (s Shape) FanOut() bool {
	return len(s.Phases) > 1 || (len(s.Phases) == 1 && s.Phases[0].Count > 1) || s.Batch > 1 ||
		s.Trace != nil || s.Delay.Share > 0
}

// Width is the widest phase: the connections one request holds.
func (s Shape) Width() int {
	w := 1
	for _, p := range s.Phases {
		w = max(w, p.Count)
	}
	return w
}

// Accesses is the number of accesses one request makes.
func (s Shape) Accesses() int {
	if len(s.Phases) == 0 {
		return 1
	}
	n := 0
	for _, p := range s.Phases {
		n += p.Count
	}
	return n
}

func (s Shape) batch() int { return max(1, s.Batch) }

func (s Shape) phases() []Phase {
	if len(s.Phases) == 0 {
		return []Phase{{Count: 1}}
	}
	return s.Phases
}

// String writes the shape as the flags read it: "phases 30,20, batch 8".
func (s Shape) String() string {
	parts := []string{"phases " + FormatPhases(s.phases())}
	if s.Batch > 1 {
		parts = append(parts, "batch "+strconv.Itoa(s.Batch))
	}
	if s.Trace != nil {
		parts = append(parts, fmt.Sprintf("%d traced arrivals", len(s.Trace)))
	}
	if s.Delay.Share > 0 {
		parts = append(parts, "delay "+s.Delay.String())
	}
	return strings.Join(parts, ", ")
}

func (s Shape) check() error {
	if s.Phases != nil && len(s.Phases) == 0 {
		return specErrorf("phases", "empty: give the parallel accesses of each phase, like 30,20")
	}
	if len(s.Phases) > MaxPhases {
		return specErrorf("phases", "%d phases: at most %d", len(s.Phases), MaxPhases)
	}
	for i, p := range s.Phases {
		if p.Count < 1 || p.Count > MaxPhaseWidth {
			return specErrorf("phases", "phase %d has %d accesses: want 1 to %d", i+1, p.Count, MaxPhaseWidth)
		}
	}
	switch {
	case s.Batch < 0 || s.Batch > MaxBatch:
		return specErrorf("batch", "%d: want 1 to %d requests per arrival", s.Batch, MaxBatch)
	case !(s.Delay.Share >= 0 && s.Delay.Share <= 1):
		return specErrorf("delay", "share %g%%: want 0%% to 100%%", 100*s.Delay.Share)
	case s.Delay.Delay < 0:
		return specErrorf("delay", "%v: must not be negative", s.Delay.Delay)
	case s.Trace != nil && len(s.Trace) == 0:
		return specErrorf("arrivals", "the trace holds no arrival")
	}
	for i := 1; i < len(s.Trace); i++ {
		if s.Trace[i] < s.Trace[i-1] {
			return specErrorf("arrivals", "arrival %d (%v) is before arrival %d (%v): want them in time order", i+1, s.Trace[i], i, s.Trace[i-1])
		}
	}
	return nil
}

// ParsePhases reads "30,20" (accesses drawn from the mix) or "4:get,3:set"
// (each phase one operation of the system's).
func ParsePhases(s string, ops []string) ([]Phase, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("phases %q: empty; give the parallel accesses of each phase, like 30,20", s)
	}
	var out []Phase
	for part := range strings.SplitSeq(s, ",") {
		count, op, named := strings.Cut(strings.TrimSpace(part), ":")
		n, err := strconv.Atoi(strings.TrimSpace(count))
		if err != nil || n < 1 || n > MaxPhaseWidth {
			return nil, fmt.Errorf("phases %q: phase %d is %q; want 1 to %d parallel accesses, like 30 or 4:get", s, len(out)+1, part, MaxPhaseWidth)
		}
		p := Phase{Count: n}
		if named {
			p.Op = strings.TrimSpace(op)
			k := slices.Index(ops, p.Op)
			if k < 0 {
				return nil, fmt.Errorf("phases %q: unknown operation %q (this system offers %s)", s, p.Op, strings.Join(ops, ", "))
			}
			p.Kind = uint8(k)
		}
		out = append(out, p)
	}
	if len(out) > MaxPhases {
		return nil, fmt.Errorf("phases %q: %d phases; at most %d", s, len(out), MaxPhases)
	}
	return out, nil
}

// FormatPhases writes phases as ParsePhases reads them.
func FormatPhases(ps []Phase) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = strconv.Itoa(p.Count)
		if p.Op != "" {
			parts[i] += ":" + p.Op
		}
	}
	return strings.Join(parts, ",")
}

func (d Delay) String() string {
	return strconv.FormatFloat(100*d.Share, 'g', -1, 64) + "%:" + d.Delay.String()
}

// ParseDelay reads "2%:10ms": 10 ms added to 2% of accesses.
func ParseDelay(s string) (Delay, error) {
	share, dur, ok := strings.Cut(strings.TrimSpace(s), ":")
	pct := strings.TrimSuffix(strings.TrimSpace(share), "%")
	v, err := strconv.ParseFloat(pct, 64)
	if !ok || pct == strings.TrimSpace(share) || err != nil {
		return Delay{}, fmt.Errorf("delay %q: want SHARE%%:DURATION, like 2%%:10ms", s)
	}
	if !(v >= 0 && v <= 100) {
		return Delay{}, fmt.Errorf("delay %q: share %s%% is outside 0%% to 100%%", s, pct)
	}
	d, err := time.ParseDuration(strings.TrimSpace(dur))
	if err != nil || d < 0 {
		return Delay{}, fmt.Errorf("delay %q: %q is not a non-negative duration like 10ms", s, dur)
	}
	return Delay{Share: v / 100, Delay: d}, nil
}

// ReadTrace reads arrival instants, one a line: seconds from the start
// (0.25) or a duration (250ms); blank lines and lines from # are skipped.
func ReadTrace(path string) ([]time.Duration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("arrivals: %w", err)
	}
	out := []time.Duration{}
	for i, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		d, err := time.ParseDuration(line)
		if err != nil {
			v, ferr := strconv.ParseFloat(line, 64)
			if ferr != nil || !(v >= 0) || v > math.MaxInt64/1e9 {
				return nil, fmt.Errorf("arrivals %s:%d: %q is neither seconds from the start nor a duration", path, i+1, clipLine(line))
			}
			d = time.Duration(v * 1e9)
		}
		if d < 0 {
			return nil, fmt.Errorf("arrivals %s:%d: %v is before the start", path, i+1, d)
		}
		if n := len(out); n > 0 && d < out[n-1] {
			return nil, fmt.Errorf("arrivals %s:%d: %v is before the line above (%v): want them in time order", path, i+1, d, out[n-1])
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("arrivals %s: no arrival in the file", path)
	}
	return out, nil
}

func clipLine(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// Preset is a workload of the thesis's with its numbers.
type Preset struct {
	Name, About string
	// Phases name no operation: read is the system's read (the mix's), and
	// write, when set, makes the last phase the system's write.
	Phases     []int
	LastWrites bool
	Batch      int
	Poisson    bool
}

// Presets are the Zoolander thesis's two workloads (§2.2, chapter 6).
var Presets = []Preset{
	{Name: "olio", About: "Inner-Join Olio: 30 parallel reads, a barrier, 20 parallel reads; Poisson arrivals (thesis §2.2.1, Figure 14)",
		Phases: []int{30, 20}, Batch: 1, Poisson: true},
	{Name: "gridlabd", About: "Gridlab-D: 4 parallel reads, then 3 parallel writes per simulation step; steps arrive in batches of 8 at Poisson instants (thesis §2.2.2, Figures 2 and 15; the batch size is gait's choice, the thesis gives none)",
		Phases: []int{4, 3}, LastWrites: true, Batch: 8, Poisson: true},
}

// FindPreset returns the preset of that name.
func FindPreset(name string) (Preset, error) {
	for _, p := range Presets {
		if p.Name == name {
			return p, nil
		}
	}
	names := make([]string, len(Presets))
	for i, p := range Presets {
		names[i] = p.Name
	}
	return Preset{}, fmt.Errorf("preset %q: unknown (want %s)", name, strings.Join(names, " or "))
}

// Shape is the preset's shape for a system whose write is write (its
// index among ops); the reads are the mix's.
func (p Preset) Shape(ops []string, write string) (Shape, error) {
	s := Shape{Batch: p.Batch}
	for i, n := range p.Phases {
		ph := Phase{Count: n}
		if p.LastWrites && i == len(p.Phases)-1 {
			k := slices.Index(ops, write)
			if k < 0 {
				return s, fmt.Errorf("preset %s: the system has no write operation", p.Name)
			}
			ph.Op, ph.Kind = write, uint8(k)
		}
		s.Phases = append(s.Phases, ph)
	}
	return s, nil
}

package model

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
)

// Split says how arrivals are spread over replica groups.
type Split int

const (
	// SplitRandom sends each request to a uniformly random group, so every
	// group sees a Poisson stream of Rate/Replicas (what the predictors assume).
	SplitRandom Split = iota
	// SplitRoundRobin sends requests to groups in turn (Erlang gaps per group).
	SplitRoundRobin
)

// ParseSplit reads random or round-robin.
func ParseSplit(s string) (Split, error) {
	switch s {
	case "random":
		return SplitRandom, nil
	case "round-robin":
		return SplitRoundRobin, nil
	}
	return 0, inputError("split", s, "want random or round-robin")
}

func (s Split) String() string {
	if s == SplitRoundRobin {
		return "round-robin"
	}
	return "random"
}

// SimOptions controls a simulation run.
type SimOptions struct {
	Requests int    // measured requests (after warm-up), 32 to MaxRequests
	Seed     uint64 // same seed, same result
	Split    Split
	// Warmup requests are simulated first and not counted; 0 picks
	// Requests/20, enough to forget the empty start at the loads we accept.
	Warmup int
	// Progress, when set, is told how far the simulation has come.
	Progress Progress
}

// MaxRequests is the most requests one simulation may measure: beyond it a
// batch's miss counts, held in float64, would no longer be exact, and the
// run would take days (10^7 requests/s for one server).
const MaxRequests = 1 << 40

func (o SimOptions) validate() error {
	if o.Requests < simBatches || o.Requests > MaxRequests {
		return inputError("requests", o.Requests, "want %d to %d (2^40)", simBatches, int64(MaxRequests))
	}
	if o.Warmup < 0 || o.Warmup > MaxRequests {
		return inputError("warmup", o.Warmup, "want 0 to %d (2^40)", int64(MaxRequests))
	}
	return nil
}

func (o SimOptions) warmup() int {
	if o.Warmup > 0 {
		return o.Warmup
	}
	return o.Requests / 20
}

// SimResult is the simulated SLA of one duplicate count.
type SimResult struct {
	Duplicates int     `json:"duplicates"`
	SLA        float64 `json:"sla"`
	// StdErr is the batch-means standard error of SLA.
	StdErr float64 `json:"stderr"`
}

const simBatches = 32

// Simulate runs the discrete-event model of Replicas groups of m servers:
// Poisson arrivals at the total rate, each request goes to one group (per
// opt.Split) and to every server of it, each server serves FIFO with its own
// independent service draw, each reply adds an independent network delay,
// and the first reply wins. It returns the SLA for every d = 1..m, where d
// duplicates are any d of the m servers: the estimate averages over all
// d-subsets (the hypergeometric U-statistic), so one run answers every d
// without bias and with less noise than a run per d.
func Simulate(sys System, replicas, m int, opt SimOptions) ([]SimResult, error) {
	return simulate(sys, replicas, m, opt, seq(m))
}

// simulate is Simulate for the duplicate counts in want only (each <= m):
// summarising every d costs m^2 per batch, too much for a wide group.
func simulate(sys System, replicas, m int, opt SimOptions, want []int) ([]SimResult, error) {
	cfg := Config{Duplicates: m, Replicas: replicas}
	if err := firstErr(sys.Validate(), cfg.Validate(), opt.validate()); err != nil {
		return nil, err
	}
	if u := sys.Utilization(cfg); u >= 1 {
		return nil, fmt.Errorf("configuration %dx%d at utilization %.3f: %w", m, replicas, u, ErrUnstable)
	}
	warm := opt.warmup()
	// fails[b][k] counts requests of batch b where exactly k of m servers missed the bound.
	fails := make([][]float64, simBatches)
	for b := range fails {
		fails[b] = make([]float64, m+1)
	}
	s := newSim(sys, replicas, m, opt)
	// Tell the progress about every 2^20 server-steps (a few milliseconds).
	every := max(1, (1<<20)/m)
	total := float64(warm + opt.Requests)
	done := 0
	tick := func() {
		if done++; opt.Progress != nil && done%every == 0 {
			opt.Progress("", float64(done)/total)
		}
	}
	for i := 0; i < warm; i++ {
		s.step()
		tick()
	}
	per := opt.Requests / simBatches
	for b := 0; b < simBatches; b++ {
		for i := 0; i < per; i++ {
			fails[b][s.step()]++
			tick()
		}
	}
	return summarize(fails, m, per, want), nil
}

// SimRow is the simulated SLA of one configuration, in Predict's JSON shape.
type SimRow struct {
	Config
	Nodes       int     `json:"nodes"`
	Utilization float64 `json:"utilization"`
	// Unstable is set when utilization >= 1; SLA is then "unstable" in JSON.
	Unstable bool    `json:"unstable"`
	SLA      float64 `json:"sla"`
	StdErr   float64 `json:"sla_stderr"` // named as predict names it
	Requests int     `json:"requests"`
	Split    string  `json:"split"`
	// Percentiles of a request's latency at PercentileLevels, for
	// requests of several accesses only.
	Percentiles []float64 `json:"percentiles_s,omitempty"`
}

// MarshalJSON writes "unstable" in place of an unstable configuration's SLA.
func (r SimRow) MarshalJSON() ([]byte, error) {
	var sla any = r.SLA
	if r.Unstable {
		sla = "unstable"
	}
	return json.Marshal(struct {
		Config
		Nodes       int       `json:"nodes"`
		Utilization float64   `json:"utilization"`
		Unstable    bool      `json:"unstable"`
		SLA         any       `json:"sla"`
		StdErr      float64   `json:"sla_stderr"`
		Requests    int       `json:"requests"`
		Split       string    `json:"split"`
		Percentiles []float64 `json:"percentiles_s,omitempty"`
	}{r.Config, r.Nodes, r.Utilization, r.Unstable, sla, r.StdErr, r.Requests, r.Split, r.Percentiles})
}

// SimulateConfigs simulates every duplicates x replicas pair, replica
// count by replica count, each with its own run of exactly d servers (and
// opt.Seed). An unstable configuration comes back marked, not as an error.
// opt.Progress hears which configuration runs and the share of the whole
// work (requests x servers) done.
func SimulateConfigs(sys System, duplicates, replicas []int, opt SimOptions) ([]SimRow, error) {
	if err := firstErr(sys.Validate(), validateGrid(duplicates, replicas), opt.validate()); err != nil {
		return nil, err
	}
	var rows []SimRow
	var work []float64
	total := 0.0
	for _, r := range replicas {
		for _, d := range duplicates {
			cfg := Config{Duplicates: d, Replicas: r}
			row := SimRow{Config: cfg, Nodes: cfg.Nodes(), Utilization: sys.Utilization(cfg), Requests: opt.Requests, Split: opt.Split.String()}
			row.Unstable = row.Utilization >= 1
			w := 0.0
			if !row.Unstable {
				w = float64(opt.warmup()+opt.Requests) * float64(d)
			}
			rows, work, total = append(rows, row), append(work, w), total+w
		}
	}
	progress, done := opt.Progress, 0.0
	if sys.Request.FanOut() {
		// A request's accesses cost the run, not the request.
		total *= float64(sys.Request.Accesses())
		for i := range work {
			work[i] *= float64(sys.Request.Accesses())
		}
	}
	for i := range rows {
		row := &rows[i]
		if row.Unstable {
			continue
		}
		o := opt
		o.Progress = progress.stage(fmt.Sprintf("%d duplicates x %d replicas (%d of %d)", row.Duplicates, row.Replicas, i+1, len(rows)), done/total, work[i]/total)
		if o.Progress != nil {
			o.Progress("", 0)
		}
		if sys.Request.FanOut() {
			res, err := SimulateRequests(sys, row.Config, []float64{sys.Bound}, o)
			if err != nil {
				return nil, err
			}
			row.SLA, row.StdErr, row.Percentiles = res.SLA[0], res.StdErr[0], res.Percentiles
			done += work[i]
			continue
		}
		res, err := simulate(sys, row.Replicas, row.Duplicates, o, []int{row.Duplicates})
		if err != nil {
			return nil, err
		}
		row.SLA, row.StdErr = res[row.Duplicates-1].SLA, res[row.Duplicates-1].StdErr
		done += work[i]
	}
	if progress != nil {
		progress("done", 1)
	}
	return rows, nil
}

type sim struct {
	sys       System
	r         *rand.Rand
	free      [][]float64 // per group, per server: time it becomes idle
	rate      float64
	net       Distribution
	netConst  float64
	constNet  bool
	split     Split
	t         float64
	nextGroup int
	bound     float64
	horizon   float64 // when t passes it, the origin moves to t
}

// rebaseAfter is how many mean service times the clock may run before
// sim moves its origin: the clock's rounding, which grows with it, then stays
// below a 10^-6 of a service time.
const rebaseAfter = 1 << 30

func newSim(sys System, replicas, m int, opt SimOptions) *sim {
	s := &sim{sys: sys, r: rand.New(rand.NewPCG(opt.Seed, 0x9e3779b97f4a7c15)), rate: sys.Rate,
		net: sys.net(), split: opt.Split, bound: sys.Bound, horizon: rebaseAfter * sys.Service.Mean()}
	if c, ok := s.net.(Constant); ok {
		s.constNet, s.netConst = true, c.V
	}
	s.free = make([][]float64, replicas)
	for g := range s.free {
		s.free[g] = make([]float64, m)
	}
	return s
}

// step simulates one request and returns how many of its group's servers missed the bound.
func (s *sim) step() int {
	s.t += s.r.ExpFloat64() / s.rate
	if s.t > s.horizon {
		// Every server's time is kept relative to the clock; at a tiny
		// rate one gap may be 10^15 service times, and t + S - t is then
		// 0 in floating point.
		for _, free := range s.free {
			for j := range free {
				free[j] -= s.t
			}
		}
		s.t = 0
	}
	g := s.nextGroup
	if s.split == SplitRandom {
		g = s.r.IntN(len(s.free))
	} else {
		s.nextGroup = (g + 1) % len(s.free)
	}
	free := s.free[g]
	svc := s.sys.Service
	missed := 0
	for j, f := range free {
		// The reply time is the wait plus the service, summed directly:
		// (t + S) - t rounds, and a constant service time equal to the
		// bound then missed it at random.
		wait := math.Max(0, f-s.t)
		svcTime := svc.Sample(s.r)
		free[j] = math.Max(s.t, f) + svcTime
		reply := wait + svcTime
		if s.constNet {
			reply += s.netConst
		} else {
			reply += s.net.Sample(s.r)
		}
		if reply > s.bound {
			missed++
		}
	}
	return missed
}

// summarize turns per-batch miss counts into the SLA for each d in want
// (the rest of the m results stay zero), using
// P(all d miss | k of m missed) = C(k,d)/C(m,d).
func summarize(fails [][]float64, m, per int, want []int) []SimResult {
	out := make([]SimResult, m)
	for _, d := range want {
		ratio := make([]float64, m+1) // C(k,d)/C(m,d)
		for k := d; k <= m; k++ {
			ratio[k] = math.Exp(lchoose(k, d) - lchoose(m, d))
		}
		var sum, sum2 float64
		for _, f := range fails {
			miss := 0.0
			for k := d; k <= m; k++ {
				miss += f[k] * ratio[k]
			}
			sla := 1 - miss/float64(per)
			sum += sla
			sum2 += sla * sla
		}
		n := float64(len(fails))
		mean := sum / n
		v := math.Max(0, sum2/n-mean*mean)
		out[d-1] = SimResult{Duplicates: d, SLA: mean, StdErr: math.Sqrt(v / (n - 1))}
	}
	return out
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

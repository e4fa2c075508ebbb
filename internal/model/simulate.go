package model

import (
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

func (s Split) String() string {
	if s == SplitRoundRobin {
		return "round-robin"
	}
	return "random"
}

// SimOptions controls a simulation run.
type SimOptions struct {
	Requests int    // measured requests (after warm-up)
	Seed     uint64 // same seed, same result
	Split    Split
	// Warmup requests are simulated first and not counted; 0 picks
	// Requests/20, enough to forget the empty start at the loads we accept.
	Warmup int
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
	cfg := Config{Duplicates: m, Replicas: replicas}
	if err := firstErr(sys.Validate(), cfg.Validate()); err != nil {
		return nil, err
	}
	if u := sys.Utilization(cfg); u >= 1 {
		return nil, fmt.Errorf("configuration %dx%d at utilization %.3f: %w", m, replicas, u, ErrUnstable)
	}
	if opt.Requests < simBatches {
		return nil, fmt.Errorf("requests %d: need at least %d", opt.Requests, simBatches)
	}
	warm := opt.Warmup
	if warm <= 0 {
		warm = opt.Requests / 20
	}
	// fails[b][k] counts requests of batch b where exactly k of m servers missed the bound.
	fails := make([][]float64, simBatches)
	for b := range fails {
		fails[b] = make([]float64, m+1)
	}
	s := newSim(sys, replicas, m, opt)
	for i := 0; i < warm; i++ {
		s.step()
	}
	per := opt.Requests / simBatches
	for b := 0; b < simBatches; b++ {
		for i := 0; i < per; i++ {
			fails[b][s.step()]++
		}
	}
	return summarize(fails, m, per), nil
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
	next, t   float64
	nextGroup int
	bound     float64
}

func newSim(sys System, replicas, m int, opt SimOptions) *sim {
	s := &sim{sys: sys, r: rand.New(rand.NewPCG(opt.Seed, 0x9e3779b97f4a7c15)), rate: sys.Rate,
		net: sys.net(), split: opt.Split, bound: sys.Bound}
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
		start := math.Max(s.t, f)
		done := start + svc.Sample(s.r)
		free[j] = done
		reply := done - s.t
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

// summarize turns per-batch miss counts into the SLA for each d, using
// P(all d miss | k of m missed) = C(k,d)/C(m,d).
func summarize(fails [][]float64, m, per int) []SimResult {
	out := make([]SimResult, m)
	for d := 1; d <= m; d++ {
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

package model

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// RequestSim is the simulated share of requests within each bound asked.
type RequestSim struct {
	Bounds []float64 `json:"bounds"`
	SLA    []float64 `json:"sla"`
	StdErr []float64 `json:"stderr"`
	// Accesses counts the simulated accesses (warm-up included).
	Accesses int64 `json:"accesses"`
	// Percentiles are the measured requests' latencies at PercentileLevels.
	Percentiles []float64 `json:"percentiles_s"`
}

// PercentileLevels are the levels RequestSim.Percentiles reports.
var PercentileLevels = []float64{0.5, 0.9, 0.95, 0.99, 0.999}

// SimulateRequests runs sys.Request's requests on cfg request by request:
// batches of requests at Poisson instants (total sys.Rate requests/s); a
// request's phases one after the other, each phase's accesses sent at
// once, each to a uniformly random replica group and to every duplicate of
// it; each duplicate serves FIFO with its own service draw and adds its
// own network draw, the first reply answers the access; a phase ends with
// its last access, the next begins then. Requests of one batch send their
// accesses in batch order. It returns the share of requests whose latency
// (arrival to the end of the last phase) is within each bound; stderr is
// the batch-means standard error (32 batches of requests, counted in order
// of arrival).
func SimulateRequests(sys System, cfg Config, bounds []float64, opt SimOptions) (RequestSim, error) {
	if len(bounds) == 0 {
		return RequestSim{}, inputError("bound", nil, "no bound to count requests against")
	}
	sys.Bound = slices.Max(bounds)
	if err := firstErr(sys.validateShape(), validateRate(sys.Rate), cfg.Validate(), sys.Request.Validate(), opt.validate()); err != nil {
		return RequestSim{}, err
	}
	if b := sys.Request.batch(); b > opt.Requests {
		return RequestSim{}, inputError("batch", b, "more requests per arrival than the %d requests simulated", opt.Requests)
	}
	if opt.Split != SplitRandom {
		return RequestSim{}, inputError("split", opt.Split.String(), "requests of several accesses are split at random only")
	}
	if u := sys.Utilization(cfg); u >= 1 {
		return RequestSim{}, fmt.Errorf("configuration %dx%d at utilization %.3f: %w", cfg.Duplicates, cfg.Replicas, u, ErrUnstable)
	}
	rs := newRequestSim(sys, cfg, opt.Seed)
	warm, per := opt.warmup(), opt.Requests/simBatches
	within := make([][]float64, simBatches)
	for b := range within {
		within[b] = make([]float64, len(bounds))
	}
	total := float64(warm + per*simBatches)
	lastTold := 0
	rs.limit = warm + per*simBatches
	var lats []float64
	rs.onDone = func(id int, latency float64) {
		if id < warm {
			return
		}
		lats = append(lats, latency)
		b := (id - warm) / per
		for i, bound := range bounds {
			if latency <= bound {
				within[b][i]++
			}
		}
	}
	for rs.finished < rs.limit {
		rs.step()
		if opt.Progress != nil && rs.finished-lastTold >= 1<<14 {
			lastTold = rs.finished
			opt.Progress("", float64(rs.finished)/total)
		}
	}
	out := RequestSim{Bounds: bounds, SLA: make([]float64, len(bounds)), StdErr: make([]float64, len(bounds)), Accesses: rs.accesses}
	slices.Sort(lats)
	for _, q := range PercentileLevels {
		out.Percentiles = append(out.Percentiles, lats[min(len(lats)-1, int(q*float64(len(lats))))])
	}
	for i := range bounds {
		var sum, sum2 float64
		for b := range within {
			v := within[b][i] / float64(per)
			sum += v
			sum2 += v * v
		}
		n := float64(simBatches)
		mean := sum / n
		out.SLA[i] = mean
		out.StdErr[i] = math.Sqrt(math.Max(0, sum2/n-mean*mean) / (n - 1))
	}
	return out, nil
}

// phaseStart is a request's phase that begins at t.
type phaseStart struct {
	t     float64
	id    int // request number, in arrival order
	phase int
	born  float64
}

type phaseHeap []phaseStart

func (h phaseHeap) Len() int { return len(h) }
func (h phaseHeap) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].id < h[j].id
}
func (h phaseHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *phaseHeap) Push(x any)   { *h = append(*h, x.(phaseStart)) }
func (h *phaseHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type requestSim struct {
	sys      System
	phases   []int
	batch    int
	r        *rand.Rand
	free     [][]float64 // per group, per duplicate: when it is idle
	pending  phaseHeap
	next     float64 // the next batch instant
	arrived  int     // requests arrived so far
	limit    int     // requests numbered below it are counted
	finished int     // of them, those that ended
	accesses int64
	onDone   func(id int, latency float64)
}

func newRequestSim(sys System, cfg Config, seed uint64) *requestSim {
	s := &requestSim{sys: sys, phases: sys.Request.phases(), batch: sys.Request.batch(),
		r: rand.New(rand.NewPCG(seed, 0x2545f4914f6cdd1d))}
	s.free = make([][]float64, cfg.Replicas)
	for g := range s.free {
		s.free[g] = make([]float64, cfg.Duplicates)
	}
	s.next = s.gap()
	return s
}

func (s *requestSim) gap() float64 {
	return s.r.ExpFloat64() / (s.sys.Rate / float64(s.batch))
}

// step handles the earliest event: a batch's arrival or a phase's start.
func (s *requestSim) step() {
	if len(s.pending) == 0 || s.next < s.pending[0].t {
		t := s.next
		for i := 0; i < s.batch; i++ {
			s.runPhase(phaseStart{t: t, id: s.arrived, born: t})
			s.arrived++
		}
		s.next = t + s.gap()
		return
	}
	s.runPhase(heap.Pop(&s.pending).(phaseStart))
}

// runPhase sends a phase's accesses and schedules what follows its end.
func (s *requestSim) runPhase(p phaseStart) {
	end := p.t
	net := s.sys.net()
	for a := 0; a < s.phases[p.phase]; a++ {
		free := s.free[s.r.IntN(len(s.free))]
		reply := math.Inf(1)
		for j, f := range free {
			done := math.Max(f, p.t) + s.sys.Service.Sample(s.r)
			free[j] = done
			reply = math.Min(reply, done+net.Sample(s.r))
		}
		end = math.Max(end, reply)
		s.accesses++
	}
	if p.phase+1 < len(s.phases) {
		heap.Push(&s.pending, phaseStart{t: end, id: p.id, phase: p.phase + 1, born: p.born})
		return
	}
	if p.id < s.limit {
		s.finished++
		s.onDone(p.id, end-p.born)
	}
}

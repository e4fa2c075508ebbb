package model

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"
)

// Request is what one request of the workload asks of the storage (the
// thesis's §2.2 and chapter 6): Phases of parallel accesses with a barrier
// between them (Inner-Join Olio: 30 event reads, then 20 user reads), the
// requests arriving Batch at a time (Gridlab-D's bursts). A request's
// latency runs from its arrival to the end of its last phase: the sum over
// phases of the slowest access. The zero value is one access arriving
// alone, the model's unit everywhere else.
type Request struct {
	Phases []int `json:"phases,omitempty"`
	Batch  int   `json:"batch,omitempty"`
}

// Limits on a request: the predictor holds the law of every count of
// accesses one group may get from a batch, up to MaxBatchAccesses.
const (
	MaxPhases         = 64
	MaxPhaseAccesses  = 256
	MaxBatch          = 1024
	MaxBatchAccesses  = 1024
	maxRequestGridPts = 2048
)

// FanOut reports whether the request is more than one access arriving alone.
func (q Request) FanOut() bool {
	return q.Accesses() > 1 || q.batch() > 1
}

// Accesses is the number of accesses one request makes.
func (q Request) Accesses() int {
	if len(q.Phases) == 0 {
		return 1
	}
	n := 0
	for _, k := range q.Phases {
		n += k
	}
	return n
}

func (q Request) batch() int { return max(1, q.Batch) }

func (q Request) phases() []int {
	if len(q.Phases) == 0 {
		return []int{1}
	}
	return q.Phases
}

func (q Request) String() string {
	parts := make([]string, len(q.phases()))
	for i, k := range q.phases() {
		parts[i] = strconv.Itoa(k)
	}
	s := "phases " + strings.Join(parts, ",")
	if q.batch() > 1 {
		s += fmt.Sprintf(", batches of %d", q.batch())
	}
	return s
}

// Validate checks a request's shape: 1 to MaxPhases phases of 1 to
// MaxPhaseAccesses accesses, a batch of 1 to MaxBatch requests that make
// at most MaxBatchAccesses accesses.
func (q Request) Validate() error {
	if q.Phases != nil && len(q.Phases) == 0 {
		return inputError("phases", nil, "empty: give at least one phase, e.g. 30,20")
	}
	if len(q.Phases) > MaxPhases {
		return inputError("phases", len(q.Phases), "phases is more than %d", MaxPhases)
	}
	for i, k := range q.Phases {
		if k < 1 || k > MaxPhaseAccesses {
			return inputError("phases", k, "phase %d: want 1 to %d parallel accesses", i+1, MaxPhaseAccesses)
		}
	}
	if q.Batch < 0 || q.Batch > MaxBatch {
		return inputError("batch", q.Batch, "want 1 to %d requests per arrival", MaxBatch)
	}
	if n := q.batch() * q.Accesses(); n > MaxBatchAccesses {
		return inputError("batch", q.Batch, "%d requests x %d accesses is %d accesses in one batch; at most %d", q.batch(), q.Accesses(), n, MaxBatchAccesses)
	}
	return nil
}

// RequestPrediction is the predicted latency law of one configuration's
// requests on a grid: every law is held as masses at cell centres i*Step,
// each the mass of its cell, so CDF[i] = P(latency <= (i+0.5)*Step).
type RequestPrediction struct {
	Step float64
	CDF  []float64
}

// At is P(latency <= t), interpolated on the grid; 1 beyond it only if
// the grid already reached 1.
func (p RequestPrediction) At(t float64) float64 {
	f := t/p.Step - 0.5
	if f <= 0 {
		return p.CDF[0]
	}
	last := len(p.CDF) - 1
	if f >= float64(last) {
		return p.CDF[last]
	}
	i := int(f)
	return p.CDF[i] + (f-float64(i))*(p.CDF[i+1]-p.CDF[i])
}

// Quantile is the least cell edge whose CDF reaches q, or +Inf when the
// grid does not.
func (p RequestPrediction) Quantile(q float64) float64 {
	for i, c := range p.CDF {
		if c >= q {
			return (float64(i) + 0.5) * p.Step
		}
	}
	return math.Inf(1)
}

// requestSLA is the predicted share of sys.Request's requests that end
// within sys.Bound on cfg. thesis replaces every duplicate's waiting-time
// law by its mean, as the thesis deducts the mean queueing delay (§4.4.2).
//
// The law is computed past the bound, up to at least twice the time the
// request's accesses take one after the other on a group: the waits'
// work beyond the grid's end is lost, which with the bound as the end put
// Olio on one server at 30% load 0.016 high at its 60 ms median (0.001
// with the grid to 120 ms).
func requestSLA(sys System, cfg Config, thesis bool, progress Progress) (float64, error) {
	p, err := predictRequest(sys, cfg, max(sys.Bound, serialTime(sys, cfg)), thesis, progress)
	if err != nil {
		return 0, err
	}
	return clamp01(p.At(sys.Bound)), nil
}

// PredictRequest predicts the latency law of sys.Request's requests on cfg
// up to horizon seconds (sys.Bound is not used).
//
// Each replica group gets every access with probability 1/r. A duplicate
// sees work arrive in lumps: a batch instant brings its first phases'
// accesses, a later phase's start brings that phase's; taking these
// instants as one Poisson stream, the duplicate's waiting time is the
// stationary workload of an M/G/1 queue whose service is the lump
// (Pollaczek-Khinchine, exact for the first phase, whose instants are
// Poisson). A group's part of a phase ends when the first duplicate has
// served the wait, the accesses of the batch's earlier requests and the
// request's own n accesses (FIFO: the last one served ends the part); a
// phase ends at its slowest group, over the multinomial split of its
// accesses. The request's latency is the sum of its phases. What is taken
// as independent though it is not: the duplicates' waits (they see the
// same arrivals), the groups' waits, and the phases' (a slow first phase
// saw a loaded system that the second may still see); the network delay of
// a group's part is that of its last reply.
func PredictRequest(sys System, cfg Config, horizon float64, thesis bool) (RequestPrediction, error) {
	return predictRequest(sys, cfg, horizon, thesis, nil)
}

// predictRequest is PredictRequest telling progress, where it may take
// seconds (duplicates in several groups), how much of it is done.
func predictRequest(sys System, cfg Config, horizon float64, thesis bool, progress Progress) (RequestPrediction, error) {
	sys.Bound = horizon
	if err := firstErr(sys.validateShape(), validateRate(sys.Rate), cfg.Validate(), sys.Request.Validate()); err != nil {
		return RequestPrediction{}, err
	}
	if !(horizon > 0) || math.IsInf(horizon, 0) {
		return RequestPrediction{}, inputError("bound", horizon, "must be finite and > 0")
	}
	rho := sys.Utilization(cfg)
	if rho >= 1 {
		return RequestPrediction{}, fmt.Errorf("configuration %dx%d at utilization %.3f: %w", cfg.Duplicates, cfg.Replicas, rho, ErrUnstable)
	}
	q := sys.Request
	phases, B := q.phases(), q.batch()
	r, d := cfg.Replicas, cfg.Duplicates
	p := 1 / float64(r)
	path := requestPathOf(q, cfg, thesis)
	perAccessNet := sys.net()
	// One server per group, two phases: those paths take each reply's
	// delay (replyLaws); the others one delay per part.
	eachReply := len(phases) == 2 && d == 1 && (path == pathServerPhases || path == pathTwoPhaseGroups)
	if !thesis && !eachReply {
		net, err := fanOutNet(perAccessNet, sys.Service, accessesPerPart(sys.Request, cfg), cfg.Duplicates)
		if err != nil {
			return RequestPrediction{}, fmt.Errorf("the network delay of a part: %w", err)
		}
		sys.Net = net
	}
	g := grid{h: horizon / (maxRequestGridPts - 1), n: maxRequestGridPts}

	// sums[c] is the law of c service times on the grid.
	maxCount := B * q.Accesses() // what one group may hold of a batch
	svc := g.pmf(sys.Service)
	sums := serviceSums(svc, maxCount)

	// The lump one arrival instant brings a duplicate: a mixture of sums.
	lumpRate := sys.Rate/float64(B) + float64(len(phases)-1)*sys.Rate
	countLaw := make([]float64, maxCount+1)
	for c, w := range binomial(B*phases[0], p) {
		countLaw[c] += sys.Rate / float64(B) * w / lumpRate
	}
	for _, k := range phases[1:] {
		for c, w := range binomial(k, p) {
			countLaw[c] += sys.Rate * w / lumpRate
		}
	}
	lump := g.countsOfSums(countLaw, sums)
	var wait []float64
	if thesis {
		wait = g.pmf(Constant{lumpWaitMean(countLaw, sys.Service, rho)})
	} else {
		wait = g.waitingPMF(g.lumpEquilibrium(lump, countMean(countLaw)*sys.Service.Mean()), rho)
	}
	wait = convolve(wait, g.pmf(sys.net()))

	// done[c][i]: P(one duplicate's part of c accesses ends by cell i).
	doneCDF := func(c int) []float64 { return cumulative(convolve(wait, sums[c])) }
	cache := map[int][]float64{}
	part := func(c int) []float64 {
		if v, ok := cache[c]; ok {
			return v
		}
		v := doneCDF(c)
		cache[c] = v
		return v
	}
	// groupOK(c) at cell i: the first of d duplicates is done.
	groupOK := func(cdf []float64, i int) float64 { return 1 - math.Pow(1-cdf[i], float64(d)) }

	if r == 1 {
		// One group: every duplicate serves the whole batch's work in
		// arrival order. Request j's last phase waits behind all of the
		// batch's earlier phases (they arrived first), the last phases of
		// requests 1..j-1 (their earlier phases ended first at every
		// duplicate), and the other requests' work that arrived until its
		// own second-to-last phase ended; its part ends at the first
		// duplicate done with all that. (It takes the arrivals until the
		// first phase ends as if the first phase waited for all of that
		// work: for requests arriving alone on one server,
		// serverPhases counts only the work already queued, and for batches of two
		// phases batchOneServer; batchOneGroupShared takes two phases'
		// batches on duplicates.)
		P := len(phases)
		law := make([]float64, g.n)
		// The work a request finds ahead counts the later phases of the
		// requests present (they come before its own later phases), so it
		// is an M/G/1 workload whose lumps are whole batches; new batches
		// arriving before its last phase starts put their first phase
		// ahead of it.
		batchRate := sys.Rate / float64(B)
		// waits are the laws a duplicate's wait takes, each with its
		// weight: the duplicates see the same arrivals, so whether the
		// group is idle is theirs alike (thesis: the mean, for all).
		waits := []weightedLaw{{1, wait}}
		if !thesis {
			w := g.waitingPMF(g.lumpEquilibrium(sums[B*q.Accesses()], float64(B*q.Accesses())*sys.Service.Mean()), rho)
			switch path {
			case pathOneGroupShared:
				return RequestPrediction{Step: g.h, CDF: g.oneGroupShared(phases, sums, w, g.pmf(sys.net()), batchRate, d, nil)}, nil
			case pathGroupPhases:
				return RequestPrediction{Step: g.h, CDF: g.groupPhases(phases, sums, w, g.pmf(sys.net()), batchRate, d)}, nil
			case pathServerPhases:
				if eachReply && perAccessNet.Mean() > 0 {
					return RequestPrediction{Step: g.h, CDF: g.serverTwoPhasesNet(w, sums, phases[0], phases[1], batchRate, g.pmf(perAccessNet))}, nil
				}
				net, err := g.phasesNet(perAccessNet, sys.Service, phases)
				if err != nil {
					return RequestPrediction{}, fmt.Errorf("the network delay of the phases: %w", err)
				}
				return RequestPrediction{Step: g.h, CDF: g.serverPhases(w, sums, phases, batchRate, net)}, nil
			case pathBatchOneServer:
				return RequestPrediction{Step: g.h, CDF: g.batchOneServer(w, sums, phases[0], phases[1], B, batchRate, g.pmf(sys.net()))}, nil
			case pathBatchOneGroup:
				return RequestPrediction{Step: g.h, CDF: g.batchOneGroupShared(phases[0], phases[1], B, sums, w, g.pmf(sys.net()), batchRate, d)}, nil
			}
			waits = g.idleOrBusy(w, g.pmf(sys.net()))
			if d > 1 {
				// The duplicates share the age of the last batch to
				// reach them, which sets most of the wait they find.
				waits = g.pastStates(w, sums[B*q.Accesses()], batchRate, 48)
				net := g.pmf(sys.net())
				for i := range waits {
					waits[i].pmf = convolve(waits[i].pmf, net)
				}
			}
		}
		for j := 1; j <= B; j++ {
			var ahead *arrivalsAhead // what every wait's law shares
			if P > 1 && d > 1 && !thesis {
				rest := (B-j)*phases[P-2] + j*phases[P-1]
				ahead = g.newArrivalsAhead(sums[rest], sums[B*phases[0]], batchRate)
			}
			for _, w := range waits {
				var cdf []float64
				if P == 1 {
					cdf = cumulative(convolve(w.pmf, sums[j*phases[0]]))
				} else {
					early := j * phases[P-2]
					for _, k := range phases[:P-2] {
						early += B * k
					}
					rest := (B-j)*phases[P-2] + j*phases[P-1]
					window := convolve(w.pmf, sums[early])
					if d > 1 && !thesis {
						// The batches that arrive before the request's
						// last phase starts go ahead of it at every
						// duplicate alike.
						cdf = g.oneGroupTwoPhases(window, ahead, d)
						for i := range law {
							law[i] += w.w * cdf[i] / float64(B)
						}
						continue
					}
					if !thesis {
						window = g.withArrivals(window, batchRate, sums[B*phases[0]])
					}
					cdf = cumulative(convolve(window, sums[rest]))
				}
				for i := range law {
					law[i] += w.w * groupOK(cdf, i) / float64(B)
				}
			}
		}
		return RequestPrediction{Step: g.h, CDF: law}, nil
	}
	switch path {
	case pathGroupChain:
		return groupChainFor(sys, phases, r, d, rho, horizon), nil
	case pathBatchBarrier:
		return batchBarrierFor(sys, phases[0], phases[1], r, d, rho, horizon), nil
	case pathBatchServers:
		return RequestPrediction{Step: g.h, CDF: g.batchServers(sys, phases[0], phases[1], rho, r)}, nil
	case pathBatchGroups:
		return RequestPrediction{Step: g.h, CDF: g.batchGroups(sys, phases, sums, wait, thesis, rho, r, d)}, nil
	case pathTwoPhaseGroups:
		return twoPhaseGroupsExtrapolated(sys, phases, r, d, rho, horizon, progress), nil
	case pathServerGroupsPhases:
		return serverGroupsPhases(sys, phases, r, rho, horizon), nil
	}
	law := make([]float64, g.n)
	law[0] = 1
	for _, k := range phases {
		// a[n][i]: a group that holds n of this phase's accesses is done by i.
		a := make([][]float64, k+1)
		a[0] = onesLike(g.n)
		for n := 1; n <= k; n++ {
			a[n] = make([]float64, g.n)
			cdf := part(n)
			for i := range a[n] {
				a[n][i] = groupOK(cdf, i)
			}
		}
		phaseCDF := multinomialProduct(a, r, g.n)
		law = convolve(law, differences(phaseCDF))
	}
	return RequestPrediction{Step: g.h, CDF: cumulative(law)}, nil
}

// batchGroups is the request law on r > 1 groups of d duplicates when
// requests arrive in batches of B (with one server per group and two
// phases, batchServers's; with duplicates and two phases, the accurate
// predictor's is batchBarrierFor; here three phases or more), and
// the thesis's for duplicates with three phases or more arriving alone
// (the accurate predictor's is groupChain). At every group, a request's
// last-phase accesses come after all of the batch's earlier
// phases (the first phases arrived at the batch's instant, a later phase
// when the phase before it ended, which for the batch's other requests was
// before the request's own next phase began) and after the last phases of
// the batch's earlier requests. A group that holds n of the request's
// last-phase accesses is taken to serve all that work back to back after
// the wait it found: its part ends when its first duplicate is done with
// the wait, that work and the n accesses. The request ends with its
// slowest such group, over the multinomial split of its last phase, each
// group's share of the other work binomial, averaged over the request's
// place j in its batch. The wait is the M/G/1 workload of whole batches'
// shares of a group (thesis: its mean, as given). Left out: a group that
// idles before the request's last phase reaches it (the request's earlier
// phase ended later on another group), and other batches arriving while
// the batch runs. A request also ends no sooner than its phases would
// alone (batchEarlierPhases).
func (g grid) batchGroups(sys System, phases []int, sums [][]float64, wait []float64, thesis bool, rho float64, r, d int) []float64 {
	B, P := sys.Request.batch(), len(phases)
	p := 1 / float64(r)
	if !thesis {
		whole := g.countsOfSums(binomial(B*sys.Request.Accesses(), p), sums)
		wait = g.waitingPMF(g.lumpEquilibrium(whole, float64(B*sys.Request.Accesses())*p*sys.Service.Mean()), rho)
	}
	waits := []weightedLaw{{1, wait}}
	if !thesis {
		waits = g.idleOrBusy(wait, g.pmf(sys.net()))
	}
	// first(c): the group's first duplicate is done with its wait and c
	// accesses, the group idle or busy alike for all its duplicates.
	firsts := map[int][]float64{}
	first := func(c int) []float64 {
		if v, ok := firsts[c]; ok {
			return v
		}
		v := make([]float64, g.n)
		for _, w := range waits {
			cdf := cumulative(convolve(w.pmf, sums[c]))
			for i := range v {
				v[i] += w.w * (1 - ipow(1-cdf[i], d))
			}
		}
		firsts[c] = v
		return v
	}
	before := 0 // the batch's accesses of every phase but the last
	for _, k := range phases[:P-1] {
		before += B * k
	}
	last := phases[P-1]
	law := make([]float64, g.n)
	for j := 1; j <= B; j++ {
		other := binomial(before+(j-1)*last, p)
		a := make([][]float64, last+1)
		a[0] = onesLike(g.n)
		for n := 1; n <= last; n++ {
			a[n] = make([]float64, g.n)
			for m, w := range other {
				if w < 1e-12 {
					continue
				}
				done := first(m + n)
				for i := range a[n] {
					a[n][i] += w * done[i]
				}
			}
		}
		alone := g.batchEarlierPhases(phases, sums, first, j, r, d)
		behind := onesLike(g.n) // one phase: its work behind is alone's
		if P > 1 {
			behind = multinomialProduct(a, r, g.n)
		}
		for i, v := range behind {
			law[i] += v * alone[i] / float64(B)
		}
	}
	return law
}

// idleOrBusy splits a duplicate's wait law (before the network delay net)
// into the group's two shared states: idle (no wait at any duplicate, the
// mass of cell 0) and busy (the wait's law given it is not 0), each then
// with the network delay, and weighted by its chance.
func (g grid) idleOrBusy(wait, net []float64) []weightedLaw {
	idle := make([]float64, g.n)
	idle[0] = 1
	if wait[0] >= 1-1e-12 {
		return []weightedLaw{{1, net}}
	}
	busy := make([]float64, g.n)
	for i := 1; i < g.n; i++ {
		busy[i] = wait[i] / (1 - wait[0])
	}
	return []weightedLaw{{wait[0], convolve(idle, net)}, {1 - wait[0], convolve(busy, net)}}
}

// batchEarlierPhases is the law of a request's end when no group holds
// other work when its later phases reach it: its first phase behind the
// batch's earlier requests' first phases (request j of its batch), each
// later phase's accesses alone on their groups. The request ends after both
// this and batchGroups's back-to-back work; the two are taken as independent,
// which, since both grow with the same waits, puts the request's SLA a
// little low where both bind.
func (g grid) batchEarlierPhases(phases []int, sums [][]float64, first func(int) []float64, j, r, d int) []float64 {
	p := 1 / float64(r)
	law := make([]float64, g.n)
	law[0] = 1
	for ph, k := range phases {
		a := make([][]float64, k+1)
		a[0] = onesLike(g.n)
		for n := 1; n <= k; n++ {
			a[n] = make([]float64, g.n)
			if ph > 0 {
				cdf := cumulative(sums[n])
				for i := range a[n] {
					a[n][i] = 1 - ipow(1-cdf[i], d)
				}
				continue
			}
			for m, w := range binomial((j-1)*k, p) {
				if w < 1e-12 {
					continue
				}
				done := first(n + m)
				for i := range a[n] {
					a[n][i] += w * done[i]
				}
			}
		}
		law = convolve(law, differences(multinomialProduct(a, r, g.n)))
	}
	return cumulative(law)
}

// withArrivals is the law of Y + A(Y), A(w) the work that lumps arriving
// at rate at a duplicate bring in a window of w (compound Poisson), for Y
// given on the grid.
func (g grid) withArrivals(y []float64, rate float64, lump []float64) []float64 {
	// Y + A(Y) is, over the count n of lumps, the law of Y weighed by
	// the chance of n arrivals within it, convolved with n lumps' work.
	out := make([]float64, g.n)
	power := make([]float64, g.n) // n lumps' work
	power[0] = 1
	part := make([]float64, g.n)
	for n := range g.arrivalsReach(rate) + 1 {
		if n > 0 {
			power = convolve(power, lump)
		}
		for i, c := range g.arrivalChances(rate, n) {
			part[i] = y[i] * c
		}
		for z, v := range convolve(part, power) {
			out[z] += v
		}
	}
	return out
}

// arrivalsReach is how many arrivals at rate withArrivals counts: enough
// that more are rarer than 1e-12 over the whole grid (at most 256).
func (g grid) arrivalsReach(rate float64) int {
	mean := rate * float64(g.n) * g.h
	if mean == 0 {
		return 0
	}
	most := 1
	for most < 256 && poissonAbove(mean, most) > 1e-12 {
		most++
	}
	return most
}

// arrivalChances is, at each cell, the chance of exactly n arrivals at
// rate within that cell's time.
func (g grid) arrivalChances(rate float64, n int) []float64 {
	out := make([]float64, g.n)
	for i := range out {
		mean := rate * float64(i) * g.h
		switch {
		case mean > 0:
			out[i] = distuv.Poisson{Lambda: mean}.Prob(float64(n))
		case n == 0: // no time, so surely no arrival
			out[i] = 1
		}
	}
	return out
}

func lgammaInt(n int) float64 {
	v, _ := math.Lgamma(float64(n))
	return v
}

// countMean is the mean number of accesses one instant brings.
func countMean(countLaw []float64) float64 {
	m := 0.0
	for c, w := range countLaw {
		m += float64(c) * w
	}
	return m
}

// lumpWaitMean is the M/G/1 mean wait of lumps of service times
// (Pollaczek-Khinchine: rho E[X^2] / (2 E[X])).
func lumpWaitMean(countLaw []float64, svc Distribution, rho float64) float64 {
	m, v := svc.Mean(), svc.SecondMoment()-svc.Mean()*svc.Mean()
	var ex, ex2 float64
	for c, w := range countLaw {
		n := float64(c)
		ex += w * n * m
		ex2 += w * (n*v + n*n*m*m)
	}
	return rho * ex2 / (2 * ex * (1 - rho))
}

// lumpEquilibrium is the stationary-excess law of a lump given as a pmf on
// the grid (its mean given exactly): CDF E[min(X, x)]/E[X], differenced at
// cell edges. Mass of the lump beyond the grid counts as beyond every x.
// The lump's grid values (cell i at i*h) miss its exact mean by the
// rounding, which would leave the law short of 1 by as much: a lump of
// accesses that take less than half a cell (50 µs on a 200 µs cell) put
// all its mass in cell 0, the law was empty, and the waits of a busy
// server vanished from the request's law (2-3% of it at 2% load). So the
// law is rescaled to 1, or put at 0 when the lump is.
func (g grid) lumpEquilibrium(lump []float64, mean float64) []float64 {
	// E[min(X, x)] at the cell edge x = (i+0.5)h: sum over cells below it of
	// their value, plus x times the mass at or above it.
	out := make([]float64, g.n)
	below, massBelow, prev := 0.0, 0.0, 0.0
	for i := range out {
		below += lump[i] * float64(i) * g.h
		massBelow += lump[i]
		x := (float64(i) + 0.5) * g.h
		cur := below + x*math.Max(0, 1-massBelow)
		out[i] = math.Max(0, cur-prev) / mean
		prev = cur
	}
	total := 0.0
	for _, v := range out {
		total += v
	}
	if total <= 0 {
		out[0] = 1
		return out
	}
	inGrid := 0.0 // the lump's mass on the grid: beyond it, it stays beyond
	for _, v := range lump {
		inGrid += v
	}
	if inGrid >= 1-1e-9 {
		for i := range out {
			out[i] /= total
		}
	}
	return out
}

// multinomialProduct is E[prod over r groups of a[n_g]] with (n_g) the
// multinomial split of k = len(a)-1 accesses over r equally likely groups,
// at every cell: k!/r^k times the z^k coefficient of (sum_n a_n z^n/n!)^r,
// the power taken by squaring, with z scaled by k/r so that no
// coefficient overflows or underflows (all are >= 0: nothing cancels).
func multinomialProduct(a [][]float64, r, cells int) []float64 {
	return multinomialProductMarked(nil, a, r, 0, cells)
}

// multinomialProductMarked is multinomialProduct at cells from..cells-1
// (the others left 0) with one group, when marked is not nil, taking
// marked[n] in place of a[n]: E[marked[n_1] prod over the other r-1
// groups of a[n_g]].
func multinomialProductMarked(marked, a [][]float64, r, from, cells int) []float64 {
	k := len(a) - 1
	out := make([]float64, cells)
	scale := make([]float64, k+1) // (k/r)^n / n!
	for n := range scale {
		lg, _ := math.Lgamma(float64(n + 1))
		scale[n] = math.Exp(float64(n)*math.Log(float64(k)/float64(r)) - lg)
	}
	lgk, _ := math.Lgamma(float64(k + 1))
	norm := math.Exp(lgk - float64(k)*math.Log(float64(k)))
	base := make([]float64, k+1)
	mark := make([]float64, k+1)
	for i := from; i < cells; i++ {
		for n := range base {
			base[n] = a[n][i] * scale[n]
		}
		if marked == nil {
			out[i] = clamp01(polyPow(base, r)[k] * norm)
			continue
		}
		for n := range mark {
			mark[n] = marked[n][i] * scale[n]
		}
		out[i] = clamp01(topCoefficient(mark, polyPow(base, r-1)) * norm)
	}
	return out
}

// topCoefficient is the last coefficient of a*b (both of one length):
// what polyMul(a, b) would give there, without the others.
func topCoefficient(a, b []float64) float64 {
	k, sum := len(a)-1, 0.0
	for i, x := range a {
		sum += x * b[k-i]
	}
	return sum
}

// polyPow is p^e truncated to len(p) coefficients.
func polyPow(p []float64, e int) []float64 {
	res := make([]float64, len(p))
	res[0] = 1
	sq := append([]float64(nil), p...)
	for e > 0 {
		if e&1 == 1 {
			res = polyMul(res, sq)
		}
		if e >>= 1; e > 0 {
			sq = polyMul(sq, sq)
		}
	}
	return res
}

func polyMul(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i, x := range a {
		if x == 0 {
			continue
		}
		for j := 0; i+j < len(out); j++ {
			out[i+j] += x * b[j]
		}
	}
	return out
}

// binomial is the law of Binomial(n, p).
func binomial(n int, p float64) []float64 {
	out := make([]float64, n+1)
	if p >= 1 {
		out[n] = 1
		return out
	}
	lp, lq := math.Log(p), math.Log1p(-p)
	for k := range out {
		out[k] = math.Exp(lchoose(n, k) + float64(k)*lp + float64(n-k)*lq)
	}
	return out
}

func cumulative(pmf []float64) []float64 {
	out := make([]float64, len(pmf))
	acc := 0.0
	for i, v := range pmf {
		acc += v
		out[i] = math.Min(1, acc)
	}
	return out
}

func differences(cdf []float64) []float64 {
	out := make([]float64, len(cdf))
	prev := 0.0
	for i, v := range cdf {
		out[i] = math.Max(0, v-prev)
		prev = math.Max(prev, v)
	}
	return out
}

func onesLike(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

// Package limplock computes the HDFS limplock probabilities of the Limplock
// paper (SoCC'13, §5.2, Table 2) and checks each against a Monte Carlo
// simulation of HDFS-style random 3-way placement and regeneration.
//
// Assumptions, as the table implies them:
//   - n datanodes, one of them with a limping (slow) NIC; 3 replicas per block
//     on distinct nodes chosen uniformly at random.
//   - A read goes to one replica chosen at random, so it touches the slow node
//     with probability 1/n; a write pipelines through all 3 replicas (3/n).
//     A user making r requests of one kind sees at least one limplock with
//     P_rl = 1-((n-1)/n)^r or P_wl = 1-((n-3)/n)^r.
//   - Regeneration: one other node dies, leaving b blocks with 2 surviving
//     replicas each. For every block the master picks one surviving replica
//     as the source and a destination among the live nodes that do not hold
//     it. A transfer to the slow node never finishes. A node has two
//     regeneration threads, so it is in regeneration limplock once at least
//     two of the blocks it sources go to the slow node.
//   - The table's P_nl takes each of the n-2 healthy live nodes to source
//     exactly b/(n-1) blocks and to pick the slow destination with
//     probability 1/(n-2), and treats the nodes as independent (P_cl and
//     p_nl(i)). The simulation draws the placement and choices instead, so
//     the two differ where those shortcuts matter (small n, small b).
//   - A block is in limplock when no surviving replica sits on a usable
//     source: both on limplocked nodes, or one on the slow node and the
//     other on a limplocked node.
package limplock

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Formulas are Table 2's probabilities for n nodes, b blocks, r requests.
type Formulas struct {
	N      int     `json:"nodes"`
	B      int     `json:"blocks"`
	R      int     `json:"requests"`
	PRL    float64 `json:"p_rl"` // a user sees >= 1 read limplock
	PWL    float64 `json:"p_wl"` // a user sees >= 1 write limplock
	PNL    float64 `json:"p_nl"` // a node is in regeneration limplock
	PCL    float64 `json:"p_cl"` // the cluster is in regeneration limplock
	PBlock float64 `json:"p_bl_block"`
	PBL    float64 `json:"p_bl"` // >= 1 block in limplock
}

// The largest inputs: the simulation holds a counter per node and a
// replica pair per block, and spends nodes + blocks steps a trial.
const (
	MaxNodes  = 1 << 20
	MaxBlocks = 1 << 20
	MaxTrials = 1 << 30
)

// InputError is an input outside its valid range; Input names it (nodes,
// blocks, requests, trials) so that a command can name its own flag.
type InputError struct {
	Input  string
	Value  int
	Reason string
}

func (e *InputError) Error() string { return fmt.Sprintf("%s %d: %s", e.Input, e.Value, e.Reason) }

// Validate checks n, b and r.
func Validate(n, b, r int) error {
	if n < 4 || n > MaxNodes {
		return &InputError{"nodes", n, fmt.Sprintf("want 4 (3 replicas plus a dead node) to %d", MaxNodes)}
	}
	if b < 1 || b > MaxBlocks {
		return &InputError{"blocks", b, fmt.Sprintf("want 1 to %d", MaxBlocks)}
	}
	if r < 0 {
		return &InputError{"requests", r, "want 0 or more"}
	}
	return nil
}

func validateTrials(trials int) error {
	if trials < 2 || trials > MaxTrials {
		return &InputError{"trials", trials, fmt.Sprintf("want 2 to %d", MaxTrials)}
	}
	return nil
}

// Progress is told, now and then, what runs and the share of the work done.
type Progress func(what string, done float64)

// Table2 evaluates the formulas.
func Table2(n, b, r int) (Formulas, error) {
	if err := Validate(n, b, r); err != nil {
		return Formulas{}, err
	}
	nf, bf, rf := float64(n), float64(b), float64(r)
	f := Formulas{N: n, B: b, R: r}
	f.PRL = 1 - math.Pow((nf-1)/nf, rf)
	f.PWL = 1 - math.Pow((nf-3)/nf, rf)
	q := (nf - 3) / (nf - 2)
	f.PNL = 1 - math.Pow(q, bf/(nf-1)) - bf/((nf-1)*(nf-2))*math.Pow(q, (bf-nf+1)/(nf-1))
	f.PNL = math.Max(0, math.Min(1, f.PNL))
	f.PCL = math.Pow(f.PNL, nf-2)
	pairs := (nf - 1) * (nf - 2) / 2
	for i := 1; i <= n-2; i++ {
		pi := PNLi(n, i, f.PNL)
		if i >= 2 {
			f.PBlock += pi * float64(i) * float64(i-1) / 2 / pairs
		}
		f.PBlock += pi * float64(i) / pairs
	}
	f.PBL = 1 - math.Pow(1-f.PBlock, bf)
	return f, nil
}

// PNLi is p_nl(i): exactly i of the n-2 healthy nodes in limplock.
func PNLi(n, i int, pnl float64) float64 {
	m := n - 2
	switch {
	case pnl <= 0:
		return b2f(i == 0)
	case pnl >= 1:
		return b2f(i == m)
	}
	// In logarithms: from about 1000 nodes C(m, i) overflows a float64
	// while the power it multiplies underflows, and the product was NaN.
	lc, _ := math.Lgamma(float64(m + 1))
	la, _ := math.Lgamma(float64(i + 1))
	lb, _ := math.Lgamma(float64(m - i + 1))
	return math.Exp(lc - la - lb + float64(i)*math.Log(pnl) + float64(m-i)*math.Log1p(-pnl))
}

// Estimate is the Monte Carlo counterpart of Formulas, with standard errors.
type Estimate struct {
	Trials   int     `json:"trials"`
	PRL      float64 `json:"p_rl"`
	PWL      float64 `json:"p_wl"`
	PNL      float64 `json:"p_nl"`
	PCL      float64 `json:"p_cl"`
	PBlock   float64 `json:"p_bl_block"`
	PBL      float64 `json:"p_bl"`
	SEPRL    float64 `json:"se_p_rl"`
	SEPWL    float64 `json:"se_p_wl"`
	SEPNL    float64 `json:"se_p_nl"`
	SEPCL    float64 `json:"se_p_cl"`
	SEPBlock float64 `json:"se_p_bl_block"`
	SEPBL    float64 `json:"se_p_bl"`
}

// Simulate runs trials independent placements of HDFS-style random 3-way
// replication with one slow node, as described in the package comment.
func Simulate(n, b, r, trials int, seed uint64) (Estimate, error) {
	return simulate(n, b, r, trials, seed, nil)
}

// simulate is Simulate, telling tick (when set) how many trials are done,
// every million or so steps.
func simulate(n, b, r, trials int, seed uint64, tick func(done int)) (Estimate, error) {
	if err := Validate(n, b, r); err != nil {
		return Estimate{}, err
	}
	if err := validateTrials(trials); err != nil {
		return Estimate{}, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x5bd1e995))
	const slow, dead = 0, 1
	var acc [6]stat
	stuck := make([]int, n)
	holders := make([][2]int, b)
	every := max(1, (1<<20)/(b+n))
	for t := 0; t < trials; t++ {
		if tick != nil && t%every == 0 {
			tick(t)
		}
		// Operations: each request picks fresh random placements.
		readHit, writeHit := 0.0, 0.0
		for k := 0; k < r && (readHit == 0 || writeHit == 0); k++ {
			a, bb, c := three(rng, n)
			if []int{a, bb, c}[rng.IntN(3)] == slow {
				readHit = 1
			}
			if a == slow || bb == slow || c == slow {
				writeHit = 1
			}
		}
		acc[0].add(readHit)
		acc[1].add(writeHit)
		// Regeneration after the dead node: b blocks that had a replica on it.
		clear(stuck)
		for k := range holders {
			x, y := two(rng, n, dead)
			holders[k] = [2]int{x, y}
			src := x
			if rng.IntN(2) == 1 {
				src = y
			}
			dst := dest(rng, n, dead, x, y)
			if dst == slow {
				stuck[src]++
			}
		}
		limp := func(v int) bool { return v == slow || stuck[v] >= 2 }
		healthy, locked := 0, 0
		for v := 0; v < n; v++ {
			if v == slow || v == dead {
				continue
			}
			healthy++
			if stuck[v] >= 2 {
				locked++
			}
		}
		acc[2].add(float64(locked) / float64(healthy))
		acc[3].add(b2f(locked == healthy))
		blocked := 0
		for _, h := range holders {
			if limp(h[0]) && limp(h[1]) {
				blocked++
			}
		}
		acc[4].add(float64(blocked) / float64(b))
		acc[5].add(b2f(blocked > 0))
	}
	e := Estimate{Trials: trials}
	e.PRL, e.SEPRL = acc[0].result()
	e.PWL, e.SEPWL = acc[1].result()
	e.PNL, e.SEPNL = acc[2].result()
	e.PCL, e.SEPCL = acc[3].result()
	e.PBlock, e.SEPBlock = acc[4].result()
	e.PBL, e.SEPBL = acc[5].result()
	return e, nil
}

// three picks 3 distinct nodes out of n.
func three(r *rand.Rand, n int) (int, int, int) {
	a := r.IntN(n)
	b := r.IntN(n - 1)
	if b >= a {
		b++
	}
	c := r.IntN(n)
	for c == a || c == b {
		c = r.IntN(n)
	}
	return a, b, c
}

// two picks 2 distinct nodes out of n, neither of them skip.
func two(r *rand.Rand, n, skip int) (int, int) {
	x := r.IntN(n)
	for x == skip {
		x = r.IntN(n)
	}
	y := r.IntN(n)
	for y == skip || y == x {
		y = r.IntN(n)
	}
	return x, y
}

// dest picks a live node that holds no replica of the block.
func dest(r *rand.Rand, n, dead, x, y int) int {
	for {
		d := r.IntN(n)
		if d != dead && d != x && d != y {
			return d
		}
	}
}

type stat struct{ n, sum, sum2 float64 }

func (s *stat) add(v float64) { s.n++; s.sum += v; s.sum2 += v * v }
func (s *stat) result() (mean, se float64) {
	mean = s.sum / s.n
	v := math.Max(0, s.sum2/s.n-mean*mean)
	return mean, math.Sqrt(v / (s.n - 1))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

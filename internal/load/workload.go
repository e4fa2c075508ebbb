package load

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Workload is what the requests do: an operation mix over a key space with a
// value size.
type Workload struct {
	Mix       Mix
	Keys      int // keys are "key:0" .. "key:<Keys-1>"
	KeyDist   KeyDist
	ValueSize int // bytes of every written value
}

// Mix is a weighted choice of operations.
type Mix []MixEntry

// MixEntry is one operation of a mix; Kind indexes the system's operation names.
type MixEntry struct {
	Kind   uint8
	Name   string
	Weight int
}

func (m Mix) String() string {
	parts := make([]string, len(m))
	for i, e := range m {
		parts[i] = e.Name + ":" + strconv.Itoa(e.Weight)
	}
	return strings.Join(parts, ",")
}

// KeyDist is how keys are chosen: uniformly, or by a Zipf law where key:0 is
// the most popular and key k is drawn with probability proportional to
// (1+k)^-S.
type KeyDist struct {
	Zipf bool
	S    float64 // Zipf exponent, > 1
}

// DefaultZipfS is the Zipf exponent when none is given: as skewed as the
// YCSB default (0.99) gets with an exponent Go's generator accepts.
const DefaultZipfS = 1.01

func (d KeyDist) String() string {
	if d.Zipf {
		return "zipf:" + strconv.FormatFloat(d.S, 'g', -1, 64)
	}
	return "uniform"
}

func (w Workload) validate() error {
	if len(w.Mix) == 0 {
		return errors.New("load: the operation mix is empty")
	}
	for _, e := range w.Mix {
		if e.Weight <= 0 {
			return fmt.Errorf("load: mix weight of %s must be positive, got %d", e.Name, e.Weight)
		}
	}
	if w.Keys <= 0 {
		return fmt.Errorf("load: keys must be positive, got %d", w.Keys)
	}
	if w.ValueSize < 0 {
		return fmt.Errorf("load: value size must not be negative, got %d", w.ValueSize)
	}
	if w.KeyDist.Zipf && !(w.KeyDist.S > 1) {
		return fmt.Errorf("load: zipf exponent must be > 1, got %g", w.KeyDist.S)
	}
	return nil
}

// value is the payload every write carries: random bytes, so a system that
// compresses gains nothing.
func (w Workload) value(seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	v := make([]byte, w.ValueSize)
	for i := range v {
		v[i] = byte(rng.Uint32())
	}
	return v
}

// generator draws the ops of one worker.
type generator struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	mix   Mix
	total int
	keys  int
	value []byte
	key   []byte
}

func (w Workload) generator(seed uint64, worker int, value []byte) *generator {
	// Stream 2+worker keeps workers apart from each other and from the
	// value and arrival streams.
	rng := rand.New(rand.NewPCG(seed, uint64(worker)+2))
	g := &generator{rng: rng, mix: w.Mix, keys: w.Keys, value: value}
	for _, e := range w.Mix {
		g.total += e.Weight
	}
	if w.KeyDist.Zipf {
		g.zipf = rand.NewZipf(rng, w.KeyDist.S, 1, uint64(w.Keys-1))
	}
	return g
}

func (g *generator) next() Op {
	pick := g.rng.IntN(g.total)
	kind := g.mix[len(g.mix)-1].Kind
	for _, e := range g.mix {
		if pick < e.Weight {
			kind = e.Kind
			break
		}
		pick -= e.Weight
	}
	var k uint64
	if g.zipf != nil {
		k = g.zipf.Uint64()
	} else {
		k = uint64(g.rng.IntN(g.keys))
	}
	g.key = strconv.AppendUint(append(g.key[:0], "key:"...), k, 10)
	return Op{Kind: kind, Key: string(g.key), Value: g.value}
}

// Key is the name of key number k of a workload.
func Key(k int) string { return "key:" + strconv.Itoa(k) }

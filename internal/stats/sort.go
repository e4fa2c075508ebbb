package stats

import (
	"math"
	"math/bits"
	"slices"
)

// negativeZero is the bit pattern of -0.
const negativeZero = 1 << 63

const (
	// smallSort is the length below which the fixed cost of the count
	// tables outweighs the radix sort's linear scaling.
	smallSort = 2048
	// tinyBucket is the bucket length below which slices.Sort beats radix
	// passes that each clear and scan a 2^11-entry count table.
	tinyBucket = 256
	// msdBits is the width of the first, most significant digit. 2^12
	// buckets split 10^7 latencies into pieces that fit the L2 cache, where
	// the remaining passes run several times faster than over memory.
	msdBits = 12
	// lsdDigit bounds the width of the least significant digits: wider
	// digits need fewer passes but scatter to more places at once, and
	// 2^11 write positions still stream through the cache.
	lsdDigit = 11
)

// SortLatencies sorts xs in ascending order in place.
//
// Every element must be a non-negative number (+0, -0, +Inf allowed; NaN and
// negative values are a caller error and end up in an unspecified order).
// -0 is rewritten to +0 so that it does not sort after every other value.
//
// Non-negative IEEE-754 doubles order exactly like their bit patterns read as
// uint64, so a radix sort over those bits sorts them in O(n). Only the low bits
// in which the keys differ are sorted (latencies spanning a few orders of
// magnitude share their top bits). One most-significant-digit pass splits
// the data into 4096 buckets; each bucket, now small enough to stay in cache,
// is finished by least-significant-digit passes. It allocates one scratch
// buffer of len(xs) float64s.
func SortLatencies(xs []float64) {
	if len(xs) < smallSort {
		// slices.Sort already treats -0 and +0 as equal.
		slices.Sort(xs)
		return
	}
	sig := bits.Len64(normalize(xs))
	if sig == 0 {
		return // all equal
	}
	scratch := make([]float64, len(xs))
	var counts [1 << lsdDigit]int
	if sig <= msdBits+lsdDigit {
		lsdInto(xs, scratch, xs, sig, &counts)
		return
	}
	shift := uint(sig - msdBits)
	var starts [1 << msdBits]int
	for _, x := range xs {
		starts[math.Float64bits(x)>>shift&(1<<msdBits-1)]++
	}
	offset := 0
	for d, n := range starts {
		starts[d] = offset
		offset += n
	}
	next := starts
	for _, x := range xs {
		d := math.Float64bits(x) >> shift & (1<<msdBits - 1)
		scratch[next[d]] = x
		next[d]++
	}
	for d, lo := range starts {
		hi := next[d]
		if hi-lo < tinyBucket {
			copy(xs[lo:hi], scratch[lo:hi])
			slices.Sort(xs[lo:hi])
			continue
		}
		lsdInto(scratch[lo:hi], xs[lo:hi], xs[lo:hi], int(shift), &counts)
	}
}

// normalize rewrites -0 to +0 and returns the OR of every key XOR the first:
// its bit length is the number of low bits in which the keys differ.
func normalize(xs []float64) uint64 {
	first := math.Float64bits(xs[0]) &^ negativeZero
	var differ uint64
	for i, x := range xs {
		k := math.Float64bits(x)
		if k == negativeZero {
			xs[i], k = 0, 0
		}
		differ |= k ^ first
	}
	return differ
}

// lsdInto sorts a by its low sig key bits with least-significant-digit radix
// passes, using b (same length) as the other buffer, and leaves the result in
// out, which is a or b. counts is a reusable count table. Each pass counts
// its own digit: a is usually a cache-resident bucket, where the extra read
// costs less than counting every digit in one pass.
func lsdInto(a, b, out []float64, sig int, counts *[1 << lsdDigit]int) {
	passes := (sig + lsdDigit - 1) / lsdDigit
	width := uint((sig + passes - 1) / passes)
	buckets := 1 << width
	c := counts[:buckets]
	mask := uint64(buckets - 1)
	src, dst := a, b
	for p := range passes {
		shift := uint(p) * width
		clear(c)
		for _, x := range src {
			c[math.Float64bits(x)>>shift&mask]++
		}
		if c[math.Float64bits(src[0])>>shift&mask] == len(src) {
			continue // every key has the same digit here
		}
		offset := 0
		for d, n := range c {
			c[d] = offset
			offset += n
		}
		for _, x := range src {
			d := math.Float64bits(x) >> shift & mask
			dst[c[d]] = x
			c[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &out[0] {
		copy(out, src)
	}
}

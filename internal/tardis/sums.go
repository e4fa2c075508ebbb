package tardis

import (
	"encoding/binary"
	"hash/crc32"
	"sync"
)

// Checksum runs. Storage systems keep, beside their data, checksums of it:
// an HDFS DataNode writes, for a block file, a .meta file holding one
// 4-byte big-endian CRC32C (or CRC32) per 512-byte chunk of the block. When
// the block holds the stream, those checksums are a function of the stream
// too, but nothing in them says which seed and offset: a storage layer can
// only recognise them by having seen the data. A SumIndex remembers a
// sample of the checksums of stream data recently written through the
// Files that share it; a File with an index recognises, in the bytes it
// would keep literal, runs of 4-byte words that are the checksums of
// consecutive chunks of the stream, and keeps them as one extent
// (seed, Checksum{Alg, Chunk, Phase}, offset, length) whose bytes are
// regenerated on read.

// Alg is a checksum algorithm a checksum extent is made of.
type Alg uint8

const (
	// CRC32C is CRC-32 with the Castagnoli polynomial (HDFS's default,
	// dfs.checksum.type=CRC32C).
	CRC32C Alg = 1
	// CRC32 is CRC-32 with the IEEE polynomial (HDFS's type CRC32).
	CRC32 Alg = 2
)

var sumTables = [...]*crc32.Table{CRC32C: crc32.MakeTable(crc32.Castagnoli), CRC32: crc32.IEEETable}

const (
	// MinChunk and MaxChunk bound a checksum extent's chunk size (a power
	// of two).
	MinChunk = 512
	MaxChunk = 64 << 10
)

// Checksum says what a synthetic extent's bytes are. Its zero value: the
// stream itself. Otherwise the extent's "stream" is the sequence of
// big-endian 4-byte Alg checksums of the chunks of the seed's stream, chunk
// i covering stream bytes [Phase + i*Chunk, Phase + (i+1)*Chunk); the
// extent's Offset is a byte offset in that sequence (4 per chunk).
type Checksum struct {
	Alg   Alg
	Chunk uint32 // a power of two, MinChunk to MaxChunk
	Phase uint32 // < Chunk
}

// generateSource fills buf with the bytes of the source (seed, sum) from
// offset off.
func generateSource(seed uint64, sum Checksum, off uint64, buf []byte) {
	if sum.Alg == 0 {
		Generate(seed, off, buf)
		return
	}
	var word [4]byte
	for w := off / 4; len(buf) > 0; w++ {
		binary.BigEndian.PutUint32(word[:], chunkSum(seed, sum, w))
		n := copy(buf, word[off%4:])
		buf = buf[n:]
		off = 0
	}
}

// chunkSum is the checksum of chunk i of the stream under sum.
func chunkSum(seed uint64, sum Checksum, i uint64) uint32 {
	return streamSum(seed, uint64(sum.Phase)+i*uint64(sum.Chunk), int(sum.Chunk), sum.Alg)
}

// scratch holds the stream bytes streamSum checksums: a buffer on the
// stack would escape (crc32 hands it to assembly), one allocation per
// checksum word.
var scratch = sync.Pool{New: func() any { return new([1024]byte) }}

// streamSum is the checksum of n stream bytes from off.
func streamSum(seed, off uint64, n int, alg Alg) uint32 {
	tmp := scratch.Get().(*[1024]byte)
	defer scratch.Put(tmp)
	var c uint32
	for n > 0 {
		k := min(n, len(tmp))
		Generate(seed, off, tmp[:k])
		c = crc32.Update(c, sumTables[alg], tmp[:k])
		off += uint64(k)
		n -= k
	}
	return c
}

// Sampling and bounds of a SumIndex: see NewSumIndex.
const (
	sumSample    = 16      // one chunk in sumSample is indexed
	sumFilterLog = 22      // the filter has 2^sumFilterLog bits (512 KiB)
	sumMaxChunks = 1 << 17 // default bound on indexed chunks
	// sumMinRun is the shortest checksum run anchored on its own: one
	// word is found in 4 random bytes once in 2^32/len(index) tries (an
	// exact but useless match, an extent to save 4 bytes); two in a row,
	// practically never.
	sumMinRun = 8
)

// SumIndex is a bounded memory of the checksums of stream data written
// recently: a sample of the chunks of the synthetic extents written
// through the Files that share it, keyed by checksum. It is safe for
// concurrent use by Files written from several goroutines.
//
// It is its own hash table rather than a Go map: at its bound a map of
// it outgrows the caches, and its probes were most of what indexing
// the stream cost (a quarter of an emulating mount's CPU). Entries live
// in a ring in insertion order (the oldest is the next evicted); the
// table, twice the bound, holds keys and their ring positions, probed
// linearly without touching the ring.
type SumIndex struct {
	mu     sync.Mutex
	chunks []uint32 // chunk sizes indexed
	max    int
	ring   []sumEntry // in insertion order from head, at most max
	head   int
	table  []sumSlot
	// filter is a Bloom filter (two bits per key) of the keys, in which
	// almost every foreign word misses; evicted keys stay in it until
	// evicted reaches max and it is rebuilt.
	filter  []uint64
	evicted int
	learnt  uint64 // keys ever put (see Learnt)
	// pending are the sampled chunks of writes not checksummed yet,
	// oldest first, pendingKeys the keys they will put: a write only
	// notes its chunks, and they are checksummed (generated again) when
	// the index is looked in, so that writing the stream costs no CRC
	// and a mount that never sees a checksum file never computes one.
	// Chunks a later write would evict before any lookup are dropped
	// unchecksummed.
	pending     []sumRun
	pendingKeys int
}

// sumRun is n chunks of size bytes of a seed's stream, step apart from
// stream offset off: the sampled chunks one write of the stream covers.
type sumRun struct {
	seed, off, step uint64
	n               int
	size            uint32
}

// sumSlot is a table slot: a key and its entry's ring position + 1 (0:
// the slot is empty).
type sumSlot struct {
	key uint32
	pos int32
}

type sumEntry struct {
	key  uint32 // the checksum
	size uint32
	seed uint64
	off  uint64 // stream offset of the chunk
	alg  Alg
}

// NewSumIndex returns an index of the CRC32C and CRC32 checksums of the
// given chunk sizes (powers of two from MinChunk to MaxChunk; none means
// 512, HDFS's default) of synthetic data written through Files using it.
//
// Of the chunks a write of the stream covers (chunk k covers file bytes
// [k*size, (k+1)*size), as a system checksumming the file from its start
// cuts them), those with k a multiple of 16 are indexed, so a run of 16
// or more checksum words always holds an indexed one; the run is then
// found whole by comparing every word with the regenerated checksum, and
// a File extends it with later writes that continue it, indexed or not.
// A write only notes which chunks it covers; they are generated again
// and checksummed when the index is next looked in (a literal write, Len),
// which costs the generation and a CRC of 1/16 of the synthetic bytes
// written, per algorithm and chunk size, and nothing for the stream
// written while no checksum file is.
//
// The index holds at most maxChunks entries (0 means 131,072: 6.9 MB
// of heap measured, the filter included, covering the last 512 MiB of 512-byte-chunked data
// written, a 128 MiB HDFS block for each of 4 writers at once) and
// forgets the oldest past that; the checksums of data written longer
// ago than that are not recognised and stay literal bytes, stored as they
// are: nothing is lost, only not compressed.
func NewSumIndex(maxChunks int, chunkSizes ...int) *SumIndex {
	if maxChunks <= 0 {
		maxChunks = sumMaxChunks
	}
	x := &SumIndex{max: maxChunks, filter: make([]uint64, 1<<sumFilterLog/64)}
	x.table = make([]sumSlot, 2)
	if len(chunkSizes) == 0 {
		chunkSizes = []int{MinChunk}
	}
	for _, c := range chunkSizes {
		if c < MinChunk || c > MaxChunk || c&(c-1) != 0 {
			panic("tardis: NewSumIndex: chunk size not a power of two from 512 to 64 KiB")
		}
		x.chunks = append(x.chunks, uint32(c))
	}
	return x
}

func sumHashes(w uint32) (uint32, uint32) {
	return w * 0x9e3779b1 >> (32 - sumFilterLog), w * 0x85ebca6b >> (32 - sumFilterLog)
}

func (x *SumIndex) setFilter(w uint32) {
	a, b := sumHashes(w)
	x.filter[a/64] |= 1 << (a % 64)
	x.filter[b/64] |= 1 << (b % 64)
}

func (x *SumIndex) inFilter(w uint32) bool {
	a, b := sumHashes(w)
	return x.filter[a/64]&(1<<(a%64)) != 0 && x.filter[b/64]&(1<<(b%64)) != 0
}

// Len is the number of checksums the index holds.
func (x *SumIndex) Len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.settle()
	return len(x.ring)
}

// Learnt counts the checksums the index has taken in since it was made
// (those noted and not yet computed too, as if each were new): a caller
// that failed to recognise bytes may look again once it grew.
func (x *SumIndex) Learnt() uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.learnt + uint64(x.pendingKeys)
}

// Forgot says whether the index has forgotten every checksum it held when
// Learnt returned since: bytes not recognised then cannot be recognised
// any more, so looking at them again is pointless.
func (x *SumIndex) Forgot(since uint64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.learnt+uint64(x.pendingKeys)-since >= uint64(x.max)
}

// slot returns where key k is in the table, or the empty slot where it
// would go.
func (x *SumIndex) slot(k uint32) int {
	mask := len(x.table) - 1
	i := x.home(k)
	for x.table[i].pos != 0 && x.table[i].key != k {
		i = (i + 1) & mask
	}
	return i
}

func (x *SumIndex) home(k uint32) int {
	return int(uint64(k*0x9e3779b1) * uint64(len(x.table)) >> 32)
}

// lookup returns the entry under key k.
func (x *SumIndex) lookup(k uint32) (sumEntry, bool) {
	if p := x.table[x.slot(k)].pos; p != 0 {
		return x.ring[p-1], true
	}
	return sumEntry{}, false
}

// grow doubles the table (it grows with the ring, so that an index that
// is given little costs little) and puts the ring's entries in.
func (x *SumIndex) grow() {
	x.table = make([]sumSlot, 2*len(x.table))
	for p, e := range x.ring {
		x.table[x.slot(e.key)] = sumSlot{e.key, int32(p + 1)}
	}
}

// remove empties slot i, moving later entries of its probe run back so
// that every key stays reachable from its home (linear probing's
// deletion without tombstones).
func (x *SumIndex) remove(i int) {
	mask := len(x.table) - 1
	for j := i; ; {
		j = (j + 1) & mask
		if x.table[j].pos == 0 {
			x.table[i] = sumSlot{}
			return
		}
		h := x.home(x.table[j].key)
		// The entry at j may move to i unless its home lies cyclically
		// in (i, j].
		if (i <= j && (i < h && h <= j)) || (i > j && (i < h || h <= j)) {
			continue
		}
		x.table[i] = x.table[j]
		i = j
	}
}

func (x *SumIndex) put(e sumEntry) {
	i := x.slot(e.key)
	if p := x.table[i].pos; p != 0 {
		x.ring[p-1] = e
		return
	}
	x.learnt++
	if len(x.ring) < x.max {
		x.ring = append(x.ring, e)
		if 2*len(x.ring) > len(x.table) {
			x.grow() // and e is in
			return
		}
		x.table[i] = sumSlot{e.key, int32(len(x.ring))}
	} else {
		x.remove(x.slot(x.ring[x.head].key))
		x.ring[x.head] = e
		// Removing may have moved the entries of e's probe run.
		x.table[x.slot(e.key)] = sumSlot{e.key, int32(x.head + 1)}
		x.head = (x.head + 1) % x.max
		if x.evicted++; x.evicted == x.max {
			clear(x.filter)
			for _, e := range x.ring {
				x.setFilter(e.key)
			}
			x.evicted = 0
		}
	}
	x.setFilter(e.key)
}

// add indexes the sampled chunks of the file range p was written to (at
// off) that lie whole in the plain synthetic extent e. A chunk within p is
// checksummed there (Encode compared those bytes with the stream); one
// reaching past it is generated.
func (x *SumIndex) add(e FileExtent, p []byte, off int64) {
	lo, hi := max(off, e.Off), min(off+int64(len(p)), e.End())
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, size := range x.chunks {
		step := int64(size) * sumSample
		// The first sampled chunk starting at or after e.Off that
		// overlaps [lo, hi), and how many follow it within e.
		first := max(e.Off, lo-int64(size)+1)
		k := (first + step - 1) / step * step
		if k >= hi || k+int64(size) > e.End() {
			continue
		}
		n := int(min(hi-1-k, e.End()-int64(size)-k)/step) + 1
		x.pending = append(x.pending, sumRun{seed: e.Seed, off: e.Offset + uint64(k-e.Off), step: uint64(step), n: n, size: size})
		x.pendingKeys += n * len(sumAlgs)
	}
	// What the ring could not hold once every pending key is in would be
	// evicted unlooked-at: drop it now.
	for x.pendingKeys > x.max {
		r := &x.pending[0]
		drop := min(r.n, (x.pendingKeys-x.max+len(sumAlgs)-1)/len(sumAlgs))
		r.off += uint64(drop) * r.step
		r.n -= drop
		x.pendingKeys -= drop * len(sumAlgs)
		if r.n == 0 {
			x.pending = x.pending[1:]
		}
	}
}

// sumAlgs are the algorithms every sampled chunk is indexed under.
var sumAlgs = [...]Alg{CRC32C, CRC32}

// settle checksums the pending chunks and puts them in, in the order
// they were written. x.mu is held.
func (x *SumIndex) settle() {
	if len(x.pending) == 0 {
		return
	}
	tmp := scratch.Get().(*[1024]byte)
	defer scratch.Put(tmp)
	for _, r := range x.pending {
		var buf []byte
		if r.size <= uint32(len(tmp)) {
			buf = tmp[:r.size]
		} else {
			buf = make([]byte, r.size)
		}
		for i := range r.n {
			off := r.off + uint64(i)*r.step
			Generate(r.seed, off, buf)
			for _, alg := range sumAlgs {
				x.put(sumEntry{key: crc32.Checksum(buf, sumTables[alg]), seed: r.seed, off: off, size: r.size, alg: alg})
			}
		}
	}
	x.pending, x.pendingKeys = x.pending[:0], 0
}

// recognise splits the literal extents of enc at the checksum runs it
// finds in them.
func (x *SumIndex) recognise(enc []Extent) []Extent {
	var out []Extent
	for i, e := range enc {
		if e.Synthetic() || e.Len < 4 {
			if out != nil {
				out = append(out, e)
			}
			continue
		}
		split := x.find(e.Lit)
		if split == nil {
			if out != nil {
				out = append(out, e)
			}
			continue
		}
		if out == nil {
			out = append(make([]Extent, 0, len(enc)+2*len(split)), enc[:i]...)
		}
		out = append(out, split...)
	}
	if out == nil {
		return enc
	}
	return out
}

// find returns lit split into literal and checksum extents, or nil if it
// holds no checksum run the index knows.
func (x *SumIndex) find(lit []byte) []Extent {
	var out []Extent
	pos := 0 // lit[:pos] is split
	x.mu.Lock()
	defer x.mu.Unlock()
	x.settle()
	if len(x.ring) == 0 {
		return nil
	}
	for i := 0; i+4 <= len(lit); i++ {
		w := binary.BigEndian.Uint32(lit[i:])
		if !x.inFilter(w) {
			continue
		}
		c, hit := x.lookup(w)
		if !hit {
			continue
		}
		sum := Checksum{Alg: c.alg, Chunk: c.size, Phase: uint32(c.off % uint64(c.size))}
		v := (c.off - uint64(sum.Phase)) / uint64(c.size) * 4
		fwd := continues(lit[i:], c.seed, sum, v)
		if fwd < 4 { // a stale entry or another word with the same key
			continue
		}
		back := precedes(lit[pos:i], c.seed, sum, v)
		if back+fwd < sumMinRun {
			continue
		}
		start, end := i-back, i+fwd
		if start > pos {
			out = append(out, Extent{Lit: lit[pos:start:start], Len: start - pos})
		}
		out = append(out, Extent{Seed: c.seed, Sum: sum, Offset: v - uint64(back), Len: end - start})
		pos = end
		i = end - 1
	}
	if out == nil {
		return nil
	}
	if pos < len(lit) {
		out = append(out, Extent{Lit: lit[pos:len(lit):len(lit)], Len: len(lit) - pos})
	}
	return out
}

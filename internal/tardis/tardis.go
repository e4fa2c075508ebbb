// Package tardis is gait's synthetic data: a byte stream, named by a seed,
// that a storage layer knowing nothing of the system above it can recognise
// in any buffer it is handed and store as a description (seed, stream
// offset, length) instead of the bytes.
//
// The stream is a sequence of 64-byte blocks. Block b of the stream with
// seed s is eight little-endian 64-bit words:
//
//	word 0   Magic, a fixed constant (the bytes a scanner looks for)
//	word 1   s, the seed
//	word 2   b, the block index (the block starts at stream offset 64*b)
//	word 3   check: splitmix64(key(s) + (8b+3)*golden)
//	word 4-7 payload: mix1(key(s) + (8b+i)*golden), a one-multiply mix
//
// with key(s) = splitmix64(s ^ const) and golden = 0x9e3779b97f4a7c15. The
// check word is a keyed function of (seed, block index) that a candidate
// header must carry; the payload words need only look random, since
// recognition compares every byte (the cheaper mix makes Encode and
// Generate about 1.35 times faster). Every block therefore says in-band where in
// which stream it sits, and any byte of the stream can be computed in O(1)
// from (seed, offset): [Generate] is counter mode, with no state to carry.
//
// Recognition ([Encode], [AppendEncode]) finds the 8-byte magic with
// bytes.Index, reads the seed and block index behind it, verifies the check
// word, and then extends the run forwards and backwards byte by byte against
// the generated stream, so a run is recognised exactly to the byte however
// the system above aligned, split or framed it. Every byte placed in a
// synthetic extent has been compared with the stream: a false positive can
// cost scan time, never correctness. Bytes not recognised are kept as
// literal extents.
//
// The package does no I/O; the emulating file system (limpfs's emulating
// mode) builds on [File.WriteAtSplit], [File.ReadAtFill] and
// [MarshalExtents].
package tardis

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

const (
	// BlockSize is the granularity at which the stream carries its
	// position in-band.
	BlockSize = 64
	// HeaderSize is the part of a block a scanner must see whole to anchor a
	// run: magic, seed, block index and check word.
	HeaderSize = 32
	// MinRun is the length of the shortest synthetic run that Encode is sure
	// to recognise wherever it starts: a run this long contains a whole
	// header (63 bytes to the next block boundary, then 32 bytes of header).
	// Shorter runs, and the edges of runs that abut no header, are recognised
	// only when they continue a neighbouring synthetic extent (see File).
	MinRun = BlockSize - 1 + HeaderSize

	// Magic is word 0 of every block, little-endian. Its bytes are
	// "\x9e\x7a\xd1\x5c" "TRDS": arbitrary, and not a pattern common in
	// text, zeroed or ASCII data.
	Magic uint64 = 0x534452545cd17a9e

	maxBlock = 1<<58 - 1 // block indexes above this would overflow 64*b

	golden = 0x9e3779b97f4a7c15
)

var magicBytes = binary.LittleEndian.AppendUint64(nil, Magic)

// splitmix64's finaliser.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// mix1 is a one-multiply mix, for payload words past the check word:
// recognition verifies every byte anyway, so these need to look random, not
// to resist anything.
func mix1(z uint64) uint64 {
	z = (z ^ z>>32) * 0xd6e8feb86659fd93
	return z ^ z>>32
}

func key(seed uint64) uint64 { return mix(seed ^ 0x6a09e667f3bcc909) }

// putBlock writes block b of the stream into dst[:64].
func putBlock(dst []byte, seed, k, b uint64) {
	_ = dst[63]
	w := b * 8
	binary.LittleEndian.PutUint64(dst[0:], Magic)
	binary.LittleEndian.PutUint64(dst[8:], seed)
	binary.LittleEndian.PutUint64(dst[16:], b)
	binary.LittleEndian.PutUint64(dst[24:], mix(k+(w+3)*golden))
	binary.LittleEndian.PutUint64(dst[32:], mix1(k+(w+4)*golden))
	binary.LittleEndian.PutUint64(dst[40:], mix1(k+(w+5)*golden))
	binary.LittleEndian.PutUint64(dst[48:], mix1(k+(w+6)*golden))
	binary.LittleEndian.PutUint64(dst[56:], mix1(k+(w+7)*golden))
}

// Generate fills buf with the bytes of the stream named by seed, starting at
// stream offset off. It costs O(len(buf)) whatever off is. The stream is
// 2^64 bytes long; bytes past its end wrap around to offset 0.
func Generate(seed, off uint64, buf []byte) {
	k := key(seed)
	var tmp [BlockSize]byte
	if r := off % BlockSize; r != 0 {
		putBlock(tmp[:], seed, k, off/BlockSize)
		n := copy(buf, tmp[r:])
		buf = buf[n:]
		off += uint64(n)
	}
	b := off / BlockSize % (maxBlock + 1)
	// The loop is putBlock inlined by hand, with the words' mix inputs
	// k+(8b+i)·φ carried from block to block by addition (the products
	// cost five multiplies a block otherwise): about a quarter faster
	// than putBlock per block (BenchmarkGenerateByBlock), and generation
	// is what every writer of the stream pays per byte.
	g := uint64(golden) // a variable: i·φ wraps, which constants may not
	g3, g4, g5, g6, g7, g8 := 3*g, 4*g, 5*g, 6*g, 7*g, 8*g
	z := k + b*g8
	for len(buf) >= BlockSize {
		q := buf[:BlockSize:BlockSize]
		binary.LittleEndian.PutUint64(q[0:], Magic)
		binary.LittleEndian.PutUint64(q[8:], seed)
		binary.LittleEndian.PutUint64(q[16:], b)
		binary.LittleEndian.PutUint64(q[24:], mix(z+g3))
		binary.LittleEndian.PutUint64(q[32:], mix1(z+g4))
		binary.LittleEndian.PutUint64(q[40:], mix1(z+g5))
		binary.LittleEndian.PutUint64(q[48:], mix1(z+g6))
		binary.LittleEndian.PutUint64(q[56:], mix1(z+g7))
		buf = buf[BlockSize:]
		z += g8
		b++
		if b > maxBlock { // the stream wraps to offset 0
			b, z = 0, k
		}
	}
	if len(buf) > 0 {
		putBlock(tmp[:], seed, k, b)
		copy(buf, tmp[:])
	}
}

// AppendGenerate appends n bytes of the stream from offset off to dst.
func AppendGenerate(dst []byte, seed, off uint64, n int) []byte {
	l := len(dst)
	dst = grow(dst, n)
	Generate(seed, off, dst[l:])
	return dst
}

func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) < n {
		nd := make([]byte, len(dst), len(dst)+n+len(dst)/4)
		copy(nd, dst)
		dst = nd
	}
	return dst[:len(dst)+n]
}

// Extent is a piece of an encoded buffer: either Len bytes of the synthetic
// stream Seed from stream offset Offset (Lit == nil), or the literal bytes
// Lit (Len == len(Lit)).
type Extent struct {
	Seed   uint64
	Offset uint64
	Len    int
	Lit    []byte
	// Sum, for a synthetic extent, says whether it is the stream (zero)
	// or checksums of the stream's chunks (see Checksum).
	Sum Checksum
}

// Synthetic says whether e is a description of stream bytes rather than
// literal bytes.
func (e Extent) Synthetic() bool { return e.Lit == nil }

// Append appends the bytes e stands for to dst.
func (e Extent) Append(dst []byte) []byte {
	if !e.Synthetic() {
		return append(dst, e.Lit...)
	}
	l := len(dst)
	dst = grow(dst, e.Len)
	generateSource(e.Seed, e.Sum, e.Offset, dst[l:])
	return dst
}

// ReadAt fills p with the bytes of e from offset off within e, and returns
// how many it filled (fewer than len(p) at the end of e).
func (e Extent) ReadAt(p []byte, off int) int {
	if off >= e.Len || off < 0 {
		return 0
	}
	n := min(len(p), e.Len-off)
	if e.Synthetic() {
		generateSource(e.Seed, e.Sum, e.Offset+uint64(off), p[:n])
	} else {
		copy(p, e.Lit[off:off+n])
	}
	return n
}

// Slice returns the part of e from i to j (0 <= i <= j <= e.Len). A literal
// slice shares e's bytes.
func (e Extent) Slice(i, j int) Extent {
	if e.Synthetic() {
		return Extent{Seed: e.Seed, Sum: e.Sum, Offset: e.Offset + uint64(i), Len: j - i}
	}
	return Extent{Lit: e.Lit[i:j:j], Len: j - i}
}

// Encode splits data into synthetic and literal extents: see AppendEncode.
func Encode(data []byte) []Extent { return AppendEncode(nil, data) }

// AppendEncode appends to dst the extents that data splits into: maximal runs
// of synthetic stream bytes (each containing at least one whole block header;
// see MinRun) and, between them, literal extents holding copies of the other
// bytes (never aliasing data). Adjacent runs that continue each other in the
// same stream come out as one extent. Decode(AppendEncode(nil, data)) equals
// data for every data.
func AppendEncode(dst []Extent, data []byte) []Extent {
	pos := 0 // data[:pos] is encoded
	i := 0   // where to look for the next header
	var arena []byte
	literal := func(p []byte) Extent {
		// Literals share a few allocations rather than one each (HDFS-like
		// framing makes one per 4-byte checksum).
		if cap(arena)-len(arena) < len(p) {
			arena = make([]byte, 0, max(len(p), min(len(data)-pos, 4096)))
		}
		l := len(arena)
		arena = append(arena, p...)
		return Extent{Lit: arena[l:len(arena):len(arena)], Len: len(p)}
	}
	for {
		j := bytes.Index(data[i:], magicBytes)
		if j < 0 {
			break
		}
		h := i + j
		if h+HeaderSize > len(data) {
			break
		}
		seed := binary.LittleEndian.Uint64(data[h+8:])
		b := binary.LittleEndian.Uint64(data[h+16:])
		k := key(seed)
		if b > maxBlock || binary.LittleEndian.Uint64(data[h+24:]) != mix(k+(b*8+3)*golden) {
			i = h + 1
			continue
		}
		s := b * BlockSize
		back := matchBackward(data[pos:h], seed, k, s)
		fwd := matchForward(data[h:], seed, k, b)
		start, end := h-back, h+fwd
		if start > pos {
			dst = append(dst, literal(data[pos:start]))
		}
		dst = append(dst, Extent{Seed: seed, Offset: s - uint64(back), Len: end - start})
		pos, i = end, end
	}
	if pos < len(data) {
		dst = append(dst, literal(data[pos:]))
	}
	return dst
}

// matchForward returns how many leading bytes of p equal the stream from
// block b (p starts at a block boundary of the stream).
func matchForward(p []byte, seed, k, b uint64) int {
	n := 0
	// As in Generate: the mix inputs k+(8b+i)·φ carried by addition, and
	// the block's words compared all at once (one branch per block, not
	// eight): this loop is what an emulating mount pays per byte written.
	// Where the CPU has them, vector registers do the whole blocks first
	// (matchBlocks), about twice as fast; this loop finds where in the
	// block they stopped at, and does all of them elsewhere.
	if whole := min(uint64(len(p)/BlockSize), maxBlock-b+1); matchVector && whole > 0 {
		m := matchBlocks(&p[0], int(whole), seed, k, b)
		n, b = m*BlockSize, b+uint64(m)
		if b > maxBlock { // the stream wraps: stop the run here
			return n
		}
	}
	g := uint64(golden)
	g3, g4, g5, g6, g7, g8 := 3*g, 4*g, 5*g, 6*g, 7*g, 8*g
	z := k + b*g8
	for len(p)-n >= BlockSize {
		q := p[n : n+BlockSize : n+BlockSize]
		if (binary.LittleEndian.Uint64(q[0:])^Magic)|
			(binary.LittleEndian.Uint64(q[8:])^seed)|
			(binary.LittleEndian.Uint64(q[16:])^b)|
			(binary.LittleEndian.Uint64(q[24:])^mix(z+g3))|
			(binary.LittleEndian.Uint64(q[32:])^mix1(z+g4))|
			(binary.LittleEndian.Uint64(q[40:])^mix1(z+g5))|
			(binary.LittleEndian.Uint64(q[48:])^mix1(z+g6))|
			(binary.LittleEndian.Uint64(q[56:])^mix1(z+g7)) != 0 {
			break
		}
		n += BlockSize
		b++
		z += g8
		if b > maxBlock { // the stream wraps: stop the run here
			return n
		}
	}
	var tmp [BlockSize]byte
	putBlock(tmp[:], seed, k, b)
	return n + commonPrefix(p[n:], tmp[:])
}

// matchBackward returns how many trailing bytes of p equal the stream just
// before stream offset s.
func matchBackward(p []byte, seed, k, s uint64) int {
	n := 0
	var tmp [BlockSize]byte
	for len(p) > n && s >= BlockSize {
		s -= BlockSize
		putBlock(tmp[:], seed, k, s/BlockSize)
		m := commonSuffix(p[:len(p)-n], tmp[:])
		n += m
		if m < BlockSize {
			break
		}
	}
	return n
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for ; i < n && a[i] == b[i]; i++ {
	}
	return i
}

func commonSuffix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[len(a)-1-i] == b[len(b)-1-i] {
		i++
	}
	return i
}

// Decode returns the bytes the extents stand for.
func Decode(exts []Extent) []byte { return AppendDecode(nil, exts) }

// AppendDecode appends the bytes the extents stand for to dst.
func AppendDecode(dst []byte, exts []Extent) []byte {
	n := 0
	for _, e := range exts {
		n += e.Len
	}
	if cap(dst)-len(dst) < n {
		dst = grow(dst, n)[:len(dst)]
	}
	for _, e := range exts {
		dst = e.Append(dst)
	}
	return dst
}

package tardis

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"testing"
)

// sweep says whether to run the long property sweeps, 50 times the
// default's iterations (TARDIS_SWEEP=1; about 10 s, against under 1 s).
var sweep = os.Getenv("TARDIS_SWEEP") != ""

func iters(n int) int {
	if sweep {
		return n * 50
	}
	return n
}

func TestGenerateAnyOffset(t *testing.T) {
	const seed = 42
	whole := make([]byte, 4096)
	Generate(seed, 0, whole)
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		off := r.IntN(len(whole))
		n := r.IntN(len(whole) - off + 1)
		got := make([]byte, n)
		Generate(seed, uint64(off), got)
		if !bytes.Equal(got, whole[off:off+n]) {
			t.Fatalf("Generate(%d, %d, [%d]) differs from the stream", seed, off, n)
		}
	}
	// Every block says where it is.
	for b := range len(whole) / BlockSize {
		q := whole[b*BlockSize:]
		if binary.LittleEndian.Uint64(q) != Magic || binary.LittleEndian.Uint64(q[8:]) != seed || binary.LittleEndian.Uint64(q[16:]) != uint64(b) {
			t.Fatalf("block %d header: % x", b, q[:24])
		}
	}
	// Different seeds, different payloads.
	other := make([]byte, 4096)
	Generate(seed+1, 0, other)
	if bytes.Equal(whole[24:64], other[24:64]) {
		t.Fatal("seeds 42 and 43 have the same payload")
	}
	// The end of the stream wraps to its start.
	end := make([]byte, 128)
	Generate(seed, ^uint64(0)-63, end)
	if !bytes.Equal(end[64:], whole[:64]) {
		t.Fatal("the stream does not wrap at 2^64")
	}
}

func TestEncodeSyntheticRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range iters(500) {
		seed := r.Uint64()
		off := r.Uint64N(1 << 40)
		n := r.IntN(3000)
		data := AppendGenerate(nil, seed, off, n)
		exts := Encode(data)
		if !bytes.Equal(Decode(exts), data) {
			t.Fatalf("round trip of %d stream bytes from %d", n, off)
		}
		if n >= MinRun {
			if len(exts) != 1 || !exts[0].Synthetic() || exts[0].Offset != off || exts[0].Seed != seed {
				t.Fatalf("%d stream bytes from offset %d: %d extents, want 1 synthetic: %+v", n, off, len(exts), exts[0])
			}
		}
	}
}

// Random bytes, even with the magic planted in them, stay literal.
func TestEncodeForeign(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range iters(200) {
		data := make([]byte, r.IntN(5000))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		for range r.IntN(20) {
			if len(data) >= 32 {
				at := r.IntN(len(data) - 31)
				copy(data[at:], magicBytes)
				// Sometimes a plausible header too, with a wrong check.
				if r.IntN(2) == 0 {
					binary.LittleEndian.PutUint64(data[at+16:], r.Uint64N(1000))
				}
			}
		}
		exts := Encode(data)
		for _, e := range exts {
			if e.Synthetic() {
				t.Fatalf("random data recognised as synthetic: %+v", e)
			}
		}
		if !bytes.Equal(Decode(exts), data) {
			t.Fatal("round trip of random data")
		}
	}
}

// hdfsLike frames a stream as HDFS does on the wire and on disk: chunks of
// 512 bytes each followed (here, interleaved, as in a packet) by a 4-byte
// CRC, and a packet header every 64 KiB of data.
func hdfsLike(seed, off uint64, n int) (framed []byte, payload int) {
	data := AppendGenerate(nil, seed, off, n)
	for p := 0; p < len(data); p += 64 << 10 {
		framed = append(framed, "PKTHDR"...)
		framed = binary.BigEndian.AppendUint64(framed, uint64(p))
		pkt := data[p:min(len(data), p+64<<10)]
		for c := 0; c < len(pkt); c += 512 {
			chunk := pkt[c:min(len(pkt), c+512)]
			framed = append(framed, chunk...)
			framed = binary.BigEndian.AppendUint32(framed, crc32.ChecksumIEEE(chunk))
		}
	}
	return framed, n
}

func TestEncodeInterleaved(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range iters(20) {
		framed, _ := hdfsLike(r.Uint64(), r.Uint64N(1<<30), 1+r.IntN(300<<10))
		exts := Encode(framed)
		if !bytes.Equal(Decode(exts), framed) {
			t.Fatal("round trip of framed stream")
		}
		var lit int
		for _, e := range exts {
			if !e.Synthetic() {
				lit += e.Len
			}
		}
		// Literal: the CRCs and headers, plus chance matches of the stream
		// (a CRC byte equal to the stream byte it displaced is kept in the
		// run), and the last chunk if it is too short to carry a header
		// (under MinRun). So at most what was interleaved, plus MinRun.
		if lit > len(framed)/512*4+(len(framed)/(64<<10)+1)*14+MinRun {
			t.Fatalf("%d literal bytes in %d framed bytes", lit, len(framed))
		}
	}
}

// model is a plain byte-slice file to check File against.
type model []byte

func (m *model) writeAt(p []byte, off int64) {
	if len(p) == 0 { // pwrite of nothing does not extend a file
		return
	}
	if end := off + int64(len(p)); end > int64(len(*m)) {
		*m = append(*m, make([]byte, end-int64(len(*m)))...)
	}
	copy((*m)[off:], p)
}

func TestFileProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for trial := range iters(60) {
		var f File
		var m model
		seeds := []uint64{r.Uint64(), r.Uint64(), 7}
		for range 60 {
			const span = 256 << 10
			off := r.Int64N(span)
			n := r.IntN(20 << 10)
			if r.IntN(4) == 0 {
				n = r.IntN(200)
			}
			var p []byte
			switch k := r.IntN(10); {
			case k < 6: // a stream, at the file offset or anywhere
				s := uint64(off)
				if k >= 3 {
					s = r.Uint64N(1 << 20)
				}
				p = AppendGenerate(nil, seeds[r.IntN(len(seeds))], s, n)
				if k == 5 { // with foreign bytes in it
					for range r.IntN(8) {
						if n > 0 {
							p[r.IntN(n)] ^= byte(1 + r.IntN(255))
						}
					}
				}
			case k < 8:
				p = make([]byte, n)
				for i := range p {
					p[i] = byte(r.Uint32())
				}
			case k == 8:
				hole := r.Int64N(8 << 10)
				f.Punch(off, hole)
				if off < int64(len(m)) {
					clear(m[off:min(int64(len(m)), off+hole)])
				}
				continue
			default:
				sz := r.Int64N(span)
				f.Truncate(sz)
				if sz < int64(len(m)) {
					m = m[:sz]
				} else {
					m = append(m, make([]byte, sz-int64(len(m)))...)
				}
				continue
			}
			f.WriteAt(p, off)
			m.writeAt(p, off)
			if f.Size() != int64(len(m)) {
				t.Fatalf("trial %d: size %d, want %d", trial, f.Size(), len(m))
			}
			// Random sub-range reads.
			for range 4 {
				ro := r.Int64N(int64(len(m)) + 100)
				buf := make([]byte, r.IntN(30<<10))
				got := f.ReadAt(buf, ro)
				want := 0
				if ro < int64(len(m)) {
					want = copy(make([]byte, len(buf)), m[ro:])
				}
				if got != want || got > 0 && !bytes.Equal(buf[:got], m[ro:ro+int64(got)]) {
					t.Fatalf("trial %d: ReadAt(%d bytes, %d) = %d, want %d, or bytes differ", trial, len(buf), ro, got, want)
				}
			}
			checkInvariants(t, &f)
		}
		all := make([]byte, f.Size())
		f.ReadAt(all, 0)
		if !bytes.Equal(all, m) {
			t.Fatalf("trial %d: file differs from model", trial)
		}
		// Its description round-trips.
		enc := MarshalExtents(nil, f.Extents(), f.Size())
		exts, size, rest, err := UnmarshalExtents(append(enc, 'x'))
		if err != nil || string(rest) != "x" {
			t.Fatalf("UnmarshalExtents: %v, rest %q", err, rest)
		}
		var g File
		g.SetExtents(exts, size)
		all2 := make([]byte, g.Size())
		g.ReadAt(all2, 0)
		if !bytes.Equal(all2, m) {
			t.Fatalf("trial %d: unmarshalled file differs", trial)
		}
	}
}

func checkInvariants(t *testing.T, f *File) {
	t.Helper()
	var end int64
	for i, e := range f.Extents() {
		if e.Off < end || e.Len <= 0 || (!e.Synthetic() && len(e.Lit) != e.Len) {
			t.Fatalf("extent %d bad: off %d len %d after end %d", i, e.Off, e.Len, end)
		}
		end = e.End()
	}
	if end > f.Size() {
		t.Fatalf("extents end at %d past size %d", end, f.Size())
	}
}

// A stream written sequentially in random chunk sizes compresses to one
// extent however small the chunks; written in HDFS-sized chunks, each write
// encoded alone (what a layer without File's merging would store) still
// costs one extent.
func TestCompressionRatio(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, maxChunk := range []int{64 << 10, 4 << 10, 100} {
		var f File
		var perWrite int64
		const total = 32 << 20
		seed := r.Uint64()
		var off int64
		for off < total {
			n := min(1+r.IntN(maxChunk), total-int(off))
			p := AppendGenerate(nil, seed, uint64(off)+12345, n)
			for _, e := range Encode(p) {
				perWrite += ExtentOverhead
				if !e.Synthetic() {
					perWrite += int64(e.Len)
				}
			}
			f.WriteAt(p, off)
			off += int64(n)
		}
		logical, physical := f.Stats()
		ratioFile := float64(logical) / float64(physical)
		ratioWrite := float64(logical) / float64(perWrite)
		t.Logf("chunks up to %d bytes: File %d extents, ratio %.0f; each write encoded alone: ratio %.0f",
			maxChunk, len(f.Extents()), ratioFile, ratioWrite)
		if len(f.Extents()) != 1 {
			t.Errorf("chunks up to %d: %d extents, want 1", maxChunk, len(f.Extents()))
		}
		if maxChunk == 64<<10 && ratioWrite < 100 {
			t.Errorf("64 KiB writes encoded alone: ratio %.0f < 100", ratioWrite)
		}
	}
}

// Chunks written out of order (parallel writers, a re-replication) merge
// too, when each chunk is long enough to carry a header. Shorter chunks
// written out of order mostly stay literal: a chunk is recognised only by
// continuing a synthetic neighbour present when it is written.
func TestCompressionShuffled(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, chunk := range []int{4 << 10, MinRun, 40} {
		total := (1 << 20) / chunk * chunk
		if chunk < MinRun {
			total = (128 << 10) / chunk * chunk
		}
		order := r.Perm(total / chunk)
		var f File
		for _, c := range order {
			off := int64(c * chunk)
			f.WriteAt(AppendGenerate(nil, 99, uint64(off), chunk), off)
		}
		logical, physical := f.Stats()
		t.Logf("%d-byte chunks in random order: %d extents, ratio %.0f", chunk, len(f.Extents()), float64(logical)/float64(physical))
		if chunk >= MinRun && len(f.Extents()) != 1 {
			t.Errorf("%d-byte chunks: %d extents, want 1", chunk, len(f.Extents()))
		}
		all := make([]byte, total)
		f.ReadAt(all, 0)
		if !bytes.Equal(all, AppendGenerate(nil, 99, 0, total)) {
			t.Fatal("shuffled writes read back wrong")
		}
	}
}

// A checksum file: small random writes appended one after another, and
// rewritten in part, join into literals of up to 64 KiB that read back
// right.
func TestFileSequentialLiterals(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	var f File
	var m model
	for m2 := 0; len(m) < 1<<20; m2++ {
		p := make([]byte, 1+r.IntN(600))
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		off := int64(len(m))
		if m2%7 == 6 { // rewrite something already written
			off = r.Int64N(off)
		}
		f.WriteAt(p, off)
		m.writeAt(p, off)
	}
	checkInvariants(t, &f)
	all := make([]byte, f.Size())
	f.ReadAt(all, 0)
	if !bytes.Equal(all, m) {
		t.Fatal("appended literals read back wrong")
	}
	if n, want := len(f.Extents()), len(m)/maxLiteralMerge*2+2; n > want {
		t.Errorf("%d extents for %d literal bytes, want at most %d", n, len(m), want)
	}
}

func TestUnmarshalCorrupt(t *testing.T) {
	for _, in := range []string{"", "nope", "tardis1\n", "tardis1\n\x10\x05", "tardis1\n\x10\x01\x01\x00\x20abc", "tardis1\n\x10\x01\x07\x00\x01"} {
		if _, _, _, err := UnmarshalExtents([]byte(in)); err == nil {
			t.Errorf("UnmarshalExtents(%q) succeeded", in)
		}
	}
}

// FuzzRoundTrip: any bytes round-trip through Encode and Decode, and through
// a File written at an offset and overwritten in part.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("hello"), uint16(0), uint16(0))
	f.Add(AppendGenerate(nil, 1, 0, 300), uint16(3), uint16(100))
	framed, _ := hdfsLike(9, 77, 2000)
	f.Add(framed, uint16(5000), uint16(17))
	// Checksum runs: the File shares an index that knows stream 9's
	// first 64 KiB.
	x := NewSumIndex(0)
	known := AppendGenerate(nil, 9, 0, 64<<10)
	(&File{Sums: x}).WriteAt(known, 0)
	f.Add(metaFor(known[:16<<10], 512, CRC32C), uint16(3), uint16(90))
	f.Add(metaFor(known, 512, CRC32)[5:], uint16(0), uint16(400))
	f.Fuzz(func(t *testing.T, data []byte, off, split uint16) {
		if !bytes.Equal(Decode(Encode(data)), data) {
			t.Fatal("Encode/Decode round trip")
		}
		fl := File{Sums: x}
		var m model
		fl.WriteAt(data, int64(off))
		m.writeAt(data, int64(off))
		if s := int(split); s < len(data) {
			fl.WriteAt(data[s:], int64(off)/2)
			m.writeAt(data[s:], int64(off)/2)
		}
		got := make([]byte, fl.Size())
		fl.ReadAt(got, 0)
		if !bytes.Equal(got, m) {
			t.Fatal("File round trip")
		}
		exts, size, _, err := UnmarshalExtents(MarshalExtents(nil, fl.Extents(), fl.Size()))
		if err != nil || size != fl.Size() || len(exts) != len(fl.Extents()) {
			t.Fatalf("marshal round trip: %v", err)
		}
		var g File
		g.SetExtents(exts, size)
		got2 := make([]byte, g.Size())
		g.ReadAt(got2, 0)
		if !bytes.Equal(got2, m) {
			t.Fatal("unmarshalled File round trip")
		}
	})
}

func syntheticBuf(n int) []byte {
	return AppendGenerate(nil, 0xfeed, 1<<33+17, n)
}

func BenchmarkEncodeSynthetic(b *testing.B) {
	data := syntheticBuf(64 << 10)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if exts := Encode(data); len(exts) != 1 {
			b.Fatal(len(exts))
		}
	}
}

func BenchmarkEncodeHDFSFramed(b *testing.B) {
	data, _ := hdfsLike(0xfeed, 1<<33+17, 64<<10)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Encode(data)
	}
}

// randomBytes is n bytes of a fixed random sequence: foreign data.
func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(1, 1))
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	return data
}

func BenchmarkEncodeRandom(b *testing.B) {
	data := randomBytes(64 << 10)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Encode(data)
	}
}

// BenchmarkMemcpy is the yardstick: copying the same 64 KiB.
func BenchmarkMemcpy(b *testing.B) {
	data := syntheticBuf(64 << 10)
	dst := make([]byte, len(data))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		copy(dst, data)
	}
}

func BenchmarkGenerate(b *testing.B) {
	dst := make([]byte, 64<<10)
	b.SetBytes(int64(len(dst)))
	for b.Loop() {
		Generate(0xfeed, 1<<33+17, dst)
	}
}

func BenchmarkFileWriteSequential(b *testing.B) {
	data := syntheticBuf(64 << 10)
	b.SetBytes(int64(len(data)))
	var f File
	var off int64
	for b.Loop() {
		p := AppendGenerate(data[:0], 0xfeed, uint64(off), 64<<10)
		f.WriteAt(p, off)
		off += int64(len(p))
	}
}

// The same comparison out of cache: 64 MiB, more than this machine's caches.
func BenchmarkEncodeSynthetic64MiB(b *testing.B) {
	data := syntheticBuf(64 << 20)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if exts := Encode(data); len(exts) != 1 {
			b.Fatal(len(exts))
		}
	}
}

func BenchmarkMemcpy64MiB(b *testing.B) {
	data := syntheticBuf(64 << 20)
	dst := make([]byte, len(data))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		copy(dst, data)
	}
}

// Reads of 64 KiB at random offsets of a 128 MiB synthetic file (one
// extent): what serving a DataNode's block reads costs.
func BenchmarkFileReadAt(b *testing.B) {
	var f File
	const size = 128 << 20
	for off := int64(0); off < size; off += 1 << 20 {
		f.WriteAt(AppendGenerate(nil, 0xfeed, uint64(off), 1<<20), off)
	}
	if len(f.Extents()) != 1 {
		b.Fatal(len(f.Extents()))
	}
	buf := make([]byte, 64<<10)
	r := rand.New(rand.NewPCG(1, 2))
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		f.ReadAt(buf, r.Int64N(size-int64(len(buf))))
	}
}

// TestWriteAtSplit keeps literal bytes outside the File, as the emulating
// file system does, and checks every read against a plain byte slice.
func TestWriteAtSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range iters(40) {
		var f File
		var want, outside []byte // outside: where the literals went
		grow := func(b []byte, n int) []byte {
			if len(b) < n {
				b = append(b, make([]byte, n-len(b))...)
			}
			return b
		}
		for range 50 {
			off := r.IntN(20000)
			var p []byte
			switch r.IntN(3) {
			case 0: // the stream at the matching offset
				n := r.IntN(5000)
				p = AppendGenerate(nil, 5, uint64(off), n)
			case 1: // the stream anywhere, a few bytes flipped
				p = AppendGenerate(nil, 6, r.Uint64N(1<<40), r.IntN(5000))
				for range r.IntN(3) {
					if len(p) > 0 {
						p[r.IntN(len(p))] ^= 0xff
					}
				}
			default:
				p = make([]byte, r.IntN(300))
				for i := range p {
					p[i] = byte(r.Uint32())
				}
			}
			lits := f.WriteAtSplit(p, int64(off))
			want = grow(want, off+len(p))
			copy(want[off:], p)
			for _, e := range lits {
				if e.Off < int64(off) || e.End() > int64(off+len(p)) {
					t.Fatalf("literal at [%d, %d) outside the write [%d, %d)", e.Off, e.End(), off, off+len(p))
				}
				outside = grow(outside, int(e.End()))
				copy(outside[e.Off:], e.Lit)
			}
			for _, e := range f.Extents() {
				if !e.Synthetic() {
					t.Fatalf("literal extent left in the File at %d", e.Off)
				}
			}
			if f.Size() != int64(len(want)) {
				t.Fatalf("size %d, want %d", f.Size(), len(want))
			}
			got := make([]byte, len(want))
			n, err := f.ReadAtFill(got, 0, func(q []byte, at int64) error {
				outside = grow(outside, int(at)+len(q))
				copy(q, outside[at:])
				return nil
			})
			if err != nil || n != len(want) || !bytes.Equal(got, want) {
				t.Fatalf("read back %d bytes (%v), differs from what was written", n, err)
			}
		}
	}
}

// BenchmarkGenerateByBlock is Generate's loop before it was inlined by
// hand (putBlock per block): the peer that shows what that bought.
func BenchmarkGenerateByBlock(b *testing.B) {
	dst := make([]byte, 64<<10)
	b.SetBytes(int64(len(dst)))
	k := key(0xfeed)
	for b.Loop() {
		for i := 0; i < len(dst); i += BlockSize {
			putBlock(dst[i:], 0xfeed, k, 1<<27+uint64(i/BlockSize))
		}
	}
}

// TestMatchForwardVector checks matchForward, with and without the vector
// loop, against the stream compared byte by byte: runs of every length
// around block edges, one byte changed anywhere in them (or none), and
// blocks up to the end of the stream, where a run stops.
func TestMatchForwardVector(t *testing.T) {
	vector := matchVector
	defer func() { matchVector = vector }()
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		seed := r.Uint64()
		b := r.Uint64N(maxBlock)
		if i%4 == 0 {
			b = maxBlock - r.Uint64N(20) // the stream's last blocks
		}
		n := r.IntN(40 * BlockSize)
		p := make([]byte, n)
		Generate(seed, b*BlockSize, p)
		if b+uint64(n/BlockSize) > maxBlock {
			// Past the end the stream wraps: what follows is block 0.
			wrap := (maxBlock + 1 - b) * BlockSize
			Generate(seed, 0, p[wrap:])
		}
		want := n
		if wrap := (maxBlock + 1 - b) * BlockSize; uint64(n) > wrap {
			want = int(wrap) // a run stops where the stream wraps
		}
		if n > 0 && r.IntN(5) > 0 {
			at := r.IntN(n)
			p[at] ^= byte(1 + r.IntN(255))
			want = min(want, at)
		}
		for _, v := range []bool{false, true} {
			matchVector = v && vector
			if got := matchForward(p, seed, key(seed), b); got != want {
				t.Fatalf("case %d (vector %v): block %d, %d bytes: matched %d, want %d", i, matchVector, b, n, got, want)
			}
		}
	}
	if !vector {
		t.Log("no vector loop on this CPU: the Go loop alone was checked")
	}
}

// BenchmarkMatchForward is the recognition loop over 64 KiB of the
// stream, in vector registers where the CPU has them and in Go (its peer,
// the same run).
func BenchmarkMatchForward(b *testing.B) {
	data := syntheticBuf(64 << 10)[64-17:] // starts at a block boundary
	data = data[:len(data)/BlockSize*BlockSize]
	seed, blk := uint64(0xfeed), uint64((1<<33+17+64-17)/BlockSize)
	vector := matchVector
	defer func() { matchVector = vector }()
	for _, v := range []bool{true, false} {
		name := map[bool]string{true: "vector", false: "go"}[v]
		b.Run(name, func(b *testing.B) {
			if v && !vector {
				b.Skip("no vector loop on this CPU")
			}
			matchVector = v
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if n := matchForward(data, seed, key(seed), blk); n != len(data) {
					b.Fatal(n)
				}
			}
		})
	}
}

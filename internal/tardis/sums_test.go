package tardis

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// metaFor is what an HDFS DataNode writes beside a block holding data: a
// 7-byte header and one big-endian checksum per chunk.
func metaFor(data []byte, chunk int, alg Alg) []byte {
	meta := []byte{0, 1, byte(alg), 0, 0, byte(chunk >> 8), byte(chunk)}
	for c := 0; c < len(data); c += chunk {
		meta = binary.BigEndian.AppendUint32(meta, crc32.Checksum(data[c:min(c+chunk, len(data))], sumTables[alg]))
	}
	return meta
}

func fileBytes(f *File) []byte {
	b := make([]byte, f.Size())
	f.ReadAt(b, 0)
	return b
}

func sumExtents(f *File) (n int, literal int) {
	for _, e := range f.Extents() {
		if !e.Synthetic() {
			literal += e.Len
		} else if e.Sum.Alg != 0 {
			n++
		}
	}
	return n, literal
}

// A block and its checksum file written in packets, block first or
// alongside: the checksum file becomes one checksum extent after its
// header, for both algorithms and for chunk sizes other than 512.
func TestChecksumRun(t *testing.T) {
	for _, c := range []struct {
		chunk int
		alg   Alg
	}{{512, CRC32C}, {512, CRC32}, {4096, CRC32C}} {
		x := NewSumIndex(0, 512, 4096)
		var block, meta File
		block.Sums, meta.Sums = x, x
		data := AppendGenerate(nil, 5, 3<<20+100, 4<<20) // any stream offset
		want := metaFor(data, c.chunk, c.alg)
		meta.WriteAt(want[:7], 0)
		const packet = 64 << 10
		for p := 0; p < len(data); p += packet {
			block.WriteAt(data[p:p+packet], int64(p))
			meta.WriteAt(want[7+p/c.chunk*4:7+(p+packet)/c.chunk*4], int64(7+p/c.chunk*4))
		}
		if !bytes.Equal(fileBytes(&meta), want) {
			t.Fatalf("chunk %d alg %d: meta differs", c.chunk, c.alg)
		}
		if n, lit := sumExtents(&meta); n != 1 || lit != 7 || len(meta.Extents()) != 2 {
			t.Errorf("chunk %d alg %d: %d checksum extents, %d literal bytes, %d extents; want 1, 7, 2", c.chunk, c.alg, n, lit, len(meta.Extents()))
		}
		// The description round-trips, and says "tardis2".
		enc := MarshalExtents(nil, meta.Extents(), meta.Size())
		if !bytes.HasPrefix(enc, []byte("tardis2\n")) {
			t.Errorf("header %q", enc[:8])
		}
		exts, size, _, err := UnmarshalExtents(enc)
		if err != nil {
			t.Fatal(err)
		}
		var g File
		g.SetExtents(exts, size)
		if !bytes.Equal(fileBytes(&g), want) {
			t.Fatal("unmarshalled meta differs")
		}
	}
}

// Property: checksum files written in random splits, out of order, with
// foreign words planted and overwrites, read back byte for byte; runs of
// 16 words or more around the planted words are recognised.
func TestChecksumProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range iters(15) {
		x := NewSumIndex(0)
		var block, meta File
		block.Sums, meta.Sums = x, x
		var m model
		data := AppendGenerate(nil, r.Uint64(), r.Uint64N(1<<30), 1<<20+r.IntN(5000))
		block.WriteAt(data, 0)
		want := metaFor(data, 512, Alg(1+r.IntN(2)))
		// Foreign words, not the checksums.
		for range r.IntN(4) {
			i := 7 + r.IntN(len(want)-7)
			want[i] ^= byte(1 + r.IntN(255))
		}
		// Random splits in random order.
		type piece struct{ lo, hi int }
		var pieces []piece
		for lo := 0; lo < len(want); {
			hi := min(len(want), lo+1+r.IntN(3000))
			pieces = append(pieces, piece{lo, hi})
			lo = hi
		}
		if r.IntN(2) == 0 {
			r.Shuffle(len(pieces), func(i, j int) { pieces[i], pieces[j] = pieces[j], pieces[i] })
		}
		for _, p := range pieces {
			meta.WriteAt(want[p.lo:p.hi], int64(p.lo))
			m.writeAt(want[p.lo:p.hi], int64(p.lo))
		}
		// Overwrites: foreign bytes, then some checksums back.
		for range r.IntN(3) {
			off := r.IntN(len(want))
			junk := make([]byte, r.IntN(40))
			for i := range junk {
				junk[i] = byte(r.Uint32())
			}
			meta.WriteAt(junk, int64(off))
			m.writeAt(junk, int64(off))
			lo := r.IntN(len(want))
			hi := min(len(want), lo+r.IntN(2000))
			meta.WriteAt(want[lo:hi], int64(lo))
			m.writeAt(want[lo:hi], int64(lo))
		}
		checkInvariants(t, &meta)
		if !bytes.Equal(fileBytes(&meta), m) {
			t.Fatalf("trial %d: meta differs from the model", trial)
		}
		_, lit := sumExtents(&meta)
		if lit > len(m)/4 {
			t.Errorf("trial %d: %d literal bytes of %d", trial, lit, len(m))
		}
		exts, size, _, err := UnmarshalExtents(MarshalExtents(nil, meta.Extents(), meta.Size()))
		if err != nil {
			t.Fatal(err)
		}
		var g File
		g.SetExtents(exts, size)
		if !bytes.Equal(fileBytes(&g), m) {
			t.Fatalf("trial %d: unmarshalled meta differs", trial)
		}
	}
}

// Past its bound the index forgets the oldest chunks: their checksums
// stay literal, and still read back.
func TestChecksumIndexBound(t *testing.T) {
	// Written whole or in pieces, noted chunks past the bound are dropped
	// oldest first, as the ring would evict them.
	for _, piece := range []int{1 << 20, 64 << 10, 3000} {
		x := NewSumIndex(64) // 64 entries: 2 algorithms x 32 sampled chunks = 256 KiB of data
		var block, meta File
		block.Sums, meta.Sums = x, x
		data := AppendGenerate(nil, 9, 0, 1<<20)
		for off := 0; off < len(data); off += piece {
			block.WriteAt(data[off:min(off+piece, len(data))], int64(off))
		}
		if x.Len() != 64 {
			t.Fatalf("%d-byte writes: index holds %d, want its bound 64", piece, x.Len())
		}
		want := metaFor(data, 512, CRC32C)
		// The first 512 KiB's checksums, written in 16-word pieces so that
		// no piece continues a recognised run.
		for p := 7; p < 7+1024*4; p += 64 {
			meta.WriteAt(want[p:p+64], int64(p))
		}
		if n, _ := sumExtents(&meta); n != 0 {
			t.Errorf("%d-byte writes: %d checksum extents for forgotten data", piece, n)
		}
		// The last 256 KiB's: remembered.
		meta.WriteAt(want[7+1536*4:], 7+1536*4)
		if n, _ := sumExtents(&meta); n != 1 {
			t.Errorf("%d-byte writes: %d checksum extents for remembered data, want 1", piece, n)
		}
		meta.WriteAt(want[:7], 0)
		if !bytes.Equal(fileBytes(&meta)[:7+1024*4], want[:7+1024*4]) || !bytes.Equal(fileBytes(&meta)[7+1536*4:], want[7+1536*4:]) {
			t.Fatalf("%d-byte writes: meta differs", piece)
		}
	}
}

func TestUnmarshalChecksumCorrupt(t *testing.T) {
	for _, in := range []string{
		"tardis1\n\x10\x01\x02\x00\x10" + "12345678\x00\x01\x09\x00",     // kind 2 in version 1
		"tardis2\n\x10\x01\x02\x00\x10" + "12345678\x00\x03\x09\x00",     // no such algorithm
		"tardis2\n\x10\x01\x02\x00\x10" + "12345678\x00\x01\x08\x00",     // chunk 256
		"tardis2\n\x10\x01\x02\x00\x10" + "12345678\x00\x01\x09\x80\x04", // phase 512
		"tardis2\n\x10\x01\x02\x00\x10" + "12345678\x00\x01",             // truncated
	} {
		if _, _, _, err := UnmarshalExtents([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	ok := "tardis2\n\x10\x01\x02\x00\x10" + "12345678\x00\x01\x09\x00"
	if _, _, _, err := UnmarshalExtents([]byte(ok)); err != nil {
		t.Errorf("%q: %v", ok, err)
	}
}

// indexedMeta returns an index that has seen a 64 MiB block of the
// stream, and the block's .meta file.
func indexedMeta() (*SumIndex, []byte) {
	x := NewSumIndex(0)
	block := File{Sums: x}
	data := AppendGenerate(nil, 0xfeed, 0, 64<<20)
	block.WriteAt(data, 0)
	return x, metaFor(data, 512, CRC32C)
}

// BenchmarkChecksumMeta recognises what a DataNode writes to a .meta
// file for a 64 KiB packet (128 CRC32C words, 512 bytes), continuing
// the file's checksum run; BenchmarkMemcpyMeta copies the same bytes.
func BenchmarkChecksumMeta(b *testing.B) {
	x, want := indexedMeta()
	meta := File{Sums: x}
	const w = 512
	b.SetBytes(w)
	p := 7
	for b.Loop() {
		if p+w > len(want) {
			meta = File{Sums: x}
			p = 7
		}
		meta.WriteAt(want[p:p+w], int64(p))
		p += w
	}
	if n, _ := sumExtents(&meta); n != 1 {
		b.Fatalf("%d checksum extents", n)
	}
}

// BenchmarkChecksumMetaAnchor recognises each 512-byte write on its own
// (a new File each time: the index lookup, not continuation).
func BenchmarkChecksumMetaAnchor(b *testing.B) {
	x, want := indexedMeta()
	const w = 512
	b.SetBytes(w)
	p := 7
	for b.Loop() {
		if p+w > len(want) {
			p = 7
		}
		meta := File{Sums: x}
		meta.WriteAt(want[p:p+w], int64(p))
		p += w
	}
}

// BenchmarkChecksumForeign is the cost of the index on foreign bytes: a
// 64 KiB random write with a full index.
func BenchmarkChecksumForeign(b *testing.B) {
	x := NewSumIndex(0)
	var block File
	block.Sums = x
	block.WriteAt(AppendGenerate(nil, 0xfeed, 0, 256<<20), 0)
	data := randomBytes(64 << 10)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		f := File{Sums: x}
		f.WriteAt(data, 0)
	}
}

func BenchmarkMemcpyMeta(b *testing.B) {
	src := make([]byte, 512)
	dst := make([]byte, 512)
	b.SetBytes(512)
	for b.Loop() {
		copy(dst, src)
	}
}

// BenchmarkFileWriteSequentialIndexed is BenchmarkFileWriteSequential
// with a checksum index: what indexing costs a block file's writes.
func BenchmarkFileWriteSequentialIndexed(b *testing.B) {
	data := syntheticBuf(64 << 10)
	b.SetBytes(int64(len(data)))
	f := File{Sums: NewSumIndex(0)}
	var off int64
	for b.Loop() {
		p := AppendGenerate(data[:0], 0xfeed, uint64(off), 64<<10)
		f.WriteAt(p, off)
		off += int64(len(p))
	}
}

// TestSumIndexTable checks the index's hash table against a map and a
// FIFO: puts of keys from a small range (overwrites, evictions and long
// probe runs), every key looked up after each.
func TestSumIndexTable(t *testing.T) {
	for _, bound := range []int{1, 3, 64, 100} {
		x := NewSumIndex(bound)
		model := map[uint32]sumEntry{}
		var fifo []uint32
		r := rand.New(rand.NewPCG(uint64(bound), 7))
		for i := range 1500 {
			// Keys in clusters as well as spread out.
			k := uint32(r.IntN(3 * bound))
			if r.IntN(2) == 0 {
				k *= 0x10001
			}
			e := sumEntry{key: k, seed: uint64(i), off: uint64(r.Uint32()), size: 512, alg: CRC32C}
			x.put(e)
			if _, ok := model[k]; !ok {
				fifo = append(fifo, k)
				if len(fifo) > bound {
					delete(model, fifo[0])
					fifo = fifo[1:]
				}
			}
			model[k] = e
			if x.Len() != len(model) {
				t.Fatalf("bound %d, put %d: Len %d, want %d", bound, i, x.Len(), len(model))
			}
			for q := range uint32(3 * bound) {
				for _, k := range []uint32{q, q * 0x10001} {
					got, ok := x.lookup(k)
					want, wok := model[k]
					if ok != wok || got != want {
						t.Fatalf("bound %d, put %d: lookup(%d) = %v %v, want %v %v", bound, i, k, got, ok, want, wok)
					}
				}
			}
		}
	}
}

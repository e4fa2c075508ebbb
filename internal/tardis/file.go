package tardis

import (
	"sort"
)

// ExtentOverhead is what File.Stats counts as the physical cost of one
// extent's description (file offset, seed, stream offset, length), on top of
// a literal's bytes. It is the size of a fixed-width record; MarshalExtents'
// varint records are no larger.
const ExtentOverhead = 32

// maxLiteralMerge bounds the literal extents File joins into one, so that
// many small literal writes next to each other do not each copy a growing
// literal.
const maxLiteralMerge = 64 << 10

// FileExtent is an extent placed at offset Off of a File.
type FileExtent struct {
	Off int64
	Extent
}

// End is the file offset just past the extent.
func (e FileExtent) End() int64 { return e.Off + int64(e.Len) }

// File is the contents of one file held as extents: what an emulating file
// system keeps per file. Writes at any offset encode their bytes, replace
// what they overwrite, and join the extents around them when they continue
// each other; reads of any range generate or copy only that range; ranges no
// write covered (holes) read as zeros. A File is not safe for concurrent
// use. Its zero value is an empty file.
//
// Extents are a sorted slice, so a write costs O(extents) to insert:
// sequential writes of one stream stay one extent, so this is O(1) for the
// files storage systems write; a file fragmented into very many extents
// would want a tree.
type File struct {
	exts []FileExtent // sorted by Off, non-overlapping, none empty
	size int64
	// Sums, if set, is the checksum index the file feeds with the stream
	// it is written and looks up checksum runs in (see SumIndex); Files
	// sharing one recognise each other's checksums.
	Sums *SumIndex
}

// Size is the file's length: the end of the furthest write, or what Truncate
// set.
func (f *File) Size() int64 { return f.size }

// Extents returns the file's extents in file order; holes are the gaps
// between them. The caller must not modify literal bytes.
func (f *File) Extents() []FileExtent { return f.exts }

// SetExtents replaces the file's contents with exts (sorted, not
// overlapping, as Extents returns them, for instance after
// UnmarshalExtents) and size.
func (f *File) SetExtents(exts []FileExtent, size int64) {
	f.exts = append(f.exts[:0], exts...)
	for i := range f.exts {
		if e := &f.exts[i]; !e.Synthetic() {
			e.Lit = e.Lit[:len(e.Lit):len(e.Lit)]
		}
	}
	f.size = size
}

// Stats returns the file's logical size (its Size, holes included) and the
// physical bytes its description costs: literal bytes plus ExtentOverhead
// per extent.
func (f *File) Stats() (logical, physical int64) {
	for _, e := range f.exts {
		physical += ExtentOverhead
		if !e.Synthetic() {
			physical += int64(e.Len)
		}
	}
	return f.size, physical
}

// Holes returns the ranges [a, b) of [lo, hi), clipped to the file's
// size, that no extent covers, in order.
func (f *File) Holes(lo, hi int64) (holes [][2]int64) {
	hi = min(hi, f.size)
	for i := f.find(lo); lo < hi; i++ {
		if i >= len(f.exts) || f.exts[i].Off >= hi {
			holes = append(holes, [2]int64{lo, hi})
			break
		}
		if e := f.exts[i]; e.Off > lo {
			holes = append(holes, [2]int64{lo, e.Off})
		}
		lo = max(lo, f.exts[i].End())
	}
	return holes
}

// find returns the index of the first extent that ends after off.
func (f *File) find(off int64) int {
	return sort.Search(len(f.exts), func(i int) bool { return f.exts[i].End() > off })
}

// ReadAt fills p with the file's bytes from off and returns how many it
// filled: fewer than len(p) only at the end of the file.
func (f *File) ReadAt(p []byte, off int64) int {
	n, _ := f.ReadAtFill(p, off, func(q []byte, _ int64) error {
		clear(q)
		return nil
	})
	return n
}

// ReadAtFill is ReadAt with the holes filled by fill(q, at) (q is the part
// of p for file offset at) rather than zeroed: an emulating file system
// that keeps literal bytes outside the File (see WriteAtSplit) reads them
// there. It stops at fill's first error.
func (f *File) ReadAtFill(p []byte, off int64, fill func(q []byte, at int64) error) (int, error) {
	if off >= f.size || off < 0 {
		return 0, nil
	}
	p = p[:min(int64(len(p)), f.size-off)]
	i := f.find(off)
	cur := off
	end := off + int64(len(p))
	for ; cur < end; i++ {
		if i >= len(f.exts) || f.exts[i].Off >= end {
			if err := fill(p[cur-off:], cur); err != nil {
				return 0, err
			}
			break
		}
		e := f.exts[i]
		if e.Off > cur {
			if err := fill(p[cur-off:e.Off-off], cur); err != nil {
				return 0, err
			}
			cur = e.Off
		}
		cur += int64(e.ReadAt(p[cur-off:], int(cur-e.Off)))
	}
	return len(p), nil
}

// WriteAt writes p at file offset off (off >= 0), extending the file if
// needed.
func (f *File) WriteAt(p []byte, off int64) {
	if off < 0 {
		panic("tardis: File.WriteAt at a negative offset")
	}
	if len(p) == 0 {
		return
	}
	enc := AppendEncode(nil, p)
	if f.Sums != nil {
		enc = f.Sums.recognise(enc)
	}
	news := make([]FileExtent, 0, len(enc))
	at := off
	for _, e := range enc {
		news = append(news, FileExtent{Off: at, Extent: e})
		at += int64(e.Len)
	}
	f.replace(off, at, news)
	f.size = max(f.size, at)
	if f.Sums != nil {
		for i := f.find(off); i < len(f.exts) && f.exts[i].Off < at; i++ {
			if e := f.exts[i]; e.Synthetic() && e.Sum.Alg == 0 {
				f.Sums.add(e, p, off)
			}
		}
	}
}

// WriteAtSplit writes p at off like WriteAt but keeps only the synthetic
// extents: the literal extents the write leaves (after absorbing what
// continues a synthetic neighbour) are removed, leaving holes, and
// returned, in file order, for the caller to store elsewhere. A File
// written only this way holds no literal bytes, so its memory and its
// MarshalExtents form stay small however much foreign data goes through
// it; its holes then stand for "stored elsewhere or never written".
func (f *File) WriteAtSplit(p []byte, off int64) (lits []FileExtent) {
	f.WriteAt(p, off)
	// Only the written range can hold literals: everything else was
	// split off by earlier calls, and joins never create literals.
	end := off + int64(len(p))
	i := f.find(off)
	j := i
	for k := i; k < len(f.exts) && f.exts[k].Off < end; k++ {
		if e := f.exts[k]; e.Synthetic() {
			f.exts[j] = e
			j++
		} else {
			lits = append(lits, e)
		}
		if k == len(f.exts)-1 || f.exts[k+1].Off >= end {
			f.exts = append(f.exts[:j], f.exts[k+1:]...)
			break
		}
	}
	return lits
}

// Truncate sets the file's size; bytes past it are dropped, and a file grown
// by Truncate reads zeros there.
func (f *File) Truncate(size int64) {
	if size < f.size {
		f.replace(size, f.size, nil)
	}
	f.size = size
}

// Punch makes [off, off+n) a hole (reads as zeros) without changing the
// size.
func (f *File) Punch(off, n int64) {
	if n > 0 {
		f.replace(off, off+n, nil)
	}
}

// replace puts news (sorted, covering exactly [lo, hi) or nothing) in place
// of whatever covers [lo, hi), then joins neighbours.
func (f *File) replace(lo, hi int64, news []FileExtent) {
	i := f.find(lo)
	j := i
	var head, tail []FileExtent
	for ; j < len(f.exts) && f.exts[j].Off < hi; j++ {
		e := f.exts[j]
		if e.Off < lo {
			head = append(head, FileExtent{Off: e.Off, Extent: e.Slice(0, int(lo-e.Off))})
		}
		if e.End() > hi {
			tail = append(tail, FileExtent{Off: hi, Extent: e.Slice(int(hi-e.Off), e.Len)})
		}
	}
	mid := make([]FileExtent, 0, len(head)+len(news)+len(tail)+2)
	mid = append(mid, head...)
	mid = append(mid, news...)
	mid = append(mid, tail...)
	// Join with the untouched neighbours too.
	lo2, hi2 := i, j
	if i > 0 {
		lo2 = i - 1
		mid = append([]FileExtent{f.exts[i-1]}, mid...)
	}
	if j < len(f.exts) {
		hi2 = j + 1
		mid = append(mid, f.exts[j])
	}
	mid = join(mid)
	f.exts = append(f.exts[:lo2], append(mid, f.exts[hi2:]...)...)
}

// join merges adjacent extents that continue each other, and recognises the
// edges of literal extents that continue a synthetic neighbour (runs too
// short to carry a header of their own, as a small write produces).
func join(es []FileExtent) []FileExtent {
	// Split literals whose head continues the synthetic extent before them,
	// or whose tail leads into the synthetic extent after them.
	var out []FileExtent
	for k := 0; k < len(es); k++ {
		e := es[k]
		if e.Synthetic() {
			out = append(out, e)
			continue
		}
		if n := len(out); n > 0 && out[n-1].Synthetic() && out[n-1].End() == e.Off {
			p := out[n-1]
			m := continues(e.Lit, p.Seed, p.Sum, p.Offset+uint64(p.Len))
			if m > 0 {
				out[n-1].Len += m
				e = FileExtent{Off: e.Off + int64(m), Extent: e.Slice(m, e.Len)}
			}
		}
		if k+1 < len(es) && es[k+1].Synthetic() && e.End() == es[k+1].Off && e.Len > 0 {
			q := es[k+1]
			m := precedes(e.Lit, q.Seed, q.Sum, q.Offset)
			if m > 0 {
				es[k+1] = FileExtent{Off: q.Off - int64(m), Extent: Extent{Seed: q.Seed, Sum: q.Sum, Offset: q.Offset - uint64(m), Len: q.Len + m}}
				e = FileExtent{Off: e.Off, Extent: e.Slice(0, e.Len-m)}
			}
		}
		if e.Len > 0 {
			out = append(out, e)
		}
	}
	// Merge neighbours.
	es = out[:0:0]
	for _, e := range out {
		if n := len(es); n > 0 && es[n-1].End() == e.Off {
			p := &es[n-1]
			switch {
			case p.Synthetic() && e.Synthetic() && p.Seed == e.Seed && p.Sum == e.Sum && p.Offset+uint64(p.Len) == e.Offset:
				p.Len += e.Len
				continue
			case !p.Synthetic() && !e.Synthetic() && p.Len+e.Len <= maxLiteralMerge:
				// A literal made here owns its spare capacity (every other
				// literal's capacity ends at its length: Slice, Encode and
				// SetExtents clip it), so appending in place is safe and
				// sequential small literal writes (a checksum file) cost
				// amortised O(1) per byte.
				lit := p.Lit
				if cap(lit)-len(lit) < e.Len {
					lit = make([]byte, 0, min(maxLiteralMerge, 2*(p.Len+e.Len)))
					lit = append(lit, p.Lit...)
				}
				lit = append(lit, e.Lit...)
				p.Lit, p.Len = lit, len(lit)
				continue
			}
		}
		es = append(es, e)
	}
	return es
}

// continues returns how many leading bytes of p equal the source (seed,
// sum) from offset s.
func continues(p []byte, seed uint64, sum Checksum, s uint64) int {
	var tmp [256]byte
	n := 0
	for n < len(p) {
		c := min(len(p)-n, step(sum, s, true))
		if s+uint64(c) < s { // would wrap past the stream's end
			return n
		}
		generateSource(seed, sum, s, tmp[:c])
		m := commonPrefix(p[n:n+c], tmp[:c])
		n += m
		s += uint64(m)
		if m < c {
			break
		}
	}
	return n
}

// step is how many bytes continues (forward) or precedes compares at a
// time from offset s: 256 of the stream; up to the next word boundary of
// checksums, each of which costs generating a chunk, so that a mismatch
// costs one.
func step(sum Checksum, s uint64, forward bool) int {
	switch {
	case sum.Alg == 0:
		return 256
	case forward:
		return int(4 - s%4)
	case s%4 == 0:
		return 4
	default:
		return int(s % 4)
	}
}

// precedes returns how many trailing bytes of p equal the source (seed,
// sum) just before offset s.
func precedes(p []byte, seed uint64, sum Checksum, s uint64) int {
	var tmp [256]byte
	n := 0
	for n < len(p) {
		c := min(len(p)-n, step(sum, s, false))
		if uint64(c) > s {
			c = int(s)
		}
		if c == 0 {
			break
		}
		generateSource(seed, sum, s-uint64(c), tmp[:c])
		m := commonSuffix(p[:len(p)-n], tmp[:c])
		n += m
		s -= uint64(m)
		if m < c {
			break
		}
	}
	return n
}

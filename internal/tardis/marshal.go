package tardis

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// marshalVersion heads MarshalExtents' output: version 1 without
// checksum extents (so that a file without them reads in an older gait),
// version 2 with them.
var (
	marshalVersion  = []byte("tardis1\n")
	marshalVersion2 = []byte("tardis2\n")
)

// MarshalExtents appends to dst a self-delimiting binary form of a file's
// extents and size, for an emulating file system to keep its metadata:
//
//	"tardis1\n" uvarint(size) uvarint(count)
//	per extent: kind byte (0 synthetic, 1 literal, 2 checksums),
//	uvarint(gap from the previous extent's end), uvarint(len), then for
//	synthetic: seed (8 bytes, little-endian) and uvarint(stream offset);
//	for literal: the bytes; for checksums: seed, uvarint(offset), the
//	algorithm byte, log2 of the chunk size (byte), uvarint(phase).
//
// The header is "tardis2\n" instead when there is a checksum extent
// (kind 2 is refused under "tardis1\n").
//
// A synthetic extent costs at most 1+10+10+8+10 = 39 bytes, typically about
// 20 (small gaps and lengths); ExtentOverhead rounds this to 32.
func MarshalExtents(dst []byte, exts []FileExtent, size int64) []byte {
	version := marshalVersion
	for _, e := range exts {
		if e.Synthetic() && e.Sum.Alg != 0 {
			version = marshalVersion2
			break
		}
	}
	dst = append(dst, version...)
	dst = binary.AppendUvarint(dst, uint64(size))
	dst = binary.AppendUvarint(dst, uint64(len(exts)))
	var end int64
	for _, e := range exts {
		switch {
		case !e.Synthetic():
			dst = append(dst, 1)
		case e.Sum.Alg != 0:
			dst = append(dst, 2)
		default:
			dst = append(dst, 0)
		}
		dst = binary.AppendUvarint(dst, uint64(e.Off-end))
		dst = binary.AppendUvarint(dst, uint64(e.Len))
		if e.Synthetic() {
			dst = binary.LittleEndian.AppendUint64(dst, e.Seed)
			dst = binary.AppendUvarint(dst, e.Offset)
			if e.Sum.Alg != 0 {
				dst = append(dst, byte(e.Sum.Alg), byte(bits.TrailingZeros32(e.Sum.Chunk)))
				dst = binary.AppendUvarint(dst, uint64(e.Sum.Phase))
			}
		} else {
			dst = append(dst, e.Lit...)
		}
		end = e.End()
	}
	return dst
}

// ErrCorrupt is wrapped by UnmarshalExtents' errors for input that is not
// MarshalExtents' output.
var ErrCorrupt = errors.New("tardis: corrupt extent list")

// UnmarshalExtents parses MarshalExtents' output at the start of p and
// returns the extents, the size and the bytes after it. Literal extents are
// copies, not aliases of p.
func UnmarshalExtents(p []byte) (exts []FileExtent, size int64, rest []byte, err error) {
	bad := func(what string) error { return fmt.Errorf("%w: %s", ErrCorrupt, what) }
	maxKind := byte(1)
	switch {
	case bytes.HasPrefix(p, marshalVersion):
	case bytes.HasPrefix(p, marshalVersion2):
		maxKind = 2
	default:
		return nil, 0, p, bad("no tardis1 or tardis2 header")
	}
	p = p[len(marshalVersion):]
	uv := func() (uint64, bool) {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		return v, true
	}
	sz, ok := uv()
	if !ok || sz > 1<<62 {
		return nil, 0, p, bad("size")
	}
	count, ok := uv()
	if !ok || count > uint64(len(p)) { // each extent takes at least 1 byte
		return nil, 0, p, bad("count")
	}
	exts = make([]FileExtent, 0, count)
	var end int64
	for range count {
		if len(p) == 0 {
			return nil, 0, p, bad("truncated")
		}
		kind := p[0]
		p = p[1:]
		gap, ok1 := uv()
		n, ok2 := uv()
		if !ok1 || !ok2 || kind > maxKind || n == 0 || gap > 1<<62 || n > 1<<62 || end+int64(gap)+int64(n) > int64(sz) {
			return nil, 0, p, bad("extent")
		}
		e := FileExtent{Off: end + int64(gap)}
		e.Len = int(n)
		if kind != 1 {
			if len(p) < 8 {
				return nil, 0, p, bad("truncated seed")
			}
			e.Seed = binary.LittleEndian.Uint64(p)
			p = p[8:]
			if e.Offset, ok = uv(); !ok {
				return nil, 0, p, bad("stream offset")
			}
			if kind == 2 {
				if len(p) < 2 {
					return nil, 0, p, bad("truncated checksum extent")
				}
				alg, lg := Alg(p[0]), p[1]
				p = p[2:]
				phase, ok := uv()
				if alg != CRC32C && alg != CRC32 || lg < 9 || lg > 16 || !ok || phase >= 1<<lg {
					return nil, 0, p, bad("checksum extent")
				}
				e.Sum = Checksum{Alg: alg, Chunk: 1 << lg, Phase: uint32(phase)}
			}
		} else {
			if uint64(len(p)) < n {
				return nil, 0, p, bad("truncated literal")
			}
			e.Lit = bytes.Clone(p[:n])
			p = p[n:]
		}
		exts = append(exts, e)
		end = e.End()
	}
	return exts, int64(sz), p, nil
}

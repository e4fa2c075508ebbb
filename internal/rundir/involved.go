package rundir

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
)

// HostSet is a set of a run's hosts by index (as a sample's Host indexes
// Config.Hosts): the hosts a request involved beyond the one it was sent
// to, as its client reported them (an HDFS write's pipeline of
// DataNodes). 256 bits hold any uint8 index.
type HostSet [4]uint64

// Add puts host i in the set.
func (s *HostSet) Add(i uint8) { s[i/64] |= 1 << (i % 64) }

// Has says whether host i is in the set.
func (s HostSet) Has(i uint8) bool { return s[i/64]&(1<<(i%64)) != 0 }

// Empty says whether the set holds no host: its client reported nothing.
func (s HostSet) Empty() bool { return s == HostSet{} }

// Hosts lists the set's indices in increasing order.
func (s HostSet) Hosts() []uint8 {
	var out []uint8
	for w, word := range s {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			out = append(out, uint8(w*64+b))
			word &^= 1 << b
		}
	}
	return out
}

// involvedColumn holds each sample's HostSet, 32 bytes little-endian
// (word 0 first). It is optional: a run whose clients reported no
// involved host has none, and costs nothing more.
const (
	involvedColumn = "involved.b256"
	involvedWidth  = 32
)

// involvedWriter writes the optional column, created at the first sample
// with a set: the samples before it get empty sets.
type involvedWriter struct {
	col *columnWriter
	n   int // samples seen before the column was created
}

func (iw *involvedWriter) add(dir string, s HostSet) error {
	if iw.col == nil {
		if s.Empty() {
			iw.n++
			return nil
		}
		c, err := createColumn(dir, involvedColumn)
		if err != nil {
			return err
		}
		iw.col = c
		for range iw.n {
			iw.put(HostSet{})
		}
	}
	iw.put(s)
	return nil
}

func (iw *involvedWriter) put(s HostSet) {
	var b [involvedWidth]byte
	for i, w := range s {
		binary.LittleEndian.PutUint64(b[8*i:], w)
	}
	iw.col.w.Write(b[:]) // errors surface in close
}

func (iw *involvedWriter) close() error {
	if iw.col == nil {
		return nil
	}
	return iw.col.close()
}

// checkInvolved checks the optional column against the n samples of the
// other columns: absent, or a file of exactly n sets.
func checkInvolved(dir string, n int) error {
	path := samplesDir + "/" + involvedColumn
	st, err := os.Stat(filepath.Join(dir, samplesDir, involvedColumn))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s: %s, not a file of samples", path, fileKind(st.Mode()))
	case st.Size() != int64(n)*involvedWidth:
		return fmt.Errorf("%s: %d bytes, where %d samples take %d (truncated?)", path, st.Size(), n, int64(n)*involvedWidth)
	}
	return nil
}

// readInvolved reads the optional column into samples, if the run has it.
func readInvolved(path string, samples []Sample) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	b := make([]byte, involvedWidth*len(samples))
	if _, err := io.ReadFull(f, b); err != nil {
		return readError(path, err)
	}
	for i := range samples {
		for w := range samples[i].Involved {
			samples[i].Involved[w] = binary.LittleEndian.Uint64(b[involvedWidth*i+8*w:])
		}
	}
	return nil
}

// involvedNames writes a set as host names joined by "+", for the CSV.
func (r *Run) involvedNames(s HostSet) string {
	var names []string
	for _, h := range s.Hosts() {
		names = append(names, r.HostName(h))
	}
	return strings.Join(names, "+")
}

// HasInvolved says whether the run's clients reported the hosts their
// requests involved (the optional column exists).
func (r *Run) HasInvolved() bool {
	_, err := os.Stat(r.column(involvedColumn))
	return err == nil
}

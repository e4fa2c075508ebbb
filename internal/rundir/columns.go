package rundir

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unsafe"
)

// Samples are stored column by column, one file per field, little-endian and
// without headers, so a reader that needs only latencies reads only them, in
// one sequential read straight into the slice it returns.
const (
	startColumn   = "start.i64"
	latencyColumn = "latency.i64"
	opColumn      = "op.u8"
	hostColumn    = "host.u8"
	outcomeColumn = "outcome.u8"
)

// SampleBytes is the stored size of one sample, summed over the columns.
const SampleBytes = 8 + 8 + 1 + 1 + 1

var columnWidths = map[string]int64{startColumn: 8, latencyColumn: 8, opColumn: 1, hostColumn: 1, outcomeColumn: 1}

// nativeLittleEndian tells whether an []int64 can be filled by reading the
// stored bytes straight into it.
var nativeLittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

type columnWriter struct {
	f *os.File
	w *bufio.Writer
}

func createColumn(dir, name string) (*columnWriter, error) {
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	return &columnWriter{f: f, w: bufio.NewWriterSize(f, 1<<16)}, nil
}

func (c *columnWriter) putInt64(v int64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	c.w.Write(b[:]) // errors surface in close, bufio keeps the first one
}

func (c *columnWriter) putByte(v byte) { c.w.WriteByte(v) }

func (c *columnWriter) close() error {
	err := c.w.Flush()
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readInt64Column reads a whole int64 column of n values.
func readInt64Column(path string, n int) ([]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := make([]int64, n)
	if n == 0 {
		return out, nil
	}
	if nativeLittleEndian {
		buf := unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), n*8)
		if _, err := io.ReadFull(f, buf); err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		return out, nil
	}
	r := bufio.NewReaderSize(f, 1<<16)
	var b [8]byte
	for i := range out {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		out[i] = int64(binary.LittleEndian.Uint64(b[:]))
	}
	return out, nil
}

func readByteColumn(path string, n int) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) != n {
		return nil, fmt.Errorf("%s: %d values, want %d", path, len(b), n)
	}
	return b, nil
}

// countSamples returns the number of samples the columns hold, checking that
// every column agrees.
func countSamples(dir string) (int, error) {
	n := int64(-1)
	for name, width := range columnWidths {
		path := filepath.Join(dir, samplesDir, name)
		st, err := os.Stat(path)
		if err != nil {
			return 0, fmt.Errorf("sample column: %w", err)
		}
		if st.Size()%width != 0 {
			return 0, fmt.Errorf("%s: size %d is not a multiple of %d (truncated?)", path, st.Size(), width)
		}
		count := st.Size() / width
		if n >= 0 && count != n {
			return 0, fmt.Errorf("%s: %d samples, other columns have %d", path, count, n)
		}
		n = count
	}
	return int(n), nil
}

package rundir

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
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

// columnNames lists the sample columns in the order errors name them.
var columnNames = []string{startColumn, latencyColumn, opColumn, hostColumn, outcomeColumn}

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
			return nil, readError(path, err)
		}
		return out, nil
	}
	r := bufio.NewReaderSize(f, 1<<16)
	var b [8]byte
	for i := range out {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, readError(path, err)
		}
		out[i] = int64(binary.LittleEndian.Uint64(b[:]))
	}
	return out, nil
}

// readError names the column once: an *os.PathError names it already.
func readError(path string, err error) error {
	var pe *os.PathError
	switch {
	case errors.As(err, &pe):
		return err
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("%s: shorter than when the run directory was opened (changed since?)", path)
	}
	return fmt.Errorf("read %s: %w", path, err)
}

func readByteColumn(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, readError(path, err)
	}
	return b, nil
}

// countSamples returns the number of samples the columns hold, checking that
// the samples directory and every column are there, are what they should be
// (a directory, regular files), and agree.
func countSamples(dir string) (int, error) {
	sdir := filepath.Join(dir, samplesDir)
	st, err := os.Stat(sdir)
	// Errors name files relative to dir, which Open's error names.
	switch {
	case errors.Is(err, os.ErrNotExist):
		return 0, fmt.Errorf("no %s directory (every run directory has one, holding %s)",
			samplesDir, strings.Join(columnNames, ", "))
	case err != nil:
		return 0, err
	case !st.IsDir():
		return 0, fmt.Errorf("%s: %s, not a directory", samplesDir, fileKind(st.Mode()))
	}
	counts := make([]int64, len(columnNames))
	for i, name := range columnNames {
		path := samplesDir + "/" + name
		st, err := os.Stat(filepath.Join(sdir, name))
		switch {
		case errors.Is(err, os.ErrNotExist):
			return 0, fmt.Errorf("%s: missing (a run directory's samples are %s)",
				path, strings.Join(columnNames, ", "))
		case err != nil:
			return 0, err
		case !st.Mode().IsRegular():
			return 0, fmt.Errorf("%s: %s, not a file of samples", path, fileKind(st.Mode()))
		}
		width := columnWidths[name]
		if st.Size()%width != 0 {
			return 0, fmt.Errorf("%s: %d bytes, not a whole number of %d-byte values (truncated?)",
				path, st.Size(), width)
		}
		counts[i] = st.Size() / width
	}
	for _, c := range counts {
		if c != counts[0] {
			parts := make([]string, len(columnNames))
			for i, name := range columnNames {
				parts[i] = fmt.Sprintf("%s %d", name, counts[i])
			}
			return 0, fmt.Errorf("the sample columns disagree on the number of samples (%s); truncated?",
				strings.Join(parts, ", "))
		}
	}
	if counts[0] > math.MaxInt/8 {
		return 0, fmt.Errorf("%s: %d samples, more than this machine can address", samplesDir, counts[0])
	}
	return int(counts[0]), nil
}

// fileKind names what a non-regular file is, for errors.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	case m.IsRegular():
		return "a file"
	}
	return "not a regular file"
}

package latency

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/gait-dev/gait/internal/clip"
)

// Limits on what one line of input may hold. A reader holds at most one line
// at a time (plus what it keeps of earlier ones), so these bound its memory
// whatever the file; docs/analyze.md states them.
const (
	// MaxCSVLine is the longest CSV line (a row, with every field) gait
	// reads: a latency trace's rows are tens of bytes.
	MaxCSVLine = 4 << 20
	// MaxHistogramLine is the longest histogram log line: one line holds
	// a whole compressed histogram, a few kilobytes in practice.
	MaxHistogramLine = 64 << 20
)

// errLineTooLong is returned by lineReader.next for a line over its limit;
// the reader's line number is the long line's.
var errLineTooLong = errors.New("line too long")

// lineReader reads lines of at most max bytes. A line that fits in the
// bufio.Reader's buffer is returned in place, without a copy.
type lineReader struct {
	r    *bufio.Reader
	max  int
	line int    // number of the line last returned (or refused)
	long []byte // holds a line longer than the read buffer
}

// next returns the next line without its line ending; the slice is valid
// until the following call. A line over the limit is an error (wrapping
// errLineTooLong) that names the limit; the reader stops holding it at the
// limit, so a file that is one huge line costs no more than the limit.
func (l *lineReader) next() ([]byte, error) {
	line, err := l.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		l.long = append(l.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(l.long) > l.max {
				l.line++
				return nil, l.tooLong()
			}
			line, err = l.r.ReadSlice('\n')
			if need := len(l.long) + len(line); need > cap(l.long) {
				// Grow as append would, but never much past the limit.
				l.long = slices.Grow(l.long, min(max(2*cap(l.long), need), l.max+len(line))-len(l.long))
			}
			l.long = append(l.long, line...)
		}
		line = l.long
	}
	if err == io.EOF && len(line) > 0 {
		err = nil // a last line without a newline
	}
	if err != nil {
		return nil, err
	}
	l.line++
	line = bytes.TrimSuffix(line, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) > l.max {
		return nil, l.tooLong()
	}
	return line, nil
}

func (l *lineReader) tooLong() error {
	return fmt.Errorf("%w: over %s, the longest line gait reads", errLineTooLong, sizeText(l.max))
}

// sizeText writes a power-of-two size as "4 MiB".
func sizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}

// An error lists at most maxListed column names, in at most maxListBytes.
const (
	maxListed    = 12
	maxListBytes = 300
)

// columnList lists column names for an error message, as many as fit in
// maxListed names and maxListBytes, quoted as quote does when long or not
// plain text, so that an error stays one short line.
func columnList(names []string) string {
	parts := make([]string, 0, min(len(names), maxListed)+1)
	size := 0
	for i, n := range names {
		if len(n) > clip.Max || strconv.Quote(n) != `"`+n+`"` || strings.Contains(n, ", ") {
			n = clip.Quote(n) // long, or holding a control character or the separator
		}
		if size += len(n) + 2; i == maxListed || size > maxListBytes {
			parts = append(parts, fmt.Sprintf("and %d more", len(names)-i))
			break
		}
		parts = append(parts, n)
	}
	return strings.Join(parts, ", ")
}

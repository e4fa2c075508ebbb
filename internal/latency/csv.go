package latency

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/gait-dev/gait/internal/clip"
	"github.com/gait-dev/gait/internal/rundir"
)

// latencyColumns are the column names recognised without --latency-column,
// each carrying its unit as a suffix.
var latencyColumns = []string{"latency_ns", "latency_us", "latency_ms", "latency_s"}

// csvReader reads a CSV file one line at a time. Rows whose fields are not
// quoted (nearly all rows of a latency trace) are split in place with
// bytes.IndexByte, without allocating; rows with a '"' take a quote-aware
// path. Rows are grouped by the raw bytes of their factor fields, so a
// configuration's factor values are decoded once, when it first appears.
type csvReader struct {
	path   string
	lines  lineReader
	header []string
	latCol int
	// notFactor marks the columns that are not factors: the latency, and
	// gait export's per-request columns (rundir.PerRequestColumns).
	notFactor  []bool
	perRequest bool // a column besides the latency is not a factor
	perSec     float64
	groups     []*csvGroup
	index      map[string]*csvGroup // by the raw bytes of an unquoted row
	quoted     map[string]*csvGroup // by the fields of a quoted row
	// byValues finds a group by its factor values, however a row spells them.
	byValues map[string]*csvGroup
	key      []byte // scratch for a row's factor bytes
	lastKey  []byte
	last     *csvGroup
}

type csvGroup struct {
	values    []string // factor values, in header order without the latency column
	latencies []float64
}

func loadCSV(path string, r *bufio.Reader, opt Options) ([]Configuration, error) {
	return readCSV(path, r, opt, MaxCSVLine)
}

// readCSV is loadCSV with a line limit of maxLine bytes.
func readCSV(path string, r *bufio.Reader, opt Options, maxLine int) ([]Configuration, error) {
	c := &csvReader{path: path, lines: lineReader{r: r, max: maxLine},
		index: map[string]*csvGroup{}, quoted: map[string]*csvGroup{}, byValues: map[string]*csvGroup{}}
	if err := c.readHeader(opt); err != nil {
		return nil, err
	}
	for {
		line, err := c.lines.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, c.readError(err)
		}
		if len(line) == 0 {
			continue
		}
		if err := c.row(line); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, c.lines.line, err)
		}
	}
	if len(c.groups) == 0 {
		return nil, fmt.Errorf("%s: no data rows after the header", path)
	}
	return c.configurations(), nil
}

// readError names the file, and the line when the error is about one.
func (c *csvReader) readError(err error) error {
	if errors.Is(err, errLineTooLong) {
		return fmt.Errorf("%s:%d: %w", c.path, c.lines.line, err)
	}
	return fmt.Errorf("read %s: %w", c.path, err)
}

func (c *csvReader) readHeader(opt Options) error {
	var line []byte
	for len(line) == 0 {
		var err error
		if line, err = c.lines.next(); err == io.EOF {
			return fmt.Errorf("%s: no header row", c.path)
		} else if err != nil {
			return c.readError(err)
		}
		if c.lines.line == 1 {
			line = bytes.TrimPrefix(line, utf8BOM)
		}
	}
	fields, err := splitQuoted(line)
	if err != nil {
		return fmt.Errorf("%s:%d: header: %w", c.path, c.lines.line, err)
	}
	seen := map[string]bool{}
	for i, f := range fields {
		name := strings.TrimSpace(string(f))
		if name == "" {
			return fmt.Errorf("%s:%d: header: column %d has no name", c.path, c.lines.line, i+1)
		}
		if seen[name] {
			return fmt.Errorf("%s:%d: header: column %s appears twice", c.path, c.lines.line, clip.Quote(name))
		}
		seen[name] = true
		c.header = append(c.header, name)
	}
	if c.latCol, c.perSec, err = latencyColumn(c.header, opt); err != nil {
		return fmt.Errorf("%s:%d: %w", c.path, c.lines.line, err)
	}
	c.notFactor = make([]bool, len(c.header))
	c.notFactor[c.latCol] = true
	perRequest := rundir.PerRequestColumns(c.header)
	for i, h := range c.header {
		if slices.Contains(perRequest, h) {
			c.notFactor[i], c.perRequest = true, true
		}
	}
	return nil
}

// latencyColumn picks the latency column and its unit (as units per second).
func latencyColumn(header []string, opt Options) (int, float64, error) {
	col := -1
	if opt.LatencyColumn != "" {
		for i, h := range header {
			if h == opt.LatencyColumn {
				col = i
			}
		}
		if col < 0 {
			return 0, 0, fmt.Errorf("no column %s (columns: %s)", clip.Quote(opt.LatencyColumn), columnList(header))
		}
	} else {
		var found []string
		for i, h := range header {
			if isLatencyName(h) || (opt.Unit != "" && h == "latency") {
				col = i
				found = append(found, h)
			}
		}
		switch {
		case len(found) == 0:
			return 0, 0, fmt.Errorf("no latency column: name it latency_ns, latency_us, latency_ms or latency_s, "+
				"or choose one with --latency-column (columns: %s)", columnList(header))
		case len(found) > 1:
			return 0, 0, fmt.Errorf("several latency columns (%s): choose one with --latency-column",
				columnList(found))
		}
	}
	name := header[col]
	suffix := ""
	if i := strings.LastIndexByte(name, '_'); i >= 0 {
		if _, ok := units[name[i+1:]]; ok {
			suffix = name[i+1:]
		}
	}
	unit := opt.Unit
	switch {
	case unit == "" && suffix == "":
		return 0, 0, fmt.Errorf("column %s: its name gives no unit: give one with --unit", columnList([]string{name}))
	case unit == "":
		unit = suffix
	case suffix != "" && units[suffix] != units[unit]:
		return 0, 0, fmt.Errorf("column %s holds %s but --unit says %s", name, suffix, unit)
	}
	perSec, err := perSecond(unit)
	return col, perSec, err
}

func isLatencyName(h string) bool {
	for _, n := range latencyColumns {
		if h == n {
			return true
		}
	}
	return false
}

// row adds one data row.
func (c *csvReader) row(line []byte) error {
	if bytes.IndexByte(line, '"') >= 0 || c.perRequest {
		return c.quotedRow(line)
	}
	// Find the latency field and check the field count in one scan.
	latStart, latEnd := -1, -1
	n, start := 0, 0
	for {
		i := bytes.IndexByte(line[start:], ',')
		end := len(line)
		if i >= 0 {
			end = start + i
		}
		if n == c.latCol {
			latStart, latEnd = start, end
		}
		n++
		if i < 0 {
			break
		}
		start = end + 1
	}
	if n != len(c.header) {
		return fmt.Errorf("%d fields, the header has %d", n, len(c.header))
	}
	v, err := c.latency(line[latStart:latEnd])
	if err != nil {
		return err
	}
	// The factor bytes are the line without the latency field (its commas
	// stay, so "1,23" and "12,3" differ).
	var key []byte
	switch {
	case latStart == 0:
		key = line[latEnd:]
	case latEnd == len(line):
		key = line[:latStart]
	default:
		c.key = append(append(c.key[:0], line[:latStart]...), line[latEnd:]...)
		key = c.key
	}
	g := c.last
	if g == nil || !bytes.Equal(key, c.lastKey) {
		g = c.index[string(key)]
		if g == nil {
			g = c.newGroup(splitPlain(line))
			c.index[string(key)] = g
		}
		c.last, c.lastKey = g, append(c.lastKey[:0], key...)
	}
	g.latencies = append(g.latencies, v)
	return nil
}

// quotedRow adds a row that contains quotes, splitting it as RFC 4180 says,
// or a row of a file with per-request columns, which the plain path's key
// (the line without its latency) would make a configuration each.
func (c *csvReader) quotedRow(line []byte) error {
	fields, err := splitQuoted(line)
	if err != nil {
		return err
	}
	if len(fields) != len(c.header) {
		return fmt.Errorf("%d fields, the header has %d", len(fields), len(c.header))
	}
	v, err := c.latency(fields[c.latCol])
	if err != nil {
		return err
	}
	// Quoted rows have an index of their own, keyed by each field's
	// length and bytes, so no field's content can make two rows' keys
	// agree (a NUL separator could: "a\x00","b" and "a","\x00b").
	key := c.key[:0]
	for i, f := range fields {
		if !c.notFactor[i] {
			key = append(binary.AppendUvarint(key, uint64(len(f))), f...)
		}
	}
	c.key = key
	g := c.quoted[string(key)]
	if g == nil {
		g = c.newGroup(fields)
		c.quoted[string(key)] = g
	}
	c.last = nil
	g.latencies = append(g.latencies, v)
	return nil
}

// newGroup returns the group of a row's fields: the group of an earlier row
// whose factor values agree (spelled with other spaces or quotes), or a new
// one. Rows of one configuration thus share one group, and its latencies
// stay in the order they were read.
func (c *csvReader) newGroup(fields [][]byte) *csvGroup {
	var values []string
	var k []byte // each value's length and bytes: no value can fake a boundary
	for i, f := range fields {
		if !c.notFactor[i] {
			v := strings.TrimSpace(string(f))
			values = append(values, v)
			k = append(binary.AppendUvarint(k, uint64(len(v))), v...)
		}
	}
	if g := c.byValues[string(k)]; g != nil {
		return g
	}
	g := &csvGroup{values: values}
	c.byValues[string(k)] = g
	c.groups = append(c.groups, g)
	return g
}

// latency parses one latency field into seconds.
func (c *csvReader) latency(field []byte) (float64, error) {
	field = bytes.TrimSpace(field)
	v, ok := parseUint(field)
	if !ok {
		var err error
		v, err = strconv.ParseFloat(unsafe.String(unsafe.SliceData(field), len(field)), 64)
		switch {
		case err != nil && !errors.Is(err, strconv.ErrRange):
			return 0, fmt.Errorf("column %s: %s is not a number", c.header[c.latCol], clip.Quote(field))
		case err != nil || math.IsInf(v, 0) || math.IsNaN(v):
			return 0, fmt.Errorf("column %s: %s is not a finite number", c.header[c.latCol], clip.Quote(field))
		case v < 0:
			return 0, fmt.Errorf("column %s: negative latency %s", c.header[c.latCol], clip.Quote(field))
		}
	}
	return v / c.perSec, nil
}

// parseUint parses a plain decimal integer of up to 15 digits, exactly
// representable as a float64, so the result equals strconv.ParseFloat's.
// Latency traces are mostly integers, and this is several times faster.
func parseUint(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var n uint64
	for _, ch := range b {
		d := ch - '0'
		if d > 9 {
			return 0, false
		}
		n = n*10 + uint64(d)
	}
	return float64(n), true
}

// splitPlain splits a line without quotes at its commas.
func splitPlain(line []byte) [][]byte {
	return bytes.Split(line, []byte{','})
}

// splitQuoted splits one CSV line as RFC 4180 says: a field may be enclosed
// in double quotes, inside which commas are literal and "" stands for ".
// A quoted field cannot continue onto the next line: gait reads one row per
// line, and says so rather than misreading the file.
func splitQuoted(line []byte) ([][]byte, error) {
	var fields [][]byte
	for {
		if len(line) > 0 && line[0] == '"' {
			var field []byte
			i := 1
			for {
				j := bytes.IndexByte(line[i:], '"')
				if j < 0 {
					return nil, fmt.Errorf("quoted field %d does not end on this line (gait reads one row per line)", len(fields)+1)
				}
				field = append(field, line[i:i+j]...)
				i += j + 1
				if i < len(line) && line[i] == '"' {
					field = append(field, '"')
					i++
					continue
				}
				break
			}
			if i < len(line) && line[i] != ',' {
				return nil, fmt.Errorf("field %d: text after the closing quote", len(fields)+1)
			}
			fields = append(fields, field)
			if i >= len(line) {
				return fields, nil
			}
			line = line[i+1:]
			continue
		}
		i := bytes.IndexByte(line, ',')
		if i < 0 {
			if bytes.IndexByte(line, '"') >= 0 {
				return nil, fmt.Errorf("field %d: a quote inside an unquoted field", len(fields)+1)
			}
			return append(fields, line), nil
		}
		if bytes.IndexByte(line[:i], '"') >= 0 {
			return nil, fmt.Errorf("field %d: a quote inside an unquoted field", len(fields)+1)
		}
		fields = append(fields, line[:i])
		line = line[i+1:]
	}
}

// configurations names the groups, in header order.
func (c *csvReader) configurations() []Configuration {
	var names []string
	for i, h := range c.header {
		if !c.notFactor[i] {
			names = append(names, h)
		}
	}
	out := make([]Configuration, 0, len(c.groups))
	for _, g := range c.groups {
		factors := make(map[string]string, len(names))
		for i, n := range names {
			factors[n] = g.values[i]
		}
		out = append(out, Configuration{Name: nameOf(factors, names, c.path), Factors: factors,
			Latencies: g.latencies, Source: c.path})
	}
	return out
}

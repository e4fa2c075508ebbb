package rundir

import (
	"bufio"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// csvColumns are the columns WriteCSV writes before the run's factors.
var csvColumns = []string{"start_s", "latency_ns", "op", "host", "outcome"}

// involvedCSV follows csvColumns when the run's clients reported the
// hosts each request involved.
const involvedCSV = "involved"

// PerRequestColumns returns the columns of a CSV header that WriteCSV
// wrote and that describe one request rather than the configuration it
// belongs to (its start, target host, outcome, involved hosts), or nil
// when the header is not WriteCSV's. A reader grouping rows into
// configurations must not take them for factors: every request would be
// a configuration of its own. op stays a factor: requests of one kind
// are a configuration.
func PerRequestColumns(header []string) []string {
	if len(header) < len(csvColumns) || !slices.Equal(header[:len(csvColumns)], csvColumns) {
		return nil
	}
	cols := []string{"start_s", "host", "outcome"}
	if len(header) > len(csvColumns) && header[len(csvColumns)] == involvedCSV {
		cols = append(cols, involvedCSV)
	}
	return cols
}

// WriteCSV writes every sample as CSV, one row per request: start_s (the
// intended start, seconds since the run began), latency_ns, op, host,
// outcome, involved (the hosts the request involved beyond host, joined
// by "+", when the run's clients reported them), then the run's configuration factors, sorted by name, as constant
// columns; gait analyze reads it back. A name or value that holds a comma,
// a quote or a line break is quoted as RFC 4180 says.
func (r *Run) WriteCSV(out io.Writer) error {
	samples, err := r.Samples()
	if err != nil {
		return err
	}
	names := slices.Sorted(maps.Keys(r.Config.Factors))
	w := bufio.NewWriterSize(out, 1<<16)
	w.WriteString(strings.Join(csvColumns, ","))
	involved := r.HasInvolved()
	if involved {
		w.WriteString("," + involvedCSV)
	}
	var factors []byte // the constant tail of every row
	for _, n := range names {
		w.WriteString("," + csvField(n))
		factors = append(append(factors, ','), csvField(r.Config.Factors[n])...)
	}
	w.WriteByte('\n')
	// Names are quoted once, not per row.
	ops := make([]string, 256)
	hosts := make([]string, 256)
	for i := range 256 {
		ops[i], hosts[i] = csvField(r.OpName(uint8(i))), csvField(r.HostName(uint8(i)))
	}
	var buf []byte
	for _, s := range samples {
		buf = strconv.AppendFloat(buf[:0], s.Start.Seconds(), 'f', 9, 64)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(s.Latency), 10)
		buf = append(buf, ',')
		buf = append(buf, ops[s.Op]...)
		buf = append(buf, ',')
		buf = append(buf, hosts[s.Host]...)
		buf = append(buf, ',')
		buf = append(buf, s.Outcome.String()...)
		if involved {
			buf = append(buf, ',')
			buf = append(buf, csvField(r.involvedNames(s.Involved))...)
		}
		buf = append(buf, factors...)
		buf = append(buf, '\n')
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return w.Flush()
}

// csvField quotes a field when it needs it.
func csvField(s string) string {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

package latency

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const benchRows = 1_000_000

// benchCSV writes a trace shaped like the redis one: a few factors and a
// latency in microseconds (an integer, or with decimals when decimal is set
// and strconv.ParseFloat does the work), rows of one configuration together.
func benchCSV(b *testing.B, decimal bool) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.csv")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.WriteString("clients,value_size,op,latency_us\n")
	rng := rand.New(rand.NewPCG(1, 2))
	ops := []string{"get", "set"}
	for i := range benchRows {
		cfg := i / (benchRows / 16)
		lat := strconv.Itoa(20 + rng.IntN(200))
		if decimal {
			lat = strconv.FormatFloat(20+200*rng.Float64(), 'f', 3, 64)
		}
		fmt.Fprintf(w, "%d,%d,%s,%s\n", 1<<(cfg%4), 64<<(cfg/4%2), ops[cfg/8%2], lat)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	return path
}

// BenchmarkLoadCSV compares gait's CSV loader with a straightforward
// encoding/csv one grouping the same rows; rows/s is the figure of merit.
func BenchmarkLoadCSV(b *testing.B) {
	path, decimal := benchCSV(b, false), benchCSV(b, true)
	b.Run("gait-decimal", func(b *testing.B) {
		for b.Loop() {
			cs, err := Load(decimal, Options{})
			if err != nil || len(cs) != 16 {
				b.Fatal(err, len(cs))
			}
		}
		b.ReportMetric(float64(b.N)*benchRows/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("gait", func(b *testing.B) {
		for b.Loop() {
			cs, err := Load(path, Options{})
			if err != nil || len(cs) != 16 {
				b.Fatal(err, len(cs))
			}
		}
		b.ReportMetric(float64(b.N)*benchRows/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("encoding-csv", func(b *testing.B) {
		for b.Loop() {
			groups, err := loadWithEncodingCSV(path)
			if err != nil || len(groups) != 16 {
				b.Fatal(err, len(groups))
			}
		}
		b.ReportMetric(float64(b.N)*benchRows/b.Elapsed().Seconds(), "rows/s")
	})
}

// loadWithEncodingCSV is the peer: encoding/csv with a reused record, the
// factors joined into a map key, ParseFloat for the latency.
func loadWithEncodingCSV(path string) (map[string][]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReaderSize(f, readBuffer))
	r.ReuseRecord = true
	if _, err := r.Read(); err != nil {
		return nil, err
	}
	groups := map[string][]float64{}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return groups, nil
		}
		if err != nil {
			return nil, err
		}
		v, err := strconv.ParseFloat(rec[3], 64)
		if err != nil {
			return nil, err
		}
		key := strings.Join(rec[:3], "\x00")
		groups[key] = append(groups[key], v/1e6)
	}
}

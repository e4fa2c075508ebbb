// Command replica-bench-figure draws docs/img/replica-throughput.svg from
// the markdown table scripts/replica-bench.sh prints: gait's throughput as a
// fraction of plain redis-server's, per test, concurrency and pipeline depth.
// Run it from the repository root:
//
//	scripts/replica-bench.sh | tee /tmp/bench.md
//	go run ./scripts/replica-bench-figure < /tmp/bench.md
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gait-dev/gait/internal/atomicfile"
	"github.com/gait-dev/gait/internal/report"
)

const out = "docs/img/replica-throughput.svg"

func main() {
	if err := run(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "replica-bench-figure:", err)
		os.Exit(1)
	}
}

func run(in io.Reader) error {
	chart := report.BarChart{
		Title: "gait replica (3 voters) throughput / plain redis-server",
		Y:     report.Axis{Label: "throughput ratio", Unit: "%"},
	}
	series := map[string]*report.Series{}
	sc := bufio.NewScanner(in)
	for line := 1; sc.Scan(); line++ {
		cells := strings.Split(strings.Trim(strings.TrimSpace(sc.Text()), "|"), "|")
		if len(cells) != 10 {
			continue
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		test := cells[0]
		if test != "GET" && test != "SET" {
			continue // the header and its rule
		}
		ratio, err := strconv.ParseFloat(cells[5], 64)
		if err != nil {
			return fmt.Errorf("line %d: ratio %q: %w", line, cells[5], err)
		}
		category := fmt.Sprintf("c=%s P=%s", cells[1], cells[2])
		if test == "GET" {
			chart.Categories = append(chart.Categories, category)
		}
		s := series[test]
		if s == nil {
			s = &report.Series{Name: test}
			series[test] = s
		}
		s.Y = append(s.Y, ratio)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(chart.Categories) == 0 || series["SET"] == nil || len(series["SET"].Y) != len(chart.Categories) {
		return fmt.Errorf("standard input holds no complete replica-bench table (a GET and a SET row per c and P)")
	}
	chart.Series = []report.Series{*series["GET"], *series["SET"]}
	return atomicfile.WriteBytes(out, []byte(chart.SVG()+"\n"))
}

// Command exalt-figures draws the Exalt case study's figures as one HTML
// page per measurement, from what scripts/exalt-nnbench.sh collected: the
// JSON lines the hdfs package's TestExalt* measurements write (ops.jsonl,
// dir.jsonl, heap.jsonl, scale.jsonl) and the CSV of the append run (gait export).
// Each part is drawn when its input exists. Run it from the repository
// root:
//
//	go run ./scripts/exalt-figures -in runs/exalt -out runs/exalt
//
// then scripts/screenshot.sh each page to a PNG.
package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/stat"

	"github.com/gait-dev/gait/internal/report"
)

func main() {
	in := flag.String("in", "", "the directory holding ops.jsonl, dir.jsonl, heap.jsonl, scale.jsonl and append.csv")
	out := flag.String("out", "", "the directory for the pages (exalt-*.html)")
	flag.Parse()
	if *in == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: exalt-figures -in DIR -out DIR")
		os.Exit(2)
	}
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "exalt-figures:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	drawn := 0
	for _, part := range []struct {
		file string
		draw func(path string) (*report.Page, error)
	}{
		{"ops.jsonl", opsPage},
		{"dir.jsonl", dirPage},
		{"heap.jsonl", heapPage},
		{"append.csv", appendPage},
		{"scale.jsonl", scalePage},
	} {
		path := filepath.Join(in, part.file)
		// A part not run, or still running, has no rows yet.
		if st, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) || err == nil && st.Size() == 0 {
			continue
		}
		p, err := part.draw(path)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		name := filepath.Join(out, "exalt-"+part.file[:len(part.file)-len(filepath.Ext(part.file))]+".html")
		if err := p.WriteFile(name); err != nil {
			return err
		}
		fmt.Println(name)
		drawn++
	}
	if drawn == 0 {
		return fmt.Errorf("%s holds none of ops.jsonl, dir.jsonl, heap.jsonl, scale.jsonl, append.csv", in)
	}
	return nil
}

// readRows decodes each line of path as a T.
func readRows[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []T
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		var r T
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		rows = append(rows, r)
	}
	return rows, sc.Err()
}

type peer struct {
	Handlers int  `json:"handlers"`
	FGL      bool `json:"fgl"`
}

func (p peer) String() string {
	if p.FGL {
		return fmt.Sprintf("fine-grained lock, %d handlers", p.Handlers)
	}
	return fmt.Sprintf("global lock, %d handlers", p.Handlers)
}

var peers = []peer{{10, false}, {256, false}, {10, true}, {256, true}}

func opsPage(path string) (*report.Page, error) {
	type row struct {
		peer
		Round     int     `json:"round"`
		Op        string  `json:"op"`
		Ops       int64   `json:"ops"`
		OpsPerSec float64 `json:"ops_per_sec"`
	}
	rows, err := readRows[row](path)
	if err != nil {
		return nil, err
	}
	var ops []string
	for _, r := range rows {
		if !slices.Contains(ops, r.Op) {
			ops = append(ops, r.Op)
		}
	}
	chart := report.BarChart{Title: "NameNode ops/s under NNThroughputBenchmark (mean of rounds)", Y: report.Axis{Label: "throughput", Unit: "ops/s"}, Categories: ops}
	var table [][]string
	for _, p := range peers {
		s := report.Series{Name: p.String()}
		for _, op := range ops {
			var v []float64
			for _, r := range rows {
				if r.peer == p && r.Op == op {
					v = append(v, r.OpsPerSec)
				}
			}
			if len(v) == 0 {
				s.Y = append(s.Y, math.NaN())
				continue
			}
			s.Y = append(s.Y, stat.Mean(v, nil))
			table = append(table, []string{p.String(), op, strconv.Itoa(len(v)), fmt.Sprintf("%.0f", stat.Mean(v, nil)), fmt.Sprintf("%.0f", slices.Min(v)), fmt.Sprintf("%.0f", slices.Max(v))})
		}
		chart.Series = append(chart.Series, s)
	}
	p := report.NewPage("Exalt: the NameNode alone (NNThroughputBenchmark)")
	p.Figure("NameNode operations per second, Hadoop 3.5.0, by RPC handler count and namesystem lock", chart)
	p.Table([]string{"peer", "op", "rounds", "mean ops/s", "min", "max"}, table)
	return p, nil
}

func dirPage(path string) (*report.Page, error) {
	type row struct {
		peer
		T     float64 `json:"t"`
		Files float64 `json:"files"`
		Total int64   `json:"total_ops"`
		Rate  float64 `json:"ops_per_sec"`
	}
	rows, err := readRows[row](path)
	if err != nil {
		return nil, err
	}
	chart := report.LineChart{Title: "Creates per second as one directory grows", X: report.Axis{Label: "entries in the directory"}, Y: report.Axis{Label: "creates", Unit: "/s", Zero: true}}
	header := []string{"entries"}
	overallRow := []string{"all (creates in s: /s)"}
	var deciles [10][]string
	for d := range deciles {
		deciles[d] = []string{fmt.Sprintf("%d-%d%%", d*10, d*10+10)}
	}
	for _, p := range peers {
		var t, files []float64
		var total int64
		var overall float64
		for _, r := range rows {
			switch {
			case r.peer != p:
			case r.Total > 0:
				total, overall = r.Total, r.Rate
			case r.Files > 0:
				t, files = append(t, r.T), append(files, r.Files)
			}
		}
		// After its last create the benchmark deletes its directory (no
		// -keepResults), and a sample may see that: the growth ends at
		// the largest count.
		if top := slices.Index(files, slices.Max(append([]float64{0}, files...))); top >= 0 {
			t, files = t[:top+1], files[:top+1]
		}
		if len(t) < 2 {
			continue
		}
		// A rate from samples 10 s apart: the NameNode's FilesTotal is
		// refreshed behind JMX every few seconds, so neighbouring samples
		// often repeat.
		s := report.Series{Name: p.String()}
		for i := 10; i < len(t); i += 10 {
			if dt := t[i] - t[i-10]; dt > 0 {
				s.X = append(s.X, files[i])
				s.Y = append(s.Y, (files[i]-files[i-10])/dt)
			}
		}
		chart.Series = append(chart.Series, s)
		// By decile of the final size: the rate while the directory grew
		// through it. One column per peer.
		last := files[len(files)-1]
		header = append(header, p.String())
		overallRow = append(overallRow, fmt.Sprintf("%d in %.0f s: %.0f", total, float64(total)/overall, overall))
		for d := range 10 {
			lo, hi := last*float64(d)/10, last*float64(d+1)/10
			i := slices.IndexFunc(files, func(f float64) bool { return f >= lo })
			j := slices.IndexFunc(files, func(f float64) bool { return f >= hi })
			cell := ""
			if i >= 0 && j > i && t[j] > t[i] {
				cell = fmt.Sprintf("%.0f", (files[j]-files[i])/(t[j]-t[i]))
			}
			deciles[d] = append(deciles[d], cell)
		}
	}
	p := report.NewPage("Exalt: creates in one directory")
	p.Figure("Creates (create + close, empty files, 64 threads of NNThroughputBenchmark) per second against the directory's size", chart)
	p.Paragraph("Creates per second while the directory grew through each tenth of its final size.")
	p.Table(header, append(deciles[:], overallRow))
	return p, nil
}

func heapPage(path string) (*report.Page, error) {
	type row struct {
		Step      int     `json:"step"`
		BlockSize float64 `json:"block_size"`
		Blocks    float64 `json:"blocks"`
		Files     float64 `json:"files"`
		Used      float64 `json:"capacity_used"`
		Heap      float64 `json:"heap_bytes"`
		// live bytes of the classes that grow with blocks (class histogram)
		Classes map[string]float64 `json:"classes"`
	}
	rows, err := readRows[row](path)
	if err != nil {
		return nil, err
	}
	if len(rows) < 2 {
		return nil, fmt.Errorf("%d rows: a slope needs 2", len(rows))
	}
	var x, y []float64
	var table [][]string
	for _, r := range rows {
		x, y = append(x, r.Blocks), append(y, r.Heap)
		table = append(table, []string{strconv.Itoa(r.Step), fmt.Sprintf("%.0f", r.Blocks), fmt.Sprintf("%.0f", r.Files), fmt.Sprintf("%.1f", r.Used/1e6), fmt.Sprintf("%.1f", r.Heap/1e6)})
	}
	alpha, beta := stat.LinearRegression(x, y, nil, false)
	r2 := stat.RSquared(x, y, nil, alpha, beta)
	chart := report.ScatterChart{Title: "NameNode heap after a full GC against blocks stored", X: report.Axis{Label: "blocks (BlocksTotal)"}, Y: report.Axis{Label: "heap used", Unit: "B"}}
	chart.Series = []report.Series{{Name: "measured", X: x, Y: y}, {Name: fmt.Sprintf("fit: %.0f B/block", beta), X: []float64{0, slices.Max(x)}, Y: []float64{alpha, alpha + beta*slices.Max(x)}}}
	p := report.NewPage("Exalt: NameNode heap against stored capacity")
	p.Figure("NameNode heap used after two full GCs (jcmd GC.run) against BlocksTotal, replication 3", chart)
	p.Table([]string{"step", "blocks", "files", "DataNodes' used (MB)", "heap (MB)"}, table)
	p.Paragraph(fmt.Sprintf("Least-squares fit of the whole heap: %.0f bytes per block (R² %.3f), %.1f MB at no blocks.", beta, r2, alpha/1e6))
	// The class histogram: what each block added, class by class, from
	// the first step to the last.
	first, last := rows[0], rows[len(rows)-1]
	if db := last.Blocks - first.Blocks; db > 0 && len(last.Classes) > 0 {
		var perBlock float64
		var ct [][]string
		for _, name := range []string{"BlockInfoContiguous", "Object[]", "BlockInfo[]"} {
			v := (last.Classes[name] - first.Classes[name]) / db
			perBlock += v
			ct = append(ct, []string{name, fmt.Sprintf("%.0f", first.Classes[name]), fmt.Sprintf("%.0f", last.Classes[name]), fmt.Sprintf("%.1f", v)})
		}
		ct = append(ct, []string{"per block", "", "", fmt.Sprintf("%.1f", perBlock)})
		p.Table([]string{"class (live bytes, jcmd GC.class_histogram)", fmt.Sprintf("at %.0f blocks", first.Blocks), fmt.Sprintf("at %.0f blocks", last.Blocks), "bytes per block"}, ct)
		// Exalt's unit: raw (replicated) bytes stored per byte of
		// NameNode heap, at Hadoop's default block size and replication.
		const block, replication, pb = 128 << 20, 3, 1e15
		perPB := perBlock * pb / (block * replication)
		p.Paragraph(fmt.Sprintf("By the class histogram a block costs %.0f bytes of heap. At Hadoop's 128 MiB blocks and replication 3 that is %.2f GB of heap per PB of raw capacity, %.1f PB raw per GB of heap (Exalt: 1.2 PB per GB, files and directories included), before the files' own inodes and the BlocksMap's table, which Hadoop sizes at start from the heap's maximum.", perBlock, perPB/1e9, 1e9/perPB))
	}
	return p, nil
}

// appendPage reads gait export's CSV of the append run: one row per
// append, in order, so the row's index is the file's block count.
func appendPage(path string) (*report.Page, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) < 2 {
		return nil, fmt.Errorf("no samples")
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	li, ok1 := col["latency_ns"]
	oi, ok2 := col["outcome"]
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("no latency_ns or outcome column")
	}
	var lat []float64
	for _, r := range recs[1:] {
		if r[oi] != "ok" {
			continue
		}
		v, err := strconv.ParseFloat(r[li], 64)
		if err != nil {
			return nil, fmt.Errorf("latency %q: %w", r[li], err)
		}
		lat = append(lat, v/1e9)
	}
	s := report.Series{Name: "append latency"}
	med := report.Series{Name: "median of each 100"}
	for i, v := range lat {
		s.X, s.Y = append(s.X, float64(i+1)), append(s.Y, v)
		if (i+1)%100 == 0 {
			w := slices.Clone(lat[i-99 : i+1])
			slices.Sort(w)
			med.X, med.Y = append(med.X, float64(i+1)), append(med.Y, stat.Quantile(0.5, stat.Empirical, w, nil))
		}
	}
	chart := report.ScatterChart{Title: "One file growing: append latency against the file's blocks", X: report.Axis{Label: "blocks in the file (appends so far)"}, Y: report.Axis{Label: "latency", Unit: "s", Log: true}, Series: []report.Series{s, med}}
	var table [][]string
	n := len(lat)
	for d := range 10 {
		w := slices.Clone(lat[n*d/10 : n*(d+1)/10])
		if len(w) == 0 {
			continue
		}
		slices.Sort(w)
		table = append(table, []string{fmt.Sprintf("%d-%d", n*d/10+1, n*(d+1)/10), strconv.Itoa(len(w)), fmt.Sprintf("%.1f", 1e3*stat.Mean(w, nil)), fmt.Sprintf("%.1f", 1e3*stat.Quantile(0.5, stat.Empirical, w, nil)), fmt.Sprintf("%.1f", 1e3*stat.Quantile(0.99, stat.Empirical, w, nil))})
	}
	p := report.NewPage("Exalt: one file growing by appends")
	p.Figure("Each append of one client (in a new block) against how many blocks the file had", chart)
	p.Table([]string{"blocks", "appends", "mean ms", "p50 ms", "p99 ms"}, table)
	return p, nil
}

// scalePage draws TestExaltScale's rows: aggregate write throughput
// against DataNodes, one line per NameNode configuration, and beside it
// what each run's CPU went to.
func scalePage(path string) (*report.Page, error) {
	type row struct {
		peer
		DataNodes int     `json:"datanodes"`
		Clients   int     `json:"clients"`
		Files     int64   `json:"files"`
		Errors    int64   `json:"errors"`
		MBps      float64 `json:"mb_per_sec"`
		MeanMs    float64 `json:"mean_ms"`
		Idle      float64 `json:"idle_cpu"`
		Load      float64 `json:"load1"`
		Seconds   float64 `json:"seconds"`
		CPUClient float64 `json:"cpu_client_s"`
		CPUNN     float64 `json:"cpu_namenode_s"`
		CPUDNs    float64 `json:"cpu_datanodes_s"`
		CPUGait   float64 `json:"cpu_gait_s"`
		Busy      float64 `json:"busy_handlers_max"`
		Queue     float64 `json:"call_queue_max"`
		PSS       float64 `json:"dn_pss_mean_mib"`
		Threads   float64 `json:"dn_threads_mean"`
	}
	rows, err := readRows[row](path)
	if err != nil {
		return nil, err
	}
	chart := report.LineChart{Title: "Aggregate write throughput (1 MiB files, replication 3) against DataNodes", Markers: true,
		X: report.Axis{Label: "DataNodes", Log: true}, Y: report.Axis{Label: "throughput", Unit: "MB/s", Zero: true}}
	// On a shared machine the throughput follows the CPU the run got;
	// bytes per CPU second of everything that wrote them does not.
	perCPU := report.LineChart{Title: "MB written per CPU second of the client, NameNode, DataNodes and gait", Markers: true,
		X: report.Axis{Label: "DataNodes", Log: true}, Y: report.Axis{Label: "MB per CPU second", Zero: true}}
	for _, p := range peers {
		s := report.Series{Name: p.String()}
		e := report.Series{Name: p.String()}
		for _, r := range rows {
			if r.peer == p {
				s.X, s.Y = append(s.X, float64(r.DataNodes)), append(s.Y, r.MBps)
				e.X, e.Y = append(e.X, float64(r.DataNodes)), append(e.Y, float64(r.Files)*(1<<20)/1e6/(r.CPUClient+r.CPUNN+r.CPUDNs+r.CPUGait))
			}
		}
		if len(s.X) > 0 {
			chart.Series = append(chart.Series, s)
			perCPU.Series = append(perCPU.Series, e)
		}
	}
	// Where the CPU went: cores used on average during the writes, by
	// kind of process, over every peer of a count.
	cpu := report.BarChart{Title: "CPU used during the writes (mean over the NameNode configurations)", Y: report.Axis{Label: "CPU cores"}}
	kinds := []string{"HDFS client", "NameNode", "all DataNodes", "gait (emulating FUSE, data)"}
	sums := map[int][]float64{}
	n := map[int]float64{}
	var counts []int
	for _, r := range rows {
		if _, ok := sums[r.DataNodes]; !ok {
			counts = append(counts, r.DataNodes)
			sums[r.DataNodes] = make([]float64, len(kinds))
		}
		for i, v := range []float64{r.CPUClient, r.CPUNN, r.CPUDNs, r.CPUGait} {
			sums[r.DataNodes][i] += v / r.Seconds
		}
		n[r.DataNodes]++
	}
	for _, c := range counts {
		cpu.Categories = append(cpu.Categories, strconv.Itoa(c)+" DataNodes")
	}
	for i, k := range kinds {
		s := report.Series{Name: k}
		for _, c := range counts {
			s.Y = append(s.Y, sums[c][i]/n[c])
		}
		cpu.Series = append(cpu.Series, s)
	}
	var table [][]string
	for _, r := range rows {
		lock := "global"
		if r.FGL {
			lock = "fine"
		}
		table = append(table, []string{strconv.Itoa(r.DataNodes), fmt.Sprintf("%d, %s", r.Handlers, lock), fmt.Sprintf("%d", r.Files), strconv.FormatInt(r.Errors, 10), fmt.Sprintf("%.2f", r.MBps), fmt.Sprintf("%.0f", r.MeanMs),
			fmt.Sprintf("%.0f%%, %.0f", 100*r.Idle, r.Load), fmt.Sprintf("%.2f / %.2f / %.2f / %.2f", r.CPUClient/r.Seconds, r.CPUNN/r.Seconds, r.CPUDNs/r.Seconds, r.CPUGait/r.Seconds),
			fmt.Sprintf("%.0f, %.0f", r.Busy, r.Queue), fmt.Sprintf("%.0f, %.0f", r.PSS, r.Threads)})
	}
	p := report.NewPage("Exalt: aggregate write throughput against DataNodes")
	p.Figure("New 1 MiB files created through HDFS's client by concurrent clients, emulated storage, Hadoop 3.5.0, by NameNode RPC handler count", chart)
	p.Figure("The same writes per CPU second used: what two whole cores would write is twice this", perCPU)
	p.Figure("CPU cores used while writing, by process: the machine has 2, shared with other work", cpu)
	p.Table([]string{"DataNodes", "handlers, lock", "files", "errors", "MB/s", "mean ms", "idle CPU, load", "cores: client / NN / DNs / gait", "NN busy handlers, call queue (max)", "DN PSS MiB, threads"}, table)
	return p, nil
}

// Command zoolander-zk-report turns the runs scripts/zoolander-zk.sh
// recorded into the Zoolander thesis's Figures 10-13 on gait-zookeeper:
// per experiment the measured SLA for 1, 2 and 4 duplicates at a bound of
// one duplicate's p90 (Figure 11: the bound swept from its p75 to its
// p99.5) beside `gait model predict` for the same configuration, with the
// absolute error. It writes OUT/report.html and prints the tables as
// Markdown:
//
//	go run ./scripts/zoolander-zk-report OUT
//
// The prediction takes the D = 1 run as one duplicate's service time
// (--service OUT/EXP/d1), --net 0, and a rate near 0: the measured
// latencies already hold whatever queueing the rate caused, so both of
// the model's predictors reduce to 1-(1-F(bound))^D.
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/report"
	"github.com/gait-dev/gait/internal/rundir"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: zoolander-zk-report OUT")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "zoolander-zk-report:", err)
		os.Exit(1)
	}
}

// ds are the numbers of duplicates measured.
var ds = []int{1, 2, 4}

// sweep are Figure 11's bounds, as percentiles of one duplicate's latency.
var sweep = []float64{75, 80, 85, 90, 95, 96, 97, 98, 99, 99.5}

// experiment is one of the thesis's figures' configurations.
type experiment struct {
	name, title string
	dir         string
	runs        map[int][]float64 // per D: every request's latency in seconds, +Inf when it failed
	loadavg     map[int]string
	late        map[int]float64 // per D: the load generator's p99 send lateness, seconds
	split       map[int]split   // per D: where the clients' agent's writes spent their time
}

// split is how the writes the clients' agent proposed spent their time,
// from its metrics (gait_replica_write_stage_seconds): the part every
// duplicate shares (proposal to commit: raft's ordering) and the part its
// own duplicate did alone (the apply queue and its ZooKeeper), in mean
// seconds, and the share of writes another duplicate answered first.
type split struct {
	writes        int
	shared, alone float64
	remoteShare   float64
}

// point is one measured SLA beside its prediction.
type point struct {
	d                 int
	bound             time.Duration
	percentile        float64 // of one duplicate's latency the bound was taken at
	measured, thesis  float64
	accurate, stderr  float64
	requests, missing int
}

func run(out string) error {
	exps := []*experiment{
		{name: "fig10", title: "Figure 10: writes (setData), a standalone ZooKeeper per duplicate"},
		{name: "fig12", title: "Figure 12: reads only (getData, each read to every duplicate)"},
		{name: "fig13", title: "Figure 13: writes, a 3-server ZooKeeper ensemble per duplicate"},
	}
	p := report.NewPage("gait-zookeeper: the Zoolander thesis's Figures 10-13, measured and predicted")
	p.Paragraph("Each configuration is one deployment (gait replica cluster --server zookeeper --voters 1 --duplicates D-1, " +
		where(out) + "): the single voter orders the writes, as the thesis's message repeater did, every duplicate applies them " +
		"to its own ZooKeeper and the first reply wins. Measured: the share of requests within the bound, a failed request " +
		"counting as missing it. Predicted: gait model predict --service <the D = 1 run> --net 0 --rate 0.001 --bound B " +
		"--duplicates 1,2,4 --replicas 1 (sla_thesis: §4.4's model; sla: the accurate predictor).")
	var md strings.Builder
	for _, e := range exps {
		e.dir = filepath.Join(out, e.name)
		if _, err := os.Stat(e.dir); err != nil {
			continue
		}
		if err := e.load(); err != nil {
			return err
		}
		base := e.runs[1]
		b := bound(base, 90)
		pts, err := e.points([]time.Duration{b}, []float64{90})
		if err != nil {
			return err
		}
		p.Heading(e.title)
		p.Note(e.note())
		p.Figure(fmt.Sprintf("SLA at %s (one duplicate's p90) against the number of duplicates: measured and predicted.", b), slaChart(e, pts))
		p.Table(header, rows(pts))
		fmt.Fprintf(&md, "### %s\n\n%s\n\n%s\n", e.title, e.note(), markdown(pts))
		if cs := e.checks(); e.name != "fig12" && len(cs) > 0 {
			p.Heading(e.title + ": the model's two assumptions, on the clients' agent's own measurements")
			p.Paragraph(checkIntro)
			p.Figure("Within the D = 1 run's first-reply p90: predicted from the lone duplicate, predicted from this run's duplicates, measured.", checkChart(e, cs))
			p.Table(checkHeader, checkRows(cs))
			fmt.Fprintf(&md, "#### %s: the model's two assumptions (the clients' agent's view)\n\n%s\n", e.title, checkMarkdown(cs))
		}
		if e.name != "fig10" {
			continue
		}
		var bounds []time.Duration
		for _, q := range sweep {
			bounds = append(bounds, bound(base, q))
		}
		swept, err := e.points(bounds, sweep)
		if err != nil {
			return err
		}
		p.Heading("Figure 11: the bound swept from one duplicate's p75 to its p99.5 (fig10's runs)")
		p.Figure("Absolute error of the prediction (accurate predictor) against the bound's percentile, per number of duplicates.", errorChart(swept))
		p.Table(header, rows(swept))
		fmt.Fprintf(&md, "### Figure 11: the bound swept (fig10's runs)\n\n%s\n", markdown(swept))
	}
	if md.Len() == 0 {
		return fmt.Errorf("no experiment in %s (fig10, fig12, fig13)", out)
	}
	fmt.Print(md.String())
	return p.WriteFile(filepath.Join(out, "report.html"))
}

// where says where the deployments ran: on loopback, or on testbed hosts
// (their addresses in 198.18.0.0/15).
func where(out string) string {
	addrs, _ := filepath.Glob(filepath.Join(out, "*", "d1.addrs"))
	for _, a := range addrs {
		if b, err := os.ReadFile(a); err == nil && strings.Contains(string(b), " 198.1") {
			return "on testbed hosts, one per replica (--testbed; with --pin each replica's processes on CPU i mod 2)"
		}
	}
	return "--loopback: every agent in one process, on 127.0.0.1"
}

func (e *experiment) load() error {
	e.runs, e.loadavg, e.late, e.split = map[int][]float64{}, map[int]string{}, map[int]float64{}, map[int]split{}
	for _, d := range ds {
		dir := filepath.Join(e.dir, fmt.Sprintf("d%d", d))
		runs, err := runDirs(dir)
		if err != nil && d > 1 {
			continue // not measured (a deployment that did not start): left out
		}
		if err != nil {
			return err
		}
		var lat []float64
		for _, run := range runs {
			l, err := latencies(run)
			if err != nil {
				return err
			}
			lat = append(lat, l...)
			if late, err := sendLate(run); err == nil {
				e.late[d] = max(e.late[d], late)
			}
		}
		slices.Sort(lat)
		e.runs[d] = lat
		if b, err := os.ReadFile(dir + ".loadavg"); err == nil {
			e.loadavg[d] = strings.TrimSpace(strings.TrimPrefix(string(b), "load average "))
		}
		if b, err := os.ReadFile(dir + ".metrics"); err == nil {
			b0, _ := os.ReadFile(dir + ".metrics0") // before the measured requests; absent in older runs
			e.split[d] = splitOf(string(b), string(b0))
		}
	}
	return nil
}

// runDirs are the runs of one D: dir itself, or with rounds
// (scripts/zoolander-zk.sh --rounds) each dir/rK.
func runDirs(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err == nil {
		return []string{dir}, nil
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "r*"))
	if len(runs) == 0 {
		return nil, fmt.Errorf("%s: no run", dir)
	}
	return runs, nil
}

// latencies are every request's latency of the run in dir, in seconds,
// +Inf for a failed request.
func latencies(dir string) ([]float64, error) {
	r, err := rundir.Open(dir)
	if err != nil {
		return nil, err
	}
	samples, err := r.Samples()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	lat := make([]float64, len(samples))
	for i, s := range samples {
		lat[i] = s.Latency.Seconds()
		if s.Outcome != rundir.OK {
			lat[i] = math.Inf(1)
		}
	}
	return lat, nil
}

// service writes one duplicate's latencies (the D = 1 runs) as a CSV file
// gait model predict reads, a failed request as an hour: past any bound,
// as the measured SLA counts it.
func (e *experiment) service() (string, error) {
	var b strings.Builder
	b.WriteString("latency\n")
	for _, l := range e.runs[1] {
		b.WriteString(strconv.FormatFloat(min(l, 3600), 'g', -1, 64) + "\n")
	}
	path := filepath.Join(e.dir, "d1.latencies.csv")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

func (e *experiment) note() string {
	var parts []string
	for _, d := range ds {
		lat, ok := e.runs[d]
		if !ok {
			parts = append(parts, fmt.Sprintf("D=%d: not measured", d))
			continue
		}
		failed := len(lat) - sort.SearchFloat64s(lat, math.Inf(1))
		part := fmt.Sprintf("D=%d: %d requests (%d failed), p50 %s, p90 %s, p99 %s, load generator late by %s at p99, load average after %s",
			d, len(lat), failed, latency(quantile(lat, 50)), latency(quantile(lat, 90)), latency(quantile(lat, 99)),
			latency(e.late[d]), e.loadavg[d])
		if sp := e.split[d]; sp.writes > 0 {
			part += fmt.Sprintf("; the clients' agent's %d writes: %s mean shared by every duplicate (proposal to commit), "+
				"%s its own duplicate alone (apply queue and ZooKeeper), %.0f%% answered first by another duplicate",
				sp.writes, latency(sp.shared), latency(sp.alone), 100*sp.remoteShare)
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ") + "."
}

// sendLate is the load generator's p99 send lateness of the run in dir
// (its summary.json): the time its requests waited for the generator
// itself, part of every duplicate's latency alike.
func sendLate(dir string) (float64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return 0, err
	}
	var sum struct {
		Generator struct {
			SendLateP99 float64 `json:"send_late_p99"`
		} `json:"generator"`
	}
	err = json.Unmarshal(b, &sum)
	return sum.Generator.SendLateP99, err
}

// splitOf reads a split from an agent's metrics in Prometheus's text
// format, after the measured requests less before them (empty: since the
// agent started, the warm-up's writes included).
func splitOf(after, before string) split {
	vals := map[string]float64{}
	for sign, text := range map[float64]string{1: after, -1: before} {
		for _, line := range strings.Split(text, "\n") {
			name, v, ok := strings.Cut(line, " ")
			if !ok || strings.HasPrefix(name, "#") {
				continue
			}
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				vals[name] += sign * f
			}
		}
	}
	stage := func(name, what string) float64 {
		return vals[`gait_replica_write_stage_seconds_`+what+`{stage="`+name+`"}`]
	}
	mean := func(names ...string) float64 {
		var sum float64
		for _, n := range names {
			if c := stage(n, "count"); c > 0 {
				sum += stage(n, "sum") / c
			}
		}
		return sum
	}
	writes := vals["gait_replica_commit_seconds_count"]
	if writes == 0 {
		return split{}
	}
	return split{writes: int(writes), shared: mean("commit"), alone: mean("apply_queue", "server"),
		remoteShare: stage("remote_reply", "count") / writes}
}

// latency writes seconds s for people; a failed request's is +Inf.
func latency(s float64) string {
	if math.IsInf(s, 1) {
		return "failed"
	}
	return time.Duration(s * 1e9).Round(time.Microsecond).String()
}

// quantile is the q-th percentile of sorted (nearest rank).
func quantile(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// bound is the q-th percentile of one duplicate's latency, to the microsecond.
func bound(sorted []float64, q float64) time.Duration {
	return time.Duration(quantile(sorted, q) * 1e9).Round(time.Microsecond)
}

// points measures every D's SLA at each bound and asks gait model predict.
func (e *experiment) points(bounds []time.Duration, pcts []float64) ([]point, error) {
	var pts []point
	service, err := e.service()
	if err != nil {
		return nil, err
	}
	for i, b := range bounds {
		pred, err := predict(service, b)
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			lat, ok := e.runs[d]
			if !ok {
				continue
			}
			within, _ := slices.BinarySearch(lat, b.Seconds()+1e-12)
			pr, ok := pred[d]
			if !ok {
				return nil, fmt.Errorf("gait model predict gave nothing for %d duplicates", d)
			}
			pts = append(pts, point{d: d, bound: b, percentile: pcts[i], measured: float64(within) / float64(len(lat)),
				thesis: pr.Thesis, accurate: pr.SLA, stderr: pr.StdErr, requests: len(lat), missing: len(lat) - within})
		}
	}
	return pts, nil
}

type prediction struct {
	Duplicates int     `json:"duplicates"`
	Thesis     float64 `json:"sla_thesis"`
	SLA        float64 `json:"sla"`
	StdErr     float64 `json:"sla_stderr"`
}

// predict runs gait model predict with one duplicate's latencies (service)
// as the service time.
func predict(service string, b time.Duration) (map[int]prediction, error) {
	cmd := exec.Command("bin/gait", "model", "predict", "--service", service, "--latency-column", "latency", "--unit", "s",
		"--net", "0", "--rate", "0.001",
		"--bound", strconv.FormatInt(b.Microseconds(), 10)+"us", "--duplicates", "1,2,4", "--replicas", "1", "--format", "json")
	cmd.Stderr = os.Stderr
	outb, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err)
	}
	var ps []prediction
	if err := json.Unmarshal(outb, &ps); err != nil {
		return nil, fmt.Errorf("gait model predict: %w", err)
	}
	m := map[int]prediction{}
	for _, p := range ps {
		m[p.Duplicates] = p
	}
	return m, nil
}

var header = []string{"D", "bound", "of D=1", "requests", "missing", "measured", "predicted (thesis)", "predicted (accurate)", "error", "nines", "nines predicted"}

func rows(pts []point) [][]string {
	var out [][]string
	for _, p := range pts {
		out = append(out, []string{strconv.Itoa(p.d), p.bound.String(), fmt.Sprintf("p%g", p.percentile),
			strconv.Itoa(p.requests), strconv.Itoa(p.missing), fmt.Sprintf("%.4f", p.measured), fmt.Sprintf("%.4f", p.thesis),
			fmt.Sprintf("%.4f", p.accurate), fmt.Sprintf("%.4f", math.Abs(p.measured-p.accurate)),
			fmt.Sprintf("%.2f", nines(p.measured, p.requests)), fmt.Sprintf("%.2f", nines(p.accurate, 0))})
	}
	return out
}

func markdown(pts []point) string { return markdownTable(header, rows(pts)) }

// markdownTable writes a table in Markdown, every column aligned right.
func markdownTable(header []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|" + strings.Repeat(" ---: |", len(header)) + "\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// nines is -log10(1-sla); a measured SLA of 1 (no request of n missed)
// counts as log10(n): as many nines as the run can show.
func nines(sla float64, n int) float64 {
	if sla >= 1 {
		if n > 0 {
			return math.Log10(float64(n))
		}
		return 6
	}
	return -math.Log10(1 - sla)
}

func slaChart(e *experiment, pts []point) report.LineChart {
	series := []report.Series{{Name: "measured"}, {Name: "predicted, thesis (§4.4)", Dashed: true}, {Name: "predicted, accurate"}}
	for _, p := range pts {
		x := float64(p.d)
		series[0].X, series[0].Y = append(series[0].X, x), append(series[0].Y, nines(p.measured, p.requests))
		series[1].X, series[1].Y = append(series[1].X, x), append(series[1].Y, nines(p.thesis, 0))
		series[2].X, series[2].Y = append(series[2].X, x), append(series[2].Y, nines(p.accurate, 0))
	}
	return duplicatesChart(e.title, "nines of the SLA, -log10(1 - SLA)", series)
}

// duplicatesChart draws series against the number of duplicates.
func duplicatesChart(title, y string, series []report.Series) report.LineChart {
	return report.LineChart{
		Title:   title,
		X:       report.Axis{Label: "duplicates", Min: 1, Max: 4},
		Y:       report.Axis{Label: y, Zero: true},
		Series:  series,
		Markers: true,
	}
}

func errorChart(pts []point) report.LineChart {
	var series []report.Series
	for _, d := range ds {
		s := report.Series{Name: fmt.Sprintf("%d duplicates", d)}
		for _, p := range pts {
			if p.d == d {
				s.X, s.Y = append(s.X, p.percentile), append(s.Y, math.Abs(p.measured-p.accurate))
			}
		}
		series = append(series, s)
	}
	return report.LineChart{
		Title:   "Figure 11: absolute error of the prediction against the bound",
		X:       report.Axis{Label: "bound, percentile of one duplicate's latency", Min: 75, Max: 100},
		Y:       report.Axis{Label: "|measured - predicted| SLA", Zero: true},
		Series:  series,
		Markers: true,
	}
}

// Command replica-sla-report turns what scripts/replica-sla.sh recorded into
// the table of docs/replica.md ("SLA against the Zoolander prediction") and
// OUT/replica-sla.html: per rate, the measured share of reads within the
// bound for k = 1, 2, 4, 8 replicas answering each read, against both
// Zoolander predictors. It reads only the JSON that gait analyze, gait model
// predict and gait model independence wrote, and the runs' run.json and
// summary.json:
//
//	go run ./scripts/replica-sla-report OUT
package main

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/model"
	"github.com/gait-dev/gait/internal/report"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: replica-sla-report OUT")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "replica-sla-report:", err)
		os.Exit(1)
	}
}

// ks are the fan-outs measured, in the order of every table and figure.
var ks = []int{1, 2, 4, 8}

// rateResult is everything recorded for one arrival rate.
type rateResult struct {
	Rate         float64            // intended, requests/s
	Measured     float64            // the k = 1 runs' throughput, the model's rate
	Bound        string             // as given to gait analyze and gait model predict
	Count        map[int]int        // requests per k
	SLA          map[int]float64    // measured share within the bound per k
	PassSLA      map[int][]float64  // the same, per pass
	P50, P99     map[int]float64    // seconds per k
	Queue, Plain map[int]predict    // predictions at the measured rate and near 0
	Independence model.Independence // two agents, same schedule
	Shifted      model.Independence // the same, request i against i+2·rate of the other run
	PairOffset   time.Duration      // how much later the second pair run started
	PairGap      time.Duration      // mean distance in time of a request and its partner
	Shift        int                // the control pairs request i with the partner of i+Shift
	MaxRate      map[int]float64    // calibrated closed-loop throughput per k
	// AgentCPU and RedisCPU are the cores the agents and all redis-servers
	// used, per k: the mean of every run's per-second samples.
	AgentCPU, RedisCPU map[int]float64
}

type predict struct {
	Utilization float64
	Unstable    bool
	Thesis, SLA float64
	StdErr      float64
}

func run(out string) error {
	dirs, err := filepath.Glob(filepath.Join(out, "r*"))
	if err != nil {
		return err
	}
	var results []rateResult
	for _, d := range dirs {
		rate, err := strconv.ParseFloat(strings.TrimPrefix(filepath.Base(d), "r"), 64)
		if err != nil {
			continue // not a rate directory
		}
		r, err := readRate(out, d, rate)
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	if len(results) == 0 {
		return fmt.Errorf("%s: no rate directories (r500, r1600, ...)", out)
	}
	slices.SortFunc(results, func(a, b rateResult) int { return cmp.Compare(a.Rate, b.Rate) })
	for _, r := range results {
		fmt.Print(r.markdown())
	}
	if err := writePage(filepath.Join(out, "replica-sla.html"), results); err != nil {
		return err
	}
	return writeFigure(filepath.Join(out, "replica-sla-figure.html"), results)
}

func readRate(out, dir string, rate float64) (rateResult, error) {
	r := rateResult{Rate: rate, Count: map[int]int{}, SLA: map[int]float64{}, P50: map[int]float64{},
		P99: map[int]float64{}, MaxRate: map[int]float64{}, PassSLA: map[int][]float64{},
		AgentCPU: map[int]float64{}, RedisCPU: map[int]float64{}}
	b, err := os.ReadFile(filepath.Join(dir, "bound"))
	if err != nil {
		return r, err
	}
	r.Bound = strings.TrimSpace(string(b))
	b, err = os.ReadFile(filepath.Join(dir, "rate"))
	if err != nil {
		return r, err
	}
	if r.Measured, err = strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err != nil {
		return r, fmt.Errorf("%s: %w", filepath.Join(dir, "rate"), err)
	}
	var sum struct {
		Throughput float64 `json:"throughput"`
	}
	for _, k := range ks {
		if err := readJSON(filepath.Join(out, fmt.Sprintf("calibrate-k%d", k), "summary.json"), &sum); err != nil {
			return r, err
		}
		r.MaxRate[k] = sum.Throughput
	}
	all, err := readShares(filepath.Join(dir, "analyze.json"))
	if err != nil {
		return r, err
	}
	for _, c := range all {
		r.Count[c.k], r.SLA[c.k], r.P50[c.k], r.P99[c.k] = c.count, c.share, c.p50, c.p99
	}
	for _, k := range ks {
		if r.AgentCPU[k], r.RedisCPU[k], err = readCPU(filepath.Join(dir, fmt.Sprintf("k%d-p*", k))); err != nil {
			return r, err
		}
	}
	passes, err := readShares(filepath.Join(dir, "analyze-passes.json"))
	if err != nil {
		return r, err
	}
	for _, c := range passes {
		r.PassSLA[c.k] = append(r.PassSLA[c.k], c.share)
	}
	if r.Queue, err = readPredict(filepath.Join(dir, "predict.json")); err != nil {
		return r, err
	}
	if r.Plain, err = readPredict(filepath.Join(dir, "predict-noqueue.json")); err != nil {
		return r, err
	}
	if err := readJSON(filepath.Join(dir, "independence.json"), &r.Independence); err != nil {
		return r, err
	}
	if err := readJSON(filepath.Join(dir, "independence-shifted.json"), &r.Shifted); err != nil {
		return r, err
	}
	var a, bb struct {
		Started time.Time `json:"started"`
	}
	if err := readJSON(filepath.Join(dir, "pair-a", "run.json"), &a); err != nil {
		return r, err
	}
	if err := readJSON(filepath.Join(dir, "pair-b", "run.json"), &bb); err != nil {
		return r, err
	}
	r.PairOffset = bb.Started.Sub(a.Started)
	b, err = os.ReadFile(filepath.Join(dir, "pair-gap"))
	if err != nil {
		return r, err
	}
	gap, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil {
		return r, fmt.Errorf("%s: %w", filepath.Join(dir, "pair-gap"), err)
	}
	r.PairGap = time.Duration(gap * 1e9)
	b, err = os.ReadFile(filepath.Join(dir, "pair-shift"))
	if err != nil {
		return r, err
	}
	if r.Shift, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
		return r, fmt.Errorf("%s: %w", filepath.Join(dir, "pair-shift"), err)
	}
	return r, nil
}

// readCPU averages, over the runs matching pattern and their seconds, the
// cores used by the agents (proc_cpu{proc=agents}) and by all redis-servers
// together (the sum of the proc_cpu{proc=redisN} columns).
func readCPU(pattern string) (agents, redis float64, err error) {
	runs, err := filepath.Glob(pattern)
	if err != nil || len(runs) == 0 {
		return 0, 0, fmt.Errorf("%s: no runs (%v)", pattern, err)
	}
	for _, run := range runs {
		a, r, err := runCPU(filepath.Join(run, "timeseries.csv"))
		if err != nil {
			return 0, 0, err
		}
		agents += a / float64(len(runs))
		redis += r / float64(len(runs))
	}
	return agents, redis, nil
}

func runCPU(path string) (agents, redis float64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		return 0, 0, fmt.Errorf("%s: no samples (%v)", path, err)
	}
	// Each column's mean over the seconds that have a sample.
	mean := func(c int) float64 {
		var sum float64
		var n int
		for _, row := range rows[1:] {
			if v, err := strconv.ParseFloat(row[c], 64); err == nil {
				sum, n = sum+v, n+1
			}
		}
		if n == 0 {
			return 0
		}
		return sum / float64(n)
	}
	found := false
	for c, name := range rows[0] {
		switch {
		case name == "proc_cpu{proc=agents}":
			agents, found = mean(c), true
		case strings.HasPrefix(name, "proc_cpu{proc=redis"):
			redis += mean(c)
		}
	}
	if !found {
		return 0, 0, fmt.Errorf("%s: no proc_cpu{proc=agents} column", path)
	}
	return agents, redis, nil
}

// share is one configuration of gait analyze --bound's JSON.
type share struct {
	k, count        int
	share, p50, p99 float64
}

// readShares reads gait analyze --bound's JSON, whose configurations each
// have a factor k.
func readShares(path string) ([]share, error) {
	var an struct {
		Configurations []struct {
			Factors map[string]string `json:"factors"`
			Count   int               `json:"count"`
			P50     float64           `json:"p50"`
			P99     float64           `json:"p99"`
			Share   *float64          `json:"share_within_bound"`
		} `json:"configurations"`
	}
	if err := readJSON(path, &an); err != nil {
		return nil, err
	}
	var out []share
	for _, c := range an.Configurations {
		k, err := strconv.Atoi(c.Factors["k"])
		if err != nil || c.Share == nil {
			return nil, fmt.Errorf("%s: configuration %v lacks factor k or share_within_bound", path, c.Factors)
		}
		out = append(out, share{k: k, count: c.Count, share: *c.Share, p50: c.P50, p99: c.P99})
	}
	return out, nil
}

// readPredict reads gait model predict's JSON; an unstable configuration
// holds the string "unstable" in place of its SLAs.
func readPredict(path string) (map[int]predict, error) {
	var rows []struct {
		Duplicates  int             `json:"duplicates"`
		Utilization float64         `json:"utilization"`
		Unstable    bool            `json:"unstable"`
		Thesis      json.RawMessage `json:"sla_thesis"`
		SLA         json.RawMessage `json:"sla"`
		StdErr      json.RawMessage `json:"sla_stderr"`
	}
	if err := readJSON(path, &rows); err != nil {
		return nil, err
	}
	out := map[int]predict{}
	for _, row := range rows {
		p := predict{Utilization: row.Utilization, Unstable: row.Unstable}
		if !p.Unstable {
			for _, f := range []struct {
				raw json.RawMessage
				v   *float64
			}{{row.Thesis, &p.Thesis}, {row.SLA, &p.SLA}, {row.StdErr, &p.StdErr}} {
				if err := json.Unmarshal(f.raw, f.v); err != nil {
					return nil, fmt.Errorf("%s: duplicates %d: %w", path, row.Duplicates, err)
				}
			}
		}
		out[row.Duplicates] = p
	}
	return out, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func pct(v float64) string { return strconv.FormatFloat(100*v, 'f', 3, 64) + "%" }

func (p predict) thesis() string {
	if p.Unstable {
		return "unstable"
	}
	return pct(p.Thesis)
}

func (p predict) accurate() string {
	if p.Unstable {
		return "unstable"
	}
	return pct(p.SLA)
}

func (r rateResult) header() string {
	u := r.Queue[1].Utilization
	return fmt.Sprintf("%g reads/s (k = 1 measured %.0f/s; %.1f%% of k = 1's calibrated maximum %.0f/s, %.1f%% of k = 8's %.0f/s), bound %s (the k = 1 p99 %s rounded), model utilization %.2f",
		r.Rate, r.Measured, 100*r.Rate/r.MaxRate[1], r.MaxRate[1], 100*r.Rate/r.MaxRate[8], r.MaxRate[8],
		r.Bound, ms(r.P99[1]), u)
}

func ms(s float64) string { return strconv.FormatFloat(s*1e3, 'f', 3, 64) + " ms" }

func (r rateResult) rows() [][]string {
	var rows [][]string
	for _, k := range ks {
		rows = append(rows, []string{strconv.Itoa(k), strconv.Itoa(r.Count[k]), ms(r.P50[k]), ms(r.P99[k]),
			pct(r.SLA[k]), pctRange(r.PassSLA[k]), r.Queue[k].thesis(), r.Queue[k].accurate(), r.Plain[k].accurate(),
			fmt.Sprintf("%.2f + %.2f", r.AgentCPU[k], r.RedisCPU[k])})
	}
	return rows
}

var tableHeader = []string{"k", "reads", "p50", "p99", "measured SLA", "per pass", "thesis", "accurate",
	"independent, no added queueing", "CPU cores: agents + redis"}

// pctRange writes the lowest and highest of the passes' SLAs.
func pctRange(v []float64) string {
	if len(v) == 0 {
		return "-"
	}
	return pct(slices.Min(v)) + "–" + pct(slices.Max(v))
}

func (r rateResult) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\n\n| %s |\n|%s\n", r.header(), strings.Join(tableHeader, " | "),
		strings.Repeat(" ---: |", len(tableHeader)))
	for _, row := range r.rows() {
		fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
	}
	fmt.Fprintf(&b, "\n%s\n", r.independenceText())
	return b.String()
}

func (r rateResult) independenceText() string {
	return fmt.Sprintf("Independence: two agents of the k = 1 deployment driven at once with the same schedule "+
		"(time zeros %v apart), each request at one paired with the request at the other that arrived nearest in time "+
		"(on average %v apart): %s. Control, request i against the partner of request i+%d (%.3g s later): %s.",
		r.PairOffset.Abs().Round(time.Microsecond), r.PairGap.Round(time.Microsecond), independenceText(r.Independence), r.Shift,
		float64(r.Shift)/r.Rate, independenceText(r.Shifted))
}

func independenceText(ind model.Independence) string {
	verdict := "independent"
	if !ind.Holds {
		verdict = "NOT independent"
	}
	return fmt.Sprintf("%d requests, slow = above p%g; both slow %.3f%% against %.3f%% expected (lift %.2f, z %.1f), Spearman %.3f: %s",
		ind.Requests, 100*ind.Quantile, 100*ind.BothSlow, 100*ind.Expected, ind.Lift, ind.Z, ind.Spearman, verdict)
}

// missFloor keeps predictions of (nearly) no miss on the log axis.
const missFloor = 1e-6

func chart(r rateResult) report.LineChart {
	series := []report.Series{{Name: "measured"}, {Name: "thesis (§4.4) at the measured rate"},
		{Name: "accurate at the measured rate"}, {Name: "independent, no added queueing", Dashed: true}}
	add := func(s *report.Series, k int, sla float64) {
		s.X, s.Y = append(s.X, float64(k)), append(s.Y, math.Max(1-sla, missFloor))
	}
	for _, k := range ks {
		add(&series[0], k, r.SLA[k])
		if q := r.Queue[k]; !q.Unstable {
			add(&series[1], k, q.Thesis)
			add(&series[2], k, q.SLA)
		}
		add(&series[3], k, r.Plain[k].SLA)
	}
	return report.LineChart{
		Title:   fmt.Sprintf("Reads missing %s at %g reads/s, 8 replicas", r.Bound, r.Rate),
		X:       report.Axis{Label: "k, replicas each read goes to (first answer wins)", Min: 1, Max: 8},
		Y:       report.Axis{Label: "reads missing the bound", Log: true, Unit: "%", Min: missFloor, Max: 1},
		Series:  series,
		Markers: true,
	}
}

// writeFigure writes the charts alone, one per rate, for docs/img.
func writeFigure(path string, results []rateResult) error {
	p := report.NewPage("gait replica: reads missing the bound against k, measured and predicted")
	for _, r := range results {
		p.Figure(r.header()+".", chart(r))
	}
	return p.WriteFile(path)
}

func writePage(path string, results []rateResult) error {
	p := report.NewPage("gait replica: read SLA against the Zoolander prediction")
	p.Paragraph("Each read goes to k of 8 replicas (gait replica cluster --loopback --voters 3 --duplicates 5 --read any --fanout k); " +
		"the first answer wins. Measured: the share of reads within the bound (gait analyze --bound). Predicted: gait model " +
		"predict with the k = 1 run's latencies as one duplicate's service time, --net 0, at the k = 1 run's measured rate, " +
		"and at a rate near 0 (the measured latencies already hold the queueing), where both predictors reduce to 1-(1-p)^k. " +
		fmt.Sprintf("Points at %g mean a miss share at or below it.", missFloor))
	for _, r := range results {
		p.Heading(fmt.Sprintf("%g reads/s, bound %s", r.Rate, r.Bound))
		p.Note(r.header())
		p.Figure("Share of reads missing the bound against k, measured and predicted; log y axis.", chart(r))
		p.Table(tableHeader, r.rows())
		p.Paragraph(r.independenceText())
	}
	return p.WriteFile(path)
}

package bench

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/report"
	"github.com/gait-dev/gait/internal/rundir"
	"github.com/gait-dev/gait/internal/testbed"
	"github.com/gait-dev/gait/internal/units"
)

// runSeries is one run's time series, for the report.
type runSeries struct {
	res  RunResult
	name string // how figures name the run: "10x" or "10x r2"
	rows []rundir.Second
}

// WriteReport writes the scenario's HTML report to path: the summary, the
// throughput and p99 of every run over time with the fault window marked,
// the fault events, and every white-box metric over time. Everything in it
// is read back from the run directories.
func WriteReport(path string, s *Scenario, sum Summary, results []RunResult) error {
	runs, err := loadSeries(s, results)
	if err != nil {
		return err
	}
	p := report.NewPage("gait run: " + s.Name)
	p.Paragraph(describeScenario(s))
	if h := headline(sum); h != "" {
		p.Note(h)
	}
	if lines := sum.RoleLines(); len(lines) > 0 {
		p.Note("Roles changed during these runs, so their figures are of more than one arrangement of the cluster: " +
			strings.Join(lines, ". ") + ".")
	}
	header, rows := TableHeader, sum.TableRows()
	if s.Repeat == 1 {
		header, rows = dropColumn(header, rows, "runs")
	}
	if !slices.ContainsFunc(sum.Steps, func(st StepSummary) bool { return st.RoleChanges > 0 }) {
		header, rows = dropColumn(header, rows, "role changes")
	}
	// Short names keep the table within the page.
	header = slices.Clone(header)
	header[slices.Index(header, "longest gap")] = "gap"
	if i := slices.Index(header, "role changes"); i >= 0 {
		header[i] = "roles"
	}
	p.Table(header, rows)
	p.Paragraph("Slowdown is the mean latency over the baseline's; gap is the longest time in which no request " +
		"completed; roles counts the changes of a member's role (above). Latency counts from each request's start (its intended start in an open loop), whatever its " +
		"outcome. Runs are in " + sum.Out + ".")
	overTime(p, s, runs, "Over time")
	faultEvents(p, runs)
	whiteBox(p, s, runs, func(string) bool { return true }, "White-box metrics")
	runTable(p, runs)
	p.Heading("Scenario")
	p.Pre(string(s.Source))
	return p.WriteFile(path)
}

func loadSeries(s *Scenario, results []RunResult) ([]runSeries, error) {
	var runs []runSeries
	for _, r := range results {
		run, err := rundir.Open(r.Dir)
		if err != nil {
			return nil, err
		}
		rows, err := run.TimeSeries()
		if err != nil {
			return nil, err
		}
		name := r.ID.Step.Label()
		if s.Repeat > 1 {
			name += fmt.Sprintf(" r%d", r.ID.Rep)
		}
		runs = append(runs, runSeries{res: r, name: name, rows: rows})
	}
	return runs, nil
}

// Section adds an experiment to a suite's page (the Limplock paper's
// Figure 4): throughput and p99 latency over time, and its queue and lag
// metrics per member, under headings that start with the experiment's name.
func Section(p *report.Page, s *Scenario, results []RunResult) error {
	runs, err := loadSeries(s, results)
	if err != nil {
		return err
	}
	overTime(p, s, runs, s.Name+": over time")
	whiteBox(p, s, runs, isQueue, s.Name+": queues and lags")
	return nil
}

func dropColumn(header []string, rows [][]string, name string) ([]string, [][]string) {
	i := slices.Index(header, name)
	out := make([][]string, len(rows))
	for j, r := range rows {
		out[j] = slices.Delete(slices.Clone(r), i, i+1)
	}
	return slices.Delete(slices.Clone(header), i, i+1), out
}

func describeScenario(s *Scenario) string {
	w := s.Workload
	loop := fmt.Sprintf("closed loop, %d clients", w.Clients)
	if w.Rate.PerSecond > 0 || w.Rate.Share > 0 {
		loop = "open loop at " + w.Rate.String()
	}
	length := w.Duration.String()
	if w.Requests > 0 {
		length = fmt.Sprintf("%d requests", w.Requests)
	}
	text := fmt.Sprintf("%s on %d hosts, links at %s. Workload: %s, %d keys, %s values, %s, for %s; clients talk to %s.",
		s.System, s.Nodes, testbed.FormatBandwidth(s.Bandwidth), w.Mix, w.Keys, load.FormatSize(int64(w.ValueSize)), loop, length,
		connectText(w.Connect))
	where := "in memory (tmpfs)"
	if s.Data == DataDisk {
		where = "on this machine's disk"
	}
	if s.Storage == StorageEmulated {
		where += ", emulating (synthetic data stored as descriptions)"
	}
	if s.Disk != nil {
		text += fmt.Sprintf(" Data directories on limpfs, an emulated %.0f MB/s disk, backed %s.", s.Disk.Bandwidth/1e6, where)
	} else {
		text += " Data directories " + where + "."
	}
	for _, f := range s.Inject {
		text += " " + faultText(f)
	}
	if s.Description != "" {
		text = s.Description + "\n\n" + text
	}
	return text
}

func connectText(c string) string {
	if c == connectAll {
		return "every member"
	}
	if _, ok := hostIndex(c); ok {
		return c
	}
	return "the " + c + " members no fault is aimed at (all of them if every one is)"
}

func faultText(f Fault) string {
	t := fmt.Sprintf("Fault: %s on the %s at %v", f.Kind, f.Target, f.At)
	if len(f.Factors) > 0 {
		var fs []string
		for _, v := range f.Factors {
			fs = append(fs, FormatFactor(v)+"x")
		}
		t = fmt.Sprintf("Fault: %s slowed %s on the %s from %v", f.Kind, strings.Join(fs, ", "), f.Target, f.At)
	}
	switch {
	case f.For > 0 && f.Kind == "crash":
		t += fmt.Sprintf(", restarted after %v", f.For)
	case f.For > 0:
		t += fmt.Sprintf(" for %v", f.For)
	default:
		t += " to the end"
	}
	return t + "."
}

// headline says what the worst step did to latency and throughput.
func headline(sum Summary) string {
	if len(sum.Steps) < 2 {
		return ""
	}
	worst := sum.Steps[1]
	for _, st := range sum.Steps[2:] {
		if st.Slowdown > worst.Slowdown {
			worst = st
		}
	}
	return fmt.Sprintf("Worst step: %s, mean latency %.1fx the baseline's (%s against %s), p99 %s, throughput %s%% of the baseline's (%s).",
		worst.Label, worst.Slowdown, units.Seconds(worst.Mean), units.Seconds(sum.Steps[0].Mean),
		units.Seconds(worst.P99), strconv.FormatFloat(worst.ThroughputRatio*100, 'g', 2, 64), units.Rate(worst.Throughput))
}

// overTime draws throughput and p99 per second, one line per run.
func overTime(p *report.Page, s *Scenario, runs []runSeries, heading string) {
	var tput, p99 []report.Series
	for i, r := range runs {
		a, b := report.Series{Name: r.name, Dashed: i == 0}, report.Series{Name: r.name, Dashed: i == 0}
		for _, row := range r.rows {
			a.X, a.Y = append(a.X, float64(row.T)), append(a.Y, row.Throughput)
			if row.Throughput > 0 {
				b.X, b.Y = append(b.X, float64(row.T)), append(b.Y, row.P99)
			}
		}
		tput, p99 = append(tput, a), append(p99, b)
	}
	p.Heading(heading)
	window := windowText(s)
	// Throughputs apart by orders of magnitude need a log axis, which
	// cannot show a second without completions; say so.
	ty, caption := report.Axis{Label: "throughput", Unit: "ops/s", Zero: true}, ""
	if lo, hi := positiveRange(tput); hi > 30*lo {
		// A second without completions sits on the bottom edge.
		floor := math.Pow(10, math.Floor(math.Log10(lo))) / 2
		ty = report.Axis{Label: "throughput", Unit: "ops/s", Log: true, Min: floor, Max: math.Pow(10, math.Ceil(math.Log10(hi)))}
		for i := range tput {
			for j, v := range tput[i].Y {
				if v == 0 {
					tput[i].Y[j] = floor
				}
			}
		}
		caption = " Log scale: a second in which nothing completed is drawn on the bottom edge."
	}
	p.Figure("Requests completed per second, one line per run (the baseline dashed)."+caption+window, report.LineChart{
		X: report.Axis{Label: "time since the workload started", Unit: "s"}, Y: ty,
		Series: append(tput, windowMarks(s, tput, ty.Log)...), Step: true})
	p.Figure("99th percentile latency of the requests completed in each second."+window, report.LineChart{
		X: report.Axis{Label: "time since the workload started", Unit: "s"}, Y: report.Axis{Label: "p99 latency", Unit: "s", Log: true},
		Series: append(p99, windowMarks(s, p99, true)...), Step: true})
}

// positiveRange is the smallest and largest positive value of the series.
func positiveRange(series []report.Series) (lo, hi float64) {
	lo, hi = math.Inf(1), 0
	for _, sr := range series {
		for _, v := range sr.Y {
			if v > 0 {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	return lo, hi
}

func windowText(s *Scenario) string {
	if len(s.Inject) == 0 {
		return ""
	}
	return " The dashed vertical lines named after the fault mark when it was applied and cleared (as scheduled)."
}

// windowMarks draws each fault's start and end as vertical lines spanning
// the data of series.
func windowMarks(s *Scenario, series []report.Series, log bool) []report.Series {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, sr := range series {
		for _, v := range sr.Y {
			if log && v <= 0 {
				continue
			}
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if math.IsInf(lo, 0) {
		return nil
	}
	if !log {
		lo = 0
	}
	var marks []report.Series
	seen := map[float64]bool{}
	mark := func(name string, t float64) {
		if seen[t] {
			return
		}
		seen[t] = true
		marks = append(marks, report.Series{Name: name, X: []float64{t, t}, Y: []float64{lo, hi}, Dashed: true})
	}
	for _, f := range s.Inject {
		mark(fmt.Sprintf("%s on %s", f.Kind, f.Target), f.At.Seconds())
		if f.For > 0 {
			end := "cleared"
			if f.Kind == "crash" {
				end = "restarted"
			}
			mark(fmt.Sprintf("%s %s", f.Kind, end), (f.At + f.For).Seconds())
		}
	}
	return marks
}

func faultEvents(p *report.Page, runs []runSeries) {
	var rows [][]string
	for _, r := range runs {
		for _, e := range r.res.Events {
			factor := "-"
			if e.Factor > 0 {
				factor = FormatFactor(e.Factor) + "x"
			}
			rows = append(rows, []string{r.name, fmt.Sprintf("%.2fs", e.T), e.Action, e.Fault, factor, e.Target,
				e.Host, e.Role, e.Error})
		}
	}
	if len(rows) == 0 {
		return
	}
	p.Heading("Faults")
	p.Table([]string{"run", "time", "action", "fault", "factor", "target", "host", "role then", "error"}, rows)
}

// whiteBox draws the metrics the runs recorded. Hosts are grouped by what
// they were in their run (the leader with the fault, a follower the clients
// used, ...), which is the same in every run of a scenario even though the
// host names differ; each group gets one figure per metric with one line per
// run, so a colour means the same run throughout. Metrics that never changed
// are listed instead.
func whiteBox(p *report.Page, s *Scenario, runs []runSeries, keep func(metric string) bool, heading string) {
	type key struct{ group, metric string }
	series := map[key]map[string]*report.Series{} // -> run name -> series
	var groups []string
	for _, r := range runs {
		labels := hostLabels(r.res, s.Inject)
		for _, row := range r.rows {
			for k, v := range row.Metrics {
				name, host := splitMetric(k)
				g, ok := labels[host]
				if name == "gait_fault" || !ok || !keep(name) {
					continue
				}
				if !slices.Contains(groups, g) {
					groups = append(groups, g)
				}
				kk := key{g, name}
				if series[kk] == nil {
					series[kk] = map[string]*report.Series{}
				}
				sr := series[kk][r.name]
				if sr == nil {
					sr = &report.Series{Name: r.name, Dashed: r.res.ID.Step.Index == 0}
					series[kk][r.name] = sr
				}
				sr.X, sr.Y = append(sr.X, float64(row.T)), append(sr.Y, v)
			}
		}
	}
	if len(groups) == 0 {
		return
	}
	slices.SortFunc(groups, compareGroups)
	p.Heading(heading)
	p.Paragraph("Sampled once a second from every member (" + s.System + "'s own metrics, etcd_*) and from /proc " +
		"(proc_*: the server process on each host). A gap means the member did not answer within the second " +
		"(behind a limping link, often). Hosts are named by their role when the workload started and by what was " +
		"on them: the fault, the clients. One line per run, in the same colour in every figure.")
	var metrics []string
	for k := range series {
		if !slices.Contains(metrics, k.metric) {
			metrics = append(metrics, k.metric)
		}
	}
	slices.Sort(metrics)
	for _, g := range groups {
		var constant []string
		p.Heading(heading + ": " + g)
		for _, m := range metrics {
			byRun := series[key{g, m}]
			var ss []report.Series
			points := 0
			for _, r := range runs {
				if sr := byRun[r.name]; sr != nil {
					ss = append(ss, *sr)
					points = max(points, len(sr.X))
				}
			}
			if len(ss) == 0 {
				continue
			}
			if v, ok := constantValue(ss); ok {
				constant = append(constant, fmt.Sprintf("%s = %g", m, v))
				continue
			}
			p.Figure(fmt.Sprintf("%s on the %s.", m, g), report.LineChart{
				Title: m + " (" + g + ")",
				X:     report.Axis{Label: "time since the workload started", Unit: "s"},
				Y:     metricAxis(m),
				// Metrics reported only now and then are dots, not a staircase.
				Series: ss, Step: true, Markers: points*2 < len(runs[0].rows)})
		}
		if len(constant) > 0 {
			p.Paragraph("Constant on the " + g + " in every run: " + strings.Join(constant, ", ") + ".")
		}
	}
}

// hostLabels names each host of a run by its role at the start and what was
// on it ("leader, fault", "follower, clients"), numbering hosts that would
// share a name ("follower 2, clients") in host order. The fault is where the
// scenario's faults aim by the roles at the start, so the baseline's hosts
// are named as the others' are.
func hostLabels(r RunResult, faults []Fault) map[string]string {
	aimed := map[string]bool{}
	for _, f := range faults {
		if h, ok := pick(r.Roles, f.Target, r.Clients); ok {
			aimed[h] = true
		}
	}
	base := map[string]string{}
	for h, role := range r.Roles {
		tags := []string{role}
		if aimed[h] {
			tags = append(tags, "fault")
		}
		if slices.Contains(r.Clients, h) {
			tags = append(tags, "clients")
		}
		base[h] = strings.Join(tags, ", ")
	}
	hosts := sortedKeys(base)
	slices.SortFunc(hosts, func(a, b string) int { return hostOrder(a) - hostOrder(b) })
	count, seen := map[string]int{}, map[string]int{}
	for _, h := range hosts {
		count[base[h]]++
	}
	out := map[string]string{}
	for _, h := range hosts {
		l := base[h]
		if count[l] > 1 {
			seen[l]++
			role, rest, _ := strings.Cut(l, ", ")
			l = fmt.Sprintf("%s %d", role, seen[base[h]])
			if rest != "" {
				l += ", " + rest
			}
		}
		out[h] = l
	}
	return out
}

// compareGroups puts the hosts with the fault first, then the leader.
func compareGroups(a, b string) int {
	rank := func(g string) int {
		switch {
		case strings.Contains(g, "fault"):
			return 0
		case strings.HasPrefix(g, "leader"):
			return 1
		}
		return 2
	}
	if d := rank(a) - rank(b); d != 0 {
		return d
	}
	return strings.Compare(a, b)
}

func constantValue(series []report.Series) (float64, bool) {
	first, set := 0.0, false
	for _, s := range series {
		for _, v := range s.Y {
			if !set {
				first, set = v, true
			} else if v != first {
				return 0, false
			}
		}
	}
	return first, set
}

// splitMetric splits "name{host=h1}" into the name and the label value(s).
func splitMetric(key string) (name, label string) {
	name, rest, ok := strings.Cut(key, "{")
	if !ok {
		return key, ""
	}
	var vals []string
	for kv := range strings.SplitSeq(strings.TrimSuffix(rest, "}"), ",") {
		_, v, _ := strings.Cut(kv, "=")
		vals = append(vals, v)
	}
	return name, strings.Join(vals, " ")
}

// metricAxis labels a metric's axis by what its name says it counts.
func metricAxis(name string) report.Axis {
	a := report.Axis{Label: "value", Zero: true}
	switch {
	case strings.HasSuffix(name, "_seconds"):
		a.Label, a.Unit = "mean over the second", "s"
	case strings.HasSuffix(name, "_bytes"):
		a.Label = "bytes"
	case strings.HasSuffix(name, "_total"):
		a.Label = "running total"
	case name == "proc_cpu":
		a.Label = "CPU cores busy"
	case strings.HasPrefix(name, "proc_ctx_"), strings.HasPrefix(name, "proc_faults_"):
		a.Label, a.Unit = "rate", "per s"
	}
	return a
}

func runTable(p *report.Page, runs []runSeries) {
	var rows [][]string
	for _, r := range runs {
		var roles []string
		for _, h := range sortedKeys(r.res.Roles) {
			roles = append(roles, h+" "+r.res.Roles[h])
		}
		rows = append(rows, []string{r.name, r.res.Dir, fmt.Sprintf("%.1fs", r.res.Ready.Seconds()),
			strings.Join(roles, ", "), strings.Join(r.res.Clients, " "), fmt.Sprintf("%.0fs", r.res.Wall.Seconds())})
	}
	p.Heading("Runs")
	p.Table([]string{"run", "directory", "cluster ready", "roles at start", "clients on", "wall time"}, rows)
}

package chapter6

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gait-dev/gait/internal/model"
	"github.com/gait-dev/gait/internal/report"
)

// Levels are the percentile levels a row compares (Figure 14's four and
// the median).
var Levels = []float64{0.5, 0.9, 0.95, 0.99, 0.999}

// Row is one measured point beside the model's answer for it.
type Row struct {
	Point
	// Service is the per-duplicate service time the prediction used: the
	// single accesses of the study's service run on a mix of one
	// duplicate (name, mean).
	Service     string
	ServiceMean float64
	sys         model.System // the model's system for the point
	// Measured and Simulated are the requests' latencies at Levels
	// (NaN where too few were measured to tell).
	Measured, Simulated []float64
	// At the measured latencies of Bounds (p50, p90, p99), the share the
	// predictor and the simulator put within them.
	Bounds               []float64
	Predicted, SimShares []float64
	Utilization          float64 // of each server, the model's
	// Unstable says the model's queues grow without bound at this rate
	// and the measured service time: nothing is predicted.
	Unstable bool
}

// Shares are the levels Row.Bounds stand at.
var Shares = []float64{0.5, 0.9, 0.99}

// Rows pairs every measured point of points with the model's answer,
// from the service run of the same study on a mix of one duplicate (the
// most replicas of those), request by request.
func Rows(points []Point, simRequests int, basis Basis) ([]Row, error) {
	services := map[string]Point{}
	for _, p := range points {
		if !p.Service || p.Mix.Duplicates != 1 {
			continue
		}
		if s, ok := services[p.Study]; !ok || p.Mix.Replicas > s.Mix.Replicas {
			services[p.Study] = p
		}
	}
	var rows []Row
	for _, p := range points {
		if p.Service || p.DelayShare > 0 {
			continue
		}
		svc, ok := services[p.Study]
		if !ok {
			return nil, fmt.Errorf("study %s: no service-time run on a mix of one duplicate to predict from", p.Study)
		}
		row, err := predictRow(p, svc, simRequests, basis)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// Basis is what of the service run the model takes as a duplicate's
// service time.
type Basis string

const (
	// Work: the hosts' CPU time per access (Point.WorkPerAccess) is the
	// service time each duplicate queues, a constant; the rest of each
	// access's latency (round trips, the client's and the agent's
	// hand-offs, which parallel accesses overlap) is the network delay,
	// drawn per access from the service run's latencies less that work.
	Work Basis = "work"
	// Latency: the service run's whole access latency is the service
	// time, queued at the duplicate (what the study did before it
	// measured the hosts' work).
	Latency Basis = "latency"
	// OwnRun: as Work, but the service time is the hosts' work per access
	// measured in the point's own run, over its d duplicates (the
	// utilization law: CPU time over accesses served): the work at the
	// run's concurrency, where the service run's single accesses at
	// another rate cost the hosts 1.7-3.4 times as much per access.
	OwnRun Basis = "run"
)

// ParseBasis reads --service-basis.
func ParseBasis(s string) (Basis, error) {
	switch b := Basis(s); b {
	case Work, Latency, OwnRun:
		return b, nil
	}
	return "", fmt.Errorf("--service-basis %q: want work, run or latency", s)
}

// system is the model's system for point p from the service run svc.
func (b Basis) system(p, svc Point) (model.System, string, error) {
	name := "service run of " + MixName(svc.Mix)
	sys := model.System{Rate: p.Rate, Request: p.Request}
	if b == Latency {
		emp, err := model.NewEmpirical(svc.Accesses, name)
		sys.Service = emp
		return sys, name + ": access latency", err
	}
	w := svc.WorkPerAccess()
	if w <= 0 {
		return sys, "", fmt.Errorf("%s: the hosts' CPU time was not measured (a point of an older gait); use --service-basis latency", name)
	}
	net := make([]float64, len(svc.Accesses))
	for i, l := range svc.Accesses {
		net[i] = max(0, l-w)
	}
	emp, err := model.NewEmpirical(net, name+" less the work")
	sys.Service, sys.Net = model.Constant{V: w}, emp
	if b == OwnRun {
		own := p.WorkPerAccess() / float64(p.Mix.Duplicates)
		if own <= 0 {
			return sys, "", fmt.Errorf("%s at %.4g/s: the hosts' CPU time in the run was not measured, or not told from their idle use; use --service-basis work", MixName(p.Mix), p.Rate)
		}
		sys.Service = model.Constant{V: own}
		return sys, "run's own hosts' work " + model.FormatDuration(own) + " per duplicate, the rest of the " + name + "'s latency as network", err
	}
	return sys, name + ": hosts' work " + model.FormatDuration(w) + ", the rest as network", err
}

func predictRow(p, svc Point, simRequests int, basis Basis) (Row, error) {
	sys, name, err := basis.system(p, svc)
	if err != nil {
		return Row{}, err
	}
	row := Row{Point: p, Service: name, ServiceMean: sys.Service.Mean(), sys: sys, Utilization: sys.Utilization(p.Mix)}
	// A level is told when at least 3 requests lie beyond it.
	enough := func(l float64) bool { return float64(len(p.Requests))*(1-l) >= 3 }
	for _, l := range Levels {
		v := math.NaN()
		if enough(l) {
			v = quantile(p.Requests, l)
		}
		row.Measured = append(row.Measured, v)
	}
	for _, s := range Shares {
		if enough(s) {
			row.Bounds = append(row.Bounds, quantile(p.Requests, s))
		}
	}
	if len(row.Bounds) == 0 {
		return row, nil
	}
	if row.Utilization >= 1 {
		row.Unstable = true
		return row, nil
	}
	sim, err := model.SimulateRequests(sys, p.Mix, row.Bounds, model.SimOptions{Requests: simRequests, Seed: 1})
	if err != nil {
		return Row{}, fmt.Errorf("simulate %s at %.4g/s: %w", MixName(p.Mix), p.Rate, err)
	}
	row.SimShares, row.Simulated = sim.SLA, sim.Percentiles
	pred, err := model.PredictRequest(sys, p.Mix, 2*slices.Max(row.Bounds), false)
	if err != nil {
		return Row{}, fmt.Errorf("predict %s at %.4g/s: %w", MixName(p.Mix), p.Rate, err)
	}
	for _, b := range row.Bounds {
		row.Predicted = append(row.Predicted, pred.At(b))
	}
	return row, nil
}

// ReadPoints reads the points a study appended to path, one JSON a line.
func ReadPoints(path string) ([]Point, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Point
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<30)
	for n := 1; sc.Scan(); n++ {
		var p Point
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if p.System == "" {
			p.System = "gait-redis"
		}
		if len(out) > 0 && p.System != out[0].System {
			return nil, fmt.Errorf("%s:%d: a point of %s after points of %s: the service runs of one system cannot predict another's points; give each system its own --out", path, n, p.System, out[0].System)
		}
		out = append(out, p)
	}
	return out, sc.Err()
}

// CheckAppend refuses to add points of system to the points at path when
// those are of another system (ReadPoints would refuse the file); no file
// yet is fine.
func CheckAppend(path, system string) error {
	ps, err := ReadPoints(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(ps) > 0 && ps[0].System != system {
		return fmt.Errorf("%s holds points of %s: give %s its own --out", path, ps[0].System, system)
	}
	return nil
}

// Append writes p to path as one JSON line.
func Append(path string, p Point) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	b, err := json.Marshal(p)
	if err == nil {
		_, err = f.Write(append(b, '\n'))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func ms(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v*1e3, 'f', 2, 64)
}

func pct(v float64) string { return strconv.FormatFloat(100*v, 'f', 2, 64) + "%" }

// WriteText prints the rows: measured and simulated percentiles, and the
// predicted and simulated shares at the measured p50, p90 and p99.
func WriteText(w io.Writer, rows []Row) error {
	bw := bufio.NewWriter(w)
	for _, r := range rows {
		pinned := ""
		if r.PinCPUs > 0 {
			pinned = fmt.Sprintf(", host i on CPU i mod %d", r.PinCPUs)
		}
		fmt.Fprintf(bw, "%s %s %.4g req/s (server utilization %.3f, %.2g CPU/host%s): %d requests, %d failed, send lateness p99 %s ms, load %s\n",
			r.Study, MixName(r.Mix), r.Rate, r.Utilization, r.CPUs, pinned, len(r.Requests), r.Failed, ms(r.LateP99), r.Load)
		fmt.Fprintf(bw, "  model from the %s\n", r.Service)
		if w := r.WorkPerAccess(); w > 0 {
			// On a machine whose cores the hosts share, a request's
			// latency follows this, not the model's parallel servers.
			fmt.Fprintf(bw, "  the hosts' CPU per request, all hosts: %s ms (measured p50 / that: %.2f)\n", ms(w*float64(r.Request.Accesses())), quantile(r.Requests, 0.5)/(w*float64(r.Request.Accesses())))
		}
		fmt.Fprintf(bw, "  %-10s", "")
		for _, l := range Levels {
			fmt.Fprintf(bw, " %8s", "p"+strconv.FormatFloat(100*l, 'g', 4, 64))
		}
		fmt.Fprintf(bw, "\n  %-10s", "measured")
		for _, v := range r.Measured {
			fmt.Fprintf(bw, " %8s", ms(v))
		}
		if r.Unstable {
			fmt.Fprintf(bw, "\n  the model's queues grow without bound at this rate (service mean %s ms)\n", ms(r.ServiceMean))
			continue
		}
		fmt.Fprintf(bw, "\n  %-10s", "simulated")
		for _, v := range r.Simulated {
			fmt.Fprintf(bw, " %8s", ms(v))
		}
		fmt.Fprintln(bw, " (ms)")
		for i, b := range r.Bounds {
			fmt.Fprintf(bw, "  within %s ms: measured %s, predicted %s (error %+.4f), simulated %s (error %+.4f)\n",
				ms(b), pct(Shares[i]), pct(r.Predicted[i]), r.Predicted[i]-Shares[i], pct(r.SimShares[i]), r.SimShares[i]-Shares[i])
		}
	}
	return bw.Flush()
}

// Page is the rows measured on system as a report: per study a chart of
// the percentiles of each mix, measured (solid) and simulated from the
// measured service time (dashed), and the table.
func Page(title, system string, rows []Row, caps []Capacity, target model.Target, slow []Slowdown) *report.Page {
	pg := report.NewPage(title)
	if len(slow) > 0 {
		pg.Heading("steps back to back with a delay on a share of the accesses (Figure 2)")
		pg.Figure("the time each step gained over the runs without delay (their mean), measured on "+system+" (solid), expected from the mean access latency (every access's mean grows by share x delay; dashed) and from the fan-out (a phase is late when any of its accesses is; dashed)",
			slowdownChart(slow))
		var tr [][]string
		for _, d := range slow {
			tr = append(tr, []string{MixName(d.Mix), model.FormatDuration(d.Delay), pct(d.Share), strconv.Itoa(d.Steps),
				fmt.Sprintf("%.2f", d.Elapsed), ms(d.Extra), ms(d.ExpectedMean), ms(d.ExpectedFanOut), ratio(d.Extra, d.ExpectedMean), d.Load})
		}
		pg.Table([]string{"mix", "delay", "share", "steps", "run s", "extra ms a step", "the mean expects ms", "the fan-out expects ms", "extra / the mean's", "load average"}, tr)
	}
	var studies []string
	for _, r := range rows {
		if r.Study == "single" {
			continue
		}
		if !slices.Contains(studies, r.Study+" at "+rateName(r)) {
			studies = append(studies, r.Study+" at "+rateName(r))
		}
	}
	for _, st := range studies {
		var in []Row
		for _, r := range rows {
			if r.Study+" at "+rateName(r) == st {
				in = append(in, r)
			}
		}
		pg.Heading(st)
		pg.Figure(st+": request latency at each percentile level, measured on "+system+" (first bar of each mix) and simulated from the measured service time (second bar); a level with fewer than 3 requests beyond it is not drawn",
			percentileChart(in))
		pg.Table([]string{"mix", "rate /s", "requests", "failed", "p50 ms", "p90 ms", "p95 ms", "p99 ms", "p99.9 ms", "load average"},
			tableRows(in))
		if pr := predictionRows(in); len(pr) > 0 {
			pg.Table([]string{"mix", "rate /s", "measured", "bound ms", "predicted", "error", "simulated", "error"}, pr)
		}
	}
	if len(caps) > 0 {
		pg.Heading("single accesses: the highest rate that meets " + target.String())
		pg.Figure("the highest rate each mix carried with "+target.String()+" of its accesses, measured on "+system+" (solid) and planned by the model from the measured service time, each host serving at its CPU share (dashed)",
			capacityChart(caps))
		var tr [][]string
		for _, c := range caps {
			tr = append(tr, []string{MixName(c.Mix), strconv.Itoa(c.Mix.Nodes()), fmt.Sprintf("%.0f", c.Measured), fmt.Sprintf("%.0f", c.Planned), triedText(c)})
		}
		pg.Table([]string{"mix", "nodes", "measured max rate /s", "planned max rate /s", "rates tried: latency at the target's share"}, tr)
	}
	return pg
}

// atShare is the service time of a host of cpus CPUs whose every access
// costs service of CPU work: cpus CPU-seconds a second are all the host
// gets, so it serves at most cpus/service accesses a second. Used for the
// planned rate only: the kernel's quota lets a lone access run at full
// speed, so below the share the wait it adds (service/cpus - service, 0.2
// ms at 0.25 CPU) is small beside Figure 16's bound. A service that is
// not work (the latency basis: the whole access latency) is left as it
// is, and so is a host of a CPU or more (the model's server is one).
func atShare(service model.Distribution, cpus float64) model.Distribution {
	work, ok := service.(model.Constant)
	if !ok || cpus <= 0 || cpus >= 1 {
		return service
	}
	return model.Constant{V: work.V / cpus}
}

// triedText lists a mix's rates from the lowest with the latency each
// had at the target's share. It reads as text, not a number, so that the
// report wraps it (a study run in pieces tries seven rates or more).
func triedText(c Capacity) string {
	idx := make([]int, len(c.Tried))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(c.Tried[a], c.Tried[b]) })
	parts := make([]string, len(idx))
	for k, i := range idx {
		parts[k] = fmt.Sprintf("at %.0f/s %s ms", c.Tried[i], ms(c.P99s[i]))
	}
	return strings.Join(parts, ", ")
}

// capacityChart draws the highest rate against the nodes, one line per
// duplicate count.
func capacityChart(caps []Capacity) report.LineChart {
	c := report.LineChart{Title: "highest rate meeting the target", Markers: true,
		X: report.Axis{Label: "nodes"}, Y: report.Axis{Label: "accesses per second", Zero: true}}
	byD := map[int][2]*report.Series{}
	var ds []int
	for _, k := range caps {
		s, ok := byD[k.Mix.Duplicates]
		if !ok {
			name := fmt.Sprintf("%d duplicates", k.Mix.Duplicates)
			if k.Mix.Duplicates == 1 {
				name = "all replicas"
			}
			s = [2]*report.Series{{Name: name + " measured"}, {Name: name + " planned", Dashed: true}}
			byD[k.Mix.Duplicates], ds = s, append(ds, k.Mix.Duplicates)
		}
		n := float64(k.Mix.Nodes())
		s[0].X, s[0].Y = append(s[0].X, n), append(s[0].Y, k.Measured)
		s[1].X, s[1].Y = append(s[1].X, n), append(s[1].Y, k.Planned)
	}
	for _, d := range ds {
		c.Series = append(c.Series, *byD[d][0], *byD[d][1])
	}
	return c
}

// rateName groups a study's rows: by the load asked for (its rate followed
// from each deployment's own service run), or by the rate.
func rateName(r Row) string {
	if r.Offered > 0 {
		return fmt.Sprintf("load %g (of one server taking every access)", r.Offered)
	}
	return fmt.Sprintf("%.4g requests/s", r.Rate)
}

func percentileChart(rows []Row) report.BarChart {
	c := report.BarChart{Title: "request latency", Y: report.Axis{Label: "latency", Unit: "s"}}
	for _, l := range Levels[1:] {
		c.Categories = append(c.Categories, "p"+strconv.FormatFloat(100*l, 'g', 4, 64))
	}
	for _, r := range rows {
		c.Series = append(c.Series, report.Series{Name: MixName(r.Mix) + " measured", Y: r.Measured[1:]})
		if len(r.Simulated) > 0 {
			c.Series = append(c.Series, report.Series{Name: MixName(r.Mix) + " simulated", Y: r.Simulated[1:], Dashed: true})
		}
	}
	return c
}

// tableRows puts each level's measured and simulated latency in one cell.
func tableRows(rows []Row) [][]string {
	var out [][]string
	for _, r := range rows {
		row := []string{MixName(r.Mix), fmt.Sprintf("%.3g", r.Rate), strconv.Itoa(len(r.Requests)), strconv.Itoa(r.Failed)}
		for i, v := range r.Measured {
			sim := math.NaN()
			if i < len(r.Simulated) {
				sim = r.Simulated[i]
			}
			row = append(row, ms(v)+" / "+ms(sim))
		}
		out = append(out, append(row, r.Load))
	}
	return out
}

// predictionRows is each row's measured p50, p90 and p99 as bounds, with
// the shares the predictor and the simulator put within them and their
// errors (the share less the measured one): the model's answer in the
// SLA's terms, as the text report prints it.
func predictionRows(rows []Row) [][]string {
	var out [][]string
	for _, r := range rows {
		for i, b := range r.Bounds {
			if i >= len(r.Predicted) {
				break
			}
			out = append(out, []string{MixName(r.Mix), fmt.Sprintf("%.3g", r.Rate), "p" + strconv.FormatFloat(100*Shares[i], 'g', 4, 64), ms(b),
				pct(r.Predicted[i]), fmt.Sprintf("%+.4f", r.Predicted[i]-Shares[i]), pct(r.SimShares[i]), fmt.Sprintf("%+.4f", r.SimShares[i]-Shares[i])})
		}
	}
	return out
}

// Capacity is Figure 16's point: the highest rate of single accesses a
// mix carried while meeting the target, measured and planned.
type Capacity struct {
	Mix      model.Config
	Measured float64   // the highest measured rate that met the target (0: none did)
	Tried    []float64 // every measured rate
	P99s     []float64 // the accesses' latency at the target's share, per rate
	// Planned is the model's highest rate for the mix (gait model plan
	// --max-rate's), from the same service time.
	Planned float64
	// PlannedAbove marks a planned rate that bounds the mix's from above
	// (the planner skipped the mix: it cannot beat the best).
	PlannedAbove bool
}

// Capacities sums up the single-access rows per mix against target.
func Capacities(rows []Row, target model.Target) ([]Capacity, error) {
	byMix := map[model.Config]*Capacity{}
	var order []model.Config
	for _, r := range rows {
		if r.Study != "single" {
			continue
		}
		c, ok := byMix[r.Mix]
		if !ok {
			// An error with every mix's result means none meets the
			// target: each planned rate is then 0.
			plan := model.System{Service: atShare(r.sys.Service, r.CPUs), Net: r.sys.Net}
			_, all, err := model.MaxRate(plan, target, r.Mix.Nodes(), model.PredictorAccurate, model.AccurateOptions{})
			if err != nil && all == nil {
				return nil, fmt.Errorf("plan %s: %w", MixName(r.Mix), err)
			}
			c = &Capacity{Mix: r.Mix}
			for _, a := range all {
				if a.Config == r.Mix {
					c.Planned, c.PlannedAbove = a.Rate, a.UpperBound
				}
			}
			byMix[r.Mix], order = c, append(order, r.Mix)
		}
		at := quantile(r.Requests, target.SLA)
		c.Tried, c.P99s = append(c.Tried, r.Rate), append(c.P99s, at)
		if at <= target.Bound && r.Failed == 0 && r.Rate > c.Measured {
			c.Measured = r.Rate
		}
	}
	out := make([]Capacity, len(order))
	for i, m := range order {
		out[i] = *byMix[m]
	}
	return out, nil
}

// Slowdown is Figure 2's point: a run of steps back to back with a delay
// on a share of the accesses, against the same run with none.
type Slowdown struct {
	Mix          model.Config
	Delay, Share float64
	Steps        int
	Elapsed      float64 // the run's length, seconds
	// Extra is the added time per step over the runs without delay, the
	// mean of their times per step when there are several (NaN when the
	// study has none); ExpectedMean is what the mean would
	// add (every access's mean grows by Share x Delay, and a step's
	// phases follow one another), ExpectedFanOut what a phase of k
	// parallel accesses adds when any of its k is delayed,
	// (1-(1-Share)^k) x Delay per phase.
	Extra, ExpectedMean, ExpectedFanOut float64
	Load                                string
}

// Slowdowns sums up Figure 2's points per mix, in the order measured.
// The runs without delay are the base; a study that names 0 before and
// after the delays (--delays 0,5ms,50ms,0) brackets them, since a
// server's speed drifts over a study (a JVM's most).
func Slowdowns(points []Point) []Slowdown {
	type stepTimes struct {
		sum float64 // seconds per step, summed over the runs
		n   int
	}
	bases := map[model.Config]stepTimes{}
	for _, p := range points {
		if p.DelayShare > 0 && p.Delay == 0 && len(p.Requests) > 0 {
			m := bases[p.Mix]
			bases[p.Mix] = stepTimes{m.sum + p.Elapsed/float64(len(p.Requests)), m.n + 1}
		}
	}
	var out []Slowdown
	for _, p := range points {
		if p.DelayShare == 0 || len(p.Requests) == 0 {
			continue
		}
		s := Slowdown{Mix: p.Mix, Delay: p.Delay, Share: p.DelayShare, Steps: len(p.Requests), Elapsed: p.Elapsed, Extra: math.NaN(), Load: p.Load}
		if b, ok := bases[p.Mix]; ok {
			s.Extra = p.Elapsed/float64(len(p.Requests)) - b.sum/float64(b.n)
		}
		for _, k := range p.Request.Phases {
			s.ExpectedMean += p.DelayShare * p.Delay
			s.ExpectedFanOut += (1 - math.Pow(1-p.DelayShare, float64(k))) * p.Delay
		}
		out = append(out, s)
	}
	return out
}

func ratio(a, b float64) string {
	if math.IsNaN(a) || b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// slowdownChart draws the extra time per step against the delay, one
// measured line per mix and the two expectations of the first. Each
// mix's runs are drawn in the order of their delays, so that several runs
// without delay (a bracket) stand one above the other at 0.
func slowdownChart(slow []Slowdown) report.LineChart {
	c := report.LineChart{Title: "slowdown per step", Markers: true,
		X: report.Axis{Label: "delay", Unit: "s"}, Y: report.Axis{Label: "extra time per step", Unit: "s", Zero: true}}
	byMix := map[model.Config]int{}
	mean := report.Series{Name: "expected from the mean", Dashed: true}
	fan := report.Series{Name: "expected from the fan-out", Dashed: true}
	slow = slices.Clone(slow)
	slices.SortStableFunc(slow, func(a, b Slowdown) int { return cmp.Compare(a.Delay, b.Delay) })
	for _, d := range slow {
		i, ok := byMix[d.Mix]
		if !ok {
			i = len(c.Series)
			byMix[d.Mix] = i
			c.Series = append(c.Series, report.Series{Name: MixName(d.Mix) + " measured"})
		}
		c.Series[i].X, c.Series[i].Y = append(c.Series[i].X, d.Delay), append(c.Series[i].Y, d.Extra)
		if i == 0 {
			mean.X, mean.Y = append(mean.X, d.Delay), append(mean.Y, d.ExpectedMean)
			fan.X, fan.Y = append(fan.X, d.Delay), append(fan.Y, d.ExpectedFanOut)
		}
	}
	c.Series = append(c.Series, mean, fan)
	return c
}

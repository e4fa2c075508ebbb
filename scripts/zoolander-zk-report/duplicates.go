package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/report"
)

// The model's two assumptions, tested apart on the clients' agent's own
// measurements (its metrics before and after the measured requests,
// OUT/EXP/dD.metrics0 and dD.metrics): that one duplicate's distribution F
// stays what it was alone (D = 1) when others are added, and that the
// first of D replies is the least of D independent draws. Per D, at a
// bound taken from the D = 1 run's first replies:
//
//	from D = 1:        1-(1-F1(B))^D, F1 the lone duplicate's replies
//	from this run:     1-Π(1-Fi(B)), Fi each duplicate's replies in this run
//	measured:          the share of first replies within B
//
// The gap between the first two is what the duplicates did to each
// other's latency (shared cores, the remote duplicates' extra hop); the
// gap between the last two is their replies not being independent (delays
// that hit every duplicate at once).

const checkIntro = "From the clients' agent's metrics over the measured requests: each write's first reply and every " +
	"duplicate's own reply, from proposing it, at bounds taken from the D=1 run's first replies. Own F(B) and others' F(B): " +
	"the share of the clients' agent's own duplicate's replies, and of each other duplicate's, within the bound. From D=1 is " +
	"the thesis's prediction, 1-(1-F1(B))^D with F1 the lone duplicate's; from this run is 1-Π(1-Fi(B)) with each " +
	"duplicate's Fi as it was in this run; measured is the share of first replies within the bound. Changed, |from D=1 - " +
	"from this run|, is what the duplicates did to each other's latency (shared cores, the other duplicates' extra hop); " +
	"dependent, |from this run - measured|, is their replies not being independent draws (a delay that hits them all)."

// hist is a cumulative histogram: counts of observations at most each
// upper edge, the last edge +Inf.
type hist struct {
	le, cum []float64
}

func (h hist) total() float64 {
	if len(h.cum) == 0 {
		return 0
	}
	return h.cum[len(h.cum)-1]
}

// cdf is the share of observations at most x, interpolated linearly
// within the bucket that holds x.
func (h hist) cdf(x float64) float64 {
	n := h.total()
	if n == 0 {
		return math.NaN()
	}
	lo, below := 0.0, 0.0
	for i, edge := range h.le {
		if x <= edge {
			if math.IsInf(edge, 1) {
				return below / n
			}
			return (below + (h.cum[i]-below)*(x-lo)/(edge-lo)) / n
		}
		lo, below = edge, h.cum[i]
	}
	return 1
}

// quantile is the q-th percentile, interpolated as cdf is.
func (h hist) quantile(q float64) float64 {
	n := h.total()
	want := q / 100 * n
	lo, below := 0.0, 0.0
	for i, edge := range h.le {
		if h.cum[i] >= want {
			if math.IsInf(edge, 1) || h.cum[i] == below {
				return lo
			}
			return lo + (edge-lo)*(want-below)/(h.cum[i]-below)
		}
		lo, below = edge, h.cum[i]
	}
	return lo
}

// minus is h less an earlier reading of the same histogram.
func (h hist) minus(before hist) hist {
	out := hist{le: h.le, cum: append([]float64(nil), h.cum...)}
	if len(before.cum) == len(h.cum) {
		for i := range out.cum {
			out.cum[i] -= before.cum[i]
		}
	}
	return out
}

// agentView is what the clients' agent measured of its writes: the first
// reply to each (commit_seconds) and each replica's reply (reply_seconds).
type agentView struct {
	self     string // the clients' agent's replica ID
	first    hist
	replicas map[string]hist
}

var bucketLine = regexp.MustCompile(`^gait_replica_(commit|reply)_seconds_bucket\{(.*)\} (\S+)$`)

// readHists reads the two histograms from Prometheus's text format.
func readHists(text string) (self string, first hist, replicas map[string]hist) {
	replicas = map[string]hist{}
	add := func(h hist, le, v float64) hist {
		h.le, h.cum = append(h.le, le), append(h.cum, v)
		return h
	}
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, `gait_replica_follows{leader="`); ok {
			self, _, _ = strings.Cut(rest, `"`)
			continue
		}
		m := bucketLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, kv := range strings.Split(m[2], ",") {
			k, v, _ := strings.Cut(kv, "=")
			labels[k] = strings.Trim(v, `"`)
		}
		le, err1 := strconv.ParseFloat(labels["le"], 64)
		v, err2 := strconv.ParseFloat(m[3], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if m[1] == "commit" {
			first = add(first, le, v)
		} else {
			replicas[labels["replica"]] = add(replicas[labels["replica"]], le, v)
		}
	}
	return self, first, replicas
}

// readAgentView reads dir.metrics less dir.metrics0; false when either is
// missing or holds no per-replica replies (a run before they were kept).
func readAgentView(dir string) (agentView, bool) {
	after, err1 := os.ReadFile(dir + ".metrics")
	before, err2 := os.ReadFile(dir + ".metrics0")
	if err1 != nil || err2 != nil {
		return agentView{}, false
	}
	self, first, reps := readHists(string(after))
	_, first0, reps0 := readHists(string(before))
	if len(reps) == 0 || self == "" {
		return agentView{}, false
	}
	v := agentView{self: self, first: first.minus(first0), replicas: map[string]hist{}}
	for id, h := range reps {
		v.replicas[id] = h.minus(reps0[id])
	}
	return v, v.first.total() > 0
}

// check is one D's test of the two assumptions at one bound.
type check struct {
	d                int
	bound            time.Duration
	percentile       float64
	writes           int
	own              float64   // the clients' agent's own duplicate's F(B)
	others           []float64 // every other duplicate's F(B)
	fromOne, fromRun float64
	measured         float64
}

// checks tests the assumptions at the D = 1 run's first-reply p75, p90
// and p99; nil when a D's agent view is missing.
func (e *experiment) checks() []check {
	views := map[int]agentView{}
	for _, d := range ds {
		if v, ok := readAgentView(filepath.Join(e.dir, fmt.Sprintf("d%d", d))); ok {
			views[d] = v
		}
	}
	one, ok := views[1]
	if !ok {
		return nil
	}
	var out []check
	for _, q := range []float64{75, 90, 99} {
		b := one.first.quantile(q)
		f1 := one.replicas[one.self].cdf(b)
		for _, d := range ds {
			v, ok := views[d]
			if !ok {
				continue
			}
			s := check{d: d, bound: time.Duration(b * 1e9).Round(time.Microsecond), percentile: q, writes: int(v.first.total()),
				fromOne: 1 - math.Pow(1-f1, float64(d)), measured: v.first.cdf(b)}
			miss := 1.0
			ids := make([]string, 0, len(v.replicas))
			for id := range v.replicas {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			for _, id := range ids {
				f := v.replicas[id].cdf(b)
				miss *= 1 - f
				if id == v.self {
					s.own = f
				} else {
					s.others = append(s.others, f)
				}
			}
			s.fromRun = 1 - miss
			out = append(out, s)
		}
	}
	return out
}

var checkHeader = []string{"D", "bound", "of D=1", "writes", "own F(B)", "others' F(B)",
	"from D=1", "from this run", "measured", "changed", "dependent"}

func checkRows(ss []check) [][]string {
	var out [][]string
	for _, s := range ss {
		others := "-"
		if len(s.others) > 0 {
			var fs []string
			for _, f := range s.others {
				fs = append(fs, fmt.Sprintf("%.3f", f))
			}
			others = strings.Join(fs, ", ")
		}
		out = append(out, []string{strconv.Itoa(s.d), s.bound.String(), fmt.Sprintf("p%g", s.percentile), strconv.Itoa(s.writes),
			fmt.Sprintf("%.3f", s.own), others, fmt.Sprintf("%.4f", s.fromOne), fmt.Sprintf("%.4f", s.fromRun),
			fmt.Sprintf("%.4f", s.measured), fmt.Sprintf("%.4f", math.Abs(s.fromOne-s.fromRun)),
			fmt.Sprintf("%.4f", math.Abs(s.fromRun-s.measured))})
	}
	return out
}

func checkMarkdown(ss []check) string { return markdownTable(checkHeader, checkRows(ss)) }

// checkChart draws, at the p90 bound, the two predictions and the
// measured share against D.
func checkChart(e *experiment, ss []check) report.LineChart {
	series := []report.Series{{Name: "predicted from D=1 (the thesis's way)", Dashed: true},
		{Name: "predicted from this run's duplicates"}, {Name: "measured first reply"}}
	for _, s := range ss {
		if s.percentile != 90 {
			continue
		}
		x := float64(s.d)
		for i, y := range []float64{s.fromOne, s.fromRun, s.measured} {
			series[i].X, series[i].Y = append(series[i].X, x), append(series[i].Y, nines(y, 0))
		}
	}
	return duplicatesChart("The clients' agent's view, within the D=1 first replies' p90", "nines, -log10(1 - share)", series)
}

// Package verdict decides the Limplock paper's verdicts (its §3) from what
// a limpware run measured against its baseline: operation limplock (the
// operations that involve the limping component slow down), node limplock
// (operations a healthy node serves, which do not involve the limpware,
// slow down too), cluster limplock (the whole cluster's throughput
// collapses, or every node the clients use is in node limplock), and a
// hidden backlog (a white-box queue or lag grows steadily while client
// latency still looks normal, the paper's Z4 against Z5).
//
// It is pure computation: the caller groups the requests and the metric
// series; each verdict comes with one sentence saying why.
package verdict

import (
	"fmt"
	"math"
	"strings"

	"github.com/gait-dev/gait/internal/units"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Options are the thresholds. The defaults, and why, are in docs/bench.md.
type Options struct {
	// Slow: a group of operations is slow when its mean latency is more
	// than Slow times its mean in the baseline.
	Slow float64
	// Collapse: the cluster's throughput has collapsed when it is below
	// Collapse times the baseline's.
	Collapse float64
	// MinRequests is the fewest baseline requests a group needs to be
	// judged: a mean of a handful of requests is noise.
	MinRequests int
	// Alpha is the significance a backlog's rising slope needs (one-sided
	// p-value of the fitted slope).
	Alpha float64
	// Growth: a backlog must rise, along its fitted line over the run, by
	// more than Growth times the largest value the same metric reached in
	// the baseline (at least 1), so that a queue wobbling as it does
	// without a fault is not one.
	Growth float64
	// MinPoints is the fewest samples a backlog series needs to be fitted.
	MinPoints int
}

// Defaults are the thresholds unless a caller says otherwise.
func Defaults() Options {
	return Options{Slow: 5, Collapse: 0.2, MinRequests: 20, Alpha: 0.01, Growth: 2, MinPoints: 5}
}

// Check says which option is out of its range.
func (o Options) Check() error {
	switch {
	case !(o.Slow > 1) || math.IsInf(o.Slow, 0):
		return fmt.Errorf("slow threshold %g: want a factor above 1", o.Slow)
	case !(o.Collapse > 0 && o.Collapse < 1):
		return fmt.Errorf("collapse threshold %g: want a share of the baseline's throughput between 0 and 1", o.Collapse)
	case o.MinRequests < 1:
		return fmt.Errorf("minimum requests %d: want at least 1", o.MinRequests)
	case !(o.Alpha > 0 && o.Alpha < 1):
		return fmt.Errorf("significance %g: want a p-value between 0 and 1", o.Alpha)
	case !(o.Growth > 0) || math.IsInf(o.Growth, 0):
		return fmt.Errorf("backlog growth %g: want a positive factor", o.Growth)
	case o.MinPoints < 3:
		return fmt.Errorf("minimum points %d: a slope's significance needs at least 3", o.MinPoints)
	}
	return nil
}

// Latency is a group's requests in one run or step: how many and their
// mean latency in seconds.
type Latency struct {
	N    int
	Mean float64
}

// Group is the requests of one kind on one member, in the baseline and
// under the fault.
type Group struct {
	Op   string // the operation, like get
	Node string // the member that served them, named alike in both runs
	// Involved says whether these operations involve the limping
	// component: they were sent to it, or they pass through it (a write
	// ordered by a limping leader).
	Involved  bool
	Base, Now Latency
}

// Series is a white-box queue or lag of one member over a run.
type Series struct {
	Metric  string
	Node    string
	T, V    []float64 // seconds since the workload started, and the value
	BaseMax float64   // the largest value of the same metric on the same member in the baseline
}

// Input is one step: its groups, throughputs and backlog series.
type Input struct {
	Groups                     []Group
	BaseThroughput, Throughput float64 // requests per second
	// TailThroughput, if known, is the throughput in the last third of
	// the step's runs: a collapse late in a run counts too.
	TailThroughput *float64
	Backlogs       []Series
}

// Mark is one verdict and the sentence that explains it.
type Mark struct {
	On  bool   `json:"on"`
	Why string `json:"why"`
	// Unjudged says the step had nothing to judge this verdict by (too
	// few baseline requests): not given, but not denied either, so a
	// count over repetitions leaves it out rather than counting a no.
	Unjudged bool `json:"unjudged,omitempty"`
}

// Verdict is the four verdicts of one step.
type Verdict struct {
	Operation Mark `json:"operation_limplock"`
	Node      Mark `json:"node_limplock"`
	Cluster   Mark `json:"cluster_limplock"`
	Backlog   Mark `json:"hidden_backlog"`
	// Warning, when set, says the baseline looks broken: the step beat it
	// by as much as a limplock would lose, so the verdicts compare with a
	// baseline that was itself slowed (a loaded machine, a slow start).
	Warning string `json:"warning,omitempty"`
}

// Marks lists the verdicts given, by the paper's abbreviations: OL, NL, CL,
// backlog.
func (v Verdict) Marks() []string {
	var out []string
	for _, m := range MarkNames {
		if v.Mark(m).On {
			out = append(out, m)
		}
	}
	return out
}

// Mark returns one verdict by its abbreviation (MarkNames); an unknown
// name gets no verdict.
func (v Verdict) Mark(name string) Mark {
	switch name {
	case "OL":
		return v.Operation
	case "NL":
		return v.Node
	case "CL":
		return v.Cluster
	case "backlog":
		return v.Backlog
	}
	return Mark{}
}

// Judge gives the verdicts of one step.
func Judge(in Input, o Options) Verdict {
	var v Verdict
	inv, free := judged(in.Groups, o, true), judged(in.Groups, o, false)
	v.Operation = slowest(inv, o, "operation limplock", "operations that involve the limping component")
	v.Node = slowest(free, o, "node limplock", "operations served by healthy members without the limping component")
	v.Cluster = clusterMark(in, free, v.Node, o)
	v.Backlog = backlogMark(in.Backlogs, v.Operation.On || v.Node.On, o)
	v.Warning = baselineWarning(in, append(inv, free...), o)
	return v
}

// baselineWarning flags a step faster than its baseline beyond the
// thresholds: throughput over 1/Collapse times the baseline's, or every
// group's mean under 1/Slow of its baseline mean.
func baselineWarning(in Input, gs []Group, o Options) string {
	if in.BaseThroughput > 0 && in.Throughput > in.BaseThroughput/o.Collapse {
		return fmt.Sprintf("the baseline looks broken: this step's throughput %s is %.1fx the baseline's %s",
			units.Rate(in.Throughput), in.Throughput/in.BaseThroughput, units.Rate(in.BaseThroughput))
	}
	if len(gs) == 0 {
		return ""
	}
	fastest := gs[0]
	for _, g := range gs {
		if ratio(g) > 1/o.Slow {
			return ""
		}
		if ratio(g) < ratio(fastest) {
			fastest = g
		}
	}
	return fmt.Sprintf("the baseline looks broken: every group is over %gx faster than in the baseline (%s)", o.Slow, describe(fastest))
}

// judged are the groups, involved or not, with enough baseline requests to
// compare, and some requests now.
func judged(gs []Group, o Options, involved bool) []Group {
	var out []Group
	for _, g := range gs {
		if g.Involved == involved && g.Base.N >= o.MinRequests && g.Base.Mean > 0 && g.Now.N > 0 {
			out = append(out, g)
		}
	}
	return out
}

func ratio(g Group) float64 { return g.Now.Mean / g.Base.Mean }

func describe(g Group) string {
	return fmt.Sprintf("%s on the %s: mean %s against %s in the baseline, %.2fx", g.Op, g.Node,
		units.Seconds(g.Now.Mean), units.Seconds(g.Base.Mean), ratio(g))
}

// slowest marks the slowest of gs against the Slow threshold.
func slowest(gs []Group, o Options, verdict, what string) Mark {
	if len(gs) == 0 {
		return Mark{Unjudged: true, Why: fmt.Sprintf("no %s: no %s to compare (each needs %d baseline requests)", verdict, what, o.MinRequests)}
	}
	worst := gs[0]
	for _, g := range gs[1:] {
		if ratio(g) > ratio(worst) {
			worst = g
		}
	}
	if ratio(worst) > o.Slow {
		return Mark{On: true, Why: fmt.Sprintf("%s: %s, over the %gx threshold", verdict, describe(worst), o.Slow)}
	}
	return Mark{Why: fmt.Sprintf("no %s: the slowest, %s, is within %gx", verdict, describe(worst), o.Slow)}
}

// clusterMark: the throughput collapsed, or every healthy member the
// clients use is in node limplock.
func clusterMark(in Input, free []Group, node Mark, o Options) Mark {
	if in.BaseThroughput > 0 {
		r := in.Throughput / in.BaseThroughput
		if r < o.Collapse {
			return Mark{On: true, Why: fmt.Sprintf("cluster limplock: throughput %s against %s in the baseline, %.0f%%, under the %.0f%% threshold",
				units.Rate(in.Throughput), units.Rate(in.BaseThroughput), 100*r, 100*o.Collapse) + waitedOn(in.Groups)}
		}
		if t := in.TailThroughput; t != nil && *t/in.BaseThroughput < o.Collapse {
			return Mark{On: true, Why: fmt.Sprintf("cluster limplock: throughput fell to %s in the last third of the run (%s over the whole run) "+
				"against %s in the baseline, %.0f%%, under the %.0f%% threshold",
				units.Rate(*t), units.Rate(in.Throughput), units.Rate(in.BaseThroughput), 100**t/in.BaseThroughput, 100*o.Collapse) + waitedOn(in.Groups)}
		}
	}
	if node.On {
		nodes := map[string]bool{}
		for _, g := range free {
			nodes[g.Node] = nodes[g.Node] || ratio(g) > o.Slow
		}
		all := true
		for _, slow := range nodes {
			all = all && slow
		}
		if all && len(nodes) > 1 {
			return Mark{On: true, Why: fmt.Sprintf("cluster limplock: all %d healthy members the clients use are in node limplock", len(nodes))}
		}
	}
	if in.BaseThroughput <= 0 {
		return Mark{Unjudged: true, Why: "no cluster limplock: the baseline completed no requests to compare with"}
	}
	return Mark{Why: fmt.Sprintf("no cluster limplock: throughput %s is %.0f%% of the baseline's %s (threshold %.0f%%)",
		units.Rate(in.Throughput), 100*in.Throughput/in.BaseThroughput, units.Rate(in.BaseThroughput), 100*o.Collapse)}
}

// waitedOn says what share of the clients' time in the step went to
// operations that involve the limping component. A closed loop's clients
// wait for their own requests, so a collapse that this share explains is
// those operations' limplock holding the clients, while the rest of the
// cluster may keep its pace (its node verdict says).
func waitedOn(gs []Group) string {
	var involved, all float64
	for _, g := range gs {
		t := float64(g.Now.N) * g.Now.Mean
		all += t
		if g.Involved {
			involved += t
		}
	}
	if involved <= 0 {
		return ""
	}
	return fmt.Sprintf("; %.0f%% of the clients' time went to operations that involve the limping component", 100*involved/all)
}

// Trend is a fitted straight line through a series.
type Trend struct {
	Slope float64 // per second
	Rise  float64 // slope times the series' time span
	P     float64 // one-sided p-value of a slope this large if the true slope were 0
}

// Fit fits v against t by least squares and tests the slope with a
// t-test on n-2 degrees of freedom. It needs at least 3 points over more
// than one time.
func Fit(t, v []float64) (Trend, bool) {
	n := len(t)
	if n < 3 || n != len(v) {
		return Trend{}, false
	}
	meanT := stat.Mean(t, nil)
	var sxx float64
	for _, x := range t {
		sxx += (x - meanT) * (x - meanT)
	}
	if sxx == 0 {
		return Trend{}, false
	}
	alpha, beta := stat.LinearRegression(t, v, nil, false)
	var ssr float64
	for i := range t {
		r := v[i] - (alpha + beta*t[i])
		ssr += r * r
	}
	tr := Trend{Slope: beta, Rise: beta * (t[n-1] - t[0])}
	se := math.Sqrt(ssr / float64(n-2) / sxx)
	switch {
	case se == 0 && beta > 0:
		tr.P = 0
	case se == 0:
		tr.P = 1
	default:
		tr.P = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 2)}.Survival(beta / se)
	}
	return tr, true
}

// backlogMark: a queue that grows steadily (significant slope, a rise well
// past the baseline's largest value) while the clients see normal latency.
func backlogMark(ss []Series, slow bool, o Options) Mark {
	var growing []string
	var first Trend
	var firstS Series
	for _, s := range ss {
		if len(s.T) < o.MinPoints {
			continue
		}
		tr, ok := Fit(s.T, s.V)
		if !ok || tr.P >= o.Alpha || tr.Rise <= o.Growth*math.Max(1, s.BaseMax) {
			continue
		}
		if len(growing) == 0 {
			first, firstS = tr, s
		}
		growing = append(growing, s.Metric+" on the "+s.Node)
	}
	if len(growing) == 0 {
		return Mark{Why: fmt.Sprintf("no backlog: no queue or lag rose significantly (p < %g) by more than %gx its baseline peak", o.Alpha, o.Growth)}
	}
	what := fmt.Sprintf("%s rose %s over the run (%s/s, p = %.2g; baseline peak %s)", growing[0], units.Sig(first.Rise),
		units.Sig(first.Slope), first.P, units.Sig(firstS.BaseMax))
	if len(growing) > 1 {
		what += fmt.Sprintf(", and %d more: %s", len(growing)-1, strings.Join(growing[1:], ", "))
	}
	if slow {
		return Mark{Why: "not hidden: " + what + ", but the clients already see the limplock"}
	}
	return Mark{On: true, Why: "hidden backlog: " + what + ", while client latency stays within the threshold"}
}

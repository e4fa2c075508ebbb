package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/rundir"
	"github.com/gait-dev/gait/internal/units"
	"github.com/gait-dev/gait/internal/verdict"
)

// StepVerdict is the limplock verdicts of one step after the baseline.
type StepVerdict struct {
	Label  string   `json:"label"`
	Factor *float64 `json:"factor"`
	// Unplaced counts the step's requests left out of its verdicts: their
	// operation's client reports the members a request touched, but these
	// failed before it could say (verdict.Tally).
	Unplaced int `json:"unplaced,omitempty"`
	verdict.Verdict
}

// minTailRequests is how many requests the baseline must complete in the
// last thirds of its runs for a step's rate there to be judged: with
// fewer (MapReduce's two jobs a run, each a third of the run or more),
// whether one ended in that third says when a long operation happened to
// end, not a rate, and a slow step's none there is no collapse.
const minTailRequests = 10

// Judge gives the verdicts of every step after the baseline, against the
// baseline. Requests are grouped by operation and by the member they were
// sent to, named by what it was in its run (hostLabels), so repetitions
// and the baseline, whose clusters elect different hosts, line up. A group
// involves the limping component when it was sent to the member with the
// fault, or when that member has the role that orders operations (a
// leader) and the operation passes through it (systems.System.Ordered).
func Judge(s *Scenario, sum Summary, results []RunResult, o verdict.Options) ([]StepVerdict, error) {
	if len(sum.Steps) == 0 || sum.Steps[0].Label != "baseline" {
		return nil, nil
	}
	if s.MinRequests > 0 {
		o.MinRequests = s.MinRequests
	}
	groups := map[int]map[verdict.Key]*verdict.Latency{} // step -> group -> sums (Mean holds the total until the end)
	queues := map[int][]verdict.Series{}
	unplaced := map[int]int{}
	cuts := map[int]cutRequests{}
	basePeak := map[string]float64{} // metric on node -> the baseline's largest value
	for _, r := range results {
		g, q, u, err := s.measureRun(r)
		if err != nil {
			return nil, err
		}
		st := r.ID.Step.Index
		unplaced[st] += u
		if r.Cut > 0 {
			c := cuts[st]
			c.n, c.at = c.n+r.Summary.Timeouts, max(c.at, r.Cut)
			cuts[st] = c
		}
		if groups[st] == nil {
			groups[st] = map[verdict.Key]*verdict.Latency{}
		}
		for k, l := range g {
			acc := groups[st][k]
			if acc == nil {
				acc = &verdict.Latency{}
				groups[st][k] = acc
			}
			acc.N += l.N
			acc.Mean += l.Mean
		}
		if st == 0 {
			for _, x := range q {
				basePeak[x.Metric+"\x00"+x.Node] = max(basePeak[x.Metric+"\x00"+x.Node], slices.Max(x.V))
			}
		}
		queues[st] = append(queues[st], q...)
	}
	base := sum.Steps[0]
	var out []StepVerdict
	for i, st := range s.Steps() {
		if i == 0 || groups[i] == nil {
			continue
		}
		in := verdict.Input{BaseThroughput: base.Throughput}
		for _, ss := range sum.Steps {
			if ss.Label == st.Label() {
				in.Throughput = ss.Throughput
				if base.TailRequests >= minTailRequests {
					tail := ss.TailThroughput
					in.TailThroughput = &tail
				}
			}
		}
		for k, now := range groups[i] {
			g := verdict.Group{Op: k.Op, Node: k.Node, Involved: k.Involved, Now: meanOf(*now)}
			if b := groups[0][k]; b != nil {
				g.Base = meanOf(*b)
			}
			in.Groups = append(in.Groups, g)
		}
		slices.SortFunc(in.Groups, func(a, b verdict.Group) int {
			return strings.Compare(a.Node+"\x00"+a.Op, b.Node+"\x00"+b.Op)
		})
		for _, x := range queues[i] {
			x.BaseMax = basePeak[x.Metric+"\x00"+x.Node]
			in.Backlogs = append(in.Backlogs, x)
		}
		sv := StepVerdict{Label: st.Label(), Unplaced: unplaced[i], Verdict: verdict.Judge(in, o)}
		if w := cuts[i].warning(); w != "" {
			sv.Warning = strings.TrimPrefix(sv.Warning+"; "+w, "; ")
		}
		if st.Factor > 0 {
			f := st.Factor
			sv.Factor = &f
		}
		out = append(out, sv)
	}
	return out, nil
}

// cutRequests are a step's requests ended at Options.Cut's bound.
type cutRequests struct {
	n  int
	at time.Duration
}

// warning says what a cut does to the step's verdicts: a cut request
// counts at the bound, below its real time, and its client goes on
// sooner than it would have, so a slowdown or collapse found stands and
// one not found may be hidden by the cut.
func (c cutRequests) warning() string {
	if c.n == 0 {
		return ""
	}
	return fmt.Sprintf("%s cut unfinished at %v (the bound --quick sets): its latencies are lower bounds and its throughput an upper bound, "+
		"so an OL, NL or CL given stands and one not given may be hidden by the cut", units.Count(c.n, "request"), c.at.Round(time.Second))
}

func meanOf(sum verdict.Latency) verdict.Latency {
	if sum.N > 0 {
		sum.Mean /= float64(sum.N)
	}
	return sum
}

// measureRun sums a run's latencies per group (Mean holds the total) and
// picks its queue and lag series. A request's members are named by their
// labels, the hosts its client said it touched too (verdict.Tally).
func (s *Scenario) measureRun(r RunResult) (map[verdict.Key]verdict.Latency, []verdict.Series, int, error) {
	run, err := rundir.Open(r.Dir)
	if err != nil {
		return nil, nil, 0, err
	}
	samples, err := run.Samples()
	if err != nil {
		return nil, nil, 0, err
	}
	labels := hostLabels(r, s.Inject)
	ordered := false
	for h, l := range labels {
		if role, ok := s.sys.Role(r.Roles[h]); ok && strings.Contains(l, "fault") && role.Orders {
			ordered = true
		}
	}
	reqs := make([]verdict.Request, len(samples))
	for i, x := range samples {
		reqs[i] = verdict.Request{Op: run.OpName(x.Op), Node: labels[run.HostName(x.Host)], Latency: x.Latency.Seconds()}
		for _, h := range x.Involved.Hosts() {
			reqs[i].Touched = append(reqs[i].Touched, labels[run.HostName(h)])
		}
	}
	groups := map[verdict.Key]verdict.Latency{}
	unplaced := verdict.Tally(groups, reqs, func(m string) bool { return strings.Contains(m, "fault") },
		func(op string) bool { return ordered && s.sys.PassesOrderer(op) })
	rows, err := run.TimeSeries()
	if err != nil {
		return nil, nil, 0, err
	}
	return groups, queueSeries(rows, labels), unplaced, nil
}

// queueWords mark a white-box metric that counts what waits: a queue
// (ZooKeeper's learner handlers call theirs qp, queued packets), a lag,
// pending or outstanding requests, a backlog. Running totals are not
// queues even when their names say so.
var queueWords = []string{"queue", "qp_size", "lag", "pending", "outstanding", "backlog"}

func isQueue(name string) bool {
	if strings.HasSuffix(name, "_total") {
		return false
	}
	return slices.ContainsFunc(queueWords, func(w string) bool { return strings.Contains(name, w) })
}

// queueSeries collects a run's queue and lag metrics per member. A metric
// is the member's by its host label; its other labels stay in its name,
// a host in them named as the member is (the leader's queue to the
// follower with the fault: "qp_size{follower=follower, fault}").
func queueSeries(rows []rundir.Second, labels map[string]string) []verdict.Series {
	byKey := map[string]*verdict.Series{}
	var keys []string
	for _, row := range rows {
		for k, v := range row.Metrics {
			name, rest, _ := strings.Cut(k, "{")
			if !isQueue(name) {
				continue
			}
			var node string
			var others []string
			for kv := range strings.SplitSeq(strings.TrimSuffix(rest, "}"), ",") {
				key, val, _ := strings.Cut(kv, "=")
				l, known := labels[val]
				switch {
				case key == "host" && known:
					node = l
				case key != "host" && key != "" && known:
					others = append(others, key+"="+l)
				case key != "host" && key != "":
					others = append(others, kv)
				}
			}
			if node == "" {
				continue
			}
			if len(others) > 0 {
				name += "{" + strings.Join(others, ",") + "}"
			}
			x := byKey[k]
			if x == nil {
				x = &verdict.Series{Metric: name, Node: node}
				byKey[k] = x
				keys = append(keys, k)
			}
			x.T, x.V = append(x.T, float64(row.T)), append(x.V, v)
		}
	}
	slices.Sort(keys)
	out := make([]verdict.Series, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out
}

package suite

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/bench"
	"github.com/gait-dev/gait/internal/verdict"
)

func write(t *testing.T, dir, name, src string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const scen = `name: %s
system: etcd
nodes: 3
workload: {op: put, duration: 20s}
inject:
  - {fault: nic, target: leader, factors: [10, 1000, 100]}
repeat: 3
`

func named(name string) string { return strings.Replace(scen, "%s", name, 1) }

func TestFilesAndLoad(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "b.yaml", named("zk-b"))
	write(t, dir, "a.yaml", named("etcd-a")+"quick: true\n")
	write(t, dir, "notes.txt", "not a scenario")
	files, err := Files([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")}; !slices.Equal(files, want) {
		t.Fatalf("files %v, want %v", files, want)
	}
	names := func(ss []*bench.Scenario) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.Name)
		}
		return out
	}
	for _, c := range []struct {
		sel  Selection
		want []string
	}{
		{Selection{}, []string{"etcd-a", "zk-b"}},
		{Selection{Only: "zk-*"}, []string{"zk-b"}},
		{Selection{Quick: true}, []string{"etcd-a"}},
	} {
		ss, err := Load(files, c.sel)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(ss); !slices.Equal(got, c.want) {
			t.Errorf("%+v: %v, want %v", c.sel, got, c.want)
		}
	}
}

// Quick keeps the largest factor, at most 5 s of workload and
// one repetition, and the text kept with the results says so.
func TestQuick(t *testing.T) {
	dir := t.TempDir()
	f := write(t, dir, "a.yaml", "# the comment stays\n"+named("a")+"quick: true\n")
	ss, err := Load([]string{f}, Selection{Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	s := ss[0]
	if !slices.Equal(s.Inject[0].Factors, []float64{1000}) || s.Workload.Duration != 5*time.Second || s.Repeat != 1 {
		t.Errorf("quick: factors %v, duration %v, repeat %d", s.Inject[0].Factors, s.Workload.Duration, s.Repeat)
	}
	if !strings.Contains(string(s.Source), "# the comment stays") || !strings.Contains(string(s.Source), "duration: 5s") {
		t.Errorf("quick source:\n%s", s.Source)
	}
	ss, err = Load([]string{f}, Selection{Repeat: 2})
	if err != nil {
		t.Fatal(err)
	}
	if ss[0].Repeat != 2 || len(ss[0].Inject[0].Factors) != 3 {
		t.Errorf("--repeat 2: repeat %d, factors %v", ss[0].Repeat, ss[0].Inject[0].Factors)
	}
	ss, err = Load([]string{f}, Selection{Warmup: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if ss[0].Warmup != 5*time.Second || !strings.Contains(string(ss[0].Source), "warmup: 5s") {
		t.Errorf("--warmup 5s: warmup %v, source:\n%s", ss[0].Warmup, ss[0].Source)
	}
}

// Every scenario is checked before anything runs, and every mistake is
// reported at once.
func TestLoadReportsEveryMistake(t *testing.T) {
	dir := t.TempDir()
	bad1 := write(t, dir, "a.yaml", strings.Replace(named("a"), "target: leader", "target: master", 1))
	good := write(t, dir, "b.yaml", named("b"))
	bad2 := write(t, dir, "c.yaml", strings.Replace(named("c"), "system: etcd", "system: nosuchdb", 1))
	dup := write(t, dir, "d.yaml", named("b"))
	_, err := Load([]string{bad1, good, bad2, dup}, Selection{})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		bad1 + `:6: inject[0].target: "master" is neither a role of etcd`,
		bad2 + `:2: system: unknown system "nosuchdb"`,
		dup + ": name b is taken by " + good,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error\n%v\nwant it to contain\n%s", err, want)
		}
	}
	for _, c := range []struct {
		args []string
		sel  Selection
		want string
	}{
		{[]string{good}, Selection{Only: "[a-"}, `--only "[a-": syntax error in pattern`},
		{[]string{good}, Selection{Only: "zk-*"}, `no experiment selected from 1 scenario (--only "zk-*", --quick false)`},
		{[]string{good}, Selection{Repeat: -1}, "--repeat -1: want a number of repetitions of at least 1"},
	} {
		if _, err := Load(c.args, c.sel); err == nil || err.Error() != c.want {
			t.Errorf("%+v: error %v, want %s", c.sel, err, c.want)
		}
	}
	if _, err := Files([]string{t.TempDir()}); err == nil || !strings.Contains(err.Error(), "no *.yaml file in it") {
		t.Errorf("empty directory: %v", err)
	}
	if _, err := Files([]string{filepath.Join(dir, "nope")}); err == nil || !strings.HasPrefix(err.Error(), "scenario "+filepath.Join(dir, "nope")) {
		t.Errorf("missing file: %v", err)
	}
}

// step builds a judged step from its repetitions' verdicts and slowdowns.
func step(label string, factor float64, reps ...Rep) Step {
	st := Step{Label: label, Factor: &factor, Reps: reps}
	for i := range st.Reps {
		st.Reps[i].Rep = i + 1
	}
	st.sum()
	return st
}

func TestTable1(t *testing.T) {
	on := verdict.Mark{On: true, Why: "x"}
	ol, olcl := verdict.Verdict{Operation: on}, verdict.Verdict{Operation: on, Cluster: on}
	rs := []Result{
		{Experiment: "z1", Paper: &bench.PaperRow{Row: "Z1", Marks: []string{}}, BaseMean: 0.002, BaseThroughput: 2000,
			Steps: []Step{step("10x", 10, Rep{Slowdown: 1})}},
		{Experiment: "z3", Fault: "nic", Target: "leader", Paper: &bench.PaperRow{Row: "Z3", Marks: []string{"CL", "OL"}}, Expect: []string{"OL"},
			ExpectDiffers: "the bug is fixed in this version",
			Steps: []Step{step("10x", 10, Rep{Slowdown: 6, Verdict: ol}),
				step("100x", 100, Rep{Slowdown: 40, Unplaced: 3, Verdict: olcl})}},
		// Three repetitions: OL in all at 100x, CL in two; the paper's OL
		// CL then hangs on the flipping CL.
		{Experiment: "z5", Paper: &bench.PaperRow{Row: "Z5", Marks: []string{"OL", "CL"}, Differs: "the heap filled in 2 of 3"},
			Steps: []Step{step("10x", 10, Rep{Slowdown: 2}, Rep{Slowdown: 1}, Rep{Slowdown: 7, Verdict: ol}),
				step("100x", 100, Rep{Slowdown: 30, Verdict: olcl}, Rep{Slowdown: 9, Verdict: ol}, Rep{Slowdown: 50, Verdict: olcl})}},
	}
	if got, want := MinRequestsText(rs, 20), "Groups need 20 baseline requests."; got != want {
		t.Errorf("min requests %q, want %q", got, want)
	}
	rs[1].MinRequests = 1
	if got, want := MinRequestsText(rs, 20), "Groups need 20 baseline requests (where a scenario sets its own min_requests, that many: z3 1)."; got != want {
		t.Errorf("min requests %q, want %q", got, want)
	}
	header, rows := Table1(rs)
	if len(header) != 10 {
		t.Errorf("header %q: the prediction's columns are missing", header)
	}
	if got := rows[0]; got[0] != "Z1" || got[2] != "none" || got[5] != "none 1/1" || got[6] != "-" || got[7] != "yes" || got[8] != "" || got[9] != "" {
		t.Errorf("Z1 row %q", got)
	}
	if got := rows[1]; got[2] != "nic on leader" || got[5] != "OL 1/1 CL 1/1" || got[6] != "CL OL" || got[7] != "yes" || got[8] != "OL" || got[9] != "no" {
		t.Errorf("Z3 row %q", got)
	}
	if got := rows[2]; got[5] != "OL 3/3 CL 2/3" || got[7] != "flips" {
		t.Errorf("Z5 row %q", got)
	}
	// No experiment predicts anything: no empty prediction columns.
	if header, rows := Table1(rs[2:]); len(header) != 8 || len(rows[0]) != 8 || header[7] != "same" {
		t.Errorf("paper rows alone: header %q, row %q", header, rows[0])
	}
	js := Rows(rs)
	if len(js) != 5 || !js[2].OperationLL || !js[2].ClusterLL || js[2].NodeLL || js[2].PaperRow != "Z3" || *js[2].Factor != 100 || js[2].Unplaced != 3 {
		t.Errorf("rows %+v", js)
	}
	if z := js[4]; z.Repetitions != 3 || z.Slowdown != 30 || z.SlowdownMin != 9 || z.SlowdownMax != 50 || !z.OperationLL || z.ClusterLL ||
		!strings.Contains(z.Reasons.Cluster, "in another repetition") {
		t.Errorf("z5 100x: %+v", z)
	}
	var text strings.Builder
	if err := WriteText(&text, rs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"z3 100x: 3 requests left out of the verdicts", "30.00x (9.00-50.00x)", "flips 2/3", "yes 3/3",
		"differs: Z5 z5: gait OL 3/3 CL 2/3, the paper OL CL: the heap filled in 2 of 3. Measured: 100x, x; in another repetition",
		// a regression's prediction that differs says why, as a paper row
		"differs: z3: gait OL 1/1 CL 1/1, expected OL: the bug is fixed in this version. Measured: 100x, x."} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text lacks %q:\n%s", want, text.String())
		}
	}
}

// --quick's bound is a little over both thresholds: a cut request alone
// is past the slowdown threshold.
func TestQuickCut(t *testing.T) {
	o := verdict.Defaults()
	if got := QuickCut(o); got <= o.Slow || got <= 1/o.Collapse || got > 1.1*o.Slow {
		t.Errorf("QuickCut %g with slow %g and collapse %g", got, o.Slow, o.Collapse)
	}
}

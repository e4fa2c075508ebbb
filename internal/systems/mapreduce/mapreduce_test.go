package mapreduce

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems/systemstest"
)

// TestLayout: split keeps the masters' host apart and halves the rest,
// mappers first; shared makes every other host a NodeManager.
func TestLayout(t *testing.T) {
	for _, tc := range []struct {
		placement string
		n         int
		want      string
	}{
		{Split, 4, "resourcemanager appmaster mapper reducer"},
		{Split, 6, "resourcemanager appmaster mapper mapper reducer reducer"},
		{Split, 7, "resourcemanager appmaster mapper mapper mapper reducer reducer"},
		{Shared, 3, "resourcemanager nodemanager nodemanager"},
	} {
		if got := strings.Join(layout(tc.placement, tc.n), " "); got != tc.want {
			t.Errorf("%s on %d: %s, want %s", tc.placement, tc.n, got, tc.want)
		}
	}
}

// TestWords: the text is the size asked, lines of words, the same for a
// seed, and varied (WordCount's combiner must not shrink it to nothing).
func TestWords(t *testing.T) {
	a := Words(1<<20, 1)
	if len(a) != 1<<20 || a[len(a)-1] != '\n' {
		t.Fatalf("%d bytes ending %q", len(a), a[len(a)-1])
	}
	if !bytes.Equal(a, Words(1<<20, 1)) || bytes.Equal(a, Words(1<<20, 2)) {
		t.Error("not a function of the seed")
	}
	words := strings.Fields(string(a))
	distinct := map[string]bool{}
	for _, w := range words {
		if len(w) < 1 || len(w) > 10 || strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") != "" {
			t.Fatalf("word %q", w)
		}
		distinct[w] = true
	}
	if len(distinct) < len(words)/2 {
		t.Errorf("%d distinct words of %d: a combiner would keep too little", len(distinct), len(words))
	}
}

// TestParseJobOutput reads a job client's log as Hadoop 3.5 prints it.
func TestParseJobOutput(t *testing.T) {
	out := `10:01:02.003 INFO JobSubmitter: number of splits:8
10:01:02.100 INFO YarnClientImpl: Submitted application application_1764323400000_0003
10:01:30.000 INFO Job: Job job_1764323400000_0003 completed successfully
10:01:30.010 INFO Job: Counters: 54
	Job Counters 
		Killed map tasks=1
		Launched map tasks=9
		Launched reduce tasks=2
	Map-Reduce Framework
		Reduce shuffle bytes=12345
	Shuffle Errors
		BAD_ID=0
		CONNECTION=2
		IO_ERROR=1
`
	c := ParseJobOutput(out)
	if c.App != "application_1764323400000_0003" || !c.Succeeded || c.Splits != 8 || c.Values["Launched map tasks"] != 9 {
		t.Fatalf("%+v", c)
	}
	var tot jobTotals
	tot.add(c, 2)
	tot.add(ParseJobOutput("ERROR: failed"), 2)
	want := jobTotals{Jobs: 2, Failed: 1, ExtraMaps: 1, KilledMaps: 1, ShuffleBytes: 12345, ShuffleErrors: 3}
	if tot != want {
		t.Errorf("totals %+v, want %+v", tot, want)
	}
}

// TestSettings: a bad value is refused with what is wanted.
func TestSettings(t *testing.T) {
	check := func(name, v string, nodes int) error {
		for _, s := range Settings {
			if s.Name == name {
				return s.Check(v, nodes)
			}
		}
		t.Fatalf("no setting %s", name)
		return nil
	}
	for _, tc := range []struct{ name, v, want string }{
		{"placement", "spread", `"spread": want split or shared`},
		{"job", "terasort", `"terasort": want wordcount or loadgen`},
		{"input", "2GiB", `want a size from`},
		{"reduces", "0", `want a whole number from 1 to 64`},
		{"lost_after", "1s", `at least 3s`},
	} {
		if err := check(tc.name, tc.v, 6); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v, want %q", tc.name, tc.v, err, tc.want)
		}
	}
	if err := check("placement", "split", 3); err == nil || !strings.Contains(err.Error(), "at least 4 nodes") {
		t.Errorf("split on 3 nodes: %v", err)
	}
	d := New()
	if err := d.Configure(map[string]string{"placement": "shared", "job": "loadgen", "input": "4MiB", "reduces": "3"}); err != nil ||
		d.Placement != Shared || d.Job != "loadgen" || d.Input != 4<<20 || d.Reduces != 3 {
		t.Errorf("configure: %v %+v", err, d)
	}
}

// TestCluster starts YARN over HDFS on four testbed hosts, placement
// split (the masters' host, a mapper, a reducer), runs WordCount and
// checks where its containers ran, the roles, and the white-box metrics.
func TestCluster(t *testing.T) {
	if os.Getenv("GAIT_MAPREDUCE_TEST") == "" {
		t.Skip("skipped: set GAIT_MAPREDUCE_TEST=1 (HDFS and YARN on four hosts, 8 JVMs and a job's containers, take minutes on 2 cores and about 3.5 GiB)")
	}
	d := New()
	if err := d.Check(); err != nil {
		t.Skip(err)
	}
	d.Input = 4 << 20
	d.SplitSize = 1 << 20
	cl, _ := systemstest.OnTestbed(t, d, 4)
	c := cl.(*Cluster)
	if _, err := os.Stat(nodeAttributeDir(c.rm.host)); err != nil {
		t.Errorf("the ResourceManager's node attributes are not in its host's directory: %v", err)
	}
	ctx := context.Background()
	rs, err := c.Roles(ctx)
	if err != nil || !slices.Equal([]string{rs["h0"], rs["h1"], rs["h2"], rs["h3"]}, layout(Split, 4)) {
		t.Fatalf("roles %v: %v", rs, err)
	}
	if _, err := c.Client("h2"); err == nil {
		t.Error("a client of a NodeManager")
	}
	lc, err := c.Client("h0")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := lc.Do(ctx, load.Op{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("WordCount of 4 MiB in %v on %v", time.Since(t0).Round(time.Millisecond), lc.(load.Involver).Involved())
	// The master on h1, the maps on h2, the reduces on h3.
	if inv := lc.(load.Involver).Involved(); !slices.Equal(inv, []string{"h1", "h2", "h3"}) {
		t.Errorf("the job's containers ran on %v", inv)
	}
	m, err := c.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m["mapreduce_jobs_done{host=h0}"] != 1 || m["mapreduce_jobs_shuffle_bytes{host=h0}"] < 1<<20 || m["yarn_activeNodes{host=h0}"] != 3 {
		t.Errorf("metrics %v", m)
	}
}

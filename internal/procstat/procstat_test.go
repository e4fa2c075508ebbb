package procstat

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	b, err := os.ReadFile("testdata/stat")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseStat(b)
	want := Stat{MinorFaults: 1523, MajorFaults: 7, UserTicks: 250, SystemTicks: 130, Threads: 5}
	if err != nil || got != want {
		t.Fatalf("ParseStat = %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{"", "1 (x S 1 2", "1 (x) S 1 2 3", strings.Replace(string(b), " 250 ", " -3 ", 1)} {
		if _, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("ParseStat(%q): no error", bad)
		}
	}
}

func TestParseStatus(t *testing.T) {
	b, err := os.ReadFile("testdata/status")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseStatus(b)
	want := Status{RSS: 10068 * 1024, Threads: 5, VoluntarySwitches: 1234, InvoluntarySwitches: 56}
	if err != nil || got != want {
		t.Fatalf("ParseStatus = %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{"Name:\tx\n", strings.Replace(string(b), "1234", "lots", 1), strings.Replace(string(b), "10068 kB", "10068 pages", 1)} {
		if _, err := ParseStatus([]byte(bad)); err == nil {
			t.Errorf("ParseStatus(%q): no error", bad)
		}
	}
}

func TestReadSelf(t *testing.T) {
	r, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if r.RSS <= 0 || r.Threads < 1 || r.VoluntarySwitches+r.InvoluntarySwitches == 0 || r.MinorFaults == 0 {
		t.Errorf("implausible reading of this test process: %+v", r)
	}
	if _, err := Read(-1); err == nil {
		t.Error("Read(-1): no error")
	}
}

func TestSampler(t *testing.T) {
	s := NewSampler(Target{Label: "self", PID: os.Getpid()}, Target{Label: "gone", PID: -1})
	// Burn some CPU and touch fresh memory so the counters move.
	deadline := time.Now().Add(20 * time.Millisecond)
	var sink []byte
	for time.Now().Before(deadline) {
		sink = append(sink, make([]byte, 4096)...)
	}
	_ = sink
	got := map[string]float64{}
	s.Sample(func(name string, v float64) { got[name] = v })
	for _, m := range []string{"proc_cpu", "proc_rss_bytes", "proc_threads", "proc_ctx_voluntary",
		"proc_ctx_involuntary", "proc_faults_minor", "proc_faults_major"} {
		v, ok := got[m+"{proc=self}"]
		if !ok || v < 0 {
			t.Errorf("%s: %v, %v", m, v, ok)
		}
	}
	if got["proc_rss_bytes{proc=self}"] <= 0 || got["proc_threads{proc=self}"] < 1 {
		t.Errorf("rss/threads: %v", got)
	}
	for name := range got {
		if strings.Contains(name, "gone") {
			t.Errorf("metric %s of an unreadable process", name)
		}
	}
}

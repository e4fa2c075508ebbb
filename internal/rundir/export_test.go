package rundir

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestWriteCSV(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	w, err := Create(dir, Config{Name: "t", System: "redis", Factor: 1, Ops: []string{"get", "set"},
		Hosts:   []Host{{Name: "h0"}, {Name: "h1"}},
		Factors: map[string]string{"clients": "8", "note": `a, "b"`}})
	if err != nil {
		t.Fatal(err)
	}
	w.Add(Sample{Start: 0, Latency: 2 * time.Millisecond, Op: 0, Host: 1, Outcome: OK})
	w.Add(Sample{Start: 1500 * time.Millisecond, Latency: 6 * time.Millisecond, Op: 7, Host: 0, Outcome: Timeout})
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	want := "start_s,latency_ns,op,host,outcome,clients,note\n" +
		"0.000000000,2000000,get,h1,ok,8,\"a, \"\"b\"\"\"\n" +
		"1.500000000,6000000,op7,h0,timeout,8,\"a, \"\"b\"\"\"\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// The hosts a request involved are kept only when a client reported
// some, read back per sample, and exported as names.
func TestInvolved(t *testing.T) {
	write := func(sets ...HostSet) string {
		dir := filepath.Join(t.TempDir(), "run")
		w, err := Create(dir, Config{Name: "t", System: "hdfs", Factor: 1, Ops: []string{"create"},
			Hosts: []Host{{Name: "h0"}, {Name: "h1"}, {Name: "h2"}, {Name: "h3"}}})
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range sets {
			w.Add(Sample{Start: time.Duration(i) * time.Second, Latency: time.Millisecond, Involved: s})
		}
		if err := w.Close(nil); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	none := write(HostSet{}, HostSet{})
	if _, err := os.Stat(filepath.Join(none, samplesDir, involvedColumn)); !os.IsNotExist(err) {
		t.Errorf("a run without involved hosts has the column: %v", err)
	}
	var pipe HostSet
	pipe.Add(1)
	pipe.Add(3)
	dir := write(HostSet{}, pipe)
	r, got := openSamples(t, dir)
	if !got[0].Involved.Empty() || got[1].Involved != pipe || !slices.Equal(pipe.Hosts(), []uint8{1, 3}) {
		t.Errorf("involved %v %v, want none then %v", got[0].Involved.Hosts(), got[1].Involved.Hosts(), pipe.Hosts())
	}
	var b bytes.Buffer
	if err := r.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	want := "start_s,latency_ns,op,host,outcome,involved\n" +
		"0.000000000,1000000,create,h0,ok,\n" +
		"1.000000000,1000000,create,h0,ok,h1+h3\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	col := filepath.Join(dir, samplesDir, involvedColumn)
	if err := os.Truncate(col, involvedWidth+5); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "samples/involved.b256: 37 bytes, where 2 samples take 64 (truncated?)") {
		t.Errorf("truncated column: %v", err)
	}
}

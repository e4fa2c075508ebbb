package rundir

import (
	"bytes"
	"path/filepath"
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

package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runModel returns what the command wrote to stdout; its progress line goes
// to stderr, which a slow run (a loaded machine) fills, and must not be
// mistaken for the output.
func runModel(args ...string) (out string, err error) {
	cmd := newModelCmd()
	var buf bytes.Buffer
	cmd.SetOut(&buf)
	cmd.SetErr(io.Discard)
	cmd.SetArgs(args)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
			out = buf.String()
		}
	}()
	err = cmd.Execute()
	return buf.String(), err
}

func TestModelPredictJSON(t *testing.T) {
	out, err := runModel("predict", "--service", "exp:1ms", "--bound", "5ms", "--rate", "1500",
		"--duplicates", "1,2", "--replicas", "1,2", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(rows) != 4 {
		t.Fatalf("want 4 configurations, got %d", len(rows))
	}
	for _, r := range rows {
		unstable := r["replicas"].(float64) == 1
		if _, isNum := r["sla"].(float64); isNum == unstable {
			t.Errorf("row %v: sla %v", r, r["sla"])
		}
		for _, k := range []string{"duplicates", "replicas", "nodes", "utilization", "sla_thesis", "sla"} {
			if _, ok := r[k]; !ok {
				t.Errorf("row lacks %s: %v", k, r)
			}
		}
	}
}

// Bad input is one error that names the flag, never a panic or a silent
// answer to another question.
func TestModelBadInput(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string // in the error
	}{
		"unknown form":        {[]string{"predict", "--service", "gamma:1ms,2", "--bound", "5ms", "--rate", "10"}, "--service"},
		"no such file":        {[]string{"predict", "--service", "nothere.csv", "--bound", "5ms", "--rate", "10"}, "--service"},
		"bound below net":     {[]string{"predict", "--service", "exp:1ms", "--net", "6ms", "--bound", "5ms", "--rate", "10"}, "--bound 5ms: below every network delay"},
		"negative mean":       {[]string{"predict", "--service", "exp:-1ms", "--bound", "5ms", "--rate", "10"}, "--service"},
		"sigma 50":            {[]string{"predict", "--service", "lognormal:1ms,50", "--bound", "5ms", "--rate", "10"}, "sigma must be below"},
		"missing rate":        {[]string{"predict", "--service", "exp:1ms", "--bound", "5ms"}, "--rate"},
		"NaN rate":            {[]string{"predict", "--service", "exp:1ms", "--bound", "5ms", "--rate", "NaN"}, "--rate NaN"},
		"Inf utilization":     {[]string{"predict", "--service", "exp:1ms", "--bound", "5ms", "--utilization", "Inf"}, "--utilization +Inf"},
		"0 duplicates":        {[]string{"predict", "--service", "exp:1ms", "--bound", "5ms", "--rate", "10", "--duplicates", "0"}, "--duplicates 0: want 1 to 65536"},
		"huge replicas":       {[]string{"predict", "--service", "exp:1ms", "--bound", "5ms", "--rate", "10", "--replicas", "9223372036854775807"}, "--replicas 9223372036854775807"},
		"too many nodes":      {[]string{"simulate", "--service", "exp:1ms", "--bound", "5ms", "--rate", "10", "--duplicates", "65536", "--replicas", "2"}, "more than 65536 nodes"},
		"bad format":          {[]string{"predict", "--service", "exp:1ms", "--bound", "5ms", "--rate", "10", "--format", "xml"}, `--format "xml"`},
		"html - and json":     {[]string{"predict", "--service", "exp:1ms", "--bound", "5ms", "--rate", "10", "--format", "json", "--html", "-"}, "--html -"},
		"bad target":          {[]string{"plan", "--service", "exp:1ms", "--target", "99.9@10ms", "--rate", "10"}, "--target"},
		"bound and target":    {[]string{"plan", "--service", "exp:1ms", "--target", "99.9%@10ms", "--nodes", "2", "--bound", "1ms"}, "--bound 1ms"},
		"nodes rate target":   {[]string{"plan", "--service", "exp:1ms", "--target", "99.9%@10ms", "--nodes", "2", "--rate", "10"}, "--nodes 2"},
		"negative nodes":      {[]string{"plan", "--service", "exp:1ms", "--target", "99.9%@10ms", "--nodes", "-2"}, "--nodes -2"},
		"max-nodes 0":         {[]string{"plan", "--service", "exp:1ms", "--target", "99.9%@10ms", "--rate", "10", "--max-nodes", "0"}, "--max-nodes 0"},
		"html not drawn":      {[]string{"plan", "--service", "exp:1ms", "--target", "99.9%@10ms", "--rate", "10", "--html", "x.html"}, "--html"},
		"target below net":    {[]string{"plan", "--service", "exp:1ms", "--net", "20ms", "--target", "99.9%@10ms", "--rate", "10"}, "--target 99.9%@10ms"},
		"bad predictor":       {[]string{"plan", "--service", "exp:1ms", "--bound", "5ms", "--rate", "10", "--nodes", "2", "--predictor", "x"}, "--predictor x"},
		"bad split":           {[]string{"simulate", "--service", "exp:1ms", "--bound", "5ms", "--rate", "10", "--split", "hash"}, "--split hash"},
		"too few requests":    {[]string{"simulate", "--service", "exp:1ms", "--bound", "5ms", "--rate", "10", "--requests", "-5"}, "--requests -5"},
		"figure7 nodes -1":    {[]string{"figure7", "--service", "exp:1ms", "--bound", "5ms", "--max-nodes", "-1"}, "--max-nodes -1"},
		"figure7 load 0":      {[]string{"figure7", "--service", "exp:1ms", "--bound", "5ms", "--utilizations", "0"}, "--utilizations 0"},
		"figure7 rate":        {[]string{"figure7", "--service", "exp:1ms", "--bound", "5ms", "--rate", "5"}, "--rate"},
		"errormap bound 0":    {[]string{"errormap", "--bound-means", "0"}, "--bound-means 0"},
		"errormap dups -3":    {[]string{"errormap", "--max-duplicates", "-3"}, "--max-duplicates -3"},
		"errormap load 1":     {[]string{"errormap", "--utilizations", "1"}, "--utilizations 1"},
		"errormap per-server": {[]string{"errormap", "--per-server"}, "--per-server, --mixes, --net, --redraw and --resimulate apply to requests"},
		"errormap net alone":  {[]string{"errormap", "--net", "1ms"}, "--per-server, --mixes, --net, --redraw and --resimulate apply to requests"},
		"errormap bad net":    {[]string{"errormap", "--phases", "30,20", "--net", "lognormal:1ms"}, "--net: "},
		"batch 0":             {[]string{"simulate", "--service", "exp:1ms", "--bound", "40ms", "--rate", "1", "--phases", "30,20", "--batch", "0"}, "--batch 0: want 1 to"},
		"errormap batch 0":    {[]string{"errormap", "--phases", "30,20", "--batch", "0"}, "--batch 0: want 1 to"},
		"errormap resimulate": {[]string{"errormap", "--phases", "30,20", "--resimulate"}, "--resimulate: give the cells to simulate again with --redraw"},
		"errormap redraw":     {[]string{"errormap", "--phases", "30,20", "--redraw", "nothere.json"}, "--redraw: open nothere.json"},
		"errormap bad mix":    {[]string{"errormap", "--phases", "30,20", "--mixes", "2x2,3y"}, "--mixes 2x2,3y: mix \"3y\""},
		"errormap mix 0":      {[]string{"errormap", "--phases", "30,20", "--mixes", "0x2"}, "--mixes 0x2: mix \"0x2\": duplicates 0"},
		"limplock 3 nodes":    {[]string{"limplock", "--nodes", "3"}, "--nodes 3"},
		"limplock blocks":     {[]string{"limplock", "--blocks", "10000000000"}, "--blocks 10000000000"},
		"limplock trials":     {[]string{"limplock", "--trials", "1"}, "--trials 1"},
		"limplock requests":   {[]string{"limplock", "--requests", "-1"}, "--requests -1"},
		"limplock huge nodes": {[]string{"limplock", "--nodes", "100000000000"}, "--nodes 100000000000"},
	}
	for name, c := range cases {
		out, err := runModel(c.args...)
		if err == nil {
			t.Errorf("%s: accepted: %s", name, out)
			continue
		}
		computedNaN := strings.Contains(err.Error(), "NaN") && !strings.Contains(strings.Join(c.args, " "), "NaN")
		if !strings.Contains(err.Error(), c.want) || computedNaN || strings.HasPrefix(err.Error(), "panic") {
			t.Errorf("%s: error %q, want one naming %q", name, err, c.want)
		}
	}
}

// Extreme values either answer or refuse; none panics (the issue's
// --rate 1e-15 indexed a slice at -2^63).
func TestModelExtremeFlagsNeverPanic(t *testing.T) {
	base := []string{"predict", "--service", "exp:1ms", "--duplicates", "1,2", "--replicas", "1"}
	for _, extra := range [][]string{
		{"--bound", "10ms", "--rate", "1e-15"},
		{"--bound", "10ms", "--rate", "1e-300"},
		{"--bound", "10ms", "--rate", "1e300"},
		{"--bound", "10ms", "--utilization", "1e-300"},
		{"--bound", "1e-300s", "--rate", "100"},
		{"--bound", "1e300s", "--rate", "100"},
		{"--bound", "2562047h", "--rate", "100"},
		{"--bound", "10ms", "--utilization", "0.999"},
	} {
		args := append(append([]string(nil), base...), extra...)
		out, err := runModel(args...)
		if err != nil {
			t.Errorf("%v: %v", extra, err)
			continue
		}
		if strings.Contains(out, "NaN") {
			t.Errorf("%v: %s", extra, out)
		}
	}
	for _, args := range [][]string{
		{"predict", "--service", "pareto:1ms,1.0000001", "--bound", "10ms", "--rate", "1e-6", "--duplicates", "1,2", "--replicas", "1"},
		{"predict", "--service", "const:1e300s", "--bound", "1ns", "--rate", "1e-310", "--duplicates", "1,2", "--replicas", "1"},
		{"simulate", "--service", "exp:1ms", "--bound", "10ms", "--rate", "1e-15", "--duplicates", "1,2", "--replicas", "1", "--requests", "1000"},
		{"figure7", "--service", "exp:1ms", "--bound", "5ms", "--utilizations", "1.5", "--max-nodes", "2"},
		{"plan", "--service", "exp:1ms", "--target", "99.9%@10ms", "--rate", "1e-15"},
		{"limplock", "--nodes", "2000", "--trials", "2", "--blocks", "100"},
	} {
		out, err := runModel(args...)
		if err != nil || strings.Contains(out, "NaN") {
			t.Errorf("%v: %v\n%s", args, err, out)
		}
	}
}

// The reproduction: a looser bound lowered the SLA, to 0 at 1000s.
func TestModelLooseBoundKeepsTheSLA(t *testing.T) {
	for _, b := range []string{"10ms", "10s", "100s", "1000s"} {
		out, err := runModel("predict", "--service", "exp:1ms", "--rate", "5", "--duplicates", "1,2", "--replicas", "1", "--bound", b, "--format", "json")
		if err != nil {
			t.Fatal(err)
		}
		var rows []struct{ SLA float64 }
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatal(err)
		}
		for i, r := range rows {
			if r.SLA < 0.99995 {
				t.Errorf("bound %s, d=%d: SLA %v", b, i+1, r.SLA)
			}
		}
	}
}

func TestModelPlanAndLimplock(t *testing.T) {
	out, err := runModel("plan", "--service", "lognormal:0.5ms,1.8", "--target", "99.9%@10ms", "--rate", "100")
	if err != nil || !strings.Contains(out, "fewest nodes") {
		t.Errorf("plan: %v %s", err, out)
	}
	out, err = runModel("limplock", "--nodes", "10,30", "--trials", "50")
	if err != nil || !strings.Contains(out, "P_bl") {
		t.Errorf("limplock: %v %s", err, out)
	}
}

// --html FILE writes the report and the table still goes to stdout;
// --html - puts the report on stdout in its place.
func TestModelHTML(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.html")
	args := []string{"predict", "--service", "exp:1ms", "--bound", "5ms", "--rate", "10", "--duplicates", "1,2", "--replicas", "1"}
	out, err := runModel(append(args, "--html", path)...)
	if err != nil || !strings.Contains(out, "sla_thesis") {
		t.Fatalf("%v %s", err, out)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "<svg") {
		t.Errorf("report: %v", err)
	}
	out, err = runModel(append(args, "--html", "-")...)
	if err != nil || !strings.HasPrefix(out, "<!DOCTYPE html>") || strings.Contains(out, "sla_thesis  ") {
		t.Errorf("--html -: %v %.200s", err, out)
	}
}

// The shared ending: the format is checked first, the report written
// before the text, --html - in place of the text.
func TestEnding(t *testing.T) {
	e := ending{verb: "analyze", format: "xml"}
	if err := e.check(); err == nil || err.Error() != `analyze: --format "xml": want text or json` {
		t.Errorf("check: %v", err)
	}
	var order []string
	r := result{
		text: func(w io.Writer) error { order = append(order, "text"); _, err := io.WriteString(w, "T"); return err },
		json: func(w io.Writer) error { order = append(order, "json"); return nil },
		html: func(w io.Writer) error { order = append(order, "html"); _, err := io.WriteString(w, "H"); return err },
	}
	path := filepath.Join(t.TempDir(), "r.html")
	var out bytes.Buffer
	e = ending{format: "text", html: path}
	if err := e.finish(&out, r); err != nil || out.String() != "T" || strings.Join(order, ",") != "html,text" {
		t.Errorf("file: %v %q %v", err, out.String(), order)
	}
	out.Reset()
	e = ending{format: "text", html: "-"}
	if err := e.finish(&out, r); err != nil || out.String() != "H" {
		t.Errorf("stdout: %v %q", err, out.String())
	}
	failing := r
	failing.html = func(io.Writer) error { return errors.New("no") }
	e = ending{format: "json", html: filepath.Join(t.TempDir(), "x.html")}
	if err := e.finish(&out, failing); err == nil {
		t.Error("a failed report is not an error")
	}
	if _, err := os.Stat(e.html); !os.IsNotExist(err) {
		t.Errorf("a failed report left %s", e.html)
	}
}

// The progress line keeps quiet at first, then says what runs, how far it
// is and how long is left.
func TestProgressLine(t *testing.T) {
	var buf bytes.Buffer
	p := newProgressLine(&buf, "simulate")
	p.report("early", 0.1)
	if buf.Len() != 0 {
		t.Errorf("spoke in its quiet time: %q", buf.String())
	}
	p.start = p.start.Add(-time.Minute)
	p.phase = p.start
	p.report("4 duplicates x 2 replicas (3 of 15)", 0.25)
	if got := buf.String(); !strings.Contains(got, "simulate: 4 duplicates x 2 replicas (3 of 15), 25% done, 1m0s elapsed, about 3m0s left") {
		t.Errorf("line %q", got)
	}
	p.close()
	p.report("after", 0.5)
	if strings.Contains(buf.String(), "after") {
		t.Errorf("spoke after close: %q", buf.String())
	}
}

// A batch's requests share their arrival, so the error map's default
// reference grows with the batch; a --requests given is kept.
func TestErrorMapBatchReference(t *testing.T) {
	cells := filepath.Join(t.TempDir(), "cells.json")
	cell := `[{"utilization":0.01,"server_utilization":0.01,"duplicates":1,"replicas":1,"quantile":0.5,"bound_s":0.005,"sla":0.5,"sla_thesis":0.5,"sla_simulated":0.5,"stderr":0.0001}]`
	if err := os.WriteFile(cells, []byte(cell), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "16000000 simulated requests"},
		{[]string{"--requests", "3000"}, "3000 simulated requests"},
	} {
		page := filepath.Join(t.TempDir(), "map.html")
		args := append([]string{"errormap", "--phases", "4,3", "--batch", "8", "--redraw", cells, "--html", page}, c.args...)
		if _, err := runModel(args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), c.want) {
			t.Errorf("%v: the page does not say %q", c.args, c.want)
		}
	}
}

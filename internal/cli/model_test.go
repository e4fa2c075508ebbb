package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func runModel(args ...string) (string, error) {
	cmd := newModelCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
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

func TestModelBadInput(t *testing.T) {
	cases := map[string][]string{
		"unknown form":     {"predict", "--service", "gamma:1ms,2", "--bound", "5ms", "--rate", "10"},
		"no such file":     {"predict", "--service", "nothere.csv", "--bound", "5ms", "--rate", "10"},
		"bound below net":  {"predict", "--service", "exp:1ms", "--net", "6ms", "--bound", "5ms", "--rate", "10"},
		"negative mean":    {"predict", "--service", "exp:-1ms", "--bound", "5ms", "--rate", "10"},
		"missing rate":     {"predict", "--service", "exp:1ms", "--bound", "5ms"},
		"bad target":       {"plan", "--service", "exp:1ms", "--target", "99.9@10ms", "--rate", "10"},
		"bad split":        {"simulate", "--service", "exp:1ms", "--bound", "5ms", "--rate", "10", "--split", "hash"},
		"limplock 3 nodes": {"limplock", "--nodes", "3"},
	}
	for name, args := range cases {
		out, err := runModel(args...)
		if err == nil {
			t.Errorf("%s: accepted: %s", name, out)
			continue
		}
		if strings.Contains(err.Error(), "NaN") || err.Error() == "" {
			t.Errorf("%s: unclear error %q", name, err)
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

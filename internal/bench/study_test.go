package bench

import (
	"strings"
	"testing"
)

func TestParseStudy(t *testing.T) {
	s, err := Parse("s.yaml", []byte(good+`study: {figure: "Throughput against DataNodes", x: datanodes, y: mb/s, series: "10 handlers"}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if st := s.Study; st == nil || st.Figure != "Throughput against DataNodes" || st.X != "datanodes" || st.Y != "mb/s" || st.Series != "10 handlers" || !st.PerExperiment() {
		t.Errorf("study %+v", s.Study)
	}
	s, err = Parse("s.yaml", []byte(good+`study: {figure: heap, x: "BlocksTotal{host=h0}", y: "MemHeapUsedM{host=h0}"}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if st := s.Study; st.Series != s.Name || st.PerExperiment() {
		t.Errorf("study %+v: want the scenario's name as its series, a line per experiment", st)
	}
	for _, c := range []struct{ study, want string }{
		{`{x: datanodes, y: mb/s}`, "study.figure"},
		{`{figure: f, x: "two words", y: mb/s}`, "study.x"},
		{`{figure: f, x: datanodes, y: "BlocksTotal{host=h0}"}`, "study.y"},
		{`{figure: f, x: requests, y: mb/s, colour: red}`, "colour"},
	} {
		_, err := Parse("s.yaml", []byte(good+"study: "+c.study+"\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("study %s: error %v, want one naming %s", c.study, err, c.want)
		}
	}
}

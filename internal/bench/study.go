package bench

import (
	"slices"
	"strings"

	"github.com/gait-dev/gait/internal/clip"
	"gopkg.in/yaml.v3"
)

// Study places an experiment on a figure that several experiments share,
// a case study's (the Exalt case study's throughput against DataNodes,
// say): the suite report draws each figure once, every experiment that
// names it a line or a point on it.
type Study struct {
	Figure string // the figure's title; experiments with the same title share it
	// X and Y say what the axes show. With X a per-experiment value
	// (StudyPoints) each experiment is a point, its baseline's Y; else
	// each is a line, its baseline's seconds, X and Y read from each
	// second of its time series (requests done so far, a white-box
	// metric such as "BlocksTotal{host=h0}").
	X, Y   string
	Series string // the experiment's line's name
}

// StudyPoints are the X values that make an experiment one point.
var StudyPoints = []string{"nodes", "datanodes"}

// studyY are the Y values every study may use; a line may also use any
// white-box metric.
var studyY = []string{"throughput", "mb/s", "p50", "p99"}

// PerExperiment says whether the study's experiments are points.
func (s *Study) PerExperiment() bool { return slices.Contains(StudyPoints, s.X) }

func (s *Scenario) parseStudy(top object) error {
	n, ok := top.values["study"]
	if !ok {
		return nil
	}
	o, err := top.mapping(n, "study", "figure", "x", "y", "series")
	if err != nil {
		return err
	}
	st := &Study{}
	if st.Figure, _, err = o.required("figure"); err != nil {
		return err
	}
	var xn, yn *yaml.Node
	if st.X, xn, err = o.required("x"); err != nil {
		return err
	}
	if st.Y, yn, err = o.required("y"); err != nil {
		return err
	}
	if st.Series, _, err = o.str("series", s.Name); err != nil {
		return err
	}
	if !st.PerExperiment() && !metricName(st.X) && st.X != "requests" && st.X != "seconds" {
		return o.errorf(xn, "study.x", "%s: want %s, requests, seconds or a white-box metric like BlocksTotal{host=h0}", clip.Quote(st.X), strings.Join(StudyPoints, ", "))
	}
	switch {
	case slices.Contains(studyY, st.Y):
	case st.PerExperiment() || !metricName(st.Y):
		return o.errorf(yn, "study.y", "%s: want %s (or, when x is not %s, a white-box metric)", clip.Quote(st.Y), strings.Join(studyY, ", "), strings.Join(StudyPoints, " or "))
	}
	s.Study = st
	return nil
}

// metricName says whether v looks like a white-box metric's name: a word,
// then optionally its labels in braces.
func metricName(v string) bool {
	name, labels, braced := strings.Cut(v, "{")
	if name == "" || len(v) > 200 || strings.ContainsAny(name, " \t}") || slices.Contains(StudyPoints, v) {
		return false
	}
	return !braced || strings.HasSuffix(labels, "}")
}

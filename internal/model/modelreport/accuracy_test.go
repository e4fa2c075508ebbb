package modelreport

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gait-dev/gait/internal/model"
)

func TestRecordedErrorMapsRead(t *testing.T) {
	maps, err := recordedMaps()
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) < 3 {
		t.Fatalf("%d recorded maps, want Olio's, batches' and three phases'", len(maps))
	}
	for _, m := range maps {
		if _, total := m.within(accuracyGoal); total != 60 {
			t.Errorf("map of %s: %d cells (a mix at a load), want 60 (20 mixes of up to 8 nodes at 1%%, 8%%, 30%%)", m.request, total)
		}
	}
}

// The note reads a mix's error from the map of the request's shape, at the
// map's lowest load at or above the system's.
func TestRequestNoteReadsTheMap(t *testing.T) {
	maps, err := recordedMaps()
	if err != nil {
		t.Fatal(err)
	}
	olio := model.Request{Phases: []int{30, 20}}
	m, exact, ok := nearestMap(maps, olio)
	if !ok || !exact {
		t.Fatalf("no map of %s", olio)
	}
	worst := 0.0
	for _, c := range m.cells {
		if c.Utilization == 0.08 && c.Config == (model.Config{Duplicates: 2, Replicas: 4}) {
			worst = math.Max(worst, c.Error())
		}
	}
	// 5% of one server taking every access (50 accesses of 1ms each).
	sys := model.System{Service: model.Exponential{M: 1e-3}, Rate: 1, Request: olio}
	note := RequestNote(sys, []model.Config{{Duplicates: 2, Replicas: 4}, {Duplicates: 1, Replicas: 16}})
	for _, want := range []string{
		"the error map of these requests, phases 30,20",
		"At its 8% load (this system's is 5%",
		fmt.Sprintf("2x4 %.4f", worst),
		"not mapped: 1x16",
	} {
		if !strings.Contains(note, want) {
			t.Errorf("note lacks %q:\n%s", want, note)
		}
	}
	if worst > accuracyGoal && !strings.Contains(note, "outside 0.002: 2x4") {
		t.Errorf("2x4 is %.4f off in the map, but the note does not say it is outside:\n%s", worst, note)
	}

	if strings.Contains(note, "network delay") {
		t.Errorf("a system without a network delay should not be warned of one:\n%s", note)
	}
	sys.Net = model.LogNormal{Median: 250e-6, Sigma: 0.4}
	if note := RequestNote(sys, nil); !strings.Contains(note, "this system has a network delay on each reply, which that map has not") {
		t.Errorf("a system with a network delay should be told the map has none:\n%s", note)
	}
	sys.Net = nil
	sys.Rate = 20 // 100%: past the map
	if note := RequestNote(sys, nil); !strings.Contains(note, "past the map's highest (30%)") {
		t.Errorf("at 100%% load the note should say it is past the map:\n%s", note)
	}
	sys.Request = model.Request{Phases: []int{10, 20}}
	if note := RequestNote(sys, nil); !strings.Contains(note, "requests of phases 10,20 have no error map of their own; the nearest shape's, phases 30,20") {
		t.Errorf("a shape without a map should name the nearest:\n%s", note)
	}
	sys.Request = model.Request{}
	if note := RequestNote(sys, nil); note != "" {
		t.Errorf("one access has no request note, got %q", note)
	}
}

func TestShapeOfMapFile(t *testing.T) {
	for name, want := range map[string]string{
		"phases-30-20.json":       "phases 30,20",
		"phases-4-3-batch-8.json": "phases 4,3, batches of 8",
		"phases-10-10-10.json":    "phases 10,10,10",
	} {
		q, err := shapeOfMapFile(name)
		if err != nil || q.String() != want {
			t.Errorf("%s: %v, %v; want %s", name, q, err, want)
		}
	}
	for _, name := range []string{"olio.json", "phases-x-2.json", "phases-3-batch-y.json", "phases-0.json"} {
		if _, err := shapeOfMapFile(name); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

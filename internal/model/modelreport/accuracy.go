package modelreport

import (
	"embed"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gait-dev/gait/internal/model"
)

// The request error maps last drawn (docs/requests.md; the commands that
// drew them are in docs/results/requests.md), as gait model errormap
// --phases --format json wrote their cells, one file per request shape:
// phases-30-20.json is phases 30,20 arriving alone, phases-4-3-batch-8.json
// phases 4,3 in batches of 8. Each was drawn with errormap's default
// service (exp:1ms) and no network. The note under a request prediction
// reads its mixes' errors from them, so a redrawn map changes what the
// note says by replacing its file.
//
//go:embed errormaps/*.json
var errorMapFiles embed.FS

// accuracyGoal is the error the request predictor aims at (the thesis's
// own accuracy); the note names the mixes a map puts outside it.
const accuracyGoal = 0.002

// errorMap is one recorded request error map.
type errorMap struct {
	request model.Request
	cells   []model.RequestErrorCell
	// worst is each mix's largest error over the quantiles at each load.
	worst map[float64]map[model.Config]float64
}

var recordedMaps = sync.OnceValues(readErrorMaps)

func readErrorMaps() ([]errorMap, error) {
	names, err := errorMapFiles.ReadDir("errormaps")
	if err != nil {
		return nil, err
	}
	var maps []errorMap
	for _, e := range names {
		q, err := shapeOfMapFile(e.Name())
		if err != nil {
			return nil, err
		}
		data, err := errorMapFiles.ReadFile(path.Join("errormaps", e.Name()))
		if err != nil {
			return nil, err
		}
		m := errorMap{request: q}
		if err := json.Unmarshal(data, &m.cells); err != nil {
			return nil, fmt.Errorf("error map %s: %w", e.Name(), err)
		}
		if len(m.cells) == 0 {
			return nil, fmt.Errorf("error map %s: no cells", e.Name())
		}
		m.worst = worstByLoad(m.cells)
		maps = append(maps, m)
	}
	return maps, nil
}

// shapeOfMapFile reads a map file's request shape from its name:
// phases-P1-P2[-batch-B].json.
func shapeOfMapFile(name string) (model.Request, error) {
	fields := strings.Split(strings.TrimSuffix(name, ".json"), "-")
	bad := fmt.Errorf("error map file %s: want phases-P1-P2...[-batch-B].json", name)
	if len(fields) < 2 || fields[0] != "phases" {
		return model.Request{}, bad
	}
	var q model.Request
	for i := 1; i < len(fields); i++ {
		if fields[i] == "batch" && i == len(fields)-2 {
			b, err := strconv.Atoi(fields[i+1])
			if err != nil {
				return model.Request{}, bad
			}
			q.Batch = b
			break
		}
		k, err := strconv.Atoi(fields[i])
		if err != nil {
			return model.Request{}, bad
		}
		q.Phases = append(q.Phases, k)
	}
	return q, q.Validate()
}

// shapeClass is what sets how the predictor treats a request: batches,
// three phases or more, or fewer.
func shapeClass(q model.Request) int {
	switch {
	case q.Batch > 1:
		return 2
	case len(q.Phases) > 2:
		return 1
	}
	return 0
}

// nearestMap is the map drawn for q's shape, or else for a shape the
// predictor treats the same way (exact says which).
func nearestMap(maps []errorMap, q model.Request) (m errorMap, exact, ok bool) {
	for _, m := range maps {
		if slices.Equal(m.request.Phases, q.Phases) && max(1, m.request.Batch) == max(1, q.Batch) {
			return m, true, true
		}
	}
	for _, m := range maps {
		if shapeClass(m.request) == shapeClass(q) {
			return m, false, true
		}
	}
	return errorMap{}, false, false
}

// RequestNote says how far the recorded error map of the request's shape
// (or the nearest shape's) puts the predictor from simulation for the
// mixes given, at the map's load nearest above sys's; "" for requests of
// one access.
func RequestNote(sys model.System, mixes []model.Config) string {
	if !sys.Request.FanOut() {
		return ""
	}
	const simulate = "gait model simulate --phases runs the same system request by request"
	maps, err := recordedMaps()
	if err != nil {
		return fmt.Sprintf("note: the recorded error maps do not read (%v); %s\n", err, simulate)
	}
	m, exact, ok := nearestMap(maps, sys.Request)
	if !ok {
		return fmt.Sprintf("note: no error map is recorded for requests like these; %s\n", simulate)
	}
	var b strings.Builder
	b.WriteString("note: ")
	if !exact {
		fmt.Fprintf(&b, "requests of %s have no error map of their own; the nearest shape's, ", sys.Request)
	} else {
		b.WriteString("the error map of these requests, ")
	}
	inside, total := m.within(accuracyGoal)
	fmt.Fprintf(&b, "%s (exp:1ms service, no network; docs/requests.md), puts the predictor within %g of simulation in %d of %d cells",
		m.request, accuracyGoal, inside, total)
	b.WriteString(m.atLoad(sys.Utilization(model.Config{Duplicates: 1, Replicas: 1}), mixes))
	if sys.Net != nil && sys.Net.Mean() > 0 {
		// The recorded maps have no network delay, and with one the
		// predictor is further off: the map says less about this system.
		b.WriteString("; this system has a network delay on each reply, which that map has not: with a spread one about six times the work, the predictor was within 0.002 of simulation in 9 of 27 cells, 0.001-0.007 off with one server per group, up to 0.020 with one group of duplicates and 0.034 with several (docs/requests.md); gait model errormap --phases --net maps such a system")
	}
	fmt.Fprintf(&b, "; %s\n", simulate)
	return b.String()
}

// worstByLoad is each mix's largest error over the quantiles at each load.
func worstByLoad(cells []model.RequestErrorCell) map[float64]map[model.Config]float64 {
	out := map[float64]map[model.Config]float64{}
	for _, c := range cells {
		if out[c.Utilization] == nil {
			out[c.Utilization] = map[model.Config]float64{}
		}
		out[c.Utilization][c.Config] = math.Max(out[c.Utilization][c.Config], c.Error())
	}
	return out
}

// within counts the map's cells (a mix at a load) inside the goal.
func (m errorMap) within(goal float64) (inside, total int) {
	for _, mixes := range m.worst {
		for _, e := range mixes {
			total++
			if e <= goal {
				inside++
			}
		}
	}
	return inside, total
}

// atLoad says what the map measured for the mixes at the lowest of its
// loads at or above u (the load of one server taking every access).
func (m errorMap) atLoad(u float64, mixes []model.Config) string {
	loads := make([]float64, 0, len(m.worst))
	for l := range m.worst {
		loads = append(loads, l)
	}
	slices.Sort(loads)
	i := slices.IndexFunc(loads, func(l float64) bool { return l >= u*(1-1e-9) })
	if i < 0 {
		return fmt.Sprintf(". This system's load (%s of one server taking every access) is past the map's highest (%s), where the error grows with the load (gait model errormap --per-server maps higher loads)",
			percent(u), percent(loads[len(loads)-1]))
	}
	at := m.worst[loads[i]]
	var shown, outside, unmapped []string
	for _, c := range mixes {
		e, ok := at[c]
		name := fmt.Sprintf("%dx%d", c.Duplicates, c.Replicas)
		switch {
		case !ok:
			unmapped = append(unmapped, name)
		case e > accuracyGoal:
			outside = append(outside, name)
			fallthrough
		default:
			shown = append(shown, fmt.Sprintf("%s %.4f", name, e))
		}
	}
	s := fmt.Sprintf(". At its %s load (this system's is %s, of one server taking every access; with r groups each server carries 1/r of it)", percent(loads[i]), percent(u))
	if len(shown) > 0 {
		s += ", these mixes were off by at most " + strings.Join(shown, ", ")
	}
	if len(outside) > 0 {
		s += fmt.Sprintf(" (outside %g: %s)", accuracyGoal, strings.Join(outside, ", "))
	}
	if len(unmapped) > 0 {
		s += "; not mapped: " + strings.Join(unmapped, ", ")
	}
	return s
}

func percent(u float64) string { return strconv.FormatFloat(100*u, 'g', 3, 64) + "%" }

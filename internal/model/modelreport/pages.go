package modelreport

import (
	"fmt"

	"github.com/gait-dev/gait/internal/model"
	"github.com/gait-dev/gait/internal/model/limplock"
	"github.com/gait-dev/gait/internal/report"
)

// PredictPage is gait model predict's report: the SLA against nodes.
func PredictPage(sys model.System, preds []model.Prediction) *report.Page {
	page := report.NewPage("gait model predict")
	page.Paragraph(Describe(sys))
	page.Figure("Share of requests missing the bound against nodes, one line per replica count; solid: accurate predictor, dashed: thesis.", SLAChart("predicted SLA", preds))
	return page
}

// Page is gait model plan's report of every candidate mix.
func (b BestMix) Page() *report.Page {
	page := report.NewPage("gait model plan: best mix")
	page.Paragraph(Describe(b.System))
	page.Note(fmt.Sprintf("Best mix of at most %d nodes: %d duplicates x %d replicas, SLA %s (%s predictor).", b.Nodes, b.Best.Duplicates, b.Best.Replicas, Pct(b.Predictor.Pick(b.Best)), b.Predictor))
	page.Figure("Every mix that fits the budget: share missing the bound against nodes.", SLAChart("candidates", b.Candidates))
	return page
}

// Page is the thesis's Figure 7, a panel per utilization.
func (f Figure7) Page() *report.Page {
	sys := model.System{Service: f.System.Service, Net: f.System.Net, Bound: f.System.Bound}
	page := report.NewPage("Zoolander Figure 7, reproduced by gait")
	page.Paragraph(Describe(sys) + "; utilization is that of one server taking all the traffic.")
	for _, u := range f.Utilizations {
		page.Figure(fmt.Sprintf("SLA within %s at %g%% utilization: duplicates (predictability) vs replicas (throughput).", model.FormatDuration(sys.Bound), 100*u),
			Figure7Chart(sys.Bound, u, f.MaxNodes, f.Predictions[fmt.Sprint(u)]))
	}
	return page
}

// ErrorMapPage is gait model errormap's report: a figure per distribution.
func ErrorMapPage(boundMeans float64, requests int, cells []model.ErrorCell) *report.Page {
	page := report.NewPage("gait model errormap")
	page.Paragraph(fmt.Sprintf("Bound %g x mean service, no network delay, %d simulated requests per point.", boundMeans, requests))
	seen := map[string]bool{}
	for _, c := range cells {
		if seen[c.Service] {
			continue
		}
		seen[c.Service] = true
		page.Figure("|predicted - simulated| against duplicates for "+c.Service+"; solid: accurate, dashed: thesis (floored at 1e-6).", ErrorChart(c.Service, cells))
	}
	return page
}

// IndependencePage is gait model independence's report: the verdict and
// the thesis's Figure 5.
func IndependencePage(ind model.Independence) *report.Page {
	page := report.NewPage("gait model independence")
	page.Note(Verdict(ind))
	page.Figure("Each request's percentile in duplicate A against B (thesis Figure 5): independent anomalies fill the corners evenly.", IndependenceChart(ind))
	return page
}

// LimplockPage is the Limplock paper's Figure 3 from limplock.Figure3.
func LimplockPage(panels []limplock.Panel) *report.Page {
	page := report.NewPage("HDFS limplock probabilities (Limplock paper Figure 3)")
	page.Paragraph("Lines: Table 2's formulas. Dashed: Monte Carlo of random 3-way placement with one slow and one dead node.")
	for _, p := range panels {
		page.Figure(p.Title+" against cluster size.", Figure3Chart(p))
	}
	return page
}

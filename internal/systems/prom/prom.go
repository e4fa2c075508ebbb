// Package prom reads the white-box metrics a server publishes in the
// Prometheus text format, for the system drivers that probe them.
package prom

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Scrape fetches url and parses its metric families. The default transport
// asks for gzip, which shrinks a metrics page about fifteenfold: a scrape
// crosses the host's link, which may be the limping one.
func Scrape(ctx context.Context, client *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", url, err)
	}
	return fams, nil
}

// IntervalMeans turns cumulative histograms into the mean of what was
// observed between two scrapes, per series: a server's histogram buckets are
// too coarse for percentiles, and its all-time mean hides a limp that began
// a minute ago.
type IntervalMeans struct {
	mu   sync.Mutex
	prev map[string]snapshot
}

type snapshot struct {
	sum   float64
	count uint64
}

// Mean returns the mean of the observations series id gained since the last
// call for id, and false when it gained none.
func (m *IntervalMeans) Mean(id string, h *dto.Histogram) (float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.prev == nil {
		m.prev = map[string]snapshot{}
	}
	now := snapshot{sum: h.GetSampleSum(), count: h.GetSampleCount()}
	prev := m.prev[id]
	m.prev[id] = now
	if now.count < prev.count { // the server restarted and counts anew
		prev = snapshot{}
	}
	if now.count == prev.count {
		return 0, false
	}
	return (now.sum - prev.sum) / float64(now.count-prev.count), true
}

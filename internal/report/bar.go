package report

import (
	"fmt"
	"math"
)

const (
	maxCategoryLen = 24
	labelAngle     = 35.0 // degrees; category labels turn when they do not fit
	maxBarWidth    = 64.0
)

// SVG renders the chart.
func (c BarChart) SVG() string {
	ya := c.Y
	ya.Zero = true
	var e extent
	for _, s := range c.Series {
		for i := range min(len(s.Y), len(c.Categories)) {
			if usable(s.Y[i], ya.Log) {
				e.add(s.Y[i])
			}
		}
	}
	if e.n == 0 {
		return emptySVG(c.Title)
	}
	ys := newScale(ya, e, 5)
	items := make([]legendItem, len(c.Series))
	for i, s := range c.Series {
		items[i] = legendItem{name: s.Name, color: seriesColor(i), kind: swatchBox}
	}
	l := layoutBars(c, ya, ys)
	legendTop := l.area.bottom + l.labelHeight + 8
	legendH := layoutLegend(items, chartWidth-l.area.left-pad)
	ys.a, ys.b = l.area.bottom, l.area.top

	var w svgWriter
	w.open(c.Title, chartWidth, legendTop+legendH+pad)
	drawGrid(&w, l.area, &scale{}, ys)
	thinLabels(ys, func(tick) float64 { return fontSize + 6 })
	drawYTicks(&w, l.area, ys)
	drawBars(&w, c, ys, l.area, l.band)
	drawAxes(&w, l.area)
	drawCategories(&w, c.Categories, l)
	w.yTitle(axisTitle(ya), l.area)
	w.title(c.Title)
	if legendH > 0 {
		w.legend(items, l.area.left, legendTop)
	}
	w.close()
	return w.String()
}

// barLayout places the plot and the category labels.
type barLayout struct {
	area        plotArea
	band        float64 // width of one category
	rotate      bool    // labels turned by labelAngle
	every       int     // label every so many categories
	labelHeight float64 // below the plot
}

func layoutBars(c BarChart, ya Axis, ys *scale) barLayout {
	var labelW, yTickW float64
	for _, cat := range c.Categories {
		labelW = max(labelW, textWidth(shorten(cat, maxCategoryLen), fontSize))
	}
	for _, t := range ys.ticks {
		yTickW = max(yTickW, textWidth(t.label, fontSize))
	}
	l := barLayout{area: plotArea{top: titleHeight(c.Title), left: pad + yTickW + 10, right: chartWidth - pad - 10}, labelHeight: 26}
	if axisTitle(ya) != "" {
		l.area.left += 22
	}
	l.area.bottom = l.area.top + plotHeight
	n := float64(len(c.Categories))
	l.band = (l.area.right - l.area.left) / n
	l.rotate = labelW+8 > l.band
	// Labels need a line height between them, measured across the text.
	across := l.band
	if l.rotate {
		sin, cos := math.Sincos(labelAngle * math.Pi / 180)
		l.labelHeight = labelW*sin + fontSize*cos + 12
		// The first label reaches left of its bar: make room for it.
		if need := pad + labelW*cos - l.band/2; need > l.area.left {
			l.area.left = need
			l.band = (l.area.right - l.area.left) / n
		}
		across = l.band * sin
	}
	l.every = max(1, int(math.Ceil((fontSize+4)/across)))
	return l
}

func drawCategories(w *svgWriter, categories []string, l barLayout) {
	for i, cat := range categories {
		if i%l.every != 0 {
			continue
		}
		x := l.area.left + (float64(i)+0.5)*l.band
		tip := fmt.Sprintf(`<title>%s</title>`, esc(cat))
		label := esc(shorten(cat, maxCategoryLen))
		if l.rotate {
			y := l.area.bottom + 14
			w.printf(`<text x="%s" y="%s" text-anchor="end" transform="rotate(-%s %s %s)">%s%s</text>`,
				num(x), num(y), num(labelAngle), num(x), num(y), tip, label)
		} else {
			w.printf(`<text x="%s" y="%s" text-anchor="middle">%s%s</text>`, num(x), num(l.area.bottom+20), tip, label)
		}
	}
}

// drawBars draws each category's group: up to 80% of its band centred in it, one bar per series,
// rising from zero (from the bottom of a log axis).
func drawBars(w *svgWriter, c BarChart, ys *scale, a plotArea, band float64) {
	base := ys.lo
	if !ys.log {
		base = min(max(0, ys.lo), ys.hi)
	}
	y0 := ys.pos(base)
	barW := min(maxBarWidth, band*0.8/float64(max(1, len(c.Series))))
	groupLeft := (band - barW*float64(len(c.Series))) / 2
	gap := 0.0
	if barW > 6 {
		gap = 1
	}
	w.printf(`<g clip-path="url(#%s)">`, w.clip(a, 0))
	for si, s := range c.Series {
		for i := range min(len(s.Y), len(c.Categories)) {
			v := s.Y[i]
			if !usable(v, ys.log) {
				continue
			}
			x := a.left + float64(i)*band + groupLeft + float64(si)*barW
			y := max(-farAway, min(farAway, ys.pos(v)))
			top, h := min(y, y0), math.Abs(y-y0)
			w.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`,
				num(x+gap/2), num(top), num(barW-gap), num(h), seriesColor(si),
				esc(barTip(s.Name, c.Categories[i], v, c.Y.Unit)))
		}
	}
	w.WriteString(`</g>`)
}

func barTip(series, category string, v float64, unit string) string {
	value := formatPrecise(v, unit)
	if series == "" {
		return category + ": " + value
	}
	return series + ", " + category + ": " + value
}

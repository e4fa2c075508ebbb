package report

import (
	"fmt"
	"math"
)

// markerLimit is the most points a LineChart draws markers on; beyond it
// the dots merge into a thick line.
const markerLimit = 200

// SVG renders the chart.
func (c LineChart) SVG() string {
	return renderXY(c.Title, c.X, c.Y, c.Series, xyStyle{step: c.Step, markers: c.Markers})
}

// SVG renders the chart.
func (c ScatterChart) SVG() string {
	return renderXY(c.Title, c.X, c.Y, c.Series, xyStyle{scatter: true})
}

type xyStyle struct {
	step, markers, scatter bool
}

// plotArea is the rectangle the data is drawn in.
type plotArea struct {
	left, top, right, bottom float64
}

// inside keeps the points that lie in the area: a dot centred outside a
// fixed range would be misread as a value on its edge.
func inside(p []pt, a plotArea) []pt {
	const slack = 0.5 // rounding
	var out []pt
	for _, q := range p {
		if q.x >= a.left-slack && q.x <= a.right+slack && q.y >= a.top-slack && q.y <= a.bottom+slack {
			out = append(out, q)
		}
	}
	return out
}

// clip defines a clip path of the plot area grown by margin and returns
// its id. The id is derived from the rectangle alone: two charts sharing an
// id also share an identical clip path, so the duplicate is harmless.
func (w *svgWriter) clip(a plotArea, margin float64) string {
	id := fmt.Sprintf("plot-%s-%s-%s-%s-%s", num(a.left), num(a.top), num(a.right), num(a.bottom), num(margin))
	w.printf(`<defs><clipPath id="%s"><rect x="%s" y="%s" width="%s" height="%s"/></clipPath></defs>`,
		id, num(a.left-margin), num(a.top-margin), num(a.right-a.left+2*margin), num(a.bottom-a.top+2*margin))
	return id
}

func seriesLen(s Series) int { return min(len(s.X), len(s.Y)) }

func dataExtents(series []Series, xa, ya Axis) (xe, ye extent) {
	for _, s := range series {
		for i := range seriesLen(s) {
			x, y := s.X[i], s.Y[i]
			if usable(x, xa.Log) && usable(y, ya.Log) {
				xe.add(x)
				ye.add(y)
			}
			if lo, hi, ok := rangeAt(s, i, xa.Log, ya.Log); ok {
				ye.add(lo)
				ye.add(hi)
			}
		}
	}
	return xe, ye
}

func renderXY(title string, xa, ya Axis, series []Series, st xyStyle) string {
	xe, ye := dataExtents(series, xa, ya)
	if xe.n == 0 {
		return emptySVG(title)
	}
	xs, ys := newScale(xa, xe, 6), newScale(ya, ye, 5)
	items := make([]legendItem, len(series))
	for i, s := range series {
		items[i] = legendItem{name: s.Name, color: seriesColor(i), dashed: seriesDashed(i, s), markers: st.markers}
		if st.scatter {
			items[i].kind = swatchDot
		}
	}
	var w svgWriter
	area := layoutXY(&w, title, xa, ya, xs, ys, items)
	lines, dots := w.clip(area, 0), w.clip(area, 5)
	for i, s := range series {
		drawSeries(&w, s, items[i], xs, ys, xa.Log, ya.Log, area, st, lines, dots)
	}
	drawAxes(&w, area)
	w.close()
	return w.String()
}

// layoutXY sizes the chart around its tick labels, titles and legend, opens
// the SVG and draws everything but the data.
func layoutXY(w *svgWriter, title string, xa, ya Axis, xs, ys *scale, items []legendItem) plotArea {
	var yTickW float64
	for _, t := range ys.ticks {
		yTickW = max(yTickW, textWidth(t.label, fontSize))
	}
	var lastX string
	for _, t := range xs.ticks {
		if t.label != "" {
			lastX = t.label
		}
	}
	a := plotArea{top: titleHeight(title)}
	a.left = pad + yTickW + 10
	if axisTitle(ya) != "" {
		a.left += 22
	}
	a.right = chartWidth - max(24, textWidth(lastX, fontSize)/2+pad)
	a.bottom = a.top + plotHeight
	legendTop := a.bottom + 34
	if axisTitle(xa) != "" {
		legendTop += 24
	}
	legendH := layoutLegend(items, chartWidth-a.left-pad)
	height := legendTop + legendH + pad
	if legendH > 0 {
		height += 4
	}
	xs.a, xs.b = a.left, a.right
	ys.a, ys.b = a.bottom, a.top

	w.open(title, chartWidth, height)
	drawGrid(w, a, xs, ys)
	thinLabels(xs, func(t tick) float64 { return textWidth(t.label, fontSize) + 12 })
	thinLabels(ys, func(tick) float64 { return fontSize + 6 })
	drawXTicks(w, a, xs)
	drawYTicks(w, a, ys)
	if t := axisTitle(xa); t != "" {
		w.text((a.left+a.right)/2, a.bottom+48, "middle", fit(t, a.right-a.left, 13), ` font-size="13"`)
	}
	w.yTitle(axisTitle(ya), a)
	w.title(title)
	if legendH > 0 {
		w.legend(items, a.left, legendTop)
	}
	return a
}

// yTitle writes the y axis title upright along the left edge.
func (w *svgWriter) yTitle(t string, a plotArea) {
	if t == "" {
		return
	}
	x, y := pad+10, (a.top+a.bottom)/2
	w.text(x, y, "middle", fit(t, a.bottom-a.top, 13), fmt.Sprintf(` font-size="13" transform="rotate(-90 %s %s)"`, num(x), num(y)))
}

func drawGrid(w *svgWriter, a plotArea, xs, ys *scale) {
	line := func(x1, y1, x2, y2 float64, color string) {
		w.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(x1), num(y1), num(x2), num(y2), color)
	}
	// Minor lines first, so major lines cross over them.
	for _, major := range []bool{false, true} {
		color := minorColor
		if major {
			color = gridColor
		}
		for _, t := range xs.ticks {
			if (t.label != "") == major {
				x := xs.pos(t.v)
				line(x, a.top, x, a.bottom, color)
			}
		}
		for _, t := range ys.ticks {
			if (t.label != "") == major {
				y := ys.pos(t.v)
				line(a.left, y, a.right, y, color)
			}
		}
	}
}

func drawAxes(w *svgWriter, a plotArea) {
	w.printf(`<path d="M%s %sV%sH%s" fill="none" stroke="%s"/>`, num(a.left), num(a.top), num(a.bottom), num(a.right), axisColor)
}

// thinLabels blanks labels that would overlap their neighbour, keeping the
// grid line; size gives the room a label needs along the axis.
func thinLabels(s *scale, size func(tick) float64) {
	prev, prevSize := math.Inf(-1), 0.0
	for i, t := range s.ticks {
		if t.label == "" {
			continue
		}
		p, sz := s.pos(t.v), size(t)
		if math.Abs(p-prev) < (sz+prevSize)/2 {
			s.ticks[i].label = ""
			continue
		}
		prev, prevSize = p, sz
	}
}

func drawXTicks(w *svgWriter, a plotArea, s *scale) {
	for _, t := range s.ticks {
		if t.label == "" {
			continue
		}
		x := s.pos(t.v)
		w.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(x), num(a.bottom), num(x), num(a.bottom+5), axisColor)
		w.text(x, a.bottom+20, "middle", t.label, "")
	}
}

func drawYTicks(w *svgWriter, a plotArea, s *scale) {
	for _, t := range s.ticks {
		if t.label == "" {
			continue
		}
		y := s.pos(t.v)
		w.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(a.left-5), num(y), num(a.left), num(y), axisColor)
		w.text(a.left-8, y+4, "end", t.label, "")
	}
}

// rangeAt is point i's range bar, if the series has one there that the
// axes can show.
func rangeAt(s Series, i int, xlog, ylog bool) (lo, hi float64, ok bool) {
	if i >= len(s.Lo) || i >= len(s.Hi) {
		return 0, 0, false
	}
	lo, hi = s.Lo[i], s.Hi[i]
	return lo, hi, usable(s.X[i], xlog) && usable(lo, ylog) && usable(hi, ylog) && lo < hi
}

// rangeBars draws each point's range as a vertical bar with short caps.
func rangeBars(w *svgWriter, s Series, xs, ys *scale, xlog, ylog bool, color, clip string) {
	const capWidth = 4
	b := make([]byte, 0, len(s.Lo)*40)
	for i := range seriesLen(s) {
		lo, hi, ok := rangeAt(s, i, xlog, ylog)
		if !ok {
			continue
		}
		x := math.Max(-farAway, math.Min(farAway, xs.pos(s.X[i])))
		y0 := math.Max(-farAway, math.Min(farAway, ys.pos(lo)))
		y1 := math.Max(-farAway, math.Min(farAway, ys.pos(hi)))
		for _, y := range []float64{y0, y1} {
			b = append(b, 'M')
			b = appendNum(b, x-capWidth)
			b = append(b, ' ')
			b = appendNum(b, y)
			b = append(b, 'h')
			b = appendNum(b, 2*capWidth)
		}
		b = append(b, 'M')
		b = appendNum(b, x)
		b = append(b, ' ')
		b = appendNum(b, y0)
		b = append(b, 'V')
		b = appendNum(b, y1)
	}
	if len(b) > 0 {
		w.printf(`<path d="%s" stroke="%s" stroke-width="1.5" fill="none" clip-path="url(#%s)"/>`, b, color, clip)
	}
}

// farAway keeps pixel coordinates of values far outside a fixed range
// finite and small; the clip path hides them anyway.
const farAway = 1e5

func pixels(s Series, xs, ys *scale, xlog, ylog bool) []pt {
	n := seriesLen(s)
	p := make([]pt, 0, n)
	for i := range n {
		x, y := s.X[i], s.Y[i]
		if usable(x, xlog) && usable(y, ylog) {
			p = append(p, pt{
				math.Max(-farAway, math.Min(farAway, xs.pos(x))),
				math.Max(-farAway, math.Min(farAway, ys.pos(y))),
			})
		}
	}
	return p
}

// drawSeries draws one series, its lines clipped to the plot area and its
// dots a little beyond, so a dot on the axis shows whole.
func drawSeries(w *svgWriter, s Series, it legendItem, xs, ys *scale, xlog, ylog bool, a plotArea, st xyStyle, lineClip, dotClip string) {
	all := pixels(s, xs, ys, xlog, ylog)
	if len(all) == 0 {
		return
	}
	var p []pt
	if st.scatter {
		p = thinScatter(inside(all, a), maxPoints)
	} else {
		p = thinLine(all, maxPoints)
	}
	w.printf(`<g><title>%s (%d points`, esc(s.Name), len(all))
	if len(p) < len(all) {
		w.printf(`, %d drawn`, len(p))
	}
	w.WriteString(`)</title>`)
	rangeBars(w, s, xs, ys, xlog, ylog, it.color, lineClip)
	dotClip = fmt.Sprintf(` clip-path="url(#%s)"`, dotClip)
	switch {
	case st.scatter:
		dots(w, p, it.color, 6, ` stroke-opacity="0.8"`+dotClip)
	default:
		dashAttr := ""
		if it.dashed {
			dashAttr = ` stroke-dasharray="` + dash + `"`
		}
		if len(p) > 1 {
			w.printf(`<path d="%s" fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round" clip-path="url(#%s)"%s/>`,
				linePath(p, st.step), it.color, lineClip, dashAttr)
		}
		if (st.markers && len(p) <= markerLimit) || len(p) == 1 {
			dots(w, inside(p, a), it.color, 6, dotClip)
		}
	}
	w.WriteString(`</g>`)
}

// dots draws each point as a zero-length round-capped stroke: a filled
// circle for about a third of the bytes of a <circle>.
func dots(w *svgWriter, p []pt, color string, size float64, extra string) {
	b := make([]byte, 0, len(p)*16)
	for _, q := range p {
		b = append(b, 'M')
		b = appendNum(b, q.x)
		b = append(b, ' ')
		b = appendNum(b, q.y)
		b = append(b, 'h', '0')
	}
	w.printf(`<path d="%s" stroke="%s" stroke-width="%s" stroke-linecap="round" fill="none"%s/>`, b, color, num(size), extra)
}

// linePath joins points; a step path holds each value until the next x.
func linePath(p []pt, step bool) []byte {
	b := make([]byte, 0, len(p)*14)
	b = append(b, 'M')
	b = appendNum(b, p[0].x)
	b = append(b, ' ')
	b = appendNum(b, p[0].y)
	for _, q := range p[1:] {
		if step {
			b = append(b, 'H')
			b = appendNum(b, q.x)
			b = append(b, 'V')
			b = appendNum(b, q.y)
			continue
		}
		b = append(b, 'L')
		b = appendNum(b, q.x)
		b = append(b, ' ')
		b = appendNum(b, q.y)
	}
	return b
}

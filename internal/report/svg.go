package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Chart geometry, in SVG user units (pixels at 100% zoom).
const (
	chartWidth  = 860.0
	plotHeight  = 320.0
	pad         = 14.0
	fontSize    = 12.0
	titleSize   = 15.0
	legendRow   = 18.0
	maxNameLen  = 48 // longer series names are cut in the legend
	fontFamily  = `system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif`
	gridColor   = "#dedede"
	minorColor  = "#f1f1f1"
	axisColor   = "#555"
	textColor   = "#222"
	mutedColor  = "#666"
	noDataLabel = "no data"
)

// palette is Okabe and Ito's colour-blind safe set (its yellow, unreadable
// on white, left out) extended with Paul Tol's wine and olive, then black
// and grey. After ten series the colours repeat, dashed.
var palette = []string{
	"#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7",
	"#56B4E9", "#882255", "#999933", "#000000", "#888888",
}

func seriesColor(i int) string { return palette[i%len(palette)] }

func seriesDashed(i int, s Series) bool { return s.Dashed || (i/len(palette))%2 == 1 }

const dash = "6 4"

// esc escapes text for XML content and double-quoted attributes, and
// replaces characters XML forbids (names come from user files).
func esc(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&#34;")
		case r == '\'':
			b.WriteString("&#39;")
		case !xmlChar(r):
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		(r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
}

// num writes a coordinate with one decimal: a tenth of a pixel is enough
// and keeps large paths small.
func num(v float64) string {
	return string(appendNum(nil, v))
}

func appendNum(b []byte, v float64) []byte {
	return strconv.AppendFloat(b, math.Round(v*10)/10, 'f', -1, 64)
}

// textWidth estimates rendered width; a little generous so nothing clips.
func textWidth(s string, size float64) float64 {
	return float64(utf8.RuneCountInString(s)) * size * 0.62
}

func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// svgWriter accumulates one <svg> element.
type svgWriter struct {
	strings.Builder
}

func (w *svgWriter) printf(format string, args ...any) {
	fmt.Fprintf(w, format, args...)
}

func (w *svgWriter) open(title string, width, height float64) {
	w.printf(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" width="%s" height="%s" role="img" aria-label="%s" font-family="%s" font-size="%s" fill="%s">`,
		num(width), num(height), num(width), num(height), esc(title), fontFamily, num(fontSize), textColor)
	if title != "" {
		w.printf(`<title>%s</title>`, esc(title))
	}
	w.printf(`<rect width="%s" height="%s" fill="#fff"/>`, num(width), num(height))
}

func (w *svgWriter) close() { w.WriteString(`</svg>`) }

// text writes a label; anchor is start, middle or end.
func (w *svgWriter) text(x, y float64, anchor, s string, extra string) {
	w.printf(`<text x="%s" y="%s" text-anchor="%s"%s>%s</text>`, num(x), num(y), anchor, extra, esc(s))
}

func (w *svgWriter) title(s string) {
	if s != "" {
		w.text(chartWidth/2, pad+titleSize, "middle", fit(s, chartWidth-2*pad, titleSize), fmt.Sprintf(` font-size="%s" font-weight="600"`, num(titleSize)))
	}
}

// fit shortens s to about width pixels at font size.
func fit(s string, width, size float64) string {
	return shorten(s, max(4, int(width/(size*0.62))))
}

func titleHeight(s string) float64 {
	if s == "" {
		return pad
	}
	return pad + titleSize + 16
}

// emptySVG is drawn for a chart without a single drawable value.
func emptySVG(title string) string {
	var w svgWriter
	top := titleHeight(title)
	h := top + 120 + pad
	w.open(title, chartWidth, h)
	w.title(title)
	w.printf(`<rect x="%s" y="%s" width="%s" height="120" fill="none" stroke="%s" stroke-dasharray="4 4"/>`,
		num(pad), num(top), num(chartWidth-2*pad), gridColor)
	w.text(chartWidth/2, top+64, "middle", noDataLabel, fmt.Sprintf(` fill="%s" font-size="14"`, mutedColor))
	w.close()
	return w.String()
}

// Legend swatch kinds.
const (
	swatchLine = iota
	swatchDot
	swatchBox
)

type legendItem struct {
	name    string
	color   string
	dashed  bool
	kind    int
	markers bool
	x, y    float64 // set by layoutLegend, relative to the legend's top left
}

const swatchWidth = 24.0

// layoutLegend flows items into rows no wider than width and returns the
// height used; a legend whose series are all unnamed takes no room.
func layoutLegend(items []legendItem, width float64) float64 {
	named := false
	for _, it := range items {
		named = named || it.name != ""
	}
	if !named {
		return 0
	}
	x, y := 0.0, 0.0
	for i := range items {
		w := swatchWidth + 6 + textWidth(shorten(items[i].name, maxNameLen), fontSize)
		if x > 0 && x+w > width {
			x, y = 0, y+legendRow
		}
		items[i].x, items[i].y = x, y
		x += w + 18
	}
	return y + legendRow
}

func (w *svgWriter) legend(items []legendItem, left, top float64) {
	w.WriteString(`<g class="legend">`)
	for _, it := range items {
		x, y := left+it.x, top+it.y+legendRow/2
		w.printf(`<g><title>%s</title>`, esc(it.name))
		switch it.kind {
		case swatchBox:
			w.printf(`<rect x="%s" y="%s" width="12" height="12" fill="%s"/>`, num(x+6), num(y-6), it.color)
		case swatchDot:
			w.printf(`<circle cx="%s" cy="%s" r="3.5" fill="%s"/>`, num(x+swatchWidth/2), num(y), it.color)
		default:
			dashAttr := ""
			if it.dashed {
				dashAttr = ` stroke-dasharray="` + dash + `"`
			}
			w.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2.5"%s/>`,
				num(x), num(y), num(x+swatchWidth), num(y), it.color, dashAttr)
			if it.markers {
				w.printf(`<circle cx="%s" cy="%s" r="3" fill="%s"/>`, num(x+swatchWidth/2), num(y), it.color)
			}
		}
		w.text(x+swatchWidth+6, y+4, "start", shorten(it.name, maxNameLen), "")
		w.WriteString(`</g>`)
	}
	w.WriteString(`</g>`)
}

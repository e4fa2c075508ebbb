// Package report writes self-contained HTML reports: one file with inline
// SVG figures and CSS, no scripts, fonts or anything else fetched, so it
// can be mailed, archived or printed as is.
package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"strings"

	"github.com/gait-dev/gait/internal/atomicfile"
)

// Page is one report, built top to bottom.
type Page struct {
	title   string
	blocks  []block
	figures int
}

// block is one element of the page; Kind selects the template branch.
type block struct {
	Kind    string
	Text    string
	Header  []string
	Rows    [][]string
	Numeric []bool // per column: right-aligned
	Number  int
	SVG     template.HTML
}

// NewPage starts a report; title is its <title> and top heading.
func NewPage(title string) *Page {
	return &Page{title: title}
}

// Heading starts a section.
func (p *Page) Heading(text string) {
	p.blocks = append(p.blocks, block{Kind: "h2", Text: text})
}

// Paragraph adds text; line breaks in it are kept.
func (p *Page) Paragraph(text string) {
	p.blocks = append(p.blocks, block{Kind: "p", Text: text})
}

// Note adds a highlighted callout, for verdicts and warnings.
func (p *Page) Note(text string) {
	p.blocks = append(p.blocks, block{Kind: "note", Text: text})
}

// Pre adds preformatted text, such as a command or a terminal table.
func (p *Page) Pre(text string) {
	p.blocks = append(p.blocks, block{Kind: "pre", Text: text})
}

// Table adds a table. Short rows are padded; columns whose cells all start
// like a number ("12", "-3.5", "1.2ms", "95%") are right-aligned.
func (p *Page) Table(header []string, rows [][]string) {
	cols := len(header)
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	pad := func(r []string) []string {
		out := make([]string, cols)
		copy(out, r)
		return out
	}
	b := block{Kind: "table", Rows: make([][]string, len(rows)), Numeric: make([]bool, cols)}
	if len(header) > 0 {
		b.Header = pad(header)
	}
	for i, r := range rows {
		b.Rows[i] = pad(r)
	}
	for c := range cols {
		b.Numeric[c] = numericColumn(b.Rows, c)
	}
	p.blocks = append(p.blocks, b)
}

var numberLike = regexp.MustCompile(`^[-+]?(\d|\.\d)`)

func numericColumn(rows [][]string, c int) bool {
	seen := false
	for _, r := range rows {
		cell := strings.TrimSpace(r[c])
		if cell == "" || cell == "-" || cell == "–" {
			continue
		}
		if !numberLike.MatchString(cell) {
			return false
		}
		seen = true
	}
	return seen
}

// Figure adds chart c as the next numbered figure. A nil chart shows
// "no data".
func (p *Page) Figure(caption string, c Chart) {
	p.figures++
	svg := emptySVG("")
	if c != nil {
		svg = c.SVG()
	}
	// The charts escape every text they draw; c.SVG() is trusted markup.
	p.blocks = append(p.blocks, block{Kind: "figure", Text: caption, Number: p.figures, SVG: template.HTML(svg)})
}

// WriteTo writes the whole HTML document.
func (p *Page) WriteTo(w io.Writer) (int64, error) {
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, struct {
		Title  string
		Blocks []block
	}{p.title, p.blocks}); err != nil {
		return 0, fmt.Errorf("render report %q: %w", p.title, err)
	}
	n, err := w.Write(buf.Bytes())
	return int64(n), err
}

// WriteFile writes the document to path atomically: path is either the
// whole report or untouched.
func (p *Page) WriteFile(path string) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		if _, err := p.WriteTo(w); err != nil {
			return fmt.Errorf("write report %s: %w", path, err)
		}
		return nil
	})
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="generator" content="gait">
<title>{{.Title}}</title>
<style>
:root { color-scheme: light; }
body { margin: 0; background: #fff; color: #222;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 900px; margin: 0 auto; padding: 24px 20px 48px; }
h1 { font-size: 26px; line-height: 1.25; margin: 8px 0 20px; padding-bottom: 10px; border-bottom: 2px solid #222; }
h2 { font-size: 19px; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 1px solid #ddd; }
p { margin: 10px 0; white-space: pre-line; }
.note { margin: 14px 0; padding: 10px 14px; background: #fff8e6; border-left: 4px solid #E69F00; white-space: pre-line; }
pre { margin: 12px 0; padding: 10px 12px; background: #f6f6f6; border: 1px solid #e4e4e4; overflow-x: auto;
  font: 13px/1.4 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
/* A table wider than the text may reach to the window's right edge (the
   suite's Table 1 has ten columns); wider still, it scrolls. */
.table { overflow-x: auto; margin: 12px 0; width: max-content;
  max-width: min(calc(50vw + 430px), calc(100vw - 40px)); }
table { border-collapse: collapse; font-size: 14px; font-variant-numeric: tabular-nums; }
th, td { padding: 4px 10px; text-align: left; vertical-align: top; }
th { border-bottom: 2px solid #444; font-weight: 600; white-space: nowrap; }
td { border-bottom: 1px solid #e6e6e6; }
tbody tr:nth-child(even) td { background: #fafafa; }
.num { text-align: right; white-space: nowrap; }
figure { margin: 20px 0 28px; }
figure svg { display: block; width: 100%; max-width: 860px; height: auto; }
figcaption { margin-top: 6px; font-size: 14px; color: #444; }
figcaption b { color: #222; }
footer { max-width: 900px; margin: 0 auto; padding: 0 20px 24px; font-size: 12px; color: #888; }
@media print {
  body { font-size: 11pt; }
  main { max-width: none; padding: 0; }
  h2 { break-after: avoid; }
  figure, .note, tr { break-inside: avoid; }
  tbody tr:nth-child(even) td { background: none; }
  footer { display: none; }
}
</style>
</head>
<body>
<main>
<h1>{{.Title}}</h1>
{{range .Blocks}}{{if eq .Kind "h2"}}<h2>{{.Text}}</h2>
{{else if eq .Kind "p"}}<p>{{.Text}}</p>
{{else if eq .Kind "note"}}<div class="note" role="note">{{.Text}}</div>
{{else if eq .Kind "pre"}}<pre>{{.Text}}</pre>
{{else if eq .Kind "table"}}{{$num := .Numeric}}<div class="table"><table>
{{if .Header}}<thead><tr>{{range $i, $h := .Header}}<th{{if index $num $i}} class="num"{{end}}>{{$h}}</th>{{end}}</tr></thead>
{{end}}<tbody>
{{range .Rows}}<tr>{{range $i, $c := .}}<td{{if index $num $i}} class="num"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</tbody></table></div>
{{else if eq .Kind "figure"}}<figure id="figure-{{.Number}}">
{{.SVG}}
<figcaption><b>Figure {{.Number}}.</b> {{.Text}}</figcaption>
</figure>
{{end}}{{end}}</main>
<footer>Generated by gait. This file is self-contained: it loads nothing from the network.</footer>
</body>
</html>
`))

package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func render(t *testing.T, p *Page) string {
	t.Helper()
	var buf bytes.Buffer
	n, err := p.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Errorf("WriteTo returned %d, wrote %d bytes", n, buf.Len())
	}
	return buf.String()
}

func TestPageEscapesEverything(t *testing.T) {
	const evil = `<script>alert(1)</script>`
	p := NewPage(evil)
	p.Heading(evil)
	p.Paragraph(evil)
	p.Note(evil)
	p.Pre(evil)
	p.Table([]string{evil}, [][]string{{evil}})
	p.Figure(evil, LineChart{Title: evil, Series: []Series{{Name: evil, X: []float64{1, 2}, Y: []float64{1, 2}}}})
	html := render(t, p)
	if strings.Contains(html, "<script") {
		t.Errorf("unescaped markup in the page:\n%s", html)
	}
	if n := strings.Count(html, "&lt;script&gt;"); n < 9 {
		t.Errorf("escaped text appears %d times, want at least 9 (page, blocks, chart)", n)
	}
}

func TestPageIsSelfContained(t *testing.T) {
	p := NewPage("r")
	p.Figure("f", ScatterChart{Series: []Series{{X: []float64{1}, Y: []float64{1}}}})
	html := render(t, p)
	for _, want := range []string{"<!DOCTYPE html>", `<meta charset="utf-8">`, "default-src 'none'", "@media print", "<svg"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	h := strings.ReplaceAll(html, `xmlns="http://www.w3.org/2000/svg"`, "")
	for _, bad := range []string{"<script", "<link", "src=", "http:", "https:", "@import", "url(http"} {
		if strings.Contains(h, bad) {
			t.Errorf("page refers outside itself: contains %q", bad)
		}
	}
}

func TestFiguresAreNumbered(t *testing.T) {
	p := NewPage("r")
	p.Figure("first", LineChart{})
	p.Paragraph("between")
	p.Figure("second", nil)
	html := render(t, p)
	for _, want := range []string{`<figure id="figure-1">`, "<b>Figure 1.</b> first", `<figure id="figure-2">`, "<b>Figure 2.</b> second", ">no data<"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestTableAlignsNumbersAndPadsRows(t *testing.T) {
	p := NewPage("r")
	p.Table([]string{"config", "p99", "share"}, [][]string{
		{"clients=1", "1.2ms", "95%"},
		{"clients=8", "-"},
		{"8 clients", "12ms", "n/a"},
	})
	html := render(t, p)
	for _, want := range []string{
		`<th>config</th><th class="num">p99</th><th>share</th>`,
		`<tr><td>clients=8</td><td class="num">-</td><td></td></tr>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("table lacks %q:\n%s", want, html)
		}
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	if err := NewPage("r").WriteFile(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), "<h1>r</h1>") {
		t.Fatalf("report not written: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files left in the directory, want only the report", len(entries))
	}
	missing := filepath.Join(dir, "no", "such", "report.html")
	err = NewPage("r").WriteFile(missing)
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("writing into a missing directory: error %v, want one naming %s", err, missing)
	}
}

package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDocLinks: every relative link in README.md and docs/ names a file
// that exists and, with #anchor, a heading of that page, as GitHub names
// headings (a bold paragraph is no anchor, which is how seven links had
// come to lead nowhere).
func TestDocLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	results, _ := filepath.Glob(filepath.Join(root, "docs", "results", "*.md"))
	pages = append(append(pages, results...), filepath.Join(root, "README.md"))
	anchors := map[string]map[string]bool{}
	link := regexp.MustCompile(`\]\(([^)#\s]*)(?:#([^)\s]+))?\)`)
	for _, page := range pages {
		lines, err := proseLines(page)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range lines {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target, anchor := m[1], m[2]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				where := filepath.Join(filepath.Dir(page), target)
				if target == "" {
					where = page
				}
				if _, err := os.Stat(where); err != nil {
					t.Errorf("%s:%d: link to %s: no such file", page, n+1, target)
					continue
				}
				if anchor == "" || !strings.HasSuffix(where, ".md") {
					continue
				}
				if anchors[where] == nil {
					if anchors[where], err = headingAnchors(where); err != nil {
						t.Fatal(err)
					}
				}
				if !anchors[where][anchor] {
					t.Errorf("%s:%d: link to %s#%s: no such heading", page, n+1, target, anchor)
				}
			}
		}
	}
}

// proseLines are a page's lines, with those inside ``` fences blanked
// (a shell comment there is neither a heading nor a link).
func proseLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	fenced := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			line = ""
		}
		if fenced {
			line = ""
		}
		lines = append(lines, line)
	}
	return lines, sc.Err()
}

// headingAnchors are the anchors GitHub gives a page's headings: lower
// case, punctuation dropped, spaces as hyphens, a repeat numbered.
func headingAnchors(path string) (map[string]bool, error) {
	lines, err := proseLines(path)
	if err != nil {
		return nil, err
	}
	drop := regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
	seen := map[string]int{}
	out := map[string]bool{}
	for _, line := range lines {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		a := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#"))), ""), " ", "-")
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out, nil
}

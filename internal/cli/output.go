package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/gait-dev/gait/internal/atomicfile"
	"github.com/gait-dev/gait/internal/report"
	"github.com/spf13/pflag"
)

// writeOutput runs write against path, or against stdout when path is empty
// or "-". A file is written atomically, so a failure never leaves a
// half-written result.
func writeOutput(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "" || path == "-" {
		return write(stdout)
	}
	return atomicfile.Write(path, write)
}

// ending is the one way a command ends: the HTML report --html asks for
// (written first, and atomically, so a failure leaves no half report), then
// text or JSON on standard output as --format says. --html - sends the
// report to standard output in place of the text or JSON.
type ending struct {
	verb   string // names the command in its errors ("analyze"), or ""
	format string
	html   string
}

// flags registers --format, and --html unless htmlUsage is "".
func (e *ending) flags(fs *pflag.FlagSet, formatUsage, htmlUsage string) {
	fs.StringVar(&e.format, "format", "text", formatUsage)
	if htmlUsage != "" {
		fs.StringVar(&e.html, "html", "", htmlUsage)
	}
}

// check validates the flags; a command calls it before its work.
func (e *ending) check() error {
	prefix := ""
	if e.verb != "" {
		prefix = e.verb + ": "
	}
	if e.format != "text" && e.format != "json" {
		return fmt.Errorf("%s--format %q: want text or json", prefix, e.format)
	}
	if e.html == "-" && e.format == "json" {
		return fmt.Errorf("%s--html -: the report would share standard output with --format json; give --html a file", prefix)
	}
	return nil
}

// result is what a command shows, each form written only when asked for.
type result struct {
	text func(io.Writer) error
	json func(io.Writer) error
	html func(io.Writer) error // nil: the command has no report
}

// finish writes r as the flags ask.
func (e *ending) finish(stdout io.Writer, r result) error {
	if e.html != "" && r.html != nil {
		if err := writeOutput(e.html, stdout, r.html); err != nil {
			return err
		}
		if e.html == "-" {
			return nil
		}
	}
	if e.format == "json" {
		return r.json(stdout)
	}
	return r.text(stdout)
}

// jsonOf writes v as indented JSON.
func jsonOf(v any) func(io.Writer) error {
	return func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
}

// pageOf builds a report only when it is written.
func pageOf(build func() *report.Page) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := build().WriteTo(w)
		return err
	}
}

package bench

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gait-dev/gait/internal/clip"
	"gopkg.in/yaml.v3"
)

// FieldError is a scenario mistake: where it is (file, line, field path) and
// what is wrong.
type FieldError struct {
	File string
	Line int
	Path string // like inject[0].factors[1]; empty for the whole document
	Msg  string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Path, e.Msg)
}

// doc walks a parsed scenario, turning each mistake into a FieldError.
type doc struct{ file string }

func (d doc) errorf(n *yaml.Node, path, format string, args ...any) error {
	return &FieldError{File: d.file, Line: n.Line, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// object is a YAML mapping whose keys were checked against the known ones.
type object struct {
	doc
	path   string
	node   *yaml.Node
	values map[string]*yaml.Node
}

// mapping checks that n is a mapping with only known keys, each once.
func (d doc) mapping(n *yaml.Node, path string, known ...string) (object, error) {
	o := object{doc: d, path: path, node: n, values: map[string]*yaml.Node{}}
	if n.Kind != yaml.MappingNode {
		return o, d.errorf(n, path, "want a mapping of %s, got %s", strings.Join(known, ", "), describe(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kp := join(path, fieldName(k.Value))
		if k.Kind != yaml.ScalarNode {
			return o, d.errorf(k, path, "keys must be plain names, got %s", describe(k))
		}
		if !slices.Contains(known, k.Value) {
			return o, d.errorf(k, kp, "unknown field (known here: %s)", strings.Join(known, ", "))
		}
		if _, dup := o.values[k.Value]; dup {
			return o, d.errorf(k, kp, "given twice")
		}
		o.values[k.Value] = v
	}
	return o, nil
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// fieldName writes a key for an error message: as it is when it is a plain
// name, else quoted (a key may hold a line break, or be a megabyte long).
func fieldName(key string) string {
	if plainName.MatchString(key) {
		return key
	}
	return clip.Quote(key)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// describe names what a node holds, for error messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return clip.Quote(n.Value)
	}
	return "an empty document"
}

// has reports whether key was given.
func (o object) has(key string) bool { _, ok := o.values[key]; return ok }

// scalar returns the text of key, or def when it is absent; the node is
// returned for error positions (the mapping's own when absent).
func (o object) scalar(key string) (string, *yaml.Node, bool, error) {
	n, ok := o.values[key]
	if !ok {
		return "", o.node, false, nil
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", n, true, o.errorf(n, join(o.path, key), "want a single value, got %s", describe(n))
	}
	if limit := maxValue(key); len(n.Value) > limit {
		return "", n, true, o.errorf(n, join(o.path, key), "%s is longer than any value this field takes (at most %d bytes)",
			clip.Quote(n.Value), limit)
	}
	return n.Value, n, true, nil
}

// maxValue bounds the text of a field, so that the errors quoting it stay
// short: a description and the paper's differs are prose, every other
// value a word or a number.
func maxValue(key string) int {
	if key == "description" || key == "differs" {
		return 4096
	}
	return 200
}

// str reads an optional string field.
func (o object) str(key, def string) (string, *yaml.Node, error) {
	s, n, ok, err := o.scalar(key)
	if !ok || err != nil {
		return def, n, err
	}
	return s, n, nil
}

// required reads a string field that must be given.
func (o object) required(key string) (string, *yaml.Node, error) {
	s, n, ok, err := o.scalar(key)
	if err != nil {
		return "", n, err
	}
	if !ok {
		return "", n, o.errorf(o.node, join(o.path, key), "missing (required)")
	}
	return s, n, nil
}

// integer reads an optional integer field that must be at least min.
func (o object) integer(key string, def, min int) (int, error) {
	s, n, ok, err := o.scalar(key)
	if !ok || err != nil {
		return def, err
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < min {
		return 0, o.errorf(n, join(o.path, key), "%s is not a whole number of at least %d", clip.Quote(s), min)
	}
	return v, nil
}

// boolean reads an optional true/false field.
func (o object) boolean(key string, def bool) (bool, error) {
	s, n, ok, err := o.scalar(key)
	if !ok || err != nil {
		return def, err
	}
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, o.errorf(n, join(o.path, key), "%s is not true or false", clip.Quote(s))
}

// parsed reads an optional field through parse, which says what is wrong.
func parsed[T any](o object, key string, def T, parse func(string) (T, error)) (T, error) {
	s, n, ok, err := o.scalar(key)
	if !ok || err != nil {
		return def, err
	}
	v, err := parse(s)
	if err != nil {
		return v, o.errorf(n, join(o.path, key), "%v", err)
	}
	return v, nil
}

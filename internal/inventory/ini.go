package inventory

import (
	"bytes"
	"fmt"
	"strings"
)

// group is an Ansible group as read: its hosts (in order), variables,
// children, and the line that first named it.
type group struct {
	name     string
	line     int
	hosts    []string
	vars     vars
	children []string
}

// groups collects an inventory's groups and hosts in file order, and
// merges their variables by Ansible's precedence.
type groups struct {
	file      string
	byName    map[string]*group
	order     []string
	hostVars  map[string]vars
	hostLine  map[string]int
	hostOrder []string
}

func newGroups(file string) *groups {
	g := &groups{file: file, byName: map[string]*group{}, hostVars: map[string]vars{}, hostLine: map[string]int{}}
	g.get("all", 0)
	return g
}

func (g *groups) get(name string, line int) *group {
	if gr, ok := g.byName[name]; ok {
		return gr
	}
	gr := &group{name: name, line: line, vars: vars{}}
	g.byName[name] = gr
	g.order = append(g.order, name)
	return gr
}

func (g *groups) addHost(gr *group, name string, line int, v vars) error {
	if len(g.hostOrder) >= MaxMachines && g.hostVars[name] == nil {
		return &Error{File: g.file, Line: line, Msg: fmt.Sprintf("more than %d machines", MaxMachines)}
	}
	if _, ok := g.hostVars[name]; !ok {
		g.hostVars[name] = vars{}
		g.hostLine[name] = line
		g.hostOrder = append(g.hostOrder, name)
	}
	for k, val := range v {
		g.hostVars[name][k] = val
	}
	gr.hosts = append(gr.hosts, name)
	return nil
}

// machines merges each host's variables: the group "all" first, then
// groups from parents to children (a child's variables win, as in
// Ansible), then the host's own.
func (g *groups) machines() ([]Machine, error) {
	depth := map[string]int{}
	var walk func(name string, d int, seen map[string]bool) error
	walk = func(name string, d int, seen map[string]bool) error {
		if seen[name] {
			return &Error{File: g.file, Line: g.byName[name].line, Msg: fmt.Sprintf("group %s is its own descendant", quote(name))}
		}
		if d <= depth[name] && name != "all" {
			return nil
		}
		depth[name] = d
		seen[name] = true
		defer delete(seen, name)
		for _, c := range g.byName[name].children {
			if err := walk(c, d+1, seen); err != nil {
				return err
			}
		}
		return nil
	}
	for _, name := range g.order {
		if name != "all" && depth[name] == 0 {
			if err := walk(name, 1, map[string]bool{}); err != nil {
				return nil, err
			}
		}
	}
	// The groups each host is in, directly or through children.
	member := map[string]map[string]bool{}
	var mark func(host, name string, seen map[string]bool)
	mark = func(host, name string, seen map[string]bool) {
		if seen[name] {
			return
		}
		seen[name] = true
		member[host][name] = true
		for _, parent := range g.order {
			for _, c := range g.byName[parent].children {
				if c == name {
					mark(host, parent, seen)
				}
			}
		}
	}
	for _, name := range g.order {
		for _, h := range g.byName[name].hosts {
			if member[h] == nil {
				member[h] = map[string]bool{}
			}
			mark(h, name, map[string]bool{})
		}
	}
	var out []Machine
	for _, h := range g.hostOrder {
		merged := vars{}
		for k, v := range g.byName["all"].vars {
			merged[k] = v
		}
		for d := 1; ; d++ {
			any := false
			for _, name := range g.order {
				if depth[name] != d {
					continue
				}
				any = true
				if member[h][name] {
					for k, v := range g.byName[name].vars {
						merged[k] = v
					}
				}
			}
			if !any {
				break
			}
		}
		for k, v := range g.hostVars[h] {
			merged[k] = v
		}
		m, err := machine(g.file, g.hostLine[h], h, merged)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// parseINI reads Ansible's INI inventory: host lines (a pattern, then
// key=value variables), [group], [group:vars] and [group:children].
func parseINI(file string, data []byte) ([]Machine, error) {
	g := newGroups(file)
	section, kind := g.get("ungrouped", 0), "hosts"
	for i, raw := range bytes.Split(data, []byte("\n")) {
		line := i + 1
		s := strings.TrimSpace(string(raw))
		if s == "" || s[0] == '#' || s[0] == ';' {
			continue
		}
		if s[0] == '[' {
			if !strings.HasSuffix(s, "]") {
				return nil, &Error{File: file, Line: line, Msg: fmt.Sprintf("section %s has no closing ]", quote(s))}
			}
			name, suffix, _ := strings.Cut(s[1:len(s)-1], ":")
			if name == "" || strings.ContainsAny(name, " \t") {
				return nil, &Error{File: file, Line: line, Msg: fmt.Sprintf("section %s: a group name without spaces", quote(s))}
			}
			switch suffix {
			case "", "vars", "children":
			default:
				return nil, &Error{File: file, Line: line, Msg: fmt.Sprintf("section %s: want [group], [group:vars] or [group:children]", quote(s))}
			}
			section, kind = g.get(name, line), map[string]string{"": "hosts", "vars": "vars", "children": "children"}[suffix]
			continue
		}
		fields, err := splitFields(s)
		if err != nil {
			return nil, &Error{File: file, Line: line, Msg: err.Error()}
		}
		switch kind {
		case "vars":
			k, v, ok := strings.Cut(s, "=")
			if !ok {
				return nil, &Error{File: file, Line: line, Msg: fmt.Sprintf("in [%s:vars], want key=value, not %s", section.name, quote(s))}
			}
			val, err := splitFields(strings.TrimSpace(v))
			if err != nil || len(val) > 1 {
				return nil, &Error{File: file, Line: line, Msg: fmt.Sprintf("value of %s: one word or one quoted string", quote(strings.TrimSpace(k)))}
			}
			section.vars[strings.TrimSpace(k)] = strings.Join(val, "")
		case "children":
			if len(fields) != 1 {
				return nil, &Error{File: file, Line: line, Msg: fmt.Sprintf("in [%s:children], want one group name, not %s", section.name, quote(s))}
			}
			g.get(fields[0], line)
			section.children = append(section.children, fields[0])
		default:
			v := vars{}
			for _, f := range fields[1:] {
				k, val, ok := strings.Cut(f, "=")
				if !ok || k == "" {
					return nil, &Error{File: file, Line: line, Msg: fmt.Sprintf("host %s: want key=value, not %s", quote(fields[0]), quote(f))}
				}
				v[k] = val
			}
			names, err := expand(file, line, fields[0])
			if err != nil {
				return nil, err
			}
			for _, n := range names {
				if err := g.addHost(section, n, line, v); err != nil {
					return nil, err
				}
			}
		}
	}
	return g.machines()
}

// splitFields splits a line at blanks; single or double quotes keep
// blanks inside a field and are removed.
func splitFields(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	var q byte
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0 && c == q:
			q = 0
		case q != 0:
			cur.WriteByte(c)
		case c == '"' || c == '\'':
			q, in = c, true
		case c == ' ' || c == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		case c == '#' && !in:
			return out, nil // a comment to the end of the line
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if q != 0 {
		return nil, fmt.Errorf("unclosed %c quote in %s", q, quote(s))
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}

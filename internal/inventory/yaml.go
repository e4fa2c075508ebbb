package inventory

import (
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"
)

// parseYAML reads gait's own list (a sequence of machines, or one under
// "machines:") or Ansible's YAML inventory (groups of hosts, vars and
// children).
func parseYAML(file string, data []byte) ([]Machine, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return nil, &Error{File: file, Msg: err.Error()}
		}
		return nil, &Error{File: file, Msg: "not YAML or an INI inventory: " + err.Error()}
	}
	if len(doc.Content) == 0 {
		return nil, &Error{File: file, Msg: "names no machine"}
	}
	root := doc.Content[0]
	if root.Kind == yaml.SequenceNode {
		return gaitList(file, root)
	}
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: root.Line, Msg: "want a list of machines, machines: [...], or Ansible groups"}
	}
	if len(root.Content) == 2 && root.Content[0].Value == "machines" {
		return gaitList(file, root.Content[1])
	}
	g := newGroups(file)
	for i := 0; i+1 < len(root.Content); i += 2 {
		if err := g.yamlGroup(root.Content[i], root.Content[i+1], 0); err != nil {
			return nil, err
		}
	}
	return g.machines()
}

// gaitMachine is one entry of gait's own list.
type gaitMachine struct {
	Name    string `yaml:"name"`
	Address string `yaml:"address"`
	User    string `yaml:"user"`
	Port    int    `yaml:"port"`
	Key     string `yaml:"key"`
	Root    string `yaml:"root"`
	Cgroup  string `yaml:"cgroup"`
}

func gaitList(file string, seq *yaml.Node) ([]Machine, error) {
	if seq.Kind != yaml.SequenceNode {
		return nil, &Error{File: file, Line: seq.Line, Msg: "machines: want a list"}
	}
	if len(seq.Content) > MaxMachines {
		return nil, &Error{File: file, Line: seq.Line, Msg: fmt.Sprintf("more than %d machines", MaxMachines)}
	}
	var out []Machine
	seen := map[string]int{}
	for _, n := range seq.Content {
		if n.Kind == yaml.MappingNode {
			if err := knownKeys(file, n, "name", "address", "user", "port", "key", "root", "cgroup"); err != nil {
				return nil, err
			}
		}
		var gm gaitMachine
		if err := n.Decode(&gm); err != nil {
			return nil, &Error{File: file, Line: n.Line, Msg: "machine: " + err.Error()}
		}
		if gm.Name == "" {
			gm.Name = gm.Address
		}
		if at, dup := seen[gm.Name]; dup {
			return nil, &Error{File: file, Line: n.Line, Msg: fmt.Sprintf("machine %s named twice (first on line %d)", quote(gm.Name), at)}
		}
		seen[gm.Name] = n.Line
		if gm.Port < 0 || gm.Port > 65535 {
			return nil, &Error{File: file, Line: n.Line, Msg: fmt.Sprintf("machine %s: port %d is not between 1 and 65535", quote(gm.Name), gm.Port)}
		}
		out = append(out, Machine{Name: gm.Name, Addr: gm.Address, User: gm.User, Port: gm.Port, Key: gm.Key, Root: gm.Root, Cgroup: gm.Cgroup, Line: n.Line})
	}
	return out, nil
}

func knownKeys(file string, n *yaml.Node, keys ...string) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		ok := false
		for _, want := range keys {
			ok = ok || k.Value == want
		}
		if !ok {
			return &Error{File: file, Line: k.Line, Msg: fmt.Sprintf("unknown field %s (want one of %v)", quote(k.Value), keys)}
		}
	}
	return nil
}

// maxDepth bounds how deeply Ansible groups may nest in YAML.
const maxDepth = 32

// yamlGroup reads one Ansible group: hosts, vars and children.
func (g *groups) yamlGroup(key, body *yaml.Node, depth int) error {
	if depth > maxDepth {
		return &Error{File: g.file, Line: key.Line, Msg: fmt.Sprintf("groups nest more than %d deep", maxDepth)}
	}
	gr := g.get(key.Value, key.Line)
	if body.Kind == yaml.ScalarNode && body.Tag == "!!null" {
		return nil
	}
	if body.Kind != yaml.MappingNode {
		return &Error{File: g.file, Line: body.Line, Msg: fmt.Sprintf("group %s: want hosts, vars or children", quote(key.Value))}
	}
	if err := knownKeys(g.file, body, "hosts", "vars", "children"); err != nil {
		return err
	}
	for i := 0; i+1 < len(body.Content); i += 2 {
		k, v := body.Content[i], body.Content[i+1]
		switch k.Value {
		case "vars":
			vs, err := g.yamlVars(v, "vars of group "+quote(key.Value))
			if err != nil {
				return err
			}
			for name, val := range vs {
				gr.vars[name] = val
			}
		case "hosts":
			if err := g.yamlHosts(gr, v); err != nil {
				return err
			}
		case "children":
			if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
				continue
			}
			if v.Kind != yaml.MappingNode {
				return &Error{File: g.file, Line: v.Line, Msg: fmt.Sprintf("children of group %s: want a mapping of groups", quote(key.Value))}
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				gr.children = append(gr.children, v.Content[j].Value)
				if err := g.yamlGroup(v.Content[j], v.Content[j+1], depth+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (g *groups) yamlHosts(gr *group, n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return &Error{File: g.file, Line: n.Line, Msg: fmt.Sprintf("hosts of group %s: want a mapping of host names", quote(gr.name))}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		v, err := g.yamlVars(n.Content[i+1], "host "+quote(k.Value))
		if err != nil {
			return err
		}
		names, err := expand(g.file, k.Line, k.Value)
		if err != nil {
			return err
		}
		for _, name := range names {
			if err := g.addHost(gr, name, k.Line, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// yamlVars reads a mapping of variables; values other than scalars
// (lists, mappings) are Ansible's and kept out, as gait reads none.
func (g *groups) yamlVars(n *yaml.Node, what string) (vars, error) {
	v := vars{}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return v, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, &Error{File: g.file, Line: n.Line, Msg: what + ": want a mapping of variables"}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if val.Kind != yaml.ScalarNode {
			continue
		}
		if val.Tag == "!!null" {
			v[k.Value] = ""
			continue
		}
		v[k.Value] = val.Value
	}
	return v, nil
}

package redis

import (
	"bufio"
	"bytes"
	"strings"

	"github.com/gait-dev/gait/internal/rediscmd"
	"github.com/gait-dev/gait/internal/resp"
)

// commandSlot answers COMMAND from the local redis-server, keeping only
// the commands gait serves: a client library that reads COMMAND to learn
// what the server takes must not be told of commands gait refuses.
// COMMAND, COMMAND INFO, LIST, DOCS and COUNT are filtered; GETKEYS and
// the rest are redis's answer as it is.
func (a *agent) commandSlot(st *clientState, args [][]byte) slot {
	md := st.mode()
	sub := ""
	if len(args) > 1 {
		sub = strings.ToUpper(string(args[1]))
	}
	if sub == "COUNT" && len(args) == 2 {
		// The commands redis knows that gait serves.
		s := a.localSlot(md, resp.AppendCommand(nil, []byte("COMMAND"), []byte("LIST")))
		fill := s.fill
		s.fill = func() []byte {
			raw := filterCommands(fill(), "LIST", md.proto)
			_, v, err := resp.ReadReply(bufio.NewReader(bytes.NewReader(raw)))
			if err != nil || v.Kind == '-' {
				return raw
			}
			n := 0
			for _, e := range v.Arr {
				if !bytes.Contains(e.Str, []byte("|")) { // COUNT counts commands, not sub-commands
					n++
				}
			}
			return resp.Int(n)
		}
		return a.ownWritesFirst(st, s)
	}
	s := a.ownWritesFirst(st, a.localSlot(md, resp.AppendCommand(nil, args...)))
	fill := s.fill
	switch sub {
	case "", "INFO", "LIST", "DOCS":
		s.fill = func() []byte { return filterCommands(fill(), sub, md.proto) }
	}
	return s
}

// filterCommands drops the commands gait does not serve from a reply to
// COMMAND [sub] (INFO, LIST or DOCS).
func filterCommands(raw []byte, sub string, proto int) []byte {
	_, v, err := resp.ReadReply(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil || v.Kind == '-' || v.Kind == '!' {
		return raw
	}
	switch sub {
	case "", "INFO":
		// An array of entries (name first), or nulls for unknown names.
		for i, e := range v.Arr {
			if !e.Null && len(e.Arr) > 0 && !rediscmd.Served(string(e.Arr[0].Str)) {
				if sub == "" {
					v.Arr[i] = resp.Value{Kind: 0} // dropped below
				} else {
					v.Arr[i] = nullValue(proto)
				}
			}
		}
		if sub == "" {
			v.Arr = dropZero(v.Arr)
		}
	case "LIST":
		for i, e := range v.Arr {
			if !rediscmd.Served(string(e.Str)) {
				v.Arr[i] = resp.Value{Kind: 0}
			}
		}
		v.Arr = dropZero(v.Arr)
	case "DOCS":
		// Name and docs alternate (a map in RESP3, a flat array in RESP2).
		var kept []resp.Value
		for i := 0; i+1 < len(v.Arr); i += 2 {
			if rediscmd.Served(string(v.Arr[i].Str)) {
				kept = append(kept, v.Arr[i], v.Arr[i+1])
			}
		}
		v.Arr = kept
	}
	return appendValue(nil, v)
}

func nullValue(proto int) resp.Value {
	if proto == 3 {
		return resp.Value{Kind: '_', Null: true}
	}
	return resp.Value{Kind: '*', Null: true}
}

func dropZero(vs []resp.Value) []resp.Value {
	out := vs[:0]
	for _, v := range vs {
		if v.Kind != 0 {
			out = append(out, v)
		}
	}
	return out
}

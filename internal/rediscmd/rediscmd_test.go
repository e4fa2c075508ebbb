package rediscmd

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func words(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

func TestRewrite(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	for in, want := range map[string]string{
		"SET k v EX 10":                "SET k v PXAT 1010000",
		"set k v px 5 NX":              "set k v PXAT 1000005 NX",
		"SET k v GET EX 1":             "SET k v GET PXAT 1001000",
		"SET k v EXAT 99":              "SET k v EXAT 99",
		"SET k v EX -1":                "SET k v EX -1",
		"SET k v EX 0":                 "SET k v EX 0",
		"SET k v EX abc":               "SET k v EX abc",
		"SET k v EX":                   "SET k v EX",
		"SET k v EX 99999999999999999": "SET k v EX 99999999999999999",
		"SETEX k 3 v":                  "SET k v PXAT 1003000",
		"PSETEX k 3 v":                 "SET k v PXAT 1000003",
		"SETEX k 0 v":                  "SETEX k 0 v",
		"EXPIRE k 2":                   "PEXPIREAT k 1002000",
		"EXPIRE k 2 NX":                "PEXPIREAT k 1002000 NX",
		"PEXPIRE k -5":                 "PEXPIREAT k 999995",
		"GETEX k EX 1":                 "GETEX k PXAT 1001000",
		"GETEX k PERSIST":              "GETEX k PERSIST",
		"RESTORE k 5 x":                "RESTORE k 1000005 x ABSTTL",
		"RESTORE k 0 x REPLACE":        "RESTORE k 0 x REPLACE",
		"RESTORE k 5 x ABSTTL":         "RESTORE k 5 x ABSTTL",
		"XADD s 5-1 f v":               "XADD s 5-1 f v",
		"SPOP s -1":                    "SPOP s -1",
		"SPOP s 1 2":                   "SPOP s 1 2",
	} {
		args := words(in)
		_, sp, msg := Lookup(args)
		if msg != "" {
			t.Fatalf("%s: %s", in, msg)
		}
		out, changed := sp.Rewrite(args, now)
		got := string(bytes.Join(out, []byte(" ")))
		if got != want {
			t.Errorf("%s: rewritten to %q, want %q", in, got, want)
		}
		// A rewrite says whether it changed the command, and leaves args
		// as they were.
		if changed != (want != in) || string(bytes.Join(args, []byte(" "))) != in {
			t.Errorf("%s: changed %v, args now %q", in, changed, args)
		}
	}
}

// TestXaddRewrite: XADD with "*" becomes xaddScript with the proposer's
// millisecond and the position of the "*" among the script's arguments.
func TestXaddRewrite(t *testing.T) {
	for in, want := range map[string]string{
		"XADD s * f v":                            "s 1000000 3 * f v",
		"XADD s MAXLEN ~ 10 * f v":                "s 1000000 6 MAXLEN ~ 10 * f v",
		"XADD s NOMKSTREAM MINID 5 LIMIT 3 * f v": "s 1000000 8 NOMKSTREAM MINID 5 LIMIT 3 * f v",
	} {
		args := words(in)
		_, sp, _ := Lookup(args)
		out, _ := sp.Rewrite(args, time.UnixMilli(1_000_000))
		if string(out[0]) != "EVAL" || string(out[1]) != xaddScript || string(out[2]) != "1" {
			t.Fatalf("%s: rewritten to %q", in, out[:1])
		}
		if got := string(bytes.Join(out[3:], []byte(" "))); got != want {
			t.Errorf("%s: script arguments %q, want %q", in, got, want)
		}
	}
	long := words("XADD s * f v")
	for len(long) <= xaddScriptArgs {
		long = append(long, []byte("f"), []byte("v"))
	}
	if out, _ := rewriteXadd(long, time.UnixMilli(7)); string(out[0]) != "XADD" || string(out[2]) != "7-*" {
		t.Errorf("an XADD of %d arguments: rewritten to %q %q, want XADD s 7-*", len(long), out[0], out[2])
	}
}

// TestSpopRewrite: SPOP becomes a script with a seed in 1..2^31-2 and the
// count, so that every replica pops the same members.
func TestSpopRewrite(t *testing.T) {
	for _, in := range []string{"SPOP s", "spop s 3"} {
		args := words(in)
		_, sp, _ := Lookup(args)
		out, _ := sp.Rewrite(args, time.Unix(0, 1<<40))
		if string(out[0]) != "EVAL" || string(out[2]) != "1" || string(out[3]) != "s" || len(out) != 3+len(args) {
			t.Fatalf("%s: rewritten to %q", in, out[:1])
		}
		if seed, err := strconv.ParseInt(string(out[4]), 10, 64); err != nil || seed < 1 || seed >= 1<<31-1 {
			t.Errorf("%s: seed %q", in, out[4])
		}
	}
}

func TestLookup(t *testing.T) {
	for in, want := range map[string]string{
		"get k":             "",
		"GET":               "ERR wrong number of arguments for 'get' command",
		"SETNX a":           "ERR wrong number of arguments for 'setnx' command",
		"SPOP s":            "",
		"BLPOP l 0":         "",
		"FOO a b":           "ERR unknown command 'FOO', with args beginning with: 'a' 'b' ",
		"CONFIG SET save x": "",
		"config rewrite":    "ERR 'CONFIG REWRITE' is not supported by gait replica: it writes",
		"SCRIPT KILL":       "",
		"config get save":   "",
		"DEBUG segfault":    "ERR 'DEBUG' is not supported by gait replica",
		"DEBUG digest":      "",
		"SUBSCRIBE c":       "",
		"MONITOR":           "ERR 'MONITOR' is not supported by gait replica",
	} {
		_, _, msg := Lookup(words(in))
		if (want == "") != (msg == "") || !strings.HasPrefix(msg, want) {
			t.Errorf("%s: %q, want %q", in, msg, want)
		}
	}
	for name, want := range map[string]bool{"get": true, "DEBUG": true, "monitor": false, "SYNC": false, "NOSUCH": false,
		"client|list": true, "config|get": true, "config|rewrite": false, "debug|digest": true, "debug|segfault": false} {
		if Served(name) != want {
			t.Errorf("Served(%s) = %v, want %v", name, !want, want)
		}
	}
	for _, name := range []string{"SCAN", "SSCAN", "HSCAN", "ZSCAN"} {
		if !table[name].Pinned {
			t.Errorf("%s not pinned to one server: its cursor would be read by another", name)
		}
	}
	for name, s := range table {
		if s.Kind == 0 || (s.Kind != Refused && s.Arity == 0) || (s.Kind == Refused && s.Reason == "") {
			t.Errorf("%s: incomplete table row %+v", name, s)
		}
	}
}

// TestDocListsCommands keeps docs/replica.md's command table in step with the code.
func TestDocListsCommands(t *testing.T) {
	doc, err := os.ReadFile("../../docs/replica.md")
	if err != nil {
		t.Fatal(err)
	}
	for kind, names := range Supported() {
		for _, name := range names {
			if !regexp.MustCompile(`\b` + name + `\b`).Match(doc) {
				t.Errorf("docs/replica.md does not list %s command %s", kind, name)
			}
		}
	}
}

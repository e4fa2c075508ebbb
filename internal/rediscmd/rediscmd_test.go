package rediscmd

import (
	"bytes"
	"os"
	"regexp"
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
	} {
		args := words(in)
		_, sp, msg := Lookup(args)
		if msg != "" {
			t.Fatalf("%s: %s", in, msg)
		}
		got := string(bytes.Join(sp.Rewrite(args, now), []byte(" ")))
		if got != want {
			t.Errorf("%s: rewritten to %q, want %q", in, got, want)
		}
	}
}

func TestLookup(t *testing.T) {
	for in, want := range map[string]string{
		"get k":             "",
		"GET":               "ERR wrong number of arguments for 'get' command",
		"SETNX a":           "ERR wrong number of arguments for 'setnx' command",
		"SPOP s":            "ERR 'SPOP' is not supported by gait replica: its result is random",
		"BLPOP l 0":         "ERR 'BLPOP' is not supported by gait replica: blocking",
		"FOO a b":           "ERR unknown command 'FOO', with args beginning with: 'a' 'b' ",
		"CONFIG SET save x": "ERR 'CONFIG SET' is not supported by gait replica",
		"config get save":   "",
		"HELLO 3":           "NOPROTO",
		"HELLO 2":           "",
	} {
		_, _, msg := Lookup(words(in))
		if (want == "") != (msg == "") || !strings.HasPrefix(msg, want) {
			t.Errorf("%s: %q, want %q", in, msg, want)
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

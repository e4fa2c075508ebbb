package replica

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

func parseAll(in string, limit int) ([][][]byte, error) {
	rd := newRequestReader(strings.NewReader(in), limit, 1024)
	var out [][][]byte
	for {
		args, err := rd.readCommand()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, args)
	}
}

func TestReadCommand(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", want: "GET k"},
		{in: "*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n", want: "PING"},
		{in: "PING\r\n\r\nECHO  a b\n", want: "PING|ECHO a b"},
		{in: "*1\r\n$0\r\n\r\n", want: ""},
		{in: "*2\r\n$3\r\nGET\r\n", want: "", err: "unexpected EOF"},
		{in: "*1\r\n$-1\r\n", err: "invalid bulk length"},
		{in: "*1\r\n$+1\r\nx\r\n", err: "invalid bulk length"},
		{in: "*2000\r\n", err: "invalid multibulk length"},
		{in: "*1\r\n$11\r\nhello world\r\n", err: "larger than the agent's limit of 10"},
		{in: "*2\r\n$5\r\nhello\r\n$6\r\nworld!\r\n", err: "larger than the agent's limit of 10"},
		{in: "*1\r\n$2\r\nhixx", err: "not terminated by CRLF"},
		{in: strings.Repeat("x", maxLine+1), err: "too big inline request"},
	} {
		cmds, err := parseAll(tc.in, 10)
		var words []string
		for _, c := range cmds {
			words = append(words, string(bytes.Join(c, []byte(" "))))
		}
		if got := strings.Join(words, "|"); got != tc.want {
			t.Errorf("%q: parsed %q, want %q", tc.in, got, tc.want)
		}
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
		}
	}
}

func TestReadReply(t *testing.T) {
	in := "*3\r\n$3\r\nabc\r\n:-7\r\n*2\r\n$-1\r\n+OK\r\n-ERR x\r\n"
	r := bufio.NewReader(strings.NewReader(in))
	raw, v, err := readReply(r)
	if err != nil || string(raw) != in[:len(in)-8] {
		t.Fatalf("raw %q, %v", raw, err)
	}
	if len(v.arr) != 3 || string(v.arr[0].str) != "abc" || v.arr[1].num != -7 || !v.arr[2].arr[0].null {
		t.Errorf("decoded %+v", v)
	}
	if _, v, err = readReply(r); err != nil || v.kind != '-' || string(v.str) != "ERR x" {
		t.Errorf("error reply %+v, %v", v, err)
	}
	for _, bad := range []string{"$5\r\nab\r\n", ":x\r\n", "?1\r\n", "+OK\n", strings.Repeat("*1\r\n", 40) + ":1\r\n"} {
		if _, _, err := readReply(bufio.NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

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
		_, sp, msg := lookup(args)
		if msg != "" {
			t.Fatalf("%s: %s", in, msg)
		}
		got := string(bytes.Join(sp.rewrite(args, now), []byte(" ")))
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
		_, _, msg := lookup(words(in))
		if (want == "") != (msg == "") || !strings.HasPrefix(msg, want) {
			t.Errorf("%s: %q, want %q", in, msg, want)
		}
	}
	for name, s := range commandTable {
		if s.kind == 0 || (s.kind != kindRefused && s.arity == 0) || (s.kind == kindRefused && s.reason == "") {
			t.Errorf("%s: incomplete table row %+v", name, s)
		}
	}
}

func TestEntry(t *testing.T) {
	e := entry{proposer: "127.0.0.1:1#ab", seq: 1 << 40, replies: 3, payload: []byte("*1\r\n$4\r\nPING\r\n")}
	got, err := decodeEntry(e.encode())
	if err != nil || got.proposer != e.proposer || got.seq != e.seq || got.replies != 3 || !bytes.Equal(got.payload, e.payload) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if got, err := decodeEntry(entry{}.encode()); err != nil || got.replies != 0 {
		t.Errorf("no-op entry: %+v, %v", got, err)
	}
	for _, bad := range [][]byte{nil, {9}, {1, 200}, {1, 5, 'a'}, {1, 0, 1, 9}} {
		if _, err := decodeEntry(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// FuzzRequest feeds arbitrary bytes to the request parser and the command
// table: neither may panic, and every parsed command gets a table answer.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "PING\r\n", "*1\r\n$-1\r\n", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n",
		"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nEX\r\n$2\r\n10\r\n", "SETEX k 1 v\r\nEXPIRE k 99999999999999999999\r\n",
		"*-5\r\n", "*1\r\n$99999999999999999999\r\n", "GETEX k PX\r\n", "\x00\xff*\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		rd := newRequestReader(bytes.NewReader(in), 1<<16, 64)
		for {
			args, err := rd.readCommand()
			if err != nil {
				return
			}
			if len(args) == 0 {
				t.Fatal("empty command returned")
			}
			_, sp, msg := lookup(args)
			if msg == "" && sp.rewrite != nil {
				if out := sp.rewrite(args, time.Now()); len(out) == 0 {
					t.Fatal("rewrite returned no command")
				}
			}
		}
	})
}

// FuzzEntry checks that decoding any bytes as a log entry fails cleanly.
func FuzzEntry(f *testing.F) {
	f.Add(entry{proposer: "a#b", seq: 3, replies: 1, payload: []byte("x")}.encode())
	f.Fuzz(func(t *testing.T, in []byte) {
		e, err := decodeEntry(in)
		if err == nil && e.replies > len(in) {
			t.Fatalf("reply count %d from %d bytes", e.replies, len(in))
		}
	})
}

// TestDocListsCommands keeps docs/replica.md's command table in step with the code.
func TestDocListsCommands(t *testing.T) {
	doc, err := os.ReadFile("../../docs/replica.md")
	if err != nil {
		t.Fatal(err)
	}
	for kind, names := range SupportedCommands() {
		for _, name := range names {
			if !regexp.MustCompile(`\b` + name + `\b`).Match(doc) {
				t.Errorf("docs/replica.md does not list %s command %s", kind, name)
			}
		}
	}
}

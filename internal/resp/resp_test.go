package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
)

func parseAll(in string, limit int) ([][][]byte, error) {
	rd := NewReader(strings.NewReader(in), limit, 1024)
	var out [][][]byte
	for {
		args, err := rd.ReadCommand()
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
		{in: strings.Repeat("x", MaxLine+1), err: "too big inline request"},
		{in: "*1\r\n$2000000000\r\n", err: "invalid bulk length"}, // over redis's 512 MB, before the agent's limit
		// Inline commands quote as redis-cli and redis-server do.
		{in: "SET \"a b\" 'c d'\r\n", want: "SET a b c d"},
		{in: "ECHO \"a\\x41\\n\" 'it\\'s'\r\n", want: "ECHO aA\n it's"},
		{in: "ECHO \"\"\r\n", want: "ECHO "},
		{in: "SET \"k v\r\n", err: "unbalanced quotes"},
		{in: "SET \"k\"v x\r\n", err: "unbalanced quotes"},
		{in: "SET 'k\r\n", err: "unbalanced quotes"},
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
	raw, v, err := ReadReply(r)
	if err != nil || string(raw) != in[:len(in)-8] {
		t.Fatalf("raw %q, %v", raw, err)
	}
	if len(v.Arr) != 3 || string(v.Arr[0].Str) != "abc" || v.Arr[1].Num != -7 || !v.Arr[2].Arr[0].Null {
		t.Errorf("decoded %+v", v)
	}
	if _, v, err = ReadReply(r); err != nil || v.Kind != '-' || string(v.Str) != "ERR x" {
		t.Errorf("error reply %+v, %v", v, err)
	}
	// HINCRBY near the int64 bound: every replica once stopped applying here.
	if _, v, err := ReadReply(bufio.NewReader(strings.NewReader(":-9223372036854775485\r\n"))); err != nil || v.Num != -9223372036854775485 {
		t.Errorf("a large negative integer reply: %+v, %v", v, err)
	}
	// What redis answers a script that returns a table holding itself.
	deep := strings.Repeat("*1\r\n", 7995) + "-ERR reached lua stack limit\r\n"
	if raw, _, err := ReadReply(bufio.NewReader(strings.NewReader(deep))); err != nil || len(raw) != len(deep) {
		t.Errorf("a reply nested 7995 deep: %d bytes, %v", len(raw), err)
	}
	for _, bad := range []string{"$5\r\nab\r\n", ":x\r\n", "?1\r\n", "+OK\n", strings.Repeat("*1\r\n", 1<<15) + ":1\r\n"} {
		if _, _, err := ReadReply(bufio.NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestBudget: arguments are charged before they are read, a request that
// would go over the cap is refused, and Release gives the bytes back.
func TestBudget(t *testing.T) {
	b := NewBudget(100)
	req := "*2\r\n$3\r\nGET\r\n$40\r\n" + strings.Repeat("k", 40) + "\r\n"
	one := NewReader(strings.NewReader(req), 1000, 10)
	one.Budget = b
	if _, err := one.ReadCommand(); err != nil || b.Held() != 47 {
		t.Fatalf("first request: %v, %d held; want 47 (3+2 and 40+2)", err, b.Held())
	}
	two := NewReader(strings.NewReader(req+req), 1000, 10)
	two.Budget = b
	if _, err := two.ReadCommand(); err != nil || b.Held() != 94 {
		t.Fatalf("second reader: %v, %d held", err, b.Held())
	}
	var be *BudgetError
	if _, err := two.ReadCommand(); !errors.As(err, &be) || be.Cap != 100 {
		t.Fatalf("over the cap: %v, want a *BudgetError of 100", err)
	}
	one.Release()
	two.Release()
	if b.Held() != 0 {
		t.Errorf("%d bytes held after release", b.Held())
	}
}

// BenchmarkReadCommand parses what redis-cli --pipe of SETs sends (1,000
// commands per iteration), with a budget as the agent reads.
func BenchmarkReadCommand(b *testing.B) {
	var in []byte
	for i := range 1000 {
		in = AppendCommand(in, []byte("SET"), []byte("k"+strconv.Itoa(i)), []byte("v"))
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for range b.N {
		rd := NewReader(bytes.NewReader(in), 1<<20, 1024)
		rd.Budget = NewBudget(1 << 30)
		for range 1000 {
			if _, err := rd.ReadCommand(); err != nil {
				b.Fatal(err)
			}
		}
		rd.Done()
	}
}

package resp

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// script is a source that hands out its chunks one read at a time; an
// ErrIdle chunk (nil) answers ErrIdle once. waits counts WaitRead calls.
type script struct {
	chunks [][]byte
	waits  int
}

func (s *script) Read(p []byte) (int, error) {
	if len(s.chunks) == 0 {
		return 0, io.EOF
	}
	c := s.chunks[0]
	if c == nil {
		s.chunks = s.chunks[1:]
		return 0, ErrIdle
	}
	n := copy(p, c)
	if s.chunks[0] = c[n:]; len(s.chunks[0]) == 0 {
		s.chunks = s.chunks[1:]
	}
	return n, nil
}

func (s *script) WaitRead() error { s.waits++; return nil }

func TestQueryBuffer(t *testing.T) {
	big := strings.Repeat("A", 100000)
	set := func(v string) []byte { return AppendCommand(nil, []byte("SET"), []byte("x"), []byte(v)) }
	src := &script{chunks: [][]byte{set("a"), nil, set(big), set("b"), set("c")}}
	b := NewBudget(1 << 30)
	rd := NewReader(src, 1<<20, 16)
	rd.Budget = b
	read := func(want string) {
		t.Helper()
		args, err := rd.ReadCommand()
		if err != nil || len(args) != 3 || string(args[2]) != want {
			t.Fatalf("ReadCommand: %d args, %v", len(args), err)
		}
		rd.Release()
	}
	read("a")
	if used, size := rd.Sizes(); used != 0 || size != ioBuf {
		t.Fatalf("after a small request: %d of %d bytes, want 0 of %d", used, size, ioBuf)
	}
	// Idle: the buffer is given up, and taken again once bytes come.
	read(big)
	if src.waits != 1 {
		t.Fatalf("WaitRead called %d times after idling, want 1", src.waits)
	}
	// After a big argument the next buffer is as large, and charged.
	read("b")
	if _, size := rd.Sizes(); size < len(big) {
		t.Fatalf("after a big argument the buffer is %d bytes, want at least %d", size, len(big))
	}
	if b.Held() == 0 {
		t.Fatal("the large buffer is not charged to the budget")
	}
	rd.Trim() // its peak since: the big request; nothing shrinks yet
	read("c")
	rd.Trim() // since the last Trim: a small request only
	if used, size := rd.Sizes(); size >= len(big) || size == 0 || used != 0 {
		t.Fatalf("after Trim with a small peak: %d of %d bytes, want a small buffer", used, size)
	}
	if b.Held() != 0 {
		t.Fatalf("budget holds %d bytes after the buffer shrank", b.Held())
	}
}

func TestQueryBufferLongLine(t *testing.T) {
	line := strings.Repeat("x", 40000)
	rd := NewReader(bytes.NewReader([]byte("ECHO "+line+"\r\n"+"ECHO "+strings.Repeat("y", MaxLine)+"\r\n")), 1<<20, 16)
	args, err := rd.ReadCommand()
	if err != nil || len(args) != 2 || len(args[1]) != len(line) {
		t.Fatalf("a 40 KB inline request: %d args, %v", len(args), err)
	}
	if _, err := rd.ReadCommand(); err == nil || !strings.Contains(err.Error(), "too big inline request") {
		t.Fatalf("an inline request over MaxLine: %v", err)
	}
}

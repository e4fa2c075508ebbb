package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// Limits of the fuzzed request reader: small, so that inputs of a few bytes
// reach them.
const (
	fuzzMaxBytes = 1 << 12
	fuzzMaxArgs  = 16
	// maxRESPError bounds an error's text, whatever the input.
	maxRESPError = 512
)

// checkRESPError asserts what an error from a RESP reader must be: an
// end of input, or a message of bounded length.
func checkRESPError(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return
	}
	msg := err.Error()
	switch {
	case msg == "":
		t.Fatal("an empty error")
	case len(msg) > maxRESPError:
		t.Fatalf("error of %d bytes: %.200q...", len(msg), msg)
	}
}

// FuzzRESPRequest reads arbitrary bytes as client requests, the agent's
// untrusted input. Every command read must have 1 to maxArgs arguments of at
// most maxBytes together (an inline command: at most one line), and written
// back as a RESP array it must read back as the same arguments. A request
// that is refused is refused with a short *ProtocolError, which the agent
// sends the client as one RESP error line, or ends with the input.
func FuzzRESPRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		rd := NewReader(bytes.NewReader(in), fuzzMaxBytes, fuzzMaxArgs)
		for {
			args, err := rd.ReadCommand()
			if err != nil {
				var pe *ProtocolError
				if !errors.As(err, &pe) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("neither a protocol error nor the end of input: %v", err)
				}
				checkRESPError(t, err)
				// The client gets it as one RESP error line (it may
				// quote a line break, as redis-server's does).
				if reply := Error(err.Error()); bytes.ContainsAny(reply[:len(reply)-2], "\r\n") {
					t.Fatalf("error reply of more than one line: %q", reply)
				}
				return
			}
			total := 0
			for _, a := range args {
				total += len(a)
			}
			if len(args) == 0 || len(args) > fuzzMaxArgs || total > max(fuzzMaxBytes, MaxLine) {
				t.Fatalf("%d arguments, %d bytes", len(args), total)
			}
			enc := AppendCommand(nil, args...)
			again, err := NewReader(bytes.NewReader(enc), max(fuzzMaxBytes, total), fuzzMaxArgs).ReadCommand()
			if err != nil || !reflect.DeepEqual(again, args) {
				t.Fatalf("%q written back as %q reads as %q, %v", args, enc, again, err)
			}
		}
	})
}

// encodeValue writes a decoded reply back in RESP2.
func encodeValue(buf []byte, v Value) []byte {
	buf = append(buf, v.Kind)
	switch {
	case v.Null:
		return append(buf, "-1\r\n"...)
	case v.Kind == '+' || v.Kind == '-' || v.Kind == ',' || v.Kind == '(':
		buf = append(buf, v.Str...)
	case v.Kind == ':':
		buf = strconv.AppendInt(buf, v.Num, 10)
	case v.Kind == '#':
		buf = append(buf, "ft"[v.Num])
	case v.Kind == '$' || v.Kind == '=' || v.Kind == '!':
		buf = strconv.AppendInt(buf, int64(len(v.Str)), 10)
		buf = append(append(buf, '\r', '\n'), v.Str...)
	case v.Kind == '*' || v.Kind == '%' || v.Kind == '~' || v.Kind == '>':
		n := len(v.Arr)
		if v.Kind == '%' {
			n /= 2 // a map counts its pairs
		}
		buf = strconv.AppendInt(buf, int64(n), 10)
		buf = append(buf, '\r', '\n')
		for _, e := range v.Arr {
			buf = encodeValue(buf, e)
		}
		return buf
	}
	return append(buf, '\r', '\n')
}

// FuzzRESPReply reads arbitrary bytes as replies from redis. The raw bytes
// of each reply, which the agent forwards unchanged, must be exactly the
// input it consumed and hold one whole reply: read alone they give the same
// value. The value written back (RESP2 or RESP3, as it came) must read back
// as itself. An error
// (the agent logs it) must be one short line.
func FuzzRESPReply(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bufio.NewReader(bytes.NewReader(in))
		consumed := 0
		for {
			raw, v, err := ReadReply(r)
			if err != nil {
				checkRESPError(t, err)
				if strings.ContainsAny(err.Error(), "\r\n") {
					t.Fatalf("error of more than one line: %q", err)
				}
				return
			}
			if !bytes.Equal(raw, in[consumed:consumed+len(raw)]) {
				t.Fatalf("raw %q is not the input read, %q", raw, in[consumed:consumed+len(raw)])
			}
			consumed += len(raw)
			alone := bufio.NewReader(bytes.NewReader(raw))
			raw2, v2, err := ReadReply(alone)
			if err != nil || !bytes.Equal(raw2, raw) || !reflect.DeepEqual(v2, v) || alone.Buffered() != 0 {
				t.Fatalf("raw %q read alone: %q %+v %v, was %+v", raw, raw2, v2, err, v)
			}
			enc := encodeValue(nil, v)
			_, v3, err := ReadReply(bufio.NewReader(bytes.NewReader(enc)))
			if err != nil || !reflect.DeepEqual(v3, v) {
				t.Fatalf("%+v written back as %q reads as %+v, %v", v, enc, v3, err)
			}
		}
	})
}

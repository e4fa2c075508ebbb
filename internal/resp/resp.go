// Package resp reads and writes the Redis protocol: client requests
// (arrays of bulk strings, or inline commands) and the replies of a
// redis-server in RESP2 or RESP3, kept raw so they can be forwarded
// unchanged.
package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/gait-dev/gait/internal/clip"
)

// MaxLine bounds one protocol line (an inline command, a count, a length),
// as Redis's own 64 KiB inline limit does.
const MaxLine = 64 << 10

// maxBulk bounds a bulk string in a reply from redis: Redis's own
// proto-max-bulk-len.
const maxBulk = 512 << 20

// maxReplyDepth bounds nesting in a reply read from redis. A Lua script
// returning a table that contains itself makes redis nest about 8000
// arrays (until "reached lua stack limit"); a reply the applier cannot
// read stops that replica for good, so the bound is well above it.
const maxReplyDepth = 1 << 14

// ProtocolError is a client request that is not valid RESP or breaks a limit;
// the agent answers it with a Redis-style error and closes the connection,
// as redis-server does.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "Protocol error: " + e.Msg }

// Reader parses client requests: RESP arrays of bulk strings, or
// inline commands (words separated by spaces, as typed into telnet).
type Reader struct {
	src io.Reader
	// The query buffer (querybuf.go): buf[r:w] is unread; nil while given
	// up. peak is the most it held unread since the last Trim, next the
	// size of the next buffer (after a big argument), bufCharge what of it
	// the budget holds, released that it was given up for idling.
	buf        []byte
	r, w       int
	peak, next int
	bufCharge  int
	released   bool
	filled     bool         // the last read filled the buffer
	used, size atomic.Int64 // published for Sizes

	maxBytes int // all argument bytes of one request together
	maxArgs  int

	// Budget, when set, is charged with the bytes of every argument before
	// they are read, until Release; a request that would take it over its
	// cap fails with *BudgetError.
	Budget *Budget
	held   int
	// Begin, when set, is called once a request has begun and more of it
	// must follow (its array header has arrived), so the caller can bound
	// how long the rest may pause.
	Begin func()
}

func NewReader(r io.Reader, maxBytes, maxArgs int) *Reader {
	return &Reader{src: r, maxBytes: maxBytes, maxArgs: maxArgs}
}

// ReadCommand returns the next non-empty command. Errors are io errors from
// the connection or *ProtocolError.
func (rd *Reader) ReadCommand() ([][]byte, error) {
	defer rd.publish()
	for {
		line, err := rd.readLine()
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			continue
		}
		if line[0] != '*' {
			args, err := splitArgs(line)
			if err != nil {
				return nil, err
			}
			if len(args) > 0 {
				if len(args) > rd.maxArgs {
					return nil, &ProtocolError{Msg: "too many arguments"}
				}
				return args, nil
			}
			continue
		}
		n, ok := parseInt(line[1:])
		if !ok || n > int64(rd.maxArgs) {
			return nil, &ProtocolError{Msg: "invalid multibulk length"}
		}
		if n <= 0 {
			continue // redis ignores *0 and *-1
		}
		if rd.Begin != nil {
			rd.Begin()
		}
		return rd.readBulks(int(n))
	}
}

func (rd *Reader) readBulks(n int) ([][]byte, error) {
	args := make([][]byte, 0, min(n, 1024))
	total := 0
	var slab []byte // the small arguments' bytes (readBulk)
	for range n {
		line, err := rd.readLine()
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, err
		}
		if len(line) == 0 || line[0] != '$' {
			got := "end of line"
			if len(line) > 0 {
				got = fmt.Sprintf("'%c'", line[0])
			}
			return nil, &ProtocolError{Msg: "expected '$', got " + got}
		}
		size, ok := parseInt(line[1:])
		if !ok || size < 0 || size > maxBulk {
			return nil, &ProtocolError{Msg: "invalid bulk length"}
		}
		if size > int64(rd.maxBytes-total) {
			return nil, &ProtocolError{Msg: fmt.Sprintf("request larger than the agent's limit of %d bytes", rd.maxBytes)}
		}
		total += int(size)
		buf, err := rd.readBulk(int(size)+2, &slab)
		if err != nil {
			return nil, err
		}
		if buf[size] != '\r' || buf[size+1] != '\n' {
			return nil, &ProtocolError{Msg: "bulk string not terminated by CRLF"}
		}
		args = append(args, buf[:size:size])
	}
	return args, nil
}

// splitArgs splits an inline command as redis does (sdssplitargs): words
// separated by spaces; "double quotes" with \n \r \t \b \a \\ \" and \xHH
// escapes; 'single quotes' with \' only. A closing quote must end the word.
func splitArgs(line []byte) ([][]byte, error) {
	var args [][]byte
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return args, nil
		}
		arg := []byte{}
		if q := line[i]; q == '"' || q == '\'' {
			var err error
			if arg, i, err = quoted(line, i, q); err != nil {
				return nil, err
			}
		} else {
			for i < len(line) && !isSpace(line[i]) && line[i] != 0 {
				arg = append(arg, line[i])
				i++
			}
			if i < len(line) && line[i] == 0 {
				i++
			}
		}
		args = append(args, arg)
	}
}

// quoted reads the word that the quote q at line[i] opens; next is where
// the line goes on after its closing quote.
func quoted(line []byte, i int, q byte) (arg []byte, next int, err error) {
	unbalanced := &ProtocolError{Msg: "unbalanced quotes in request"}
	arg = []byte{}
	for i++; i < len(line); i++ {
		c := line[i]
		switch {
		case c == q:
			if i+1 < len(line) && !isSpace(line[i+1]) {
				return nil, 0, unbalanced
			}
			return arg, i + 1, nil
		case c == '\\' && q == '\'' && i+1 < len(line) && line[i+1] == '\'':
			arg = append(arg, '\'')
			i++
		case c == '\\' && q == '"' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
			arg = append(arg, unhex(line[i+2])<<4|unhex(line[i+3]))
			i += 3
		case c == '\\' && q == '"' && i+1 < len(line):
			i++
			if c = map[byte]byte{'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'a': '\a'}[line[i]]; c == 0 {
				c = line[i]
			}
			arg = append(arg, c)
		default:
			arg = append(arg, c)
		}
	}
	return nil, 0, unbalanced
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// slabBytes is the room one allocation gives a request's small arguments:
// a SET of a short key and value takes one, not three.
const slabBytes = 32

// readBulk reads the next n bytes. With a budget they are charged to it
// before they are allocated, in one piece: the budget, not the bytes that
// came, bounds what a length that promises more than comes may cost; an
// argument that fits is read into the request's slab (made on its first
// small argument). Without one, the buffer grows as the bytes arrive.
func (rd *Reader) readBulk(n int, slab *[]byte) ([]byte, error) {
	if rd.Budget == nil {
		var buf []byte
		return buf, appendRead(rd, &buf, n)
	}
	if !rd.Budget.take(n) {
		return nil, &BudgetError{Cap: rd.Budget.cap}
	}
	rd.held += n
	if n >= bigArg {
		return rd.bigBulk(n)
	}
	var buf []byte
	switch s := *slab; {
	case n <= cap(s)-len(s):
		buf, *slab = s[len(s):len(s)+n], s[:len(s)+n]
	case n <= slabBytes/2:
		*slab = make([]byte, n, slabBytes)
		buf = *slab
	default:
		buf = make([]byte, n)
	}
	if rd.r+n <= rd.w { // buffered already, as a pipeline's requests are
		copy(buf, rd.buf[rd.r:rd.r+n])
		rd.r += n
		return buf, nil
	}
	_, err := io.ReadFull(rd, buf)
	return buf, err
}

// Buffered is how many bytes of the requests that follow have arrived and
// wait to be read: a pipelining client's next commands.
func (rd *Reader) Buffered() int { return rd.w - rd.r }

// Release gives the budget back what the commands read so far hold: call
// it once they are handled and their arguments no longer referenced, and
// when the connection ends.
func (rd *Reader) Release() {
	if rd.Budget != nil && rd.held > 0 {
		rd.Budget.held.Add(-int64(rd.held))
	}
	rd.held = 0
}

// Done gives the budget back everything, the query buffer's charge too:
// call it when the connection ends.
func (rd *Reader) Done() {
	rd.Release()
	rd.uncharge()
}

// Budget caps the bytes that the requests of every connection sharing it
// hold while they arrive and until they are handled, so that clients that
// send large requests slowly, or stall half-way, cannot take the agent's
// memory. It is safe for concurrent use.
type Budget struct {
	cap  int64
	held atomic.Int64
}

// NewBudget returns a budget of limit bytes.
func NewBudget(limit int64) *Budget { return &Budget{cap: limit} }

func (b *Budget) take(n int) bool {
	for {
		h := b.held.Load()
		if h+int64(n) > b.cap {
			return false
		}
		if b.held.CompareAndSwap(h, h+int64(n)) {
			return true
		}
	}
}

// Held is how many bytes requests hold now.
func (b *Budget) Held() int64 { return b.held.Load() }

// BudgetError is a request refused because the requests being read by all
// clients together already hold the budget's cap.
type BudgetError struct{ Cap int64 }

func (e *BudgetError) Error() string {
	return fmt.Sprintf("requests being read hold the agent's cap of %d bytes (--request-memory); send it again later", e.Cap)
}

// readLine reads one line without its line ending.
func (rd *Reader) readLine() ([]byte, error) {
	line, err := rd.readSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, &ProtocolError{Msg: "too big inline request"}
	}
	if err != nil {
		if errors.Is(err, io.EOF) && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// parseInt parses a protocol integer: optional '-', decimal digits only.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 { // 20: a minus and 19 digits, as -9223372036854775808
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || (b[0] == '+') {
		return 0, false
	}
	return n, true
}

// AppendCommand encodes args as a RESP array of bulk strings.
func AppendCommand(buf []byte, args ...[]byte) []byte {
	// Grown once: appended piece by piece from nothing, a GET's encoding
	// was four allocations. 16 bytes hold an argument's header and
	// trailer but for lengths of more than 11 digits.
	size := 16
	for _, a := range args {
		size += 16 + len(a)
	}
	buf = slices.Grow(buf, size)
	buf = append(buf, '*')
	buf = strconv.AppendInt(buf, int64(len(args)), 10)
	buf = append(buf, '\r', '\n')
	for _, a := range args {
		buf = AppendBulk(buf, a)
	}
	return buf
}

func AppendBulk(buf, b []byte) []byte {
	buf = append(buf, '$')
	buf = strconv.AppendInt(buf, int64(len(b)), 10)
	buf = append(buf, '\r', '\n')
	buf = append(buf, b...)
	return append(buf, '\r', '\n')
}

// Error is a RESP error; line breaks in msg would end the reply early,
// so they become spaces.
func Error(msg string) []byte {
	b := []byte("-" + msg)
	for i := 1; i < len(b); i++ {
		if b[i] == '\r' || b[i] == '\n' {
			b[i] = ' '
		}
	}
	return append(b, '\r', '\n')
}

func Simple(s string) []byte { return []byte("+" + s + "\r\n") }

func Int(n int) []byte { return append(strconv.AppendInt([]byte(":"), int64(n), 10), '\r', '\n') }

// Value is one decoded reply from redis: Kind is its type byte. RESP2's
// are + - : $ *; RESP3 adds _ (null), , (double, in Str), # (boolean, Num 0
// or 1), ( (big number, in Str), = (verbatim string, with its "txt:"), !
// (bulk error), % (map: keys and values alternate in Arr), ~ (set), |
// (attribute, also in Arr) and > (push). A null (RESP2's $-1 and *-1, RESP3's _)
// has Null set.
type Value struct {
	Kind byte
	Str  []byte
	Num  int64
	Arr  []Value
	Null bool
}

// ReadReply reads one complete reply from redis and returns its raw bytes,
// to be forwarded unchanged, and its decoded Value.
func ReadReply(r *bufio.Reader) ([]byte, Value, error) {
	var raw []byte
	v, err := readValue(r, 0, &raw)
	return raw, v, err
}

func readValue(r *bufio.Reader, depth int, raw *[]byte) (Value, error) {
	if depth > maxReplyDepth {
		return Value{}, errors.New("reply nested too deeply")
	}
	line, err := r.ReadSlice('\n')
	if err != nil {
		return Value{}, fmt.Errorf("read reply: %w", err)
	}
	*raw = append(*raw, line...)
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return Value{}, fmt.Errorf("malformed reply line %s", clip.Quote(line))
	}
	v := Value{Kind: line[0]}
	body := line[1 : len(line)-2]
	switch v.Kind {
	case '+', '-', ',', '(':
		v.Str = bytes.Clone(body)
	case '_':
		v.Null = true
	case '#':
		if len(body) != 1 || body[0] != 't' && body[0] != 'f' {
			return Value{}, fmt.Errorf("malformed boolean reply %s", clip.Quote(body))
		}
		if body[0] == 't' {
			v.Num = 1
		}
	case ':':
		n, ok := parseInt(body)
		if !ok {
			return Value{}, fmt.Errorf("malformed integer reply %s", clip.Quote(body))
		}
		v.Num = n
	case '$', '=', '!':
		n, ok := parseInt(body)
		if !ok || n < -1 || n > maxBulk {
			return Value{}, fmt.Errorf("malformed bulk length %s (at most %d)", clip.Quote(body), maxBulk)
		}
		if n == -1 {
			v.Null = true
			break
		}
		start := len(*raw)
		if err := appendRead(r, raw, int(n)+2); err != nil {
			return Value{}, fmt.Errorf("read bulk reply: %w", err)
		}
		v.Str = (*raw)[start : start+int(n) : start+int(n)]
	case '*', '%', '~', '|', '>':
		n, ok := parseInt(body)
		if !ok || n < -1 {
			return Value{}, fmt.Errorf("malformed aggregate length %s", clip.Quote(body))
		}
		if n == -1 {
			v.Null = true
			break
		}
		if v.Kind == '%' || v.Kind == '|' {
			n *= 2 // a map's or attribute's keys and values
		}
		v.Arr = make([]Value, 0, min(n, 1024))
		for range n {
			e, err := readValue(r, depth+1, raw)
			if err != nil {
				return Value{}, err
			}
			v.Arr = append(v.Arr, e)
		}
	default:
		return Value{}, fmt.Errorf("unexpected reply type %q", v.Kind)
	}
	if v.Kind == '|' {
		// An attribute annotates the reply that follows it, which is the reply.
		return readValue(r, depth, raw)
	}
	return v, nil
}

// appendRead appends the next n bytes of r to buf, growing it as the bytes
// arrive, so a length that promises more than comes costs no more memory
// than what came.
func appendRead(r io.Reader, buf *[]byte, n int) error {
	for n > 0 {
		chunk := min(n, 1<<20)
		start := len(*buf)
		*buf = slices.Grow(*buf, chunk)[:start+chunk] // one allocation, no zeroed copy
		if _, err := io.ReadFull(r, (*buf)[start:]); err != nil {
			return err
		}
		n -= chunk
	}
	return nil
}

// Skip measures the first complete reply in b without decoding it: its
// length in bytes, or ok false when b does not start with one.
func Skip(b []byte) (n int, ok bool) { return skip(b, 0) }

func skip(b []byte, depth int) (int, bool) {
	if depth > maxReplyDepth {
		return 0, false
	}
	eol := bytes.Index(b, []byte("\r\n"))
	if eol < 1 {
		return 0, false
	}
	head := eol + 2
	switch b[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return head, true
	case '$', '=', '!':
		l, ok := parseInt(b[1:eol])
		if !ok || l < 0 {
			return head, ok && l == -1
		}
		end := head + int(l) + 2
		return end, end <= len(b)
	case '*', '~', '>', '%', '|':
		l, ok := parseInt(b[1:eol])
		if !ok || l < 0 {
			return head, ok && l == -1
		}
		if b[0] == '%' || b[0] == '|' {
			l *= 2
		}
		n := head
		for range l {
			k, ok := skip(b[n:], depth+1)
			if !ok {
				return 0, false
			}
			n += k
		}
		if b[0] == '|' { // an attribute precedes the reply it describes
			k, ok := skip(b[n:], depth+1)
			return n + k, ok
		}
		return n, true
	}
	return 0, false
}

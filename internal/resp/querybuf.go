package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// A Reader's query buffer holds what has arrived of the requests not yet
// parsed, and is sized as redis sizes a client's (networking.c and
// clientsCronResizeQueryBuffer): 16 KiB to read into, grown for a long
// line up to MaxLine, and so for a client whose reads fill it (it
// pipelines: the agent batches what is buffered, so a larger buffer makes
// larger batches); a bulk argument of 32 KiB or more is read into an
// allocation of its own, and the buffer after it is made that large,
// expecting another (charged to the Budget, when there is one, and only if
// it fits); Trim shrinks a buffer larger than 32 KiB to what the last
// period needed once that is under half of it; and the buffer is given up
// while the connection idles (ErrIdle), so an idle connection holds none.
const (
	ioBuf       = 16 << 10 // PROTO_IOBUF_LEN
	bigArg      = 32 << 10 // PROTO_MBULK_BIG_ARG
	resizeAbove = 32 << 10 // PROTO_RESIZE_THRESHOLD
)

// ErrIdle, from the source's Read, says its connection has idled long
// enough for the reader to give its buffer up. The reader then waits for
// bytes without one, through the source's WaitRead when it has one, and
// reads on.
var ErrIdle = errors.New("resp: connection idle")

// Waiter is a source that can wait until it has bytes to read without
// reading them.
type Waiter interface{ WaitRead() error }

// fill reads more bytes into the buffer, making it ready to take some: it
// moves what is unread to the front and gives it room for at least ioBuf
// bytes, or grows it when full and grow says a line needs more.
func (rd *Reader) fill(grow bool) error {
	for {
		rd.ready(grow)
		n, err := rd.src.Read(rd.buf[rd.w:])
		rd.filled = n > 0 && rd.w+n == len(rd.buf)
		rd.w += n
		rd.peak = max(rd.peak, rd.w-rd.r)
		rd.publish()
		if n > 0 {
			return nil
		}
		if errors.Is(err, ErrIdle) {
			rd.idle()
			continue
		}
		if err == nil {
			err = io.ErrNoProgress
		}
		return err
	}
}

// ready makes room to read into: a buffer (after waiting for bytes, if it
// was given up; as large as the argument before it, if that was big), what
// is unread at its front, at least ioBuf bytes of it, and twice the room
// when grow (a line longer than the buffer).
func (rd *Reader) ready(grow bool) {
	if rd.buf == nil {
		if w, ok := rd.src.(Waiter); ok && rd.released {
			w.WaitRead() // an error shows at the read that follows
		}
		size := ioBuf
		if rd.next > ioBuf && (rd.Budget == nil || rd.Budget.take(rd.next-ioBuf)) {
			size = rd.next
		}
		rd.resize(size)
		rd.bufCharge = size - ioBuf
		if rd.Budget == nil {
			rd.bufCharge = 0
		}
		rd.released, rd.next = false, 0
	}
	if rd.r > 0 {
		rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.r = 0
	}
	switch {
	case len(rd.buf) < ioBuf && rd.w < ioBuf:
		rd.resize(ioBuf)
	case grow && rd.w == len(rd.buf), rd.filled && len(rd.buf) < MaxLine:
		// A long line; or a client that pipelines (its last read filled
		// the buffer): more at once makes larger batches.
		rd.filled = false
		rd.resize(min(2*len(rd.buf), MaxLine))
	}
}

// resize gives the buffer size bytes (at least what is unread, which it
// keeps at its front). Only a buffer made large after a big argument is
// charged to the budget; that charge ends here.
func (rd *Reader) resize(size int) {
	rd.uncharge()
	buf := make([]byte, max(size, rd.w-rd.r))
	rd.w = copy(buf, rd.buf[rd.r:rd.w])
	rd.buf, rd.r = buf, 0
	rd.publish()
}

func (rd *Reader) uncharge() {
	if rd.bufCharge > 0 {
		rd.Budget.held.Add(-int64(rd.bufCharge))
		rd.bufCharge = 0
	}
}

// idle gives the buffer up when it holds nothing unread.
func (rd *Reader) idle() {
	if rd.r < rd.w || rd.buf == nil {
		return
	}
	rd.uncharge()
	rd.buf, rd.r, rd.w, rd.next, rd.peak, rd.released = nil, 0, 0, 0, 0, true
	rd.publish()
}

// bigBulk reads a bulk of n bytes (its CRLF included), at least bigArg,
// into a slice of its own: the buffer itself when it is exactly that large
// and holds nothing past the bulk (the buffer is then the argument's), else
// a new allocation. When nothing follows the bulk, the next buffer is made
// as large, expecting another. The caller charges the bulk to the budget.
func (rd *Reader) bigBulk(n int) ([]byte, error) {
	have := rd.w - rd.r
	var buf []byte
	if len(rd.buf) == n && have <= n {
		copy(rd.buf, rd.buf[rd.r:rd.w])
		buf = rd.buf
		rd.uncharge()
		rd.buf, rd.r, rd.w = nil, 0, 0
	} else {
		buf = make([]byte, n) // pages not yet written take no memory
		have = copy(buf, rd.buf[rd.r:rd.w])
		rd.r += have
	}
	var err error
	for have < n && err == nil {
		var k int
		k, err = rd.src.Read(buf[have:])
		have += k
		switch {
		case errors.Is(err, ErrIdle):
			err = nil // mid-request: never idle
		case errors.Is(err, io.EOF):
			err = io.ErrUnexpectedEOF
		case k == 0 && err == nil:
			err = io.ErrNoProgress
		}
	}
	if rd.r == rd.w {
		rd.uncharge()
		rd.buf, rd.r, rd.w, rd.next = nil, 0, 0, n
	}
	rd.publish()
	return buf, err
}

// Trim is redis's periodic look at a busy client's query buffer: one
// larger than 32 KiB and more than twice what the period since the last
// Trim held at most is cut to that most (or to what is unread, if more).
// Call it now and then (redis: about every 100 ms) from the reading
// goroutine.
func (rd *Reader) Trim() {
	if len(rd.buf) > resizeAbove && len(rd.buf)/2 > rd.peak && len(rd.buf)-(rd.w-rd.r) > 4<<10 {
		rd.resize(max(rd.peak, rd.w-rd.r))
	}
	rd.peak = rd.w - rd.r
}

// publish makes the buffer's sizes readable by other goroutines (Sizes).
func (rd *Reader) publish() {
	rd.used.Store(int64(rd.w - rd.r))
	rd.size.Store(int64(len(rd.buf)))
}

// Sizes are the query buffer's unread bytes and its size, as CLIENT LIST's
// qbuf and qbuf+qbuf-free; safe to call from any goroutine.
func (rd *Reader) Sizes() (used, size int) { return int(rd.used.Load()), int(rd.size.Load()) }

// readSlice returns the bytes up to and including delim, valid until the
// next read; bufio.ErrBufferFull when a line exceeds MaxLine.
func (rd *Reader) readSlice(delim byte) ([]byte, error) {
	for scanned := 0; ; {
		if i := bytes.IndexByte(rd.buf[rd.r+scanned:rd.w], delim); i >= 0 {
			line := rd.buf[rd.r : rd.r+scanned+i+1]
			rd.r += scanned + i + 1
			return line, nil
		}
		scanned = rd.w - rd.r
		if scanned >= MaxLine {
			return nil, bufio.ErrBufferFull
		}
		if err := rd.fill(true); err != nil {
			if errors.Is(err, io.EOF) && rd.w > rd.r {
				line := rd.buf[rd.r:rd.w]
				rd.r = rd.w
				return line, err
			}
			return nil, err
		}
	}
}

// Read reads what is buffered, or else straight into p when p is no
// smaller than the buffer would be.
func (rd *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if rd.r == rd.w {
		if len(p) >= max(len(rd.buf), ioBuf) {
			for {
				n, err := rd.src.Read(p)
				if errors.Is(err, ErrIdle) {
					continue // mid-request: never idle
				}
				if n == 0 && err == nil {
					err = io.ErrNoProgress
				}
				return n, err
			}
		}
		if err := rd.fill(false); err != nil {
			return 0, err
		}
	}
	n := copy(p, rd.buf[rd.r:rd.w])
	rd.r += n
	rd.publish()
	return n, nil
}

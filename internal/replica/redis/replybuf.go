package redis

import (
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// A connection's replies are gathered in its reply buffer until they are
// written, and the buffer is sized as redis sizes a client's (c->buf,
// clientsCronResizeOutputBuffer): 16 KiB at first; every 100 ms (buffers
// cron) one whose peak since its last reset stayed under half of it
// shrinks to that peak (not under 1 KiB), and one a reply overflowed (its
// peak is its size) doubles, up to 16 KiB. The peak is reset every
// peak-reset-time (5 s; DEBUG REPLYBUFFER PEAK-RESET-TIME), so an idle
// connection's buffer ends at 1 KiB. CLIENT LIST shows the size as rbs=
// and the peak as rbp=.
const (
	replyChunk   = 16 << 10 // PROTO_REPLY_CHUNK_BYTES
	replyMin     = 1 << 10  // PROTO_REPLY_MIN_BYTES
	buffersEvery = 100 * time.Millisecond
)

// replyBuffers are the agent's settings for its connections' reply
// buffers, as DEBUG REPLYBUFFER sets them.
type replyBuffers struct {
	peakReset atomic.Int64 // ns; negative: never
	noResize  atomic.Bool
}

func newReplyBuffers() *replyBuffers {
	b := &replyBuffers{}
	b.peakReset.Store(int64(5 * time.Second))
	return b
}

// write adds b to the buffer, writing out what it holds first when b does
// not fit (the buffer then counts as full, as redis's fills before its
// reply list takes the rest), and b itself when it is larger than the
// buffer. Called with o.mu held.
func (o *replyWriter) write(b []byte) error {
	if o.buf == nil {
		o.buf = make([]byte, o.size)
	}
	if o.n+len(b) > o.size {
		o.peak = o.size
		if err := o.flush(); err != nil {
			return err
		}
		if len(b) > o.size {
			_, err := o.c.Write(b)
			return err
		}
	}
	o.n += copy(o.buf[o.n:], b)
	o.peak = max(o.peak, o.n)
	return nil
}

// flush writes out what the buffer holds. Called with o.mu held.
func (o *replyWriter) flush() error {
	if o.n == 0 {
		return nil
	}
	_, err := o.c.Write(o.buf[:o.n])
	o.n = 0
	return err
}

// resize is one look of the buffers cron at the connection's reply buffer.
func (o *replyWriter) resize(now time.Time, set *replyBuffers) {
	o.mu.Lock()
	defer o.mu.Unlock()
	size := 0
	switch shrink, grow := o.size/2, o.size*2; {
	case set.noResize.Load():
	case shrink >= replyMin && o.peak < shrink:
		size = max(replyMin, o.peak+1)
	case grow < 2*replyChunk && o.peak == o.size:
		size = min(replyChunk, grow)
	}
	if reset := time.Duration(set.peakReset.Load()); reset >= 0 && now.Sub(o.peakAt) >= reset {
		o.peak, o.peakAt = o.n, now
	}
	if size > 0 {
		if o.buf != nil {
			buf := make([]byte, size)
			copy(buf, o.buf[:o.n])
			o.buf = buf
		}
		o.size = size
		o.rbs.Store(int64(size))
	}
	o.rbp.Store(int64(o.peak))
}

// resizeBuffers runs the buffers cron over the agent's connections until
// the agent closes.
func (a *agent) resizeBuffers() {
	t := time.NewTicker(buffersEvery)
	defer t.Stop()
	for {
		select {
		case <-a.done:
			return
		case now := <-t.C:
			a.mu.Lock()
			outs := make([]*replyWriter, 0, len(a.conns))
			for _, st := range a.conns {
				if out := st.out.Load(); out != nil {
					outs = append(outs, out)
				}
			}
			a.mu.Unlock()
			for _, out := range outs {
				out.resize(now, a.replyBufs)
			}
		}
	}
}

// debugReplyBuffer answers DEBUG REPLYBUFFER PEAK-RESET-TIME <ms|NEVER|RESET>
// and RESIZING <0|1> for the agent's own connections, whose reply buffers
// these are; nil if args are something else.
func (a *agent) debugReplyBuffer(args [][]byte) []byte {
	if len(args) != 4 || !strings.EqualFold(string(args[1]), "REPLYBUFFER") {
		return nil
	}
	v := strings.ToLower(string(args[3]))
	switch strings.ToLower(string(args[2])) {
	case "peak-reset-time":
		switch v {
		case "never":
			a.replyBufs.peakReset.Store(-1)
		case "reset":
			a.replyBufs.peakReset.Store(int64(5 * time.Second))
		default:
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return []byte("-ERR value is not an integer or out of range\r\n")
			}
			a.replyBufs.peakReset.Store(ms * int64(time.Millisecond))
		}
	case "resizing":
		a.replyBufs.noResize.Store(v == "0")
	default:
		return []byte("-ERR Syntax error, try DEBUG HELP\r\n")
	}
	return []byte("+OK\r\n")
}

// newReplyWriter is a connection's reply writer, its buffer at redis's
// first size (made on the first reply).
func newReplyWriter(c net.Conn) *replyWriter {
	o := &replyWriter{c: c, size: replyChunk, peakAt: time.Now()}
	o.rbs.Store(replyChunk)
	return o
}

package replica

import (
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// pacer caps the sending rate of raft's connections to replicas that lag
// or limp, with the kernel's TCP pacing (SO_MAX_PACING_RATE). The agents'
// own connections are left alone: they carry the 32-KiB probes, and a
// leader whose probes to both followers are paced measures its link as
// slower than theirs and may judge itself limping (with them paced, 8
// transfers in 5 healthy minutes at load average 19 to 28, the 5 shown
// all on the leader's probe time, against 3 for unpaced agents beside
// them; the run kept no record of which were paced at the time).
//
// Why: a replica that falls behind (a limping CPU, disk or link) catches up
// in bursts, and the leader sends each burst as fast as TCP lets it. Linux
// lets one TCP flow keep up to tcp_limit_output_bytes (4 MiB here) queued
// in the qdisc of the leader's link, which is one queue for every
// destination: the healthy follower's appends and the replies to clients'
// agents waited behind the burst. Measured with a follower at a tenth of a
// CPU: every 100 ms (its cgroup's period) the leader sent its catch-up at
// the full 100 Mbit/s of its link for 10 to 25 ms, and no write completed
// meanwhile (3 s of a 10-s step; p99 3.6x, throughput 0.72x). A capped
// pacing rate also caps what the flow may queue (about 1 ms of its rate),
// so the healthy follower's messages pass.
type pacer struct {
	mu    sync.Mutex
	rates map[string]uint64 // bytes per second, by address; absent: unlimited
	conns map[string]map[*pacedConn]bool
}

func newPacer() *pacer {
	return &pacer{rates: map[string]uint64{}, conns: map[string]map[*pacedConn]bool{}}
}

// unpaced lifts a cap (the kernel's ~0).
const unpaced = ^uint64(0)

// dial connects to addr, paced at the rate set for it.
func (p *pacer) dial(addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	pc := &pacedConn{Conn: RawIO(c), p: p, addr: addr}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns[addr] == nil {
		p.conns[addr] = map[*pacedConn]bool{}
	}
	p.conns[addr][pc] = true
	if rate, ok := p.rates[addr]; ok {
		pc.pace(rate) // a failure leaves the connection unpaced, not broken
	}
	return pc, nil
}

// set caps the rate of every connection to addr, present and future, at
// bytesPerSec; 0 lifts the cap.
func (p *pacer) set(addr string, bytesPerSec uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	rate := bytesPerSec
	if bytesPerSec == 0 {
		delete(p.rates, addr)
		rate = unpaced
	} else {
		p.rates[addr] = bytesPerSec
	}
	for c := range p.conns[addr] {
		if err := c.pace(rate); err != nil {
			return fmt.Errorf("pace connection to %s at %d B/s: %w", addr, bytesPerSec, err)
		}
	}
	return nil
}

// pacedConn is a connection the pacer knows of until it closes.
type pacedConn struct {
	net.Conn
	p    *pacer
	addr string
	once sync.Once
}

func (c *pacedConn) pace(rate uint64) error {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptUint64(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, rate)
	}); err != nil {
		return err
	}
	return serr
}

func (c *pacedConn) Close() error {
	c.once.Do(func() {
		c.p.mu.Lock()
		delete(c.p.conns[c.addr], c)
		if len(c.p.conns[c.addr]) == 0 {
			delete(c.p.conns, c.addr)
		}
		c.p.mu.Unlock()
	})
	return c.Conn.Close()
}

package replica

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// coreClient is the core's Client for one connection an Adapter serves, or
// for none (Agent.NewClient).
type coreClient struct {
	a       *Agent
	stamped *stampedConn // when the connection's bytes arrived; nil without one
	// last is the connection's latest write: a read waits for its reply.
	// Only the goroutine that reads the connection touches it.
	last *pending
	// own is the highest log index of the connection's acknowledged
	// writes: a session read needs a replica that has applied it.
	own atomic.Uint64
}

// NewClient is a Client with no connection, for what an adapter proposes
// on its own (expiring a session whose client went silent).
func (a *Agent) NewClient() Client { return &coreClient{a: a} }

func (c *coreClient) Write(cmd Command) Pending {
	if cmd.Class != ClassWrite {
		return &pending{err: fmt.Errorf("gait replica: Client.Write of a command of class %d", cmd.Class)}
	}
	t := c.a.arrival.take(c.stamped, false, false, arrivedAt(c.stamped))
	w, err := c.a.proposeTurn(t, cmd.Data, cmd.Volatile)
	p := &pending{a: c.a, w: w, err: err, own: &c.own}
	c.last = p
	return p
}

func (c *coreClient) Read(ctx context.Context, cmd Command) ([]byte, error) {
	if cmd.Class != ClassRead {
		return nil, fmt.Errorf("gait replica: Client.Read of a command of class %d", cmd.Class)
	}
	if c.last != nil {
		c.last.Wait() // read-your-writes; a failed write leaves nothing to wait for
	}
	if cmd.Pinned {
		return c.a.readHere(ctx, c.own.Load(), cmd.Data)
	}
	return c.a.read(ctx, c.own.Load(), cmd.Data)
}

func (c *coreClient) WaitAll(ctx context.Context) (int, error) {
	if c.last == nil || c.last.w == nil {
		return len(c.a.health.expectedReplicas()), nil
	}
	if _, _, err := c.last.Wait(); err != nil {
		return 0, err
	}
	timeout := c.a.cfg.WriteTimeout
	if at, ok := ctx.Deadline(); ok {
		timeout = time.Until(at)
	}
	return c.a.waitAll(c.last.w, timeout), ctx.Err()
}

// pending is a proposed write (Client.Write's Pending, Host.Propose's
// Proposal); Wait may be called from any goroutine, any number of times:
// the first waits, the rest get its answer.
type pending struct {
	a     *Agent
	w     *write
	own   *atomic.Uint64 // the Client's highest acknowledged index; nil for none
	once  sync.Once
	reply []byte
	index uint64
	err   error
}

func (p *pending) Wait() ([]byte, uint64, error) {
	p.once.Do(func() {
		if p.err != nil {
			return
		}
		r, err := p.a.awaitWrite(p.w)
		if err != nil {
			p.err = err
			return
		}
		p.reply, p.index = r.raw, r.index
		if p.own != nil && r.index > p.own.Load() {
			p.own.Store(r.index)
		}
		p.a.m.stage("reply", time.Since(r.at))
	})
	return p.reply, p.index, p.err
}

func (p *pending) Seq() uint64              { return p.w.id }
func (p *pending) Replied() (got, want int) { return p.a.replied(p.w) }
func (p *pending) WaitAll(timeout time.Duration) int {
	return p.a.waitAll(p.w, timeout)
}

// proposeTurn proposes an entry of data once the requests ticket t must
// follow in arrival order (arrival.go) are proposed, and gives t up.
func (a *Agent) proposeTurn(t *ticket, data []byte, volatile bool) (*write, error) {
	a.arrival.turn(t)
	w, err := a.startEntry(data, volatile)
	a.arrival.release(t)
	return w, err
}

// clientReadBuffer caps the kernel's receive buffer of a client's
// connection, and so the window TCP offers the client: a client that
// pipelines (redis-cli --pipe) otherwise keeps hundreds of KiB queued on
// the agent's link (100 to 240 KB seen at 100 Mbit/s, 8 to 19 ms), ahead
// of the followers' answers to the leader, which every write's commit
// waits for. 64 KiB is 5 ms of a 100 Mbit/s link, enough to keep it busy
// while the agent is descheduled.
const clientReadBuffer = 64 << 10

// serveClients accepts client connections and hands each to the adapter.
func (a *Agent) serveClients() {
	for {
		c, err := a.arrival.accept(a.clients)
		if err != nil {
			return
		}
		a.serveClient(c)
	}
}

// serveClient hands a client's connection to the adapter, read through a
// stampedConn (arrival.go) and written with raw system calls (rawio.go).
func (a *Agent) serveClient(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetReadBuffer(clientReadBuffer) // a failure leaves the kernel's default
	}
	c = RawIO(c)
	// Asked for at once: the kernel stamps only what arrives after.
	stamped := stampArrivals(c)
	stamped.at = time.Now().UnixNano() // idle from its start (stallConn)
	stamped.born = stamped.at
	// Watched while it is young (arrivals), from before its accept stops
	// being counted: in between it would be neither.
	a.arrival.watch(stamped)
	a.arrival.accepted()
	a.mu.Lock()
	a.open[c] = struct{}{}
	a.mu.Unlock()
	go func() {
		defer func() {
			a.arrival.unwatch(stamped)
			a.mu.Lock()
			delete(a.open, c)
			a.mu.Unlock()
		}()
		a.adapter.ServeConn(stamped, &coreClient{a: a, stamped: stamped})
	}()
}

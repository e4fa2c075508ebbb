package replica

import (
	"bufio"
	"fmt"
	"net"
	"time"
)

// redisTimeout bounds one exchange with the local redis-server, so a hung
// server shows up as an error rather than a stuck agent.
const redisTimeout = 30 * time.Second

// redisConn is one connection to the local redis-server.
type redisConn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

func dialRedis(addr string) (*redisConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("connect to redis %s: %w", addr, err)
	}
	return &redisConn{c: c, r: bufio.NewReaderSize(c, 64<<10), w: bufio.NewWriterSize(c, 64<<10)}, nil
}

// do sends payload and reads n replies; it returns the raw bytes of the last.
func (c *redisConn) do(payload []byte, n int) ([]byte, value, error) {
	c.c.SetDeadline(time.Now().Add(redisTimeout))
	if _, err := c.w.Write(payload); err != nil {
		return nil, value{}, fmt.Errorf("write to redis: %w", err)
	}
	if err := c.w.Flush(); err != nil {
		return nil, value{}, fmt.Errorf("write to redis: %w", err)
	}
	var raw []byte
	var v value
	for range n {
		var err error
		if raw, v, err = readReply(c.r); err != nil {
			return nil, value{}, err
		}
	}
	return raw, v, nil
}

// command sends one command and returns its decoded reply; a redis error
// reply becomes a Go error.
func (c *redisConn) command(args ...string) (value, error) {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	_, v, err := c.do(appendCommand(nil, bs...), 1)
	if err == nil && v.kind == '-' {
		err = fmt.Errorf("redis %s: %s", args[0], v.str)
	}
	return v, err
}

func (c *redisConn) close() error { return c.c.Close() }

// redisPool keeps idle connections for reads.
type redisPool struct {
	addr string
	idle chan *redisConn
}

func newRedisPool(addr string, size int) *redisPool {
	return &redisPool{addr: addr, idle: make(chan *redisConn, size)}
}

// do runs payload on a pooled connection; a connection that failed is dropped.
func (p *redisPool) do(payload []byte, n int) ([]byte, error) {
	var c *redisConn
	select {
	case c = <-p.idle:
	default:
		var err error
		if c, err = dialRedis(p.addr); err != nil {
			return nil, err
		}
	}
	raw, _, err := c.do(payload, n)
	if err != nil {
		c.close()
		return nil, err
	}
	select {
	case p.idle <- c:
	default:
		c.close()
	}
	return raw, nil
}

func (p *redisPool) close() {
	for {
		select {
		case c := <-p.idle:
			c.close()
		default:
			return
		}
	}
}

package redis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gait-dev/gait/internal/systems"
)

// ServerArgv is the command line of a redis-server on h listening on port:
// bound to the host's address, without persistence (RDB or AOF), with its
// working directory under the host's data directory.
func ServerArgv(binary string, h systems.Host, port int) []string {
	return []string{binary,
		"--bind", h.Address(),
		"--port", strconv.Itoa(port),
		// Clients reach a testbed host over its bridge, not loopback; the
		// explicit bind already keeps the server off other networks.
		"--protected-mode", "no",
		"--save", "",
		"--appendonly", "no",
		"--dir", ServerDir(h),
		"--daemonize", "no",
		"--logfile", "",
		// DEBUG from loopback only: gait replica forwards the DEBUG
		// sub-commands that describe or change the data (Redis's own test
		// suite needs them) from a loopback deployment.
		"--enable-debug-command", "local",
	}
}

// ServerDir is where a redis-server on h keeps its (unused) files.
func ServerDir(h systems.Host) string { return filepath.Join(h.DataDir(), "redis") }

// StartOn starts a redis-server on h at port and returns once it answers
// PING, or fails with the tail of its log.
func StartOn(ctx context.Context, binary string, h systems.Host, port int) (systems.Process, error) {
	if err := os.MkdirAll(ServerDir(h), 0o755); err != nil {
		return nil, fmt.Errorf("redis-server on %s: %w", h.Name(), err)
	}
	p, err := h.Start("redis-server", ServerArgv(binary, h, port), nil)
	if err != nil {
		return nil, fmt.Errorf("redis-server on %s: %w", h.Name(), err)
	}
	addr := net.JoinHostPort(h.Address(), strconv.Itoa(port))
	if err := WaitAnswer(ctx, addr, p, 10*time.Second); err != nil {
		p.Stop()
		return nil, fmt.Errorf("redis-server on %s: %w", h.Name(), err)
	}
	return p, nil
}

// WaitAnswer polls the RESP server at addr with PING until it answers, p
// exits, or limit passes.
func WaitAnswer(ctx context.Context, addr string, p systems.Process, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		c, err := Dial(pctx, addr)
		pcancel()
		if err == nil {
			return c.Close()
		}
		if p.Exited() {
			return fmt.Errorf("exited before answering on %s%s", addr, systems.LogTail(p))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not answering on %s after %v: %w%s", addr, limit, err, systems.LogTail(p))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Driver starts one stand-alone redis-server per host, without replication:
// each server holds only what its own clients wrote. It is the peer that
// replicated systems are compared with.
type Driver struct {
	Binary string
	Port   int
}

// NewDriver returns a driver for Debian's redis-server on its usual port.
func NewDriver() *Driver { return &Driver{Binary: ServerBinary, Port: 6379} }

func (d *Driver) Name() string { return "redis" }

// Start starts a server on every host and returns once all answer.
func (d *Driver) Start(ctx context.Context, hosts []systems.Host) (systems.Cluster, error) {
	if len(hosts) == 0 {
		return nil, errors.New("redis: no hosts")
	}
	if _, err := os.Stat(d.Binary); err != nil {
		return nil, fmt.Errorf("redis: server program: %w (install Debian's redis-server)", err)
	}
	c := &Servers{d: d, procs: map[string]systems.Process{}, hosts: map[string]systems.Host{}}
	for _, h := range hosts {
		if _, dup := c.hosts[h.Name()]; dup {
			c.Stop()
			return nil, fmt.Errorf("redis: two hosts named %q", h.Name())
		}
		c.hosts[h.Name()] = h
		c.order = append(c.order, h.Name())
		p, err := StartOn(ctx, d.Binary, h, d.Port)
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.procs[h.Name()] = p
	}
	return c, nil
}

// Servers is the cluster the plain driver starts: independent servers.
type Servers struct {
	d     *Driver
	order []string
	hosts map[string]systems.Host

	mu    sync.Mutex // guards procs: Restart may run beside Roles
	procs map[string]systems.Process
}

var _ systems.Cluster = (*Servers)(nil)

// Roles calls every running server "primary" (Redis's master): each is the
// only authority on its own data. One that has exited is "down".
func (c *Servers) Roles(context.Context) (map[string]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	roles := map[string]string{}
	for name, p := range c.procs {
		roles[name] = "primary"
		if p.Exited() {
			roles[name] = "down"
		}
	}
	return roles, nil
}

func (c *Servers) addr(host string) (string, error) {
	h, ok := c.hosts[host]
	if !ok {
		return "", fmt.Errorf("redis: no server on host %q", host)
	}
	return net.JoinHostPort(h.Address(), strconv.Itoa(c.d.Port)), nil
}

// Client connects to the server on host.
func (c *Servers) Client(host string) (load.Client, error) {
	addr, err := c.addr(host)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return Dial(ctx, addr)
}

// InfoFields are the fields of INFO that Metrics reports, as gauges or
// running totals.
var InfoFields = []string{"connected_clients", "used_memory", "instantaneous_ops_per_sec",
	"total_commands_processed", "keyspace_hits", "keyspace_misses"}

// Metrics reads INFO from every server, keyed "redis_<field>{host=h}".
func (c *Servers) Metrics(ctx context.Context) (map[string]float64, error) {
	out := map[string]float64{}
	var errs []error
	for _, name := range c.order {
		addr, _ := c.addr(name)
		vals, err := info(ctx, addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		for _, f := range InfoFields {
			if v, ok := vals[f]; ok {
				out["redis_"+f+"{host="+name+"}"] = v
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("redis metrics: %w", err)
	}
	return out, nil
}

// info reads the numeric fields of INFO from the server at addr.
func info(ctx context.Context, addr string) (map[string]float64, error) {
	c, err := Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	text, err := c.rdb.Info(ctx).Result()
	if err != nil {
		return nil, err
	}
	vals := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			vals[k] = f
		}
	}
	return vals, nil
}

// Restart starts the server on host again after a crash; it comes back
// empty, as a server without persistence does.
func (c *Servers) Restart(ctx context.Context, host string) error {
	h, ok := c.hosts[host]
	if !ok {
		return fmt.Errorf("redis: no server on host %q", host)
	}
	c.mu.Lock()
	old := c.procs[host]
	c.mu.Unlock()
	if old != nil && !old.Exited() {
		return fmt.Errorf("redis on %s: still running (pid %d)", host, old.Pid())
	}
	p, err := StartOn(ctx, c.d.Binary, h, c.d.Port)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.procs[host] = p
	c.mu.Unlock()
	return nil
}

// Stop ends every server at once.
func (c *Servers) Stop() error {
	c.mu.Lock()
	procs := slices.Collect(maps.Values(c.procs))
	c.mu.Unlock()
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() { errs[i] = p.Stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

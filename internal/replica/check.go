package replica

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The range of MaxRequest: below 1 KiB ordinary requests fail; 1 GiB is
// the most a redis-server reads of one client (client-query-buffer-limit).
const (
	MinRequest = 1 << 10
	MaxRequest = 1 << 30
)

// DefaultMaxRequest is the default of Config.MaxRequest: redis's own
// bound on one bulk string (proto-max-bulk-len), so a request redis takes
// the agent takes too.
const DefaultMaxRequest = 512 << 20

// DefaultRequestMemory is the default of Config.RequestMemory when
// MaxRequest is not larger.
const DefaultRequestMemory = 256 << 20

// Check validates an agent's settings as a user gives them, the flags of
// gait replica agent, before anything starts: stricter than Start, which
// lets tests and the loopback deployment have the kernel pick the raft
// port. Its error names the setting by its flag, its value and what it
// takes.
func (cfg *Config) Check() error {
	if strings.TrimSpace(cfg.ID) == "" {
		return fmt.Errorf("--id %q: want a name, unique in the deployment", cfg.ID)
	}
	type addrFlag struct {
		flag, addr string
		port0      bool // port 0 allowed: the kernel picks one, and gait prints it
		reachable  bool // the agent tells its peers this address
		given      bool
	}
	// The server's own address is its adapter's wiring's to check (--redis, --zookeeper).
	for _, a := range []addrFlag{
		{"--raft", cfg.RaftAddr, false, true, true},
		{"--listen", cfg.Listen, true, false, true},
		{"--join", cfg.Join, false, false, cfg.Join != ""},
		{"--metrics", cfg.Metrics, true, false, cfg.Metrics != ""},
	} {
		if !a.given {
			continue
		}
		if err := checkAddr(a.flag, a.addr, a.port0, a.reachable); err != nil {
			return err
		}
	}
	if cfg.DataDir != "" {
		if err := CheckDir("--data", cfg.DataDir); err != nil {
			return err
		}
	}
	switch {
	case cfg.Bootstrap && cfg.Join != "":
		return errors.New("--bootstrap and --join exclude each other: --bootstrap starts a deployment, --join joins one")
	case cfg.Bootstrap && cfg.NonVoter:
		return errors.New("--nonvoter and --bootstrap exclude each other: the agent that bootstraps is the deployment's first voter")
	case !cfg.Bootstrap && cfg.Join == "" && !hasRaftLog(cfg.DataDir):
		if cfg.NonVoter {
			return errors.New("--nonvoter needs --join ADDR: a duplicate joins a deployment")
		}
		return errors.New("want --bootstrap (start a deployment) or --join ADDR (join one); only an agent whose --data holds its raft log restarts without either")
	}
	if _, err := ParseReadMode(string(cfg.Read)); err != nil {
		return fmt.Errorf("--read %q: want %s, %s or %s", cfg.Read, Linearizable, Session, Any)
	}
	if _, err := ParseDurability(string(cfg.Durability)); err != nil {
		return fmt.Errorf("--durability %q: want %s or %s", cfg.Durability, DurableDisk, DurableReplicated)
	}
	if cfg.Fanout < 1 {
		return fmt.Errorf("--fanout %d: want 1 or more (more than the deployment's replicas means every replica)", cfg.Fanout)
	}
	if cfg.MaxRequest < MinRequest || cfg.MaxRequest > MaxRequest {
		return fmt.Errorf("--max-request %d: want %d to %d bytes", cfg.MaxRequest, MinRequest, MaxRequest)
	}
	if cfg.RequestMemory != 0 && cfg.RequestMemory < cfg.MaxRequest {
		return fmt.Errorf("--request-memory %d: want at least --max-request (%d): one request of the largest size must fit", cfg.RequestMemory, cfg.MaxRequest)
	}
	if cfg.RequestTimeout <= 0 {
		return fmt.Errorf("--request-timeout %v: want a positive duration", cfg.RequestTimeout)
	}
	return nil
}

// checkAddr checks a HOST:PORT flag. With port0 the port may be 0 (the
// kernel picks one); with reachable the host must be an address other
// agents reach: not empty, 0.0.0.0 or ::.
func checkAddr(flag, addr string, port0, reachable bool) error {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: want HOST:PORT", flag, addr)
	}
	lo := 1
	if port0 {
		lo = 0
	}
	if n, err := strconv.Atoi(p); err != nil || n < lo || n > 65535 {
		return fmt.Errorf("%s %q: want a port from %d to 65535", flag, addr, lo)
	}
	if ip := net.ParseIP(h); reachable && (h == "" || ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("%s %q: want the host other agents reach this one at, not an unspecified address", flag, addr)
	}
	return nil
}

// hasRaftLog tells whether dir holds an agent's raft log from an earlier run.
func hasRaftLog(dir string) bool {
	if dir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, "raft.db"))
	return err == nil
}

// CheckDir checks a setting naming a directory gait may create: not
// empty, and not an existing file of another kind.
func CheckDir(flag, dir string) error {
	if dir == "" {
		return fmt.Errorf("%s \"\": want a directory", flag)
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return fmt.Errorf("%s %q: not a directory", flag, dir)
	}
	return nil
}

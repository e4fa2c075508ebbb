package cassandra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/load"
	"github.com/gocql/gocql"
)

// Ops are the operations of this driver's clients, in load.Op kind order.
var Ops = []string{"put", "get"}

const (
	opPut = iota
	opGet
)

// Consistencies are the consistency levels a scenario may set.
var Consistencies = []string{"one", "quorum", "all"}

const keyspace = "gait"

// quiet discards gocql's own log lines (reconnection attempts to a node
// gait crashed on purpose); errors reach gait through each request.
var quiet = log.New(io.Discard, "", 0)

// session opens a CQL session that talks to the node at addr alone: no
// other node of the ring is dialled, so a client of the coordinator stays
// on the coordinator, as the paper's client does, and nothing is retried
// behind gait's back.
func session(addr, ks string, timeout time.Duration) (*gocql.Session, error) {
	cfg := gocql.NewCluster(addr)
	cfg.Port = nativePort
	cfg.Keyspace = ks
	cfg.ProtoVersion = 4
	cfg.NumConns = 1
	cfg.Timeout = timeout
	cfg.ConnectTimeout = 5 * time.Second
	cfg.DisableInitialHostLookup = true
	cfg.HostFilter = gocql.WhiteListHostFilter(addr)
	cfg.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 0}
	cfg.Events.DisableNodeStatusEvents = true
	cfg.Events.DisableTopologyEvents = true
	cfg.Logger = quiet
	s, err := cfg.CreateSession()
	if err != nil {
		return nil, fmt.Errorf("cassandra %s: %w", net.JoinHostPort(addr, strconv.Itoa(nativePort)), err)
	}
	return s, nil
}

// requestTimeout bounds a request on the client's side beyond the
// server's own timeouts (10 s, config), so the server's answer, a timeout
// error, is what is seen.
const requestTimeout = 15 * time.Second

// Client is one load client: a session on one node.
type Client struct {
	s           *gocql.Session
	read, write gocql.Consistency
	// replicas are the other nodes holding every key; an operation at
	// consistency all waits for each of them.
	replicas []string
	last     gocql.Consistency
}

// Do performs one operation. A get of a missing key is a success.
func (c *Client) Do(ctx context.Context, op load.Op) error {
	switch op.Kind {
	case opPut:
		c.last = c.write
		return c.s.Query("INSERT INTO kv (k, v) VALUES (?, ?)", op.Key, op.Value).WithContext(ctx).Consistency(c.write).Exec()
	case opGet:
		c.last = c.read
		var v []byte
		err := c.s.Query("SELECT v FROM kv WHERE k = ?", op.Key).WithContext(ctx).Consistency(c.read).Scan(&v)
		if errors.Is(err, gocql.ErrNotFound) {
			err = nil
		}
		return err
	}
	return fmt.Errorf("cassandra: unknown operation kind %d", op.Kind)
}

// Involved names the replicas the last operation waited for
// (load.Involver): all of them at consistency all. At one or quorum the
// coordinator answers with the fastest replicas, which the client cannot
// name, so it names none, as a quorum does not wait for a slow one.
func (c *Client) Involved() []string {
	if c.last == gocql.All {
		return c.replicas
	}
	return nil
}

// Close ends the session.
func (c *Client) Close() error {
	c.s.Close()
	return nil
}

// consistency reads a level of Consistencies.
func consistency(s string) (gocql.Consistency, error) {
	for _, c := range Consistencies {
		if strings.EqualFold(s, c) {
			return gocql.ParseConsistencyWrapper(strings.ToUpper(c))
		}
	}
	return 0, fmt.Errorf("consistency %q: want one of %s", s, strings.Join(Consistencies, ", "))
}

package redis

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Replication is what a server's INFO says of its replication.
type Replication struct {
	Role string // primary or replica (Redis's master and slave)
	// Offset is the primary's master_repl_offset: bytes of the
	// replication stream it has produced.
	Offset   int64
	Replicas []ReplicaLink // as the primary sees them
}

// ReplicaLink is one replica as its primary's INFO lists it (slaveN).
type ReplicaLink struct {
	IP     string
	Port   int
	State  string // online once in sync, wait_bgsave, send_bulk, ...
	Offset int64  // replication offset the replica last acknowledged
}

func (r Replication) replica(ip string) (ReplicaLink, bool) {
	for _, l := range r.Replicas {
		if l.IP == ip {
			return l, true
		}
	}
	return ReplicaLink{}, false
}

// parseInfo splits INFO's text into its fields.
func parseInfo(text string) map[string]string {
	fields := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if ok && !strings.HasPrefix(k, "#") {
			fields[k] = v
		}
	}
	return fields
}

// parseReplication reads the replication section of INFO's fields.
func parseReplication(fields map[string]string) (Replication, error) {
	var r Replication
	switch fields["role"] {
	case "master":
		r.Role = "primary"
	case "slave":
		r.Role = "replica"
	default:
		return r, fmt.Errorf("INFO: role %q is neither master nor slave", fields["role"])
	}
	if v, ok := fields["master_repl_offset"]; ok {
		var err error
		if r.Offset, err = strconv.ParseInt(v, 10, 64); err != nil {
			return r, fmt.Errorf("INFO: master_repl_offset %q: %w", v, err)
		}
	}
	for i := 0; ; i++ {
		v, ok := fields["slave"+strconv.Itoa(i)]
		if !ok {
			return r, nil
		}
		l, err := parseReplicaLink(v)
		if err != nil {
			return r, fmt.Errorf("INFO: slave%d: %w", i, err)
		}
		r.Replicas = append(r.Replicas, l)
	}
}

// parseReplicaLink reads "ip=10.0.0.2,port=6379,state=online,offset=14,lag=0".
func parseReplicaLink(v string) (ReplicaLink, error) {
	var l ReplicaLink
	var err error
	for kv := range strings.SplitSeq(v, ",") {
		k, val, _ := strings.Cut(kv, "=")
		switch k {
		case "ip":
			l.IP = val
		case "port":
			l.Port, err = strconv.Atoi(val)
		case "state":
			l.State = val
		case "offset":
			l.Offset, err = strconv.ParseInt(val, 10, 64)
		}
		if err != nil {
			return l, fmt.Errorf("%s=%q: %w", k, val, err)
		}
	}
	if l.IP == "" {
		return l, fmt.Errorf("%q names no ip", v)
	}
	return l, nil
}

// outputBuffers reads CLIENT LIST's lines: the output buffer (omem,
// bytes) of each client, by its IP address.
func outputBuffers(list string) (map[string]float64, error) {
	out := map[string]float64{}
	for line := range strings.SplitSeq(strings.TrimSpace(list), "\n") {
		if line == "" {
			continue
		}
		var ip string
		omem := -1.0
		for kv := range strings.FieldsSeq(line) {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "addr":
				host, _, err := net.SplitHostPort(v)
				if err != nil {
					return nil, fmt.Errorf("CLIENT LIST: addr %q: %w", v, err)
				}
				ip = host
			case "omem":
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return nil, fmt.Errorf("CLIENT LIST: omem %q: %w", v, err)
				}
				omem = n
			}
		}
		if ip == "" || omem < 0 {
			return nil, fmt.Errorf("CLIENT LIST: %q lacks addr or omem", line)
		}
		out[ip] += omem
	}
	return out, nil
}

// serverInfo is one server's INFO fields and, on a primary, its
// replicas' output buffers.
type serverInfo struct {
	fields  map[string]string
	rep     Replication
	buffers map[string]float64 // by replica IP; primaries only
}

// readInfo asks the server at addr for INFO (only its replication
// section unless all) and, with all, if it is a primary with replicas,
// for CLIENT LIST TYPE replica.
func readInfo(ctx context.Context, addr string, all bool) (serverInfo, error) {
	var si serverInfo
	c, err := Dial(ctx, addr)
	if err != nil {
		return si, err
	}
	defer c.Close()
	section := []string{"replication"}
	if all {
		section = nil
	}
	text, err := c.rdb.Info(ctx, section...).Result()
	if err != nil {
		return si, err
	}
	si.fields = parseInfo(text)
	if si.rep, err = parseReplication(si.fields); err != nil {
		return si, err
	}
	if !all || si.rep.Role != "primary" || len(si.rep.Replicas) == 0 {
		return si, nil
	}
	list, err := c.rdb.Do(ctx, "CLIENT", "LIST", "TYPE", "replica").Text()
	if err != nil {
		return si, fmt.Errorf("CLIENT LIST: %w", err)
	}
	si.buffers, err = outputBuffers(list)
	return si, err
}

// replication reads the replication state of the server at addr.
func replication(ctx context.Context, addr string) (Replication, error) {
	si, err := readInfo(ctx, addr, false)
	return si.rep, err
}

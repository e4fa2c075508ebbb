package zookeeper

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// flwLimit bounds a four-letter word's answer (mntr is about 30 KB).
const flwLimit = 1 << 20

// flw sends a four-letter word ("mntr", "srvr") to addr and returns the
// answer, within ctx.
func flw(ctx context.Context, addr, word string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	} else {
		conn.SetDeadline(time.Now().Add(statusTimeout))
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := io.WriteString(conn, word); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(conn, flwLimit))
	if err != nil {
		return "", err
	}
	s := string(b)
	if strings.Contains(s, "not currently serving requests") {
		return "", errNotServing
	}
	if strings.Contains(s, "is not executed because it is not in the whitelist") {
		return "", fmt.Errorf("%s: not in 4lw.commands.whitelist", word)
	}
	return s, nil
}

type notServing struct{}

func (notServing) Error() string { return "not serving requests (no quorum yet?)" }

var errNotServing error = notServing{}

// parseMntr reads mntr's "name<TAB>value" lines; values that are not numbers
// (zk_version, zk_server_state, zk_peer_state) are returned in text.
func parseMntr(s string) (nums map[string]float64, text map[string]string) {
	nums, text = map[string]float64{}, map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 0, 4096), flwLimit)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), "\t")
		if !ok || name == "" {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			nums[name] = v
		} else {
			text[name] = strings.TrimSpace(val)
		}
	}
	return nums, text
}

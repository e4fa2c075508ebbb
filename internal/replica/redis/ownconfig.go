package redis

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	"github.com/gait-dev/gait/internal/resp"
)

// CONFIG SET is ordered through the log, so every replica's redis-server
// is configured alike. A few settings are not alike on every replica: the
// local redis-server's own listener and files, which the agent connects to
// and owns. Through the log, every server would be told the proposer's
// server's port (CONFIG GET * then CONFIG SET of every value back, as
// Redis's `CONFIG sanity` test does): the others fail to listen there and
// answer an error where the proposer answers OK, or, on hosts of their own,
// move their listener away from their agent. So CONFIG SET of one of these
// to the value it has is answered here and left out of the log; to any
// other value it is refused, as a whole, as redis refuses a CONFIG SET one
// of whose settings fails. Inside MULTI alike, at EXEC (withoutOwn): the
// transaction's CONFIG SET is answered or refused in its place in EXEC's
// reply, and the rest of the transaction runs.
// A refusal begins as redis words its failure to apply the setting (for
// dir redis says why chdir failed).
var ownConfigs = map[string]string{"port": "Unable to listen on this port", "tls-port": "Unable to listen on this port",
	"bind": "Failed to bind to specified addresses", "dir": "Unable to change directory"}

// ownConfigSet takes the local server's own settings out of a CONFIG SET
// (its arguments, from CONFIG): what remains to propose (nil: nothing), or
// the reply when the command is answered here.
func (a *agent) ownConfigSet(args [][]byte) (rest [][]byte, reply []byte) {
	if len(args) < 4 || len(args)%2 != 0 {
		return args, nil // redis answers the arity error
	}
	rest = args[:2:2]
	for i := 2; i < len(args); i += 2 {
		name := strings.ToLower(string(args[i]))
		failure, own := ownConfigs[name]
		if !own {
			rest = append(rest, args[i], args[i+1])
			continue
		}
		raw, err := a.reads.do(defaultMode, resp.AppendCommand(nil, []byte("CONFIG"), []byte("GET"), []byte(name)))
		if err != nil {
			return nil, resp.Error(fmt.Sprintf("ERR CONFIG SET %s: read the local redis-server's value: %v", name, err))
		}
		_, v, err := resp.ReadReply(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil || len(v.Arr) != 2 {
			return nil, resp.Error(fmt.Sprintf("ERR CONFIG SET %s: the local redis-server's CONFIG GET answered %q", name, raw))
		}
		if !bytes.Equal(v.Arr[1].Str, args[i+1]) {
			return nil, resp.Error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %s: "+
				"gait replica: the local redis-server's %s is its agent's (%q), not a client's to change", name, failure, name, v.Arr[1].Str))
		}
	}
	if len(rest) == 2 {
		return nil, resp.Simple("OK")
	}
	return rest, nil
}

package replica

import (
	"context"
	"strings"

	"github.com/gait-dev/gait/internal/resp"
)

// probeQueued asks the local redis-server whether it would queue args in a
// transaction now (MULTI, the command, DISCARD: nothing runs), so the
// client gets redis's own queue-time answer: QUEUED, or the error that
// makes EXEC abort (OOM under maxmemory, BUSY while a script runs, a
// command redis does not know). The replica first applies every write
// acknowledged before (a linearizable read index), so a CONFIG SET
// maxmemory through any agent is in force. "" means QUEUED or that the
// server could not be asked; EXEC then decides.
func (a *Agent) probeQueued(args [][]byte) string {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.WriteTimeout)
	index, err := a.indexes.get(ctx)
	if err != nil {
		index = a.raft.LastIndex()
	}
	a.fsm.waitApplied(ctx, index)
	cancel()
	payload := resp.AppendCommand(nil, []byte("MULTI"))
	payload = resp.AppendCommand(payload, args...)
	payload = resp.AppendCommand(payload, []byte("DISCARD"))
	raw, err := a.reads.doSome(payload, 3, 1)
	if err != nil || len(raw) < 3 || raw[0] != '-' {
		return ""
	}
	return strings.TrimRight(string(raw[1:]), "\r\n")
}

// execBusy is EXEC's answer while this replica's redis-server runs a long
// script, as redis answers it: the transaction is discarded. "" when it does
// not.
func (a *Agent) execBusy() string {
	if a.fsm.busyFor() <= busyCheck {
		return ""
	}
	raw, err := a.reads.do(defaultMode, resp.AppendCommand(nil, []byte("PING")))
	if err != nil || !strings.HasPrefix(string(raw), "-BUSY") {
		return ""
	}
	return "EXECABORT Transaction discarded because of: " + strings.TrimRight(string(raw[1:]), "\r\n")
}

package replica

import (
	"bufio"
	"bytes"
	"strconv"

	"github.com/gait-dev/gait/internal/resp"
)

// WATCH is served by value. WATCH reads each key's DUMP (nil when it does
// not exist) and the agent keeps it with the connection. EXEC proposes one
// entry: WATCH the keys on the applying connection, then watchCheck, which
// marks every key whose value is no longer the one read as modified (by
// restoring its current value over itself, or setting and deleting a key
// that vanished), then MULTI … EXEC, which redis therefore aborts (nil) if
// any watched key changed. Every replica runs the same entry on the same
// data, so they agree. Unlike redis, a key changed and changed back since
// WATCH does not abort the transaction.
const watchCheck = `for i, k in ipairs(KEYS) do
  local now = redis.call('DUMP', k)
  local was = ARGV[i]
  if ARGV[#KEYS + i] == '0' then was = false end
  if now ~= was then
    if now then
      local ttl = redis.call('PTTL', k)
      if ttl < 0 then ttl = 0 end
      redis.call('RESTORE', k, ttl, now, 'REPLACE')
    else
      redis.call('SET', k, '')
      redis.call('DEL', k)
    end
  end
end
return 0`

// watched is a key and its DUMP when WATCH read it (nil: no such key).
type watched struct {
	key, dump []byte
}

// watch answers WATCH key...: reads the keys' values now.
func (a *Agent) watch(st *clientState, args [][]byte) []byte {
	if st.lastWriteDone != nil {
		<-st.lastWriteDone // the connection's own writes come before
	}
	for _, k := range args[1:] {
		raw, err := a.read(st, st.mode(), resp.AppendCommand(nil, []byte("DUMP"), k))
		if err != nil {
			return resp.Error("ERR gait replica: " + err.Error())
		}
		_, v, err := resp.ReadReply(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil || v.Kind == '-' {
			return raw
		}
		w := watched{key: bytes.Clone(k)}
		if !v.Null {
			w.dump = bytes.Clone(v.Str)
		}
		st.watched = append(st.watched, w)
	}
	return resp.Simple("OK")
}

// watchPrefix is the start of an EXEC entry for a connection that watches
// keys, and the number of replies it adds.
func watchPrefix(ws []watched) ([]byte, int) {
	if len(ws) == 0 {
		return nil, 0
	}
	w := [][]byte{[]byte("WATCH")}
	check := [][]byte{[]byte("EVAL"), []byte(watchCheck), []byte(strconv.Itoa(len(ws)))}
	var dumps, exists [][]byte
	for _, x := range ws {
		w = append(w, x.key)
		check = append(check, x.key)
		dumps = append(dumps, x.dump)
		if x.dump == nil {
			exists = append(exists, []byte("0"))
		} else {
			exists = append(exists, []byte("1"))
		}
	}
	check = append(append(check, dumps...), exists...)
	return resp.AppendCommand(resp.AppendCommand(nil, w...), check...), 2
}

package redis

import (
	"bufio"
	"bytes"
	"strconv"

	"github.com/gait-dev/gait/internal/resp"
)

// WATCH is served by value. WATCH reads each key's DUMP (nil when it does
// not exist) and its expiry (PEXPIRETIME), and the agent keeps them with the
// connection. EXEC proposes one entry: WATCH the keys on the applying
// connection, then watchCheck, which marks every key whose value or expiry
// is no longer the one read as modified (by restoring its current value and
// expiry over itself, or setting and deleting a key that vanished), then
// MULTI … EXEC, which redis therefore aborts (nil) if any watched key
// changed. Every replica runs the same entry on the same data, so they
// agree. Unlike redis, a key changed and changed back since WATCH does not
// abort the transaction.
const watchCheck = `local n = #KEYS
for i, k in ipairs(KEYS) do
  local now = redis.call('DUMP', k)
  local was = ARGV[i]
  if ARGV[n + i] == '0' then was = false end
  local at = redis.call('PEXPIRETIME', k)
  if now ~= was or (now and at ~= tonumber(ARGV[2 * n + i])) then
    if now then
      if at < 0 then at = 0 end
      redis.call('RESTORE', k, at, now, 'REPLACE', 'ABSTTL')
    else
      redis.call('SET', k, '')
      redis.call('DEL', k)
    end
  end
end
return 0`

// watchRead reads one key's value and expiry at once.
const watchRead = `return {redis.call('DUMP', KEYS[1]), redis.call('PEXPIRETIME', KEYS[1])}`

// watched is a key, its DUMP when WATCH read it (nil: no such key) and its
// expiry then (PEXPIRETIME: -1 none).
type watched struct {
	key, dump, at []byte
}

// watch answers WATCH key...: reads the keys' values now.
func (a *agent) watch(st *clientState, args [][]byte) []byte {
	if st.lastWriteDone != nil {
		<-st.lastWriteDone // the connection's own writes come before
	}
	for _, k := range args[1:] {
		raw, err := a.redisRead(st, st.mode(), resp.AppendCommand(nil, []byte("EVAL_RO"), []byte(watchRead), []byte("1"), k), false)
		if err != nil {
			return resp.Error("ERR gait replica: " + err.Error())
		}
		_, v, err := resp.ReadReply(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil || v.Kind == '-' {
			return raw
		}
		if len(v.Arr) != 2 {
			return resp.Error("ERR gait replica: WATCH read an unexpected reply for " + string(k))
		}
		w := watched{key: bytes.Clone(k), at: strconv.AppendInt(nil, v.Arr[1].Num, 10)}
		if !v.Arr[0].Null {
			w.dump = bytes.Clone(v.Arr[0].Str)
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
	var dumps, exists, ats [][]byte
	for _, x := range ws {
		w = append(w, x.key)
		check = append(check, x.key)
		dumps = append(dumps, x.dump)
		ats = append(ats, x.at)
		if x.dump == nil {
			exists = append(exists, []byte("0"))
		} else {
			exists = append(exists, []byte("1"))
		}
	}
	check = append(append(append(check, dumps...), exists...), ats...)
	return resp.AppendCommand(resp.AppendCommand(nil, w...), check...), 2
}
